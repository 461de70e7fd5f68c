//! Tasks (docs/PROTOCOL.md section 17.1): what a task owner fixes before
//! anyone trains, and the check that a training commitment answers to it.

use crate::commitment::Commitment;
use crate::digest::Digest;
use crate::error::Result;
use crate::ffi::{self, call, cstring, digest_out, non_null};
use crate::spec::Spec;
use crate::sys;
use std::fmt;
use std::ptr::{self, NonNull};

/// A validated task (`pot_task`): the execution spec (which names the model
/// program), the dataset, the published S_0, the listed schedule, the step
/// bounds and the challenge policy.
///
/// `Send` and `Sync`: pot.h documents it as immutable, and every method
/// takes `&self`.
///
/// ```
/// let task = pot::Task::from_json(r#"{"challenge_policy": {"mode": "bitwise", "rounds": 8, "committee_size": 16}, "dataset_root": "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "dataset_size": 5000, "initial_state": {"published_digest": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, "end_height": 100000, "max_steps": 200, "min_steps": 200, "owner": "6f776e6572", "schedule": {"listed_root": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}, "spec": {"attention_backend": "math", "batch_size": 16, "deterministic_algorithms": true, "dropout": 0.1, "dtype": "F32", "framework": "pytorch", "framework_version": "1.13.1", "grad_clip_max_norm": 1.0, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "intra_op_threads": 2, "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "norm_bucket_resolution": 16, "optimizer": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-08, "kind": "adamw", "lr": 0.001, "weight_decay": 0.01}, "seed_policy": {"base_seed": 20261130, "kind": "per_step"}}}"#)?;
/// assert_eq!(task.id()?.to_hex(), "c83b5d9834d2d5a58332ce65ef94e8603babbe697339baab59cd3e1c12e51ee4");
/// assert_eq!(pot::Task::decode(&task.encode()?)?.id()?, task.id()?);
/// assert_eq!(task.spec()?.intra_op_threads(), 2);
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Task {
    raw: NonNull<sys::pot_task>,
}

// SAFETY: pot.h: "Immutable"; no thread affinity, and every method takes &self.
unsafe impl Send for Task {}
// SAFETY: as above.
unsafe impl Sync for Task {}

impl Task {
    /// Parses the JSON form (docs/cli.md "Task") and validates it.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the rule
    /// or key, [`Unsupported`](crate::ErrorKind::Unsupported) for another
    /// protocol version, [`Malformed`](crate::ErrorKind::Malformed) for text
    /// that is not JSON.
    ///
    /// ```
    /// assert_eq!(pot::Task::from_json("{}").unwrap_err().kind(), pot::ErrorKind::InvalidArgument);
    /// ```
    pub fn from_json(json: &str) -> Result<Task> {
        let json = cstring(json, "task JSON")?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_task_from_json(&mut raw, json.as_ptr(), err) })?;
        Ok(Task { raw: non_null(raw)? })
    }

    /// Decodes canonical `pot.v2.Task` bytes.
    ///
    /// # Errors
    /// [`Unsupported`](crate::ErrorKind::Unsupported) for another protocol
    /// version, [`Malformed`](crate::ErrorKind::Malformed) unless canonical,
    /// [`Limit`](crate::ErrorKind::Limit) past 73728 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Task> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_task_decode(&mut raw, bytes.as_ptr(), bytes.len(), err) })?;
        Ok(Task { raw: non_null(raw)? })
    }

    /// The canonical bytes (what the ledger's `post_task` carries).
    pub fn encode(&self) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_task_encode(out, self.raw.as_ptr(), err) })
    }

    /// The JSON form.
    pub fn to_json(&self) -> Result<String> {
        ffi::string_out(|out, err| unsafe { sys::pot_task_to_json(out, self.raw.as_ptr(), err) })
    }

    /// The task id, `tagged("pot/v2/task", canonical bytes)`.
    pub fn id(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_task_id(out, self.raw.as_ptr(), err) })
    }

    /// The task's execution spec.
    pub fn spec(&self) -> Result<Spec> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_task_spec(&mut raw, self.raw.as_ptr(), err) })?;
        Ok(Spec::from_raw(non_null(raw)?))
    }

    /// `Ok(())` when the task admits the commitment.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the first
    /// field that differs from what the task fixes,
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) for declared steps
    /// outside the task's bounds.
    pub fn check_commitment(&self, commitment: &Commitment) -> Result<()> {
        call(|err| unsafe { sys::pot_task_check_commitment(self.raw.as_ptr(), commitment.as_ptr(), err) })
    }

    /// True when every run trains on its own seeded order (the task's
    /// schedule rule is `run_seeded` or `run_seeded_uniform`,
    /// docs/PROTOCOL.md 17.3); false for one listed schedule.
    pub fn run_seeded(&self) -> Result<bool> {
        Ok(self.schedule_rule()? != sys::pot_schedule_rule::POT_SCHEDULE_LISTED)
    }

    /// True when each run's indices are drawn with replacement (the rule
    /// `run_seeded_uniform`, docs/PROTOCOL.md 16.3): the run's index stream
    /// is [`uniform_schedule_stream`](crate::uniform_schedule_stream) of its
    /// seed.
    pub fn run_seeded_uniform(&self) -> Result<bool> {
        Ok(self.schedule_rule()? == sys::pot_schedule_rule::POT_SCHEDULE_RUN_SEEDED_UNIFORM)
    }

    fn schedule_rule(&self) -> Result<sys::pot_schedule_rule> {
        let mut rule = sys::pot_schedule_rule::POT_SCHEDULE_LISTED;
        // SAFETY: live handle; rule is a valid out pointer.
        call(|err| unsafe { sys::pot_task_schedule_rule(&mut rule, self.raw.as_ptr(), err) })?;
        Ok(rule)
    }

    /// Under a run-seeded task, the seed of the schedule of the run of
    /// `miner_identity` for `declared_steps` steps: entry t is
    /// [`SeededSchedule`](crate::SeededSchedule)`{ seed, dataset_size,
    /// batch_size, microbatches: grad_accum_microbatches }.entry(t)`.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a listed
    /// task or an identity outside 1..256 bytes,
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) for a step count outside
    /// the task's bounds.
    pub fn run_schedule_seed(&self, miner_identity: &[u8], declared_steps: u64) -> Result<u64> {
        let mut seed = 0u64;
        call(|err| unsafe {
            sys::pot_task_run_schedule_seed(
                &mut seed,
                self.raw.as_ptr(),
                miner_identity.as_ptr(),
                miner_identity.len(),
                declared_steps,
                err,
            )
        })?;
        Ok(seed)
    }

    /// The training commitment of `miner_identity` for `declared_steps`
    /// steps: every other field is the task's.
    ///
    /// # Errors
    /// As [`check_commitment`](Task::check_commitment).
    pub fn commitment(&self, miner_identity: &[u8], declared_steps: u64) -> Result<Commitment> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe {
            sys::pot_task_commitment(
                &mut raw,
                self.raw.as_ptr(),
                miner_identity.as_ptr(),
                miner_identity.len(),
                declared_steps,
                err,
            )
        })?;
        Ok(Commitment::from_raw(non_null(raw)?))
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_task_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.id() {
            Ok(id) => f.debug_struct("Task").field("id", &id).finish(),
            Err(_) => f.debug_struct("Task").finish_non_exhaustive(),
        }
    }
}
