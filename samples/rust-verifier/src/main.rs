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
//!
//! Replay mode (`--replay`, src/replay_mode.rs) verifies one challenged step
//! completely, replay included (docs/PROTOCOL.md section 21.5), and commits
//! to the witness value:
//!
//! `rust-verifier --replay --commitment C.bin --spec SPEC.json --program MODEL.pt --root HEX --size N
//! --step T --manifest M.bin --pre-state S.safetensors [--post-state S.safetensors]
//! [--mode bitwise|bucket] [--threads N] --identity HEX [--challenge-id N] [--json]`
//!
//! On success it draws a fresh salt and prints the replayed state digest,
//! the norm bucket, the salt and the witness commitment over (run id, step,
//! replayed digest, bucket, salt, identity); exit 0. A failed check exits 1
//! naming it; bad usage or unreadable inputs exit 2.

mod replay_mode;

use replay_mode::ReplayArgs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: rust-verifier --dir RUN_DIR --beacon HEX [--rounds N] [--threads N]\n\
                     \x20      rust-verifier --replay --commitment C.bin --spec SPEC.json --program MODEL.pt\n\
                     \x20                    --root HEX --size N --step T --manifest M.bin\n\
                     \x20                    --pre-state S.safetensors [--post-state S.safetensors]\n\
                     \x20                    [--mode bitwise|bucket] [--threads N] --identity HEX\n\
                     \x20                    [--challenge-id N] [--json]\n\
                     \n\
                     Verifies the openings of the steps the beacon challenges in a run\n\
                     directory written by samples/protocol_flow (its beacon is \"beacon\",\n\
                     hex 626561636f6e, with 2 rounds). Exit 0 on PASS, 1 on FAIL, 2 on bad input.\n\
                     With --replay, verifies one step by replay (--mode bucket: the cross-architecture\n\
                     path, which needs --post-state and may replay on --threads N) and prints the\n\
                     witness statement (the replayed value, or the failed check), a fresh salt and its\n\
                     commitment.\n\
                     Exit 0 verified, 1 a check failed, 2 bad input.";

/// The arguments of the default mode (openings of the challenged steps).
struct Args {
    dir: PathBuf,
    beacon: Vec<u8>,
    rounds: usize,
    threads: u32,
}

/// What the command line asks for.
enum Command {
    Openings(Args),
    Replay(ReplayArgs),
}

/// Flags of the default mode only.
const OPENING_FLAGS: [&str; 3] = ["--dir", "--beacon", "--rounds"];
/// Flags of replay mode only (and the boolean `--json`).
const REPLAY_FLAGS: [&str; 12] = [
    "--commitment",
    "--spec",
    "--program",
    "--root",
    "--size",
    "--step",
    "--manifest",
    "--pre-state",
    "--post-state",
    "--mode",
    "--identity",
    "--challenge-id",
];

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Command, String> {
    let mut values = BTreeMap::new();
    let (mut replay, mut json) = (false, false);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--replay" => replay = true,
            "--json" => json = true,
            "-h" | "--help" => return Err(String::new()),
            f if f == "--threads" || OPENING_FLAGS.contains(&f) || REPLAY_FLAGS.contains(&f) => {
                let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
                values.insert(flag, value);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    // Each mode refuses the other's flags rather than ignoring them.
    let other_mode: &[&str] = if replay { &OPENING_FLAGS } else { &REPLAY_FLAGS };
    let mut misplaced: Vec<&str> = values.keys().map(String::as_str).filter(|f| other_mode.contains(f)).collect();
    if json && !replay {
        misplaced.push("--json");
    }
    if !misplaced.is_empty() {
        return Err(format!("{} not used {} --replay", misplaced.join(", "), if replay { "with" } else { "without" }));
    }
    let threads = match values.remove("--threads") {
        Some(v) => v.parse().map_err(|_| "--threads takes a number")?,
        None => 0,
    };
    if replay {
        return parse_replay(values, threads, json).map(Command::Replay);
    }
    let dir = values.remove("--dir").map(PathBuf::from).ok_or("--dir is required")?;
    let beacon = values.remove("--beacon").ok_or("--beacon is required")?;
    let beacon = unhex(&beacon).ok_or("--beacon takes an even number of hex digits")?;
    let rounds = match values.remove("--rounds") {
        Some(v) => v.parse().map_err(|_| "--rounds takes a number")?,
        None => 2,
    };
    Ok(Command::Openings(Args { dir, beacon, rounds, threads }))
}

fn parse_replay(mut values: BTreeMap<String, String>, threads: u32, json: bool) -> Result<ReplayArgs, String> {
    let missing: Vec<&str> = REPLAY_FLAGS
        .into_iter()
        .filter(|f| !matches!(*f, "--post-state" | "--mode" | "--challenge-id") && !values.contains_key(*f))
        .collect();
    if !missing.is_empty() {
        return Err(format!("--replay needs {}", missing.join(", ")));
    }
    let mut take = |flag: &str| values.remove(flag).unwrap_or_default();
    let number = |flag: &str, v: String| match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{flag} takes a positive number")),
    };
    let mode = match take("--mode").as_str() {
        "" | "bitwise" => pot::VerifyMode::Bitwise,
        "bucket" => pot::VerifyMode::NormBucket,
        other => return Err(format!("--mode takes bitwise or bucket, not {other:?}")),
    };
    let post_state = Some(take("--post-state")).filter(|p| !p.is_empty()).map(PathBuf::from);
    if mode == pot::VerifyMode::NormBucket && post_state.is_none() {
        return Err("--mode bucket needs --post-state (the served S_t)".into());
    }
    let challenge_id = match take("--challenge-id").as_str() {
        "" => 0,
        v => v.parse::<u64>().map_err(|_| "--challenge-id takes a number")?,
    };
    let identity = unhex(&take("--identity")).ok_or("--identity takes an even number of hex digits")?;
    if !(1..=256).contains(&identity.len()) {
        return Err(format!("--identity is {} bytes, want 1..256", identity.len()));
    }
    Ok(ReplayArgs {
        commitment: take("--commitment").into(),
        spec: take("--spec").into(),
        program: take("--program").into(),
        root: take("--root").parse().map_err(|e| format!("--root: {e}"))?,
        size: number("--size", take("--size"))?,
        step: number("--step", take("--step"))?,
        manifest: take("--manifest").into(),
        pre_state: take("--pre-state").into(),
        post_state,
        mode,
        threads,
        identity,
        challenge_id,
        json,
    })
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
    let command = match parse_args(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("rust-verifier: {msg}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let outcome = match &command {
        Command::Openings(args) => run(args),
        Command::Replay(args) => replay_mode::run(args),
    };
    match outcome {
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

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_arguments() {
        let Ok(Command::Openings(a)) = parse(&["--dir", "d", "--beacon", "626561636f6e"]) else { panic!() };
        assert_eq!((a.dir, a.beacon, a.rounds, a.threads), (PathBuf::from("d"), b"beacon".to_vec(), 2, 0));
        assert!(parse(&["--dir", "d", "--beacon", "6"]).is_err());
        assert!(parse(&["--dir", "d"]).is_err());
        assert!(parse(&["--beacon"]).is_err());
        assert!(parse(&["--dir", "d", "--beacon", "00", "--step", "5"]).is_err());
        assert!(parse(&["--dir", "d", "--beacon", "00", "--json"]).is_err());
    }

    const ROOT: &str = "461e00b666fa93f8bd534ab5e13319b5411f26697e4b4f66800098818489f56d";
    const REPLAY: [&str; 20] = [
        "--replay",
        "--commitment",
        "c.bin",
        "--spec",
        "spec.json",
        "--program",
        "program.pt",
        "--root",
        ROOT,
        "--size",
        "6",
        "--step",
        "5",
        "--manifest",
        "m.bin",
        "--pre-state",
        "s4.safetensors",
        "--identity",
        "7275737421",
        "--json",
    ];

    #[test]
    fn parses_replay_arguments() {
        let Ok(Command::Replay(a)) = parse(&REPLAY) else { panic!() };
        assert_eq!((a.size, a.step, a.threads, a.json), (6, 5, 0, true));
        assert_eq!((a.root.to_hex().as_str(), a.identity.as_slice()), (ROOT, b"rust!".as_slice()));
        assert_eq!((a.mode, a.post_state), (pot::VerifyMode::Bitwise, None));
        assert_eq!(a.pre_state, PathBuf::from("s4.safetensors"));

        let bucket = [&REPLAY[..], &["--mode", "bucket", "--post-state", "s5.safetensors", "--threads", "2"]].concat();
        let Ok(Command::Replay(a)) = parse(&bucket) else { panic!() };
        assert_eq!((a.mode, a.threads), (pot::VerifyMode::NormBucket, 2));
        assert_eq!(a.post_state, Some(PathBuf::from("s5.safetensors")));

        // bucket mode without the post-state; a bad mode, step, root or
        // identity; a missing flag; an opening-mode flag.
        assert!(parse(&[&REPLAY[..], &["--mode", "bucket"]].concat()).is_err());
        assert!(parse(&[&REPLAY[..], &["--mode", "fast"]].concat()).is_err());
        assert!(parse(&[&REPLAY[..], &["--step", "0"]].concat()).is_err());
        assert!(parse(&[&REPLAY[..], &["--root", "ab"]].concat()).is_err());
        assert!(parse(&[&REPLAY[..], &["--identity", ""]].concat()).is_err());
        assert!(parse(&REPLAY[..REPLAY.len() - 3]).is_err());
        assert!(parse(&[&REPLAY[..], &["--dir", "d"]].concat()).is_err());
    }
}
