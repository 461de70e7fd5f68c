//! Openings of challenged steps (docs/PROTOCOL.md section 18): the miner's
//! manifest builder and the verifier's check.

use crate::commitment::Commitment;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::ffi::{self, ByteList, call, digest_out, non_null, opt_ptr, path_cstring};
use crate::sys;
use std::ffi::CString;
use std::fmt;
use std::path::Path;
use std::ptr::{self, NonNull};

/// An opening manifest being built by the miner (`pot_opening`). States are
/// not part of it: name the served safetensors files with
/// [`set_state_refs`](Opening::set_state_refs).
///
/// `Send`, not `Sync` (pot.h's rule for handles).
///
/// ```
/// let run_id = pot::Digest::new([1; 32]);
/// let mut o = pot::Opening::new(&run_id, 1, 4, &pot::Digest::new([2; 32]))?;
/// o.set_state_refs(Some("state-0.safetensors"), None)?;
/// let manifest = o.encode()?;
/// assert_eq!(o.digest()?.0.len(), 32);
/// // Not a complete opening: a verifier rejects it, naming the check.
/// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 8, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 4, "miner_identity": "6d696e6572"}"#)?;
/// let failure = pot::verify_opening(&c, 1, 4, &pot::Digest::default(), &manifest, None, None, 1).unwrap_err();
/// assert_eq!(failure.check, Some(pot::OpeningCheck::RunId));
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Opening {
    raw: NonNull<sys::pot_opening>,
}

// SAFETY: no thread affinity. Not Sync: pot.h's one-thread-per-handle rule.
unsafe impl Send for Opening {}

impl Opening {
    /// Starts a manifest for step `step` of run `run_id`, whose leaf proofs
    /// are made against the posted log root of `log_size` leaves, with the
    /// digest of the state before the step.
    ///
    /// ```
    /// let o = pot::Opening::new(&pot::Digest::new([1; 32]), 2, 2, &pot::Digest::default())?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new(run_id: &Digest, step: u64, log_size: u64, pre_state_digest: &Digest) -> Result<Opening> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe {
            sys::pot_opening_new(&mut raw, run_id.as_ptr(), step, log_size, pre_state_digest.as_ptr(), err)
        })?;
        Ok(Opening { raw: non_null(raw)? })
    }

    /// Leaf `t-1` and its inclusion proof (not for step 1).
    ///
    /// ```
    /// # let mut o = pot::Opening::new(&pot::Digest::new([1; 32]), 2, 2, &pot::Digest::default())?;
    /// let leaf = pot::StepLeaf { run_id: pot::Digest::default(), step: 1, state_digest: pot::Digest::default(), stats_digest: pot::Digest::default(), loss: 1.0, update_norm: 0.0 }.encode()?;
    /// o.set_pre_leaf(&leaf, &[0; 32])?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn set_pre_leaf(&mut self, leaf: &[u8], proof: &[u8]) -> Result<()> {
        call(|err| unsafe {
            sys::pot_opening_set_pre_leaf(
                self.raw.as_ptr(),
                leaf.as_ptr(),
                leaf.len(),
                proof.as_ptr(),
                proof.len(),
                err,
            )
        })
    }

    /// Leaf `t` and its inclusion proof.
    ///
    /// ```
    /// # let mut o = pot::Opening::new(&pot::Digest::new([1; 32]), 2, 2, &pot::Digest::default())?;
    /// let leaf = pot::StepLeaf { run_id: pot::Digest::default(), step: 2, state_digest: pot::Digest::default(), stats_digest: pot::Digest::default(), loss: 0.5, update_norm: 0.0 }.encode()?;
    /// o.set_post_leaf(&leaf, &[0; 32])?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn set_post_leaf(&mut self, leaf: &[u8], proof: &[u8]) -> Result<()> {
        call(|err| unsafe {
            sys::pot_opening_set_post_leaf(
                self.raw.as_ptr(),
                leaf.as_ptr(),
                leaf.len(),
                proof.as_ptr(),
                proof.len(),
                err,
            )
        })
    }

    /// The schedule entry of step `t` and its inclusion proof in the
    /// schedule root.
    ///
    /// ```
    /// # let mut o = pot::Opening::new(&pot::Digest::new([1; 32]), 2, 2, &pot::Digest::default())?;
    /// let s = pot::SeededSchedule { seed: 1, dataset_size: 8, batch_size: 2, microbatches: 1 };
    /// o.set_schedule(&s.entry(2)?, &[0; 32])?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn set_schedule(&mut self, entry: &[u8], proof: &[u8]) -> Result<()> {
        call(|err| unsafe {
            sys::pot_opening_set_schedule(
                self.raw.as_ptr(),
                entry.as_ptr(),
                entry.len(),
                proof.as_ptr(),
                proof.len(),
                err,
            )
        })
    }

    /// Appends the next sample of the batch: its dataset index, its
    /// safetensors bytes (copied) and its inclusion proof in the dataset root.
    ///
    /// ```
    /// # let mut o = pot::Opening::new(&pot::Digest::new([1; 32]), 2, 2, &pot::Digest::default())?;
    /// o.add_sample(3, b"sample bytes", &[0; 96])?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn add_sample(&mut self, index: u64, payload: &[u8], proof: &[u8]) -> Result<()> {
        call(|err| unsafe {
            sys::pot_opening_add_sample(
                self.raw.as_ptr(),
                index,
                payload.as_ptr(),
                payload.len(),
                proof.as_ptr(),
                proof.len(),
                err,
            )
        })
    }

    /// Where the state files are served (paths or URIs; `None` for none).
    ///
    /// ```
    /// # let mut o = pot::Opening::new(&pot::Digest::new([1; 32]), 2, 2, &pot::Digest::default())?;
    /// o.set_state_refs(Some("https://example.org/state-1.safetensors"), None)?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn set_state_refs(&mut self, pre_state_ref: Option<&str>, post_state_ref: Option<&str>) -> Result<()> {
        let pre = pre_state_ref.map(|s| ffi::cstring(s, "pre_state_ref")).transpose()?;
        let post = post_state_ref.map(|s| ffi::cstring(s, "post_state_ref")).transpose()?;
        call(|err| unsafe { sys::pot_opening_set_state_refs(self.raw.as_ptr(), opt_ptr(&pre), opt_ptr(&post), err) })
    }

    /// The run record every opening serves since 0.3.0 (docs/PROTOCOL.md
    /// 18, fields 16-18; check 32): the `log_size` step leaves
    /// concatenated, the statistics table of `S_1..S_{log_size}` in order,
    /// and the steps those tables flag ([`run_flags`](crate::run_flags)),
    /// ascending.
    pub fn set_run_record<T: AsRef<[u8]>>(&mut self, leaves: &[u8], tables: &[T], flagged_steps: &[u64]) -> Result<()> {
        let list = ByteList::new(tables.iter().map(|t| t.as_ref()));
        call(|err| unsafe {
            sys::pot_opening_set_run_record(
                self.raw.as_ptr(),
                leaves.as_ptr(),
                leaves.len(),
                list.ptrs(),
                list.lens(),
                list.len(),
                flagged_steps.as_ptr(),
                flagged_steps.len(),
                err,
            )
        })
    }

    /// The canonical manifest bytes (a `pot.v2.OpeningManifest`).
    ///
    /// # Errors
    /// [`Limit`](crate::ErrorKind::Limit) past 256 MiB.
    ///
    /// ```
    /// # let o = pot::Opening::new(&pot::Digest::new([1; 32]), 2, 2, &pot::Digest::default())?;
    /// assert!(!o.encode()?.is_empty());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn encode(&self) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_opening_encode(out, self.raw.as_ptr(), err) })
    }

    /// The manifest digest, `tagged("pot/v1/opening", canonical bytes)`:
    /// what the ledger records.
    ///
    /// ```
    /// # let o = pot::Opening::new(&pot::Digest::new([1; 32]), 2, 2, &pot::Digest::default())?;
    /// let d: pot::Digest = o.digest()?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn digest(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_opening_digest(out, self.raw.as_ptr(), err) })
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_opening_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Opening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opening").finish_non_exhaustive()
    }
}

/// A check of [`verify_opening`] and [`verify_step`](crate::verify_step)
/// (`pot_opening_check`), in the order they run (sections 18 and 21.5).
/// Displays as its stable lower-case name (`pot_opening_check_name`).
///
/// ```
/// assert_eq!(pot::OpeningCheck::PostLeafProof.to_string(), "post_leaf_proof");
/// assert_eq!(pot::OpeningCheck::from_raw(2), Some(pot::OpeningCheck::RunId));
/// assert_eq!(pot::OpeningCheck::from_raw(0), None); // POT_CHECK_OK
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum OpeningCheck {
    /// The bytes are a canonical manifest.
    Manifest,
    /// The manifest is for the commitment's run.
    RunId,
    /// `1 <= t <= declared_steps` (and `t <= log_size`).
    Step,
    /// The proofs are for the posted root's size.
    LogSize,
    /// Leaf `t` decodes and names step `t`.
    PostLeaf,
    /// Leaf `t` is in the posted log.
    PostLeafProof,
    /// For `t = 1`: the pre-state is the committed initial state.
    PreStateCommitted,
    /// For `t > 1`: leaf `t-1` decodes, names step `t-1` and commits to the pre-state.
    PreLeaf,
    /// Leaf `t-1` is in the posted log.
    PreLeafProof,
    /// The schedule entry decodes and is for step `t`.
    ScheduleEntry,
    /// The entry is in the committed schedule.
    ScheduleProof,
    /// One sample per scheduled index.
    SampleCount,
    /// Each sample's index is the scheduled one.
    SampleIndex,
    /// Each payload is a valid sample.
    SamplePayload,
    /// Each sample digest is in the committed dataset.
    SampleProof,
    /// The served pre-state file digests to the manifest's pre-state digest.
    PreStateDigest,
    /// The served post-state file digests to leaf `t`'s digest.
    PostStateDigest,
    /// [`verify_step`](crate::verify_step) only: the spec is the commitment's.
    Spec,
    /// [`verify_step`](crate::verify_step) only: the model program is the
    /// spec's (and LibTorch loads it).
    Program,
    /// [`verify_step`](crate::verify_step) only: the step replays (the
    /// message says why not).
    Replay,
    /// [`verify_step`](crate::verify_step) only, bitwise: the replayed `S_t`
    /// digests to leaf `t`'s state digest.
    ReplayedState,
    /// [`verify_step`](crate::verify_step) only, bitwise: the replayed loss
    /// has leaf `t`'s bits.
    ReplayedLoss,
    /// [`verify_step`](crate::verify_step) only, norm bucket: the replayed
    /// update's bucket matches the bucket of leaf `t`'s committed norm.
    ReplayedBucket,
    /// No NaN or infinity in leaf `t`'s loss or a served state (after the
    /// checks of [`verify_opening`]) nor, in [`verify_step`](crate::verify_step),
    /// in a gradient, the replayed loss or the replayed `S_t`.
    NonFinite,
    /// [`verify_step`](crate::verify_step) only, before the replay: the
    /// served `S_{t-1}` (cross-architecture: also `S_t`) holds the learning
    /// rate the spec's schedule gives step `t` (`t+1`).
    LearningRate,
    /// Leaf `t`'s update norm is, bit for bit, the norm from `S_{t-1}` to the
    /// served `S_t` (after [`NonFinite`](OpeningCheck::NonFinite), when
    /// `S_t` is served) or, in [`verify_step`](crate::verify_step)'s bitwise
    /// path, to the replayed `S_t`.
    CommittedNorm,
    /// [`verify_step`](crate::verify_step) only, last: the replayed `S_t`
    /// depends on the step's gradient (a zero gradient does not give the same
    /// state). Saturated optimizer state fails here
    /// ([`GradientTrace`](crate::GradientTrace)).
    GradientIgnored,
    /// After [`NonFinite`](OpeningCheck::NonFinite): a served state holds no
    /// more subnormal values than one in 4096 of its `param/` elements and
    /// one in 16 of the others (a state honest training does not reach,
    /// whose replay would cost a verifier many steps' time). Since 0.3.0.
    Subnormal,
    /// [`verify_step`](crate::verify_step) only, norm-bucket path, after
    /// [`ReplayedLoss`](OpeningCheck::ReplayedLoss): the served `S_t`'s update
    /// is the replayed one within the tolerances (a relative distance of at
    /// most 0.5 as a whole (0.8 with 16-bit parameters), 0.5 for one F32 or
    /// F64 tensor of 64 or more elements).
    /// Since 0.3.0.
    ReplayedUpdate,
    /// [`verify_step`](crate::verify_step) only, last: the task's program,
    /// not the miner's work, decides the step (its result depends on the
    /// thread count, or its declared randomness changes nothing). The
    /// ledger never counts it against the miner. Since 0.3.0.
    TaskProgram,
    /// A state's statistics table (docs/PROTOCOL.md 5.2) is not the one its
    /// leaf commits: the served `S_{t-1}` or `S_t`, or the replayed `S_t`.
    /// Since 0.3.0.
    StateStats,
    /// The opening's run record (every leaf, every state's statistics
    /// table, the flagged steps) is not the posted log's, lists other steps
    /// than its tables flag, or other than the run sealed with on the ledger
    /// ([`Commitment::set_sealed_flags`](crate::Commitment::set_sealed_flags)).
    /// Since 0.3.0.
    RunFlags,
    /// A check this crate does not know (appended by a later libpot).
    Other(u32),
}

const CHECKS: [OpeningCheck; 32] = [
    OpeningCheck::Manifest,
    OpeningCheck::RunId,
    OpeningCheck::Step,
    OpeningCheck::LogSize,
    OpeningCheck::PostLeaf,
    OpeningCheck::PostLeafProof,
    OpeningCheck::PreStateCommitted,
    OpeningCheck::PreLeaf,
    OpeningCheck::PreLeafProof,
    OpeningCheck::ScheduleEntry,
    OpeningCheck::ScheduleProof,
    OpeningCheck::SampleCount,
    OpeningCheck::SampleIndex,
    OpeningCheck::SamplePayload,
    OpeningCheck::SampleProof,
    OpeningCheck::PreStateDigest,
    OpeningCheck::PostStateDigest,
    OpeningCheck::Spec,
    OpeningCheck::Program,
    OpeningCheck::Replay,
    OpeningCheck::ReplayedState,
    OpeningCheck::ReplayedLoss,
    OpeningCheck::ReplayedBucket,
    OpeningCheck::NonFinite,
    OpeningCheck::LearningRate,
    OpeningCheck::CommittedNorm,
    OpeningCheck::GradientIgnored,
    OpeningCheck::Subnormal,
    OpeningCheck::ReplayedUpdate,
    OpeningCheck::TaskProgram,
    OpeningCheck::StateStats,
    OpeningCheck::RunFlags,
];

impl OpeningCheck {
    /// The check of a `pot_opening_check` value; `None` for `POT_CHECK_OK` (0).
    ///
    /// ```
    /// assert_eq!(pot::OpeningCheck::from_raw(17), Some(pot::OpeningCheck::PostStateDigest));
    /// assert_eq!(pot::OpeningCheck::from_raw(21), Some(pot::OpeningCheck::ReplayedState));
    /// assert_eq!(pot::OpeningCheck::from_raw(99), Some(pot::OpeningCheck::Other(99)));
    /// ```
    pub fn from_raw(raw: u32) -> Option<OpeningCheck> {
        match raw {
            0 => None,
            r if r as usize <= CHECKS.len() => Some(CHECKS[r as usize - 1]),
            r => Some(OpeningCheck::Other(r)),
        }
    }

    /// The `pot_opening_check` value.
    ///
    /// ```
    /// assert_eq!(pot::OpeningCheck::Manifest.raw(), 1);
    /// ```
    pub fn raw(self) -> u32 {
        match self {
            OpeningCheck::Other(r) => r,
            c => CHECKS.iter().position(|x| *x == c).map_or(0, |i| i as u32 + 1),
        }
    }

    /// The stable lower-case name (`"post_leaf_proof"`), from
    /// `pot_opening_check_name`; `"unknown"` for an unknown check.
    ///
    /// ```
    /// assert_eq!(pot::OpeningCheck::SampleProof.name(), "sample_proof");
    /// ```
    pub fn name(self) -> &'static str {
        // SAFETY: takes any value, returns static storage.
        unsafe { ffi::static_str(sys::pot_opening_check_name(sys::pot_opening_check(self.raw()))) }
    }
}

impl fmt::Display for OpeningCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why [`verify_opening`] rejected an opening: the first failed check and
/// the error naming it.
///
/// `check` is `None` when no check ran (bad arguments, an ABI mismatch).
/// Displays as `opening rejected at <check>: <error>`, and converts into
/// [`Error`] for `?`.
///
/// ```
/// # let c = pot::Commitment::from_json(r#"{"initial_state_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "schedule_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 8, "spec_digest": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "declared_steps": 4, "miner_identity": "6d696e6572"}"#)?;
/// let failure = pot::verify_opening(&c, 1, 4, &pot::Digest::default(), b"junk", None, None, 1).unwrap_err();
/// assert_eq!(failure.check, Some(pot::OpeningCheck::Manifest));
/// assert_eq!(failure.error.kind(), pot::ErrorKind::Malformed);
/// assert!(failure.to_string().starts_with("opening rejected at manifest: "));
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpeningFailure {
    /// The first check that failed, `None` when none ran.
    pub check: Option<OpeningCheck>,
    /// The status and message of the failure.
    pub error: Error,
}

impl fmt::Display for OpeningFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.check {
            Some(check) => write!(f, "opening rejected at {check}: {}", self.error),
            None => write!(f, "opening not verified: {}", self.error),
        }
    }
}

impl std::error::Error for OpeningFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<OpeningFailure> for Error {
    fn from(f: OpeningFailure) -> Error {
        f.error
    }
}

/// Verifies manifest bytes as the opening of `challenged_step` (a valid
/// opening of another step fails [`OpeningCheck::Step`]) against the
/// commitment and the posted log root of `log_size` leaves, and, when given,
/// the served state files (digested as they stream, `threads` = 0 for all
/// cores). Everything but the replay itself is checked, in the order of
/// [`OpeningCheck`]. Thread-safe.
///
/// # Errors
/// An [`OpeningFailure`] naming the first failed check, with its status
/// ([`ProofMismatch`](crate::ErrorKind::ProofMismatch),
/// [`Malformed`](crate::ErrorKind::Malformed), [`Io`](crate::ErrorKind::Io)...)
/// and message.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let commitment = pot::Commitment::from_json(&std::fs::read_to_string("run/commitment.json")?)?;
/// let manifest = std::fs::read("run/opening-5.bin")?;
/// let root: pot::Digest = "f138e902c8a774cb317c478ec423b05b758d76091bdeb892c340c11336b5a271".parse()?;
/// match pot::verify_opening(&commitment, 5, 6, &root, &manifest,
///                           Some("run/state-4.safetensors".as_ref()),
///                           Some("run/state-5.safetensors".as_ref()), 0) {
///     Ok(()) => println!("step 5: all checks pass"),
///     Err(failure) => println!("step 5: {failure}"),
/// }
/// # Ok(())
/// # }
/// ```
#[allow(clippy::too_many_arguments)] // pot_opening_verify's arguments, one for one
pub fn verify_opening(
    commitment: &Commitment,
    challenged_step: u64,
    log_size: u64,
    log_root: &Digest,
    manifest: &[u8],
    pre_state: Option<&Path>,
    post_state: Option<&Path>,
    threads: u32,
) -> std::result::Result<(), OpeningFailure> {
    let no_check = |error: Error| OpeningFailure { check: None, error };
    let pre: Option<CString> = pre_state.map(path_cstring).transpose().map_err(no_check)?;
    let post: Option<CString> = post_state.map(path_cstring).transpose().map_err(no_check)?;
    let mut check = sys::pot_opening_check::POT_CHECK_OK;
    let result = call(|err| unsafe {
        sys::pot_opening_verify(
            &mut check,
            commitment.as_ptr(),
            challenged_step,
            log_size,
            log_root.as_ptr(),
            manifest.as_ptr(),
            manifest.len(),
            opt_ptr(&pre),
            opt_ptr(&post),
            threads,
            err,
        )
    });
    let failure = result.err().map(|error| OpeningFailure { check: OpeningCheck::from_raw(check.0), error });
    failure.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values_and_names_match_the_header() {
        assert_eq!(OpeningCheck::Manifest.raw(), sys::pot_opening_check::POT_CHECK_MANIFEST.0);
        assert_eq!(OpeningCheck::PostStateDigest.raw(), sys::pot_opening_check::POT_CHECK_POST_STATE_DIGEST.0);
        assert_eq!(OpeningCheck::SampleCount.raw(), sys::pot_opening_check::POT_CHECK_SAMPLE_COUNT.0);
        assert_eq!(OpeningCheck::Spec.raw(), sys::pot_opening_check::POT_CHECK_SPEC.0);
        assert_eq!(OpeningCheck::Program.raw(), sys::pot_opening_check::POT_CHECK_PROGRAM.0);
        assert_eq!(OpeningCheck::Replay.raw(), sys::pot_opening_check::POT_CHECK_REPLAY.0);
        assert_eq!(OpeningCheck::ReplayedState.raw(), sys::pot_opening_check::POT_CHECK_REPLAYED_STATE.0);
        assert_eq!(OpeningCheck::ReplayedLoss.raw(), sys::pot_opening_check::POT_CHECK_REPLAYED_LOSS.0);
        assert_eq!(OpeningCheck::ReplayedBucket.raw(), sys::pot_opening_check::POT_CHECK_REPLAYED_BUCKET.0);
        assert_eq!(OpeningCheck::NonFinite.raw(), sys::pot_opening_check::POT_CHECK_NONFINITE.0);
        assert_eq!(OpeningCheck::LearningRate.raw(), sys::pot_opening_check::POT_CHECK_LEARNING_RATE.0);
        assert_eq!(OpeningCheck::CommittedNorm.raw(), sys::pot_opening_check::POT_CHECK_COMMITTED_NORM.0);
        assert_eq!(OpeningCheck::GradientIgnored.raw(), sys::pot_opening_check::POT_CHECK_GRADIENT_IGNORED.0);
        assert_eq!(OpeningCheck::Subnormal.raw(), sys::pot_opening_check::POT_CHECK_SUBNORMAL.0);
        assert_eq!(OpeningCheck::ReplayedUpdate.raw(), sys::pot_opening_check::POT_CHECK_REPLAYED_UPDATE.0);
        assert_eq!(OpeningCheck::TaskProgram.raw(), sys::pot_opening_check::POT_CHECK_TASK_PROGRAM.0);
        assert_eq!(OpeningCheck::StateStats.raw(), sys::pot_opening_check::POT_CHECK_STATE_STATS.0);
        assert_eq!(OpeningCheck::RunFlags.raw(), sys::pot_opening_check::POT_CHECK_RUN_FLAGS.0);
        for (check, name) in [
            (OpeningCheck::Spec, "spec"),
            (OpeningCheck::Program, "program"),
            (OpeningCheck::Replay, "replay"),
            (OpeningCheck::ReplayedState, "replayed_state"),
            (OpeningCheck::ReplayedLoss, "replayed_loss"),
            (OpeningCheck::ReplayedBucket, "replayed_bucket"),
            (OpeningCheck::NonFinite, "nonfinite"),
            (OpeningCheck::LearningRate, "learning_rate"),
            (OpeningCheck::CommittedNorm, "committed_norm"),
            (OpeningCheck::GradientIgnored, "gradient_ignored"),
            (OpeningCheck::Subnormal, "subnormal"),
            (OpeningCheck::ReplayedUpdate, "replayed_update"),
            (OpeningCheck::TaskProgram, "task_program"),
            (OpeningCheck::StateStats, "state_stats"),
            (OpeningCheck::RunFlags, "run_flags"),
        ] {
            assert_eq!(check.name(), name);
        }
        assert_eq!(OpeningCheck::from_raw(33), Some(OpeningCheck::Other(33)));
        for raw in 1..=27 {
            let c = OpeningCheck::from_raw(raw).unwrap();
            assert_eq!(c.raw(), raw);
            assert_ne!(c.name(), "unknown");
            assert!(c.name().chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'));
        }
        assert_eq!(OpeningCheck::Other(1000).name(), "unknown");
    }
}
