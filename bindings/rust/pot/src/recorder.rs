//! The trainer side of replay (docs/PROTOCOL.md section 21.4): the
//! [`Recorder`] that logs every step and keeps checkpoints, and
//! [`Checkpoints`], its directory opened to serve openings.
//!
//! Both need a libpot built with LibTorch
//! ([`replay::available`](crate::replay::available)); without it their
//! constructors fail with [`Unsupported`](crate::ErrorKind::Unsupported).

use crate::commitment::Commitment;
use crate::digest::Digest;
use crate::error::{Error, ErrorKind, Result};
use crate::ffi::{self, ByteList, call, digest_out, non_null, path_cstring, string_out};
use crate::safetensors::SafetensorsWriter;
use crate::spec::Spec;
use crate::statecheck::FlaggedStep;
use crate::sys;
use std::fmt;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};

/// The trainer-side recorder (`pot_recorder`): digests every state, appends
/// the step leaves to the log, and keeps every `k`-th state as a checkpoint
/// in a directory that [`Checkpoints`] serves openings from.
///
/// States are passed as a [`SafetensorsWriter`] holding the tensors under
/// the canonical names of section 21.1 (`param/...`, `optim/...`,
/// `hparam/lr`, ...); it is only read.
///
/// `Send`, not `Sync` (pot.h: one handle per thread).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("pot-doc-recorder-{}", std::process::id()));
/// # let _ = std::fs::remove_dir_all(&dir);
/// # std::fs::create_dir_all(&dir).unwrap();
/// let program = dir.join("program.pt");
/// std::fs::write(&program, b"the TorchScript file").unwrap();
/// // The recorder refuses a class other than this process's.
/// let class = pot::replay::hardware_class().unwrap_or("cpu-x86_64/aten:avx2/onednn:avx2");
/// let spec = pot::Spec::from_json(&format!(r#"{{"framework": "pytorch", "framework_version": "1.13.1",
///     "model_program_digest": "{}", "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
///     "optimizer": {{"kind": "sgd", "lr": 0.1}}, "batch_size": 8, "intra_op_threads": 1,
///     "hardware_class": "{class}", "seed_policy": {{"kind": "none"}}, "norm_bucket_resolution": 16}}"#,
///     pot::program_digest_file(&program)?))?;
/// let mut recorder = match pot::Recorder::new(dir.join("ck"), &spec, &program, 1) {
///     Ok(r) => r,
///     Err(e) => {
///         assert!(!pot::replay::available() && e.kind() == pot::ErrorKind::Unsupported);
///         return Ok(());
///     }
/// };
/// let (w, lr) = (vec![0u8; 8], 0.1f64.to_le_bytes());
/// let mut s0 = pot::SafetensorsWriter::new()?;
/// s0.add("param/w", pot::Dtype::F32, &[2], &w)?;
/// s0.add("hparam/lr", pot::Dtype::F64, &[], &lr)?;
/// let initial_state = recorder.start(&s0)?;
/// // The commitment comes before the first step: step leaves name the run.
/// let entry = pot::ScheduleEntry { step: 1, indices: vec![0], microbatch_sizes: vec![1] }.encode(1)?;
/// let commitment = pot::Commitment::from_json(&format!(r#"{{"task_id": "{}", "initial_state_digest": "{}",
///     "schedule_root": "{}", "dataset_root": "{}", "dataset_size": 1, "spec_digest": "{}",
///     "declared_steps": 1, "miner_identity": "6d696e6572"}}"#, pot::Digest::default(), initial_state,
///     pot::merkle::leaf_hash(&entry)?, pot::Digest::default(), spec.digest()?))?;
/// recorder.set_commitment(&commitment, &[&entry])?;
/// assert_eq!(recorder.begin_step(1)?, 0); // seed policy "none": no seed
/// let s1_digest = recorder.end_step(&s0, 2.5)?; // S_1 (here equal to S_0) and the loss
/// let root = recorder.finish()?;
/// // S_1's statistics table (docs/PROTOCOL.md 5.2), kept next to the log.
/// let stats = pot::StateStats::decode(&std::fs::read(dir.join("ck/stats/000000000001.stats")).unwrap())?;
/// let leaf = pot::StepLeaf { run_id: commitment.run_id()?, step: 1, state_digest: s1_digest,
///                            stats_digest: stats.digest(), loss: 2.5, update_norm: 0.0 };
/// assert_eq!(root, pot::merkle::leaf_hash(&leaf.encode()?)?);
/// assert_eq!(s1_digest, initial_state);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Recorder {
    raw: NonNull<sys::pot_recorder>,
}

// SAFETY: no thread affinity. Not Sync: pot.h's one-handle-per-thread rule.
unsafe impl Send for Recorder {}

impl Recorder {
    /// Creates the checkpoint directory `dir` and copies the program in; a
    /// checkpoint is kept every `checkpoint_every` steps (>= 1), and of
    /// `S_0` and the last declared step.
    ///
    /// # Errors
    /// [`Conflict`](crate::ErrorKind::Conflict) when `dir` already holds a run,
    /// [`ProofMismatch`](crate::ErrorKind::ProofMismatch) when the program's digest
    /// is not the spec's, [`Io`](crate::ErrorKind::Io) when the program cannot be
    /// read or the directory written,
    /// [`Unsupported`](crate::ErrorKind::Unsupported) without LibTorch.
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "2.3.0", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16}"#)?;
    /// let dir = std::env::temp_dir().join(format!("pot-doc-recorder-new-{}", std::process::id()));
    /// let err = pot::Recorder::new(&dir, &spec, "/nonexistent/model.pt", 10).unwrap_err();
    /// let want = if pot::replay::available() { pot::ErrorKind::Io } else { pot::ErrorKind::Unsupported };
    /// assert_eq!(err.kind(), want);
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new(
        dir: impl AsRef<Path>,
        spec: &Spec,
        program: impl AsRef<Path>,
        checkpoint_every: u64,
    ) -> Result<Recorder> {
        let dir = path_cstring(dir.as_ref())?;
        let program = path_cstring(program.as_ref())?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe {
            sys::pot_recorder_new(&mut raw, dir.as_ptr(), spec.as_ptr(), program.as_ptr(), checkpoint_every, err)
        })?;
        Ok(Recorder { raw: non_null(raw)? })
    }

    /// Reopens the directory of a recorder whose process stopped (killed at
    /// any point, crashed, or closed early) to continue its run: the
    /// recorder, the step `c` it continues after (the last stored
    /// checkpoint the log and `steps.jsonl` hold whole; later records, torn
    /// writes included, are cut back) and the checkpoint file of `S_c` to
    /// load into the model and optimizer. The next step begun is `c + 1`.
    ///
    /// # Errors
    /// [`State`](crate::ErrorKind::State) for a directory without a
    /// commitment, [`NotFound`](crate::ErrorKind::NotFound) without a run,
    /// [`Malformed`](crate::ErrorKind::Malformed) (naming the file) for what no
    /// crash leaves, [`Unsupported`](crate::ErrorKind::Unsupported) without
    /// LibTorch.
    pub fn resume(dir: impl AsRef<Path>) -> Result<(Recorder, u64, PathBuf)> {
        let dir = path_cstring(dir.as_ref())?;
        let mut raw = ptr::null_mut();
        let mut step = 0u64;
        let path = ffi::bytes_out(|out, err| unsafe {
            sys::pot_recorder_resume(&mut raw, &mut step, out, dir.as_ptr(), err)
        })?;
        let recorder = Recorder { raw: non_null(raw)? };
        let path = String::from_utf8(path)
            .map_err(|e| Error::new(ErrorKind::Internal, format!("libpot returned a path that is not UTF-8: {e}")))?;
        Ok((recorder, step, PathBuf::from(path)))
    }

    /// Records `S_0` (checkpoint 0) and returns its digest, the
    /// commitment's `initial_state_digest`.
    ///
    /// # Errors
    /// [`State`](crate::ErrorKind::State) when `S_0` is already recorded;
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a state without
    /// `hparam/lr` (or `rng/cpu` under `single_seed`).
    ///
    /// ```no_run
    /// # let mut recorder: pot::Recorder = unimplemented!();
    /// let lr = 1e-3f64.to_le_bytes();
    /// let mut s0 = pot::SafetensorsWriter::new()?;
    /// s0.add("hparam/lr", pot::Dtype::F64, &[], &lr)?;
    /// let initial_state_digest = recorder.start(&s0)?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn start(&mut self, s0: &SafetensorsWriter<'_>) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_recorder_start(out, self.raw.as_ptr(), s0.as_ptr(), err) })
    }

    /// Records the training commitment and its schedule entries (steps
    /// `1..n` in order, as [`ScheduleEntry::encode`](crate::ScheduleEntry::encode)
    /// gives them), checked against it. Openings need it; call it after
    /// [`start`](Recorder::start) and before the first step.
    ///
    /// # Errors
    /// [`ProofMismatch`](crate::ErrorKind::ProofMismatch) for another spec, initial
    /// state or schedule root than the commitment's;
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for another number of
    /// entries than declared; [`State`](crate::ErrorKind::State) before `start` or
    /// after the first step.
    ///
    /// ```no_run
    /// # let (mut recorder, commitment): (pot::Recorder, pot::Commitment) = unimplemented!();
    /// let schedule = pot::SeededSchedule { seed: 7, dataset_size: 64, batch_size: 8, microbatches: 1 };
    /// let entries: Vec<Vec<u8>> = (1..=commitment.declared_steps()).map(|t| schedule.entry(t)).collect::<Result<_, _>>()?;
    /// recorder.set_commitment(&commitment, &entries)?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn set_commitment<E: AsRef<[u8]>>(&mut self, commitment: &Commitment, entries: &[E]) -> Result<()> {
        let list = ByteList::new(entries.iter().map(|e| e.as_ref()));
        call(|err| unsafe {
            sys::pot_recorder_set_commitment(
                self.raw.as_ptr(),
                commitment.as_ptr(),
                list.ptrs(),
                list.lens(),
                list.len(),
                err,
            )
        })
    }

    /// Starts `step` (the next one) and applies the spec's seed policy to
    /// LibTorch's default CPU generator of this process. Returns the step's
    /// seed under `per_step` (so that a trainer with its own torch can call
    /// `torch.manual_seed(seed)` too), 0 under `single_seed` (which restores
    /// `S_{t-1}`'s `rng/cpu`) and `none`. The generator is process-wide:
    /// do not begin a step while another thread of the process replays
    /// ([`Replay::step`](crate::Replay::step), [`verify_step`](crate::verify_step),
    /// [`Checkpoints`] re-derivations).
    ///
    /// # Errors
    /// [`State`](crate::ErrorKind::State) for another step than the next one, or
    /// before [`start`](Recorder::start), or under `per_step` before
    /// [`set_commitment`](Recorder::set_commitment) (the seeds name the run);
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) past the declared steps.
    ///
    /// ```no_run
    /// # let (mut recorder, commitment): (pot::Recorder, pot::Commitment) = unimplemented!();
    /// let seed = recorder.begin_step(1)?;
    /// assert_eq!(seed, pot::protocol::seed_derive(7, &commitment.run_id()?, 1)?); // per_step, base seed 7
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn begin_step(&mut self, step: u64) -> Result<u64> {
        let mut seed = 0u64;
        call(|err| unsafe { sys::pot_recorder_begin_step(&mut seed, self.raw.as_ptr(), step, err) })?;
        Ok(seed)
    }

    /// Ends the step begun with `S_t` (holding `hparam/lr`, and `rng/cpu`
    /// under `single_seed`) and the step's loss (section 21.3); returns
    /// `S_t`'s digest, the state digest of the step's leaf.
    ///
    /// # Errors
    /// [`State`](crate::ErrorKind::State) when no step was begun.
    ///
    /// ```no_run
    /// # let (mut recorder, state): (pot::Recorder, pot::SafetensorsWriter) = unimplemented!();
    /// recorder.begin_step(1)?;
    /// let digest = recorder.end_step(&state, 2.31)?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn end_step(&mut self, state: &SafetensorsWriter<'_>, loss: f64) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_recorder_end_step(out, self.raw.as_ptr(), state.as_ptr(), loss, err) })
    }

    /// Number of steps recorded.
    ///
    /// ```no_run
    /// # let recorder: pot::Recorder = unimplemented!();
    /// let posted_size = recorder.size();
    /// ```
    pub fn size(&self) -> u64 {
        // SAFETY: live handle.
        unsafe { sys::pot_recorder_size(self.raw.as_ptr()) }
    }

    /// Root of the log's first `size` leaves (what the miner posts on chain).
    ///
    /// # Errors
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) past [`size`](Recorder::size).
    ///
    /// ```no_run
    /// # let recorder: pot::Recorder = unimplemented!();
    /// let root = recorder.root(recorder.size())?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn root(&self, size: u64) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_recorder_root(out, self.raw.as_ptr(), size, err) })
    }

    /// RFC 6962 consistency proof of the log from `size1` to `size2` leaves
    /// (concatenated hashes, for
    /// [`merkle::verify_consistency`](crate::merkle::verify_consistency)).
    ///
    /// ```no_run
    /// # let recorder: pot::Recorder = unimplemented!();
    /// let proof = recorder.consistency_proof(10, 20)?;
    /// pot::merkle::verify_consistency(10, 20, &recorder.root(10)?, &recorder.root(20)?, &proof)?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn consistency_proof(&self, size1: u64, size2: u64) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe {
            sys::pot_recorder_consistency_proof(out, self.raw.as_ptr(), size1, size2, err)
        })
    }

    /// Flushes the log and returns its root.
    ///
    /// # Errors
    /// With a commitment, [`State`](crate::ErrorKind::State) unless every declared
    /// step is recorded.
    ///
    /// ```no_run
    /// # let mut recorder: pot::Recorder = unimplemented!();
    /// let root = recorder.finish()?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn finish(&mut self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_recorder_finish(out, self.raw.as_ptr(), err) })
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_recorder_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder").field("size", &self.size()).finish_non_exhaustive()
    }
}

/// A recorder's checkpoint directory opened to serve openings
/// (`pot_checkpoints`). It caches the states it re-derives (in the
/// directory's `derived/`).
///
/// `Send`, not `Sync` (pot.h: one handle per thread).
///
/// ```
/// let err = pot::Checkpoints::open("/nonexistent/ck").unwrap_err();
/// let want = if pot::replay::available() { pot::ErrorKind::NotFound } else { pot::ErrorKind::Unsupported };
/// assert_eq!(err.kind(), want);
/// ```
pub struct Checkpoints {
    raw: NonNull<sys::pot_checkpoints>,
}

// SAFETY: no thread affinity. Not Sync: pot.h's one-handle-per-thread rule.
unsafe impl Send for Checkpoints {}

impl Checkpoints {
    /// Opens the checkpoint directory `dir` a [`Recorder`] wrote.
    ///
    /// # Errors
    /// [`NotFound`](crate::ErrorKind::NotFound) when it holds no run,
    /// [`Malformed`](crate::ErrorKind::Malformed) when its files disagree,
    /// [`Unsupported`](crate::ErrorKind::Unsupported) without LibTorch.
    ///
    /// ```no_run
    /// let ck = pot::Checkpoints::open("ck")?;
    /// println!("{} steps recorded", ck.size());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn open(dir: impl AsRef<Path>) -> Result<Checkpoints> {
        let dir = path_cstring(dir.as_ref())?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_checkpoints_open(&mut raw, dir.as_ptr(), err) })?;
        Ok(Checkpoints { raw: non_null(raw)? })
    }

    /// Number of steps recorded.
    ///
    /// ```no_run
    /// # let ck = pot::Checkpoints::open("ck")?;
    /// let steps = ck.size();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn size(&self) -> u64 {
        // SAFETY: live handle.
        unsafe { sys::pot_checkpoints_size(self.raw.as_ptr()) }
    }

    /// The path of a file holding `S_step`, and the number of steps replayed
    /// to make it: 0 when a checkpoint or an earlier re-derivation holds it;
    /// else it is re-derived from the nearest checkpoint before it with the
    /// samples of `dataset_dir` (one `%06d.safetensors` file per dataset
    /// index).
    ///
    /// # Errors
    /// [`ProofMismatch`](crate::ErrorKind::ProofMismatch) when a checkpoint or a
    /// replayed state does not match the log;
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) past the recorded steps.
    ///
    /// ```no_run
    /// # let mut ck = pot::Checkpoints::open("ck")?;
    /// let (path, replayed) = ck.state_path(4, "run/samples")?;
    /// println!("S_4 is {} ({replayed} steps replayed)", path.display());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn state_path(&mut self, step: u64, dataset_dir: impl AsRef<Path>) -> Result<(PathBuf, u64)> {
        let dataset_dir = path_cstring(dataset_dir.as_ref())?;
        let mut replayed = 0u64;
        let bytes = ffi::bytes_out(|out, err| unsafe {
            sys::pot_checkpoints_state_path(out, &mut replayed, self.raw.as_ptr(), step, dataset_dir.as_ptr(), err)
        })?;
        Ok((path_from_bytes(bytes)?, replayed))
    }

    /// The opening manifest of `step` against the log's first `log_size`
    /// leaves, with the samples read from `dataset_dir` (checked against the
    /// committed dataset root). Its pre-state reference names the file of
    /// `S_{step-1}` (re-derived when needed; [`state_path`](Checkpoints::state_path)
    /// gives the same path) and, with `serve_post_state`, its post-state
    /// reference names `S_step` (the cross-architecture path; it may cost
    /// another re-derivation).
    ///
    /// # Errors
    /// [`State`](crate::ErrorKind::State) when the recorder had no commitment,
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) for a step outside
    /// `1..=log_size`, [`ProofMismatch`](crate::ErrorKind::ProofMismatch) when the
    /// samples or a re-derived state do not match what was committed.
    ///
    /// ```no_run
    /// # let mut ck = pot::Checkpoints::open("ck")?;
    /// let manifest = ck.opening(5, ck.size(), "run/samples", false)?;
    /// std::fs::write("opening-5.bin", &manifest).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn opening(
        &mut self,
        step: u64,
        log_size: u64,
        dataset_dir: impl AsRef<Path>,
        serve_post_state: bool,
    ) -> Result<Vec<u8>> {
        let dataset_dir = path_cstring(dataset_dir.as_ref())?;
        ffi::bytes_out(|out, err| unsafe {
            sys::pot_checkpoints_opening(
                out,
                self.raw.as_ptr(),
                step,
                log_size,
                dataset_dir.as_ptr(),
                i32::from(serve_post_state),
                err,
            )
        })
    }

    /// The committed step leaf of `step` and its inclusion proof in the
    /// log's first `log_size` leaves: what the miner posts for that step in
    /// a ledger dispute (docs/ledger.md 2.12, 2.13). Replays nothing.
    /// `OutOfRange` unless `1 <= step <= log_size <= self.size()`.
    ///
    /// ```no_run
    /// # let mut ck = pot::Checkpoints::open("ck")?;
    /// let (leaf, proof) = ck.leaf(30, ck.size())?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn leaf(&mut self, step: u64, log_size: u64) -> Result<(Vec<u8>, Vec<u8>)> {
        ffi::two_bytes_out(|leaf, proof, err| unsafe {
            sys::pot_checkpoints_leaf(leaf, proof, self.raw.as_ptr(), step, log_size, err)
        })
    }

    /// The flagged steps of the log's first `log_size` leaves
    /// (`pot_checkpoints_run_flags`), from the tables kept in `stats/`: what
    /// the miner seals its run with on the ledger (docs/ledger.md 2.3:
    /// `post_checkpoint_root`'s `flagged_steps`). Every opening lists them.
    ///
    /// # Errors
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) past [`size`](Self::size).
    pub fn run_flags(&mut self, log_size: u64) -> Result<Vec<FlaggedStep>> {
        let text =
            string_out(|out, err| unsafe { sys::pot_checkpoints_run_flags(out, self.raw.as_ptr(), log_size, err) })?;
        crate::statecheck::flagged_steps(&text)
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_checkpoints_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checkpoints").field("size", &self.size()).finish_non_exhaustive()
    }
}

/// A path libpot returned as bytes.
fn path_from_bytes(bytes: Vec<u8>) -> Result<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
    }
    #[cfg(not(unix))]
    {
        String::from_utf8(bytes)
            .map(PathBuf::from)
            .map_err(|_| crate::Error::new(crate::ErrorKind::Malformed, "libpot returned a path that is not UTF-8"))
    }
}
