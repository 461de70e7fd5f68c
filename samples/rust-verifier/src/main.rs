//! rust-verifier: checks a run the way a chain client does once the beacon
//! of a challenge is known.
//!
//! Usage: `rust-verifier --dir RUN_DIR --beacon HEX [--rounds N] [--threads N]`
//!
//! RUN_DIR is what samples/protocol_flow writes: commitment.json, log.json
//! (`{"size": N, "root": "<hex>"}`, the posted checkpoint root),
//! opening-<t>.bin (the manifest of each opened step) and
//! state-<t>.safetensors (the served states). The verifier loads the
//! commitment, derives the challenged steps from the beacon and the run id,
//! verifies each step's opening against the posted root and the served
//! states state-<t-1> and state-<t>, prints one line per step and a final
//! verdict: `PASS` (exit 0) or `FAIL` naming the failed check (exit 1).
//! Bad usage or unreadable inputs exit 2.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: rust-verifier --dir RUN_DIR --beacon HEX [--rounds N] [--threads N]\n\
                     \n\
                     Verifies the openings of the steps the beacon challenges in a run\n\
                     directory written by samples/protocol_flow (its beacon is \"beacon\",\n\
                     hex 626561636f6e, with 2 rounds). Exit 0 on PASS, 1 on FAIL, 2 on bad input.";

struct Args {
    dir: PathBuf,
    beacon: Vec<u8>,
    rounds: usize,
    threads: u32,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut dir, mut beacon, mut rounds, mut threads) = (None, None, 2usize, 0u32);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--dir" => dir = Some(PathBuf::from(value()?)),
            "--beacon" => beacon = Some(unhex(&value()?).ok_or("--beacon takes an even number of hex digits")?),
            "--rounds" => rounds = value()?.parse().map_err(|_| "--rounds takes a number")?,
            "--threads" => threads = value()?.parse().map_err(|_| "--threads takes a number")?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Args { dir: dir.ok_or("--dir is required")?, beacon: beacon.ok_or("--beacon is required")?, rounds, threads })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

/// The raw value of `"key": value` in a flat JSON object: a string's
/// contents or a number's digits. Enough for log.json; not a JSON parser.
fn json_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let quoted = format!("\"{key}\"");
    let rest = text[text.find(&quoted)? + quoted.len()..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    match rest.strip_prefix('"') {
        Some(s) => s.find('"').map(|end| &s[..end]),
        None => Some(&rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())]),
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The outcome of one challenged step.
enum Step {
    Verified,
    Rejected(String),
}

fn verify_step(args: &Args, commitment: &pot::Commitment, size: u64, root: &pot::Digest, t: u64) -> Step {
    let manifest_path = args.dir.join(format!("opening-{t}.bin"));
    let manifest = match std::fs::read(&manifest_path) {
        Ok(m) => m,
        Err(e) => return Step::Rejected(format!("no opening served ({}: {e})", manifest_path.display())),
    };
    let pre = args.dir.join(format!("state-{}.safetensors", t - 1));
    let post = args.dir.join(format!("state-{t}.safetensors"));
    match pot::verify_opening(commitment, t, size, root, &manifest, Some(&pre), Some(&post), args.threads) {
        Ok(()) => Step::Verified,
        Err(failure) => Step::Rejected(match failure.check {
            Some(check) => format!("rejected at {check}: {}", failure.error.message()),
            None => format!("not verified: {}", failure.error),
        }),
    }
}

fn run(args: &Args) -> Result<bool, String> {
    pot::check_abi().map_err(|e| e.to_string())?;
    let commitment = pot::Commitment::from_json(&read_text(&args.dir.join("commitment.json"))?)
        .map_err(|e| format!("commitment.json: {e}"))?;
    let log = read_text(&args.dir.join("log.json"))?;
    let size: u64 = json_field(&log, "size").and_then(|s| s.parse().ok()).ok_or("log.json: no \"size\" number")?;
    let root: pot::Digest = json_field(&log, "root")
        .ok_or("log.json: no \"root\" string")?
        .parse()
        .map_err(|e| format!("log.json: root: {e}"))?;
    let run_id = commitment.run_id().map_err(|e| e.to_string())?;
    let steps = commitment.declared_steps();
    println!("run {run_id}: {steps} declared steps, posted log root {root} of {size} leaves");

    // Challenges are drawn only once the run is sealed (docs/ledger.md 2.3).
    if size != steps {
        println!("FAIL: the posted log holds {size} of {steps} steps: the run is not sealed");
        return Ok(false);
    }
    let challenged = pot::protocol::challenge_derive(&args.beacon, &run_id, steps, args.rounds)
        .map_err(|e| format!("challenge derivation: {e}"))?;
    println!(
        "beacon {} challenges steps {challenged:?}",
        args.beacon.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );

    let mut first_failure = None;
    for &t in &challenged {
        match verify_step(args, &commitment, size, &root, t) {
            Step::Verified => println!("step {t}: ok (every check but the replay)"),
            Step::Rejected(why) => {
                println!("step {t}: FAIL: {why}");
                first_failure.get_or_insert(format!("step {t}: {why}"));
            }
        }
    }
    match first_failure {
        None => {
            println!("PASS: {} of {} challenged steps verified", challenged.len(), challenged.len());
            Ok(true)
        }
        Some(why) => {
            println!("FAIL: {why}");
            Ok(false)
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("rust-verifier: {msg}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(msg) => {
            eprintln!("rust-verifier: {msg}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_log_json() {
        let log = "{\"size\": 6, \"root\": \"ab\"}\n";
        assert_eq!(json_field(log, "size"), Some("6"));
        assert_eq!(json_field(log, "root"), Some("ab"));
        assert_eq!(json_field(log, "other"), None);
    }

    #[test]
    fn parses_arguments() {
        let a = parse_args(["--dir", "d", "--beacon", "626561636f6e"].map(String::from).into_iter()).unwrap();
        assert_eq!((a.dir, a.beacon, a.rounds, a.threads), (PathBuf::from("d"), b"beacon".to_vec(), 2, 0));
        assert!(parse_args(["--dir", "d", "--beacon", "6"].map(String::from).into_iter()).is_err());
        assert!(parse_args(["--dir", "d"].map(String::from).into_iter()).is_err());
        assert!(parse_args(["--beacon"].map(String::from).into_iter()).is_err());
    }
}
