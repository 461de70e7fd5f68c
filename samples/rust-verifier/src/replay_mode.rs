//! Replay mode (`--replay`): verify one challenged step completely, replay
//! included (docs/PROTOCOL.md section 21.5), and commit to the witness value
//! (section 19): the replayed state digest and the update's norm bucket.

use std::path::{Path, PathBuf};
use std::time::Instant;

/// The arguments of replay mode.
#[derive(Debug)]
pub struct ReplayArgs {
    pub commitment: PathBuf,
    pub spec: PathBuf,
    pub program: PathBuf,
    pub root: pot::Digest,
    pub size: u64,
    pub step: u64,
    pub manifest: PathBuf,
    pub pre_state: PathBuf,
    pub post_state: Option<PathBuf>,
    pub mode: pot::VerifyMode,
    pub threads: u32,
    pub identity: Vec<u8>,
    pub challenge_id: u64,
    pub json: bool,
}

/// `true` when the first non-blank byte is `{` (how `pot verify` tells JSON
/// from canonical bytes).
fn looks_like_json(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A training commitment, canonical bytes or JSON.
fn load_commitment(path: &Path) -> Result<pot::Commitment, String> {
    let bytes = read(path)?;
    let commitment = if looks_like_json(&bytes) {
        pot::Commitment::from_json(&String::from_utf8_lossy(&bytes))
    } else {
        pot::Commitment::decode(&bytes)
    };
    commitment.map_err(|e| format!("{}: {e}", path.display()))
}

/// An execution spec, JSON or canonical bytes.
fn load_spec(path: &Path) -> Result<pot::Spec, String> {
    let bytes = read(path)?;
    let spec = if looks_like_json(&bytes) {
        pot::Spec::from_json(&String::from_utf8_lossy(&bytes))
    } else {
        pot::Spec::decode(&bytes)
    };
    spec.map_err(|e| format!("{}: {e}", path.display()))
}

/// A JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number, `null` when not finite (a committed NaN loss verifies).
fn json_number(x: f64) -> String {
    if x.is_finite() { x.to_string() } else { "null".to_string() }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Verifies the step and, whatever it finds, prints the witness statement
/// with a fresh salt and its commitment. `Ok(true)`: verified (exit
/// 0); `Ok(false)`: a check failed (exit 1); `Err`: bad or unreadable input
/// (exit 2).
pub fn run(a: &ReplayArgs) -> Result<bool, String> {
    pot::check_abi().map_err(|e| e.to_string())?;
    if !pot::replay::available() {
        return Err("this libpot was built without LibTorch: it cannot replay".into());
    }
    let commitment = load_commitment(&a.commitment)?;
    let spec = load_spec(&a.spec)?;
    let manifest = read(&a.manifest)?;
    let run_id = commitment.run_id().map_err(|e| e.to_string())?;
    let mode = match a.mode {
        pot::VerifyMode::NormBucket => "bucket",
        _ => "bitwise",
    };
    if !a.json {
        println!("run {run_id}: step {} under log root {} of {} leaves, {mode} replay", a.step, a.root, a.size);
    }

    let start = Instant::now();
    let verified = pot::verify_step(
        &commitment,
        &spec,
        &a.program,
        a.step,
        a.size,
        &a.root,
        &manifest,
        &a.pre_state,
        a.post_state.as_deref(),
        a.mode,
        a.threads,
    );
    let seconds = start.elapsed().as_secs_f64();
    if let Err(failure) = &verified
        && failure.check.is_none()
    {
        // No check ran: the call itself was wrong (bad input, not a rejection).
        return Err(format!("verify: {}", failure.error));
    }
    // The witness states what it found, whatever it was (docs/PROTOCOL.md
    // section 19): the challenge, this process's environment, and the
    // replayed value or the failed check; it commits to the statement with a
    // fresh salt before anyone reveals.
    let statement = pot::witness_statement(&verified, &spec, &run_id, a.step, a.challenge_id, a.mode, a.threads)
        .map_err(|e| format!("witness statement: {e}"))?;
    let salt = pot::witness::salt().map_err(|e| format!("salt: {e}"))?;
    let witness =
        pot::witness::commitment(&statement, &salt, &a.identity).map_err(|e| format!("witness commitment: {e}"))?;
    let verification = match verified {
        Ok(v) => v,
        Err(failure) => {
            let check = failure.check.map_or("", |c| c.name());
            let message = failure.error.message();
            if a.json {
                println!(
                    "{{\"valid\":false,\"check\":{},\"message\":{},\"statement\":{statement},\"salt\":\"{}\",\
                     \"witness_commitment\":\"{witness}\"}}",
                    json_string(check),
                    json_string(message),
                    hex(&salt),
                );
            } else {
                println!("step {}: FAIL at {check}: {message}", a.step);
                println!("statement:          {statement}");
                println!("witness commitment: {witness}");
            }
            return Ok(false);
        }
    };
    let replay = verification.replay.ok_or("verify_step verified the step without a replay")?;
    if a.json {
        println!(
            "{{\"valid\":true,\"step\":{},\"check\":\"ok\",\"replayed_state\":\"{}\",\"norm_bucket\":{},\
             \"loss\":{},\"statement\":{statement},\"salt\":\"{}\",\"witness_commitment\":\"{witness}\",\
             \"seconds\":{}}}",
            a.step,
            replay.post_state_digest,
            replay.norm_bucket,
            json_number(replay.loss),
            hex(&salt),
            json_number((seconds * 1e6).round() / 1e6),
        );
    } else {
        println!("step {}: ok (replayed in {seconds:.3} s, loss {})", a.step, replay.loss);
        println!("replayed state:     {}", replay.post_state_digest);
        println!("norm bucket:        {}", replay.norm_bucket);
        println!("statement:          {statement}");
        println!("salt:               {}", hex(&salt));
        println!("witness commitment: {witness}");
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_json_strings_and_numbers() {
        assert_eq!(json_string("a \"b\"\\\n\u{1}"), "\"a \\\"b\\\"\\\\\\n\\u0001\"");
        assert_eq!(json_number(1.5), "1.5");
        assert_eq!(json_number(f64::NAN), "null");
        assert_eq!(json_number(f64::INFINITY), "null");
    }

    #[test]
    fn tells_json_from_canonical_bytes() {
        assert!(looks_like_json(b" \n{\"a\": 1}"));
        assert!(!looks_like_json(b"\x01{"));
        assert!(!looks_like_json(b""));
    }
}
