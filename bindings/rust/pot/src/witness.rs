//! Witnesses: commit, reveal and the verdict (docs/PROTOCOL.md section 19).

use crate::digest::Digest;
use crate::error::{Error, ErrorKind, Result};
use crate::ffi::{self, call, cstring, digest_out, non_null};
use crate::sys;
use std::fmt;
use std::ptr::{self, NonNull};

/// [`WITNESS_SALT_SIZE`](crate::WITNESS_SALT_SIZE) fresh bytes from
/// OpenSSL's CSPRNG.
///
/// ```
/// let (a, b) = (pot::witness::salt()?, pot::witness::salt()?);
/// assert_ne!(a, b);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn salt() -> Result<[u8; crate::WITNESS_SALT_SIZE]> {
    let mut out = [0u8; crate::WITNESS_SALT_SIZE];
    call(|err| unsafe { sys::pot_witness_salt(out.as_mut_ptr(), err) })?;
    Ok(out)
}

/// The commitment a committee member posts before revealing its statement
/// (`pot_witness_commitment`, docs/PROTOCOL.md section 19):
/// `statement_json` is the statement's JSON form (run_id, step,
/// challenge_id, mode, environment, kind and the kind's keys;
/// [`witness_statement`](crate::witness_statement) builds it after
/// [`verify_step`](crate::verify_step)), bound with the salt (16..=64 bytes)
/// and the member's identity (1..=256 bytes).
///
/// # Errors
/// [`InvalidArgument`](ErrorKind::InvalidArgument) naming the key for a
/// statement outside the rules, or for a salt or identity of a bad length;
/// [`Malformed`](ErrorKind::Malformed) for text that is not JSON.
///
/// ```
/// let st = r#"{"run_id": "0101010101010101010101010101010101010101010101010101010101010101",
///              "step": 7, "challenge_id": 2, "mode": "bitwise", "kind": "unavailable",
///              "environment": {"framework_version": "1.13.0", "intra_op_threads": 1,
///                              "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2"}}"#;
/// let salt = pot::witness::salt()?;
/// let c = pot::witness::commitment(st, &salt, b"verifier-1")?;
/// pot::witness::verify_reveal(&c, st, &salt, b"verifier-1")?;
/// assert!(pot::witness::commitment(st, &salt[..8], b"v").is_err());
/// # Ok::<(), pot::Error>(())
/// ```
pub fn commitment(statement_json: &str, salt: &[u8], identity: &[u8]) -> Result<Digest> {
    let st = cstring(statement_json, "witness statement")?;
    digest_out(|out, err| unsafe {
        sys::pot_witness_commitment(out, st.as_ptr(), salt.as_ptr(), salt.len(), identity.as_ptr(), identity.len(), err)
    })
}

/// Checks that a reveal (statement, salt, identity) opens `commitment`.
///
/// # Errors
/// [`ProofMismatch`](ErrorKind::ProofMismatch) when the statement (another
/// challenge, environment or finding), the salt or the identity differ from
/// those committed.
///
/// ```
/// let st = |cid: u64| format!(r#"{{"run_id": "{}", "step": 7, "challenge_id": {cid}, "mode": "norm_bucket",
///     "kind": "replayed", "replayed_state": "{}", "bucket": 3, "gradient_digest": "{}",
///     "environment": {{"framework_version": "1.13.1", "intra_op_threads": 4, "hardware_class": "cpu"}}}}"#,
///     "01".repeat(32), "02".repeat(32), "03".repeat(32));
/// let salt = [9u8; 16];
/// let c = pot::witness::commitment(&st(2), &salt, b"alice")?;
/// let err = pot::witness::verify_reveal(&c, &st(3), &salt, b"alice").unwrap_err();
/// assert_eq!(err.kind(), pot::ErrorKind::ProofMismatch);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn verify_reveal(commitment: &Digest, statement_json: &str, salt: &[u8], identity: &[u8]) -> Result<()> {
    let st = cstring(statement_json, "witness statement")?;
    call(|err| unsafe {
        sys::pot_witness_verify_reveal(
            commitment.as_ptr(),
            st.as_ptr(),
            salt.as_ptr(),
            salt.len(),
            identity.as_ptr(),
            identity.len(),
            err,
        )
    })
}

/// What the revealed values are clustered by (`pot_witness_mode`).
///
/// ```
/// let v = pot::Verdict::new(pot::WitnessMode::NormBucket, 2)?;
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WitnessMode {
    /// Clusters of replayed state digests, compared with the committed digest.
    Bitwise,
    /// Clusters of norm buckets, compared with the committed bucket (of the
    /// opened leaf's update norm).
    NormBucket,
}

/// The outcome of a [`Verdict`] (`pot_verdict_outcome`).
///
/// ```
/// assert_eq!(pot::VerdictOutcome::Inconclusive.to_string(), "INCONCLUSIVE");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum VerdictOutcome {
    /// The largest cluster agrees with the miner.
    Pass,
    /// The largest cluster disagrees with the miner.
    Fail,
    /// No cluster reached the quorum, or two tied.
    Inconclusive,
}

impl fmt::Display for VerdictOutcome {
    /// `PASS`, `FAIL` or `INCONCLUSIVE`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VerdictOutcome::Pass => "PASS",
            VerdictOutcome::Fail => "FAIL",
            VerdictOutcome::Inconclusive => "INCONCLUSIVE",
        })
    }
}

/// The result of [`Verdict::decide`].
///
/// ```
/// let mut v = pot::Verdict::new(pot::WitnessMode::Bitwise, 1)?;
/// let d: pot::Decision = v.decide(&pot::Digest::default(), None)?;
/// assert_eq!((d.outcome, d.cluster_size), (pot::VerdictOutcome::Inconclusive, 0));
/// assert!(!d.reason.is_empty());
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// PASS, FAIL or INCONCLUSIVE.
    pub outcome: VerdictOutcome,
    /// Reveals in the largest cluster.
    pub cluster_size: usize,
    /// Why it decided so.
    pub reason: String,
}

/// Collects revealed values and decides (`pot_verdict`): the largest cluster
/// of equal values must reach the quorum and be strictly larger than any
/// other (else INCONCLUSIVE); it is then compared with the committed state
/// digest (bitwise) or, allowing adjacent buckets, with the committed bucket.
///
/// `Send`, not `Sync` (pot.h's rule for handles; `decide` also rewrites the
/// reason).
///
/// ```
/// use pot::{Digest, Verdict, VerdictOutcome, WitnessMode};
///
/// let committed = Digest::new([7; 32]);
/// let mut v = Verdict::new(WitnessMode::Bitwise, 2)?;
/// v.add_reveal(b"alice", &committed, 0)?;
/// v.add_reveal(b"bob", &committed, 0)?;
/// v.add_reveal(b"carol", &Digest::new([8; 32]), 0)?;
/// let d = v.decide(&committed, None)?;
/// assert_eq!((d.outcome, d.cluster_size), (VerdictOutcome::Pass, 2));
/// assert_eq!(v.reason(), d.reason);
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Verdict {
    raw: NonNull<sys::pot_verdict>,
}

// SAFETY: no thread affinity. Not Sync: pot.h's one-thread-per-handle rule.
unsafe impl Send for Verdict {}

impl Verdict {
    /// A verdict in `mode` needing `quorum` reveals in the winning cluster.
    ///
    /// ```
    /// let v = pot::Verdict::new(pot::WitnessMode::Bitwise, 3)?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new(mode: WitnessMode, quorum: u32) -> Result<Verdict> {
        let mode = match mode {
            WitnessMode::Bitwise => sys::pot_witness_mode::POT_WITNESS_BITWISE,
            WitnessMode::NormBucket => sys::pot_witness_mode::POT_WITNESS_NORM_BUCKET,
        };
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_verdict_new(&mut raw, mode, quorum, err) })?;
        Ok(Verdict { raw: non_null(raw)? })
    }

    /// Adds one verifier's revealed value (its replayed digest and bucket).
    ///
    /// ```
    /// let mut v = pot::Verdict::new(pot::WitnessMode::NormBucket, 1)?;
    /// v.add_reveal(b"alice", &pot::Digest::default(), -1199)?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn add_reveal(&mut self, identity: &[u8], replayed_state: &Digest, bucket: i64) -> Result<()> {
        call(|err| unsafe {
            sys::pot_verdict_add_reveal(
                self.raw.as_ptr(),
                identity.as_ptr(),
                identity.len(),
                replayed_state.as_ptr(),
                bucket,
                err,
            )
        })
    }

    /// Decides. `committed_bucket` (the bucket of the opened leaf's update
    /// norm) is needed in norm-bucket mode.
    ///
    /// # Errors
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) for an identity
    /// revealed twice, or a norm-bucket verdict without a committed bucket.
    ///
    /// ```
    /// let mut v = pot::Verdict::new(pot::WitnessMode::NormBucket, 2)?;
    /// v.add_reveal(b"alice", &pot::Digest::default(), -1199)?;
    /// v.add_reveal(b"bob", &pot::Digest::new([1; 32]), -1199)?;
    /// let d = v.decide(&pot::Digest::default(), Some(-1200))?;
    /// assert_eq!(d.outcome, pot::VerdictOutcome::Pass);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn decide(&mut self, committed_state: &Digest, committed_bucket: Option<i64>) -> Result<Decision> {
        let mut outcome = sys::pot_verdict_outcome(0);
        let mut cluster = 0usize;
        let declared = committed_bucket.as_ref().map_or(ptr::null(), |b| b as *const i64);
        call(|err| unsafe {
            sys::pot_verdict_decide(
                &mut outcome,
                &mut cluster,
                self.raw.as_ptr(),
                committed_state.as_ptr(),
                declared,
                err,
            )
        })?;
        let outcome = match outcome {
            sys::pot_verdict_outcome::POT_VERDICT_PASS => VerdictOutcome::Pass,
            sys::pot_verdict_outcome::POT_VERDICT_FAIL => VerdictOutcome::Fail,
            sys::pot_verdict_outcome::POT_VERDICT_INCONCLUSIVE => VerdictOutcome::Inconclusive,
            other => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("verdict outcome {} is not known to this version of the pot crate", other.0),
                ));
            }
        };
        Ok(Decision { outcome, cluster_size: cluster, reason: self.reason().to_owned() })
    }

    /// Why the last [`decide`](Verdict::decide) decided as it did (`""` before).
    ///
    /// ```
    /// assert_eq!(pot::Verdict::new(pot::WitnessMode::Bitwise, 1)?.reason(), "");
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn reason(&self) -> &str {
        // SAFETY: valid until the next call on the handle, which needs &mut
        // self (decide) or drops it, so not while this borrow lives.
        unsafe { ffi::borrowed_str(sys::pot_verdict_reason(self.raw.as_ptr())) }.unwrap_or("")
    }
}

impl Drop for Verdict {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_verdict_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verdict").field("reason", &self.reason()).finish()
    }
}
