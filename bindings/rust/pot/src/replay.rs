//! Replay of training steps with LibTorch (docs/PROTOCOL.md section 21): the
//! model program digest, [`Replay`] of one step, and [`verify_step`], the
//! complete verification of a challenged step.
//!
//! Everything but [`program_digest_file`] and [`available`] needs a libpot
//! built with LibTorch; without it those calls fail with
//! [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported).

use crate::commitment::Commitment;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::ffi::{self, call, digest_out, non_null, opt_ptr, path_cstring};
use crate::opening::OpeningCheck;
use crate::spec::Spec;
use crate::sys;
use std::ffi::CString;
use std::fmt;
use std::path::Path;
use std::ptr::{self, NonNull};

/// The model program digest a spec carries:
/// `tagged("pot/v1/program", the file's bytes)` (section 21.2). Works in
/// every build of libpot, with or without LibTorch. Thread-safe.
///
/// # Errors
/// [`Io`](crate::ErrorKind::Io) when the file cannot be read.
///
/// ```
/// let path = std::env::temp_dir().join(format!("pot-doc-program-{}.pt", std::process::id()));
/// std::fs::write(&path, b"abc").unwrap();
/// let d = pot::program_digest_file(&path)?;
/// // tagged(tag, data) = SHA-256(u8(len(tag)) || tag || data)
/// assert_eq!(d, pot::sha256(b"\x0epot/v1/programabc")?);
/// assert_eq!(pot::program_digest_file("/nonexistent.pt").unwrap_err().kind(), pot::ErrorKind::Io);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
pub fn program_digest_file(path: impl AsRef<Path>) -> Result<Digest> {
    let path = path_cstring(path.as_ref())?;
    digest_out(|out, err| unsafe { sys::pot_program_digest_file(out, path.as_ptr(), err) })
}

/// Whether the loaded libpot was built with the LibTorch replay layer
/// (`pot_replay_available`). Without it [`Replay::new`], [`verify_step`],
/// [`Recorder::new`](crate::Recorder::new) and
/// [`Checkpoints::open`](crate::Checkpoints::open) fail with
/// [`Unsupported`](crate::ErrorKind::Unsupported).
///
/// ```
/// if !pot::replay::available() {
///     println!("this libpot cannot replay steps");
/// }
/// ```
pub fn available() -> bool {
    // SAFETY: no arguments, no preconditions.
    unsafe { sys::pot_replay_available() != 0 }
}

/// This process's hardware class (`pot_replay_hardware_class`,
/// docs/PROTOCOL.md 14.4): the value a spec's `hardware_class` must hold for
/// its steps to be trained or replayed bit for bit here, e.g.
/// `cpu-x86_64/aten:avx2/onednn:avx2`. Fixed for the process
/// (`ATEN_CPU_CAPABILITY` and `ONEDNN_MAX_CPU_ISA` are read when LibTorch
/// first needs them). [`Unsupported`](crate::ErrorKind::Unsupported) without
/// LibTorch.
///
/// ```
/// match pot::replay::hardware_class() {
///     Ok(class) => assert!(class.starts_with("cpu-") && class.contains("/aten:") && class.contains("/onednn:")),
///     Err(e) => assert!(!pot::replay::available() && e.kind() == pot::ErrorKind::Unsupported),
/// }
/// ```
pub fn hardware_class() -> Result<&'static str> {
    let mut s = ptr::null();
    // SAFETY: `s` is a valid out-pointer; the call has no other preconditions.
    call(|err| unsafe { sys::pot_replay_hardware_class(&mut s, err) })?;
    // SAFETY: the string lives as long as the process.
    unsafe { ffi::borrowed_str(s) }
}

/// The LibTorch version this libpot replays with
/// (`pot_replay_framework_version`, e.g. `1.13.0`): the framework_version a
/// witness states in its environment (docs/PROTOCOL.md 19).
/// [`Unsupported`](crate::ErrorKind::Unsupported) without LibTorch.
///
/// ```
/// match pot::replay::framework_version() {
///     Ok(v) => assert!(v.split('.').count() >= 2),
///     Err(e) => assert!(!pot::replay::available() && e.kind() == pot::ErrorKind::Unsupported),
/// }
/// ```
pub fn framework_version() -> Result<&'static str> {
    let mut s = ptr::null();
    // SAFETY: `s` is a valid out-pointer; the call has no other preconditions.
    call(|err| unsafe { sys::pot_replay_framework_version(&mut s, err) })?;
    // SAFETY: static storage.
    unsafe { ffi::borrowed_str(s) }
}

/// What a replayed step gives (`pot_replay_result`).
///
/// ```
/// let r = pot::ReplayResult {
///     post_state_digest: pot::Digest::default(),
///     loss: 1.5,
///     update_norm: 0.25,
///     norm_bucket: -32,
///     gradient: pot::GradientTrace::default(),
///     gradient_digest: pot::Digest::default(),
/// };
/// assert_eq!(pot::protocol::norm_bucket(r.update_norm, 16)?, r.norm_bucket);
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayResult {
    /// Digest of the replayed `S_t`.
    pub post_state_digest: Digest,
    /// The step leaf's loss (section 21.3).
    pub loss: f64,
    /// L2 norm of `S_t - S_{t-1}` over the `param/` tensors (section 13).
    pub update_norm: f64,
    /// The update norm's bucket at the spec's resolution.
    pub norm_bucket: i64,
    /// What the step's gradient did (check 27).
    pub gradient: GradientTrace,
    /// State digest of the gradient the optimizer consumed, tensors named
    /// `grad/<parameter>` (docs/PROTOCOL.md 19): what a witness states and
    /// only a replay gives.
    pub gradient_digest: Digest,
}

impl ReplayResult {
    pub(crate) fn from_sys(r: &sys::pot_replay_result) -> ReplayResult {
        ReplayResult {
            post_state_digest: Digest(r.post_state_digest.bytes),
            loss: r.loss,
            update_norm: r.update_norm,
            norm_bucket: r.norm_bucket,
            gradient: GradientTrace::from_sys(&r.gradient),
            gradient_digest: Digest(r.gradient_digest.bytes),
        }
    }
}

/// What a replayed step's gradient did (`pot_gradient_trace`, check 27
/// [`GradientIgnored`](crate::OpeningCheck::GradientIgnored), PROTOCOL.md
/// section 21.5): the update applied with the step's gradient and, from the
/// same `S_{t-1}`, with a zero gradient. An element differs when its bits
/// differ; parameters without a gradient are not counted.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GradientTrace {
    /// The spec's learning rate of the step.
    pub learning_rate: f64,
    /// Elements of the updated parameters.
    pub param_elements: u64,
    /// ... that differ from `S_{t-1}`.
    pub moved_elements: u64,
    /// ... that differ from the zero-gradient update.
    pub gradient_elements: u64,
    /// Optimizer-state elements the update wrote (no step counters).
    pub optim_elements: u64,
    /// ... that differ from the zero-gradient update.
    pub optim_gradient_elements: u64,
    /// Check 27 fails on this trace.
    pub ignored: bool,
}

impl GradientTrace {
    fn from_sys(g: &sys::pot_gradient_trace) -> GradientTrace {
        GradientTrace {
            learning_rate: g.learning_rate,
            param_elements: g.param_elements,
            moved_elements: g.moved_elements,
            gradient_elements: g.gradient_elements,
            optim_elements: g.optim_elements,
            optim_gradient_elements: g.optim_gradient_elements,
            ignored: g.ignored != 0,
        }
    }
}

/// A TorchScript model program loaded and bound to a spec (`pot_replay`),
/// ready to replay steps.
///
/// A replay changes process-wide LibTorch state (the default CPU generator,
/// the intra-op thread count), so libpot runs replays one at a time, even on
/// distinct handles; a replay must not overlap LibTorch work of the
/// program's own in another thread.
///
/// `Send`, not `Sync` (pot.h's rule for handles).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("pot-doc-replay-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let program = dir.join("program.pt");
/// std::fs::write(&program, b"not TorchScript").unwrap();
/// let spec = pot::Spec::from_json(&format!(r#"{{"framework": "pytorch", "framework_version": "2.3.0",
///     "model_program_digest": "{}", "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
///     "optimizer": {{"kind": "sgd", "lr": 0.1}}, "batch_size": 8, "intra_op_threads": 1,
///     "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {{"kind": "none"}}, "norm_bucket_resolution": 16}}"#,
///     pot::program_digest_file(&program)?))?;
/// let err = pot::Replay::new(&spec, &program).unwrap_err();
/// if pot::replay::available() {
///     // The spec's digest, but LibTorch cannot load it.
///     assert_eq!(err.kind(), pot::ErrorKind::InvalidArgument);
/// } else {
///     assert_eq!(err.kind(), pot::ErrorKind::Unsupported);
/// }
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Replay {
    raw: NonNull<sys::pot_replay>,
}

/// The inputs of one step (`pot_step_input`, docs/PROTOCOL.md 21.4): the
/// run, the `S_{t-1}` file, the step's canonical schedule entry and one
/// safetensors sample per index of the entry, in order. libpot copies what
/// it is given. [`Replay::step_with`] takes one built beforehand; the other
/// step calls build one from their arguments. Only read by the replays, so
/// it may be shared between threads.
pub struct StepInput {
    raw: NonNull<sys::pot_step_input>,
}

// SAFETY: the replay calls only read the handle (pot.h), and adding a
// sample takes `&mut self`.
unsafe impl Send for StepInput {}
unsafe impl Sync for StepInput {}

impl StepInput {
    /// Builds a step's inputs. `run_id` may be `None` unless the spec's seed
    /// policy is per_step.
    ///
    /// # Errors
    /// [`Malformed`](crate::ErrorKind::Malformed) for an entry that does not
    /// decode or a sample that is not safetensors (naming the sample and its
    /// dataset index), [`OutOfRange`](crate::ErrorKind::OutOfRange) for more
    /// samples than the entry lists.
    pub fn new<S: AsRef<[u8]>>(
        run_id: Option<&Digest>,
        pre_state: impl AsRef<Path>,
        schedule_entry: &[u8],
        samples: &[S],
    ) -> Result<StepInput> {
        let pre = path_cstring(pre_state.as_ref())?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe {
            sys::pot_step_input_new(
                &mut raw,
                run_id.map_or(std::ptr::null(), Digest::as_ptr),
                pre.as_ptr(),
                schedule_entry.as_ptr(),
                schedule_entry.len(),
                err,
            )
        })?;
        let mut input = StepInput { raw: non_null(raw)? };
        for sample in samples {
            input.add_sample(sample.as_ref())?;
        }
        Ok(input)
    }

    /// Appends the safetensors payload of the entry's next index.
    pub fn add_sample(&mut self, sample: &[u8]) -> Result<()> {
        call(|err| unsafe { sys::pot_step_input_add_sample(self.raw.as_ptr(), sample.as_ptr(), sample.len(), err) })
    }

    /// The number of samples added.
    pub fn sample_count(&self) -> usize {
        unsafe { sys::pot_step_input_sample_count(self.raw.as_ptr()) }
    }

    /// The step its schedule entry names.
    pub fn step(&self) -> u64 {
        unsafe { sys::pot_step_input_step(self.raw.as_ptr()) }
    }

    fn as_ptr(&self) -> *const sys::pot_step_input {
        self.raw.as_ptr()
    }
}

impl Drop for StepInput {
    fn drop(&mut self) {
        unsafe { sys::pot_step_input_free(self.raw.as_ptr()) }
    }
}

// SAFETY: no thread affinity (libpot serialises replays itself). Not Sync:
// pot.h's one-thread-per-handle rule.
unsafe impl Send for Replay {}

impl Replay {
    /// Loads the TorchScript program at `program` for `spec` (which is
    /// copied: it may be dropped afterwards).
    ///
    /// # Errors
    /// [`ProofMismatch`](crate::ErrorKind::ProofMismatch) when the
    /// program's digest is not the spec's `model_program_digest`,
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) when it is not
    /// a TorchScript module whose forward takes tensors,
    /// [`Io`](crate::ErrorKind::Io) when it cannot be read,
    /// [`Unsupported`](crate::ErrorKind::Unsupported) without LibTorch.
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "2.3.0", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16}"#)?;
    /// let err = pot::Replay::new(&spec, "/nonexistent/model.pt").unwrap_err();
    /// let want = if pot::replay::available() { pot::ErrorKind::Io } else { pot::ErrorKind::Unsupported };
    /// assert_eq!(err.kind(), want);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new(spec: &Spec, program: impl AsRef<Path>) -> Result<Replay> {
        let program = path_cstring(program.as_ref())?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_replay_new(&mut raw, spec.as_ptr(), program.as_ptr(), err) })?;
        Ok(Replay { raw: non_null(raw)? })
    }

    /// The name of argument `index` of the program's forward (after `self`):
    /// the name of a sample tensor.
    ///
    /// # Errors
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) past the last argument.
    ///
    /// ```no_run
    /// # let spec = pot::Spec::from_json(&std::fs::read_to_string("run/spec.json").unwrap())?;
    /// let replay = pot::Replay::new(&spec, "run/program.pt")?;
    /// assert_eq!(replay.input_name(0)?, "x");
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn input_name(&self, index: usize) -> Result<&str> {
        let mut name = ptr::null();
        call(|err| unsafe { sys::pot_replay_input_name(&mut name, self.raw.as_ptr(), index, err) })?;
        // SAFETY: the string lives as long as the handle, which `&self` borrows.
        unsafe { ffi::borrowed_str(name) }
    }

    /// The names of the forward's arguments in order: the sample tensor
    /// names, in the order the batch is passed.
    ///
    /// ```no_run
    /// # let spec = pot::Spec::from_json(&std::fs::read_to_string("run/spec.json").unwrap())?;
    /// let replay = pot::Replay::new(&spec, "run/program.pt")?;
    /// assert_eq!(replay.input_names()?, ["x", "y"]);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn input_names(&self) -> Result<Vec<&str>> {
        let mut names = Vec::new();
        loop {
            match self.input_name(names.len()) {
                Ok(name) => names.push(name),
                Err(e) if e.kind() == crate::ErrorKind::OutOfRange => return Ok(names),
                Err(e) => return Err(e),
            }
        }
    }

    /// Replays one step from the state file `pre_state` (`S_{t-1}`).
    ///
    /// `schedule_entry` is the step's canonical schedule entry
    /// ([`ScheduleEntry::encode`](crate::ScheduleEntry::encode)); it gives
    /// the step and its micro-batches. `samples[i]` is the safetensors
    /// payload of the entry's `i`-th dataset index, in the entry's order.
    /// The learning rates are the spec's ([`Spec::learning_rates`](crate::Spec::learning_rates)):
    /// `S_{t-1}`'s `hparam/lr` must be step `t`'s rate, and the replayed
    /// `S_t` records step `t+1`'s. With `post_state`, the replayed `S_t` is
    /// written there (canonical safetensors, atomically).
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a
    /// pre-state holding another learning rate than the spec's, a state or
    /// batch that does not fit the program and spec (the message names the
    /// tensor) or a sample count other than the entry's,
    /// [`NonFinite`](crate::ErrorKind::NonFinite) when the loss is NaN or
    /// infinite, [`Backend`](crate::ErrorKind::Backend) for a LibTorch
    /// failure, [`Io`](crate::ErrorKind::Io) for a state file that cannot be
    /// read or written.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let spec = pot::Spec::from_json(&std::fs::read_to_string("run/spec.json")?)?;
    /// let mut replay = pot::Replay::new(&spec, "run/program.pt")?;
    /// let entry = pot::ScheduleEntry { step: 5, indices: vec![3, 1], microbatch_sizes: vec![2] }.encode(8)?;
    /// let samples = [std::fs::read("run/samples/000003.safetensors")?, std::fs::read("run/samples/000001.safetensors")?];
    /// let run_id = pot::Commitment::decode(&std::fs::read("ck/commitment.bin")?)?.run_id()?;
    /// let r = replay.step(Some(&run_id), "run/states/000004.safetensors", &entry, &samples, None)?;
    /// assert_eq!(r.post_state_digest, pot::safetensors::digest_file("run/states/000005.safetensors", 0)?);
    /// # Ok(())
    /// # }
    /// ```
    pub fn step<S: AsRef<[u8]>>(
        &mut self,
        run_id: Option<&Digest>,
        pre_state: impl AsRef<Path>,
        schedule_entry: &[u8],
        samples: &[S],
        post_state: Option<&Path>,
    ) -> Result<ReplayResult> {
        let input = StepInput::new(run_id, pre_state, schedule_entry, samples)?;
        self.step_with(&input, post_state)
    }

    /// Replays the step of a [`StepInput`] built beforehand, as
    /// [`step`](Self::step) does.
    ///
    /// # Errors
    /// As [`step`](Self::step).
    pub fn step_with(&mut self, input: &StepInput, post_state: Option<&Path>) -> Result<ReplayResult> {
        let post: Option<CString> = post_state.map(path_cstring).transpose()?;
        let mut out =
            sys::pot_replay_result { struct_size: size_of::<sys::pot_replay_result>() as u32, ..Default::default() };
        call(|err| unsafe { sys::pot_replay_step(&mut out, self.raw.as_ptr(), input.as_ptr(), opt_ptr(&post), err) })?;
        Ok(ReplayResult::from_sys(&out))
    }
}

impl Replay {
    /// Replays one step as [`step`](Self::step) does (no post-state file)
    /// and records its operator trace (`pot_replay_trace`,
    /// docs/PROTOCOL.md 22.2); the step's results are the trace's
    /// [`replay_result`](crate::dispute::OpTrace::replay_result).
    ///
    /// # Errors
    /// As [`step`](Self::step).
    pub fn trace<S: AsRef<[u8]>>(
        &mut self,
        run_id: Option<&Digest>,
        pre_state: impl AsRef<Path>,
        schedule_entry: &[u8],
        samples: &[S],
    ) -> Result<crate::dispute::OpTrace> {
        let input = StepInput::new(run_id, pre_state, schedule_entry, samples)?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_replay_trace(&mut raw, self.raw.as_ptr(), input.as_ptr(), err) })?;
        crate::dispute::OpTrace::from_raw(raw)
    }

    /// This party's opening of node `index` of its trace of the step
    /// (`pot_replay_open_op_node`, docs/PROTOCOL.md 22.3): the step is
    /// replayed again; the node, its proofs, the sources its inputs name and
    /// its input tensors' bytes.
    ///
    /// # Errors
    /// As [`step`](Self::step); [`OutOfRange`](crate::ErrorKind::OutOfRange)
    /// past the trace's end.
    pub fn open_op_node<S: AsRef<[u8]>>(
        &mut self,
        run_id: Option<&Digest>,
        pre_state: impl AsRef<Path>,
        schedule_entry: &[u8],
        samples: &[S],
        index: u64,
    ) -> Result<Vec<u8>> {
        let input = StepInput::new(run_id, pre_state, schedule_entry, samples)?;
        crate::ffi::bytes_out(|out, err| unsafe {
            sys::pot_replay_open_op_node(out, self.raw.as_ptr(), input.as_ptr(), index, err)
        })
    }

    /// The referee's ruling on the disputed node (`pot_referee_decide_op`).
    /// This replay must hold the task's spec; `pre_state` must be the agreed
    /// `S_{t-1}`, whose digest is `pre_state_digest`.
    ///
    /// # Errors
    /// [`ProofMismatch`](crate::ErrorKind::ProofMismatch) for another
    /// pre-state, [`InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// when both roots are one; a bad opening is not an error: its party
    /// loses.
    pub fn referee_decide_op<S: AsRef<[u8]>>(
        &mut self,
        run_id: Option<&Digest>,
        pre_state: impl AsRef<Path>,
        pre_state_digest: &Digest,
        schedule_entry: &[u8],
        samples: &[S],
        dispute: &crate::dispute::OpDispute<'_>,
    ) -> Result<crate::dispute::OpRuling> {
        let input = StepInput::new(run_id, pre_state, schedule_entry, samples)?;
        let text = crate::ffi::string_out(|out, err| unsafe {
            sys::pot_referee_decide_op(
                out,
                self.raw.as_ptr(),
                input.as_ptr(),
                pre_state_digest.as_ptr(),
                dispute.index,
                dispute.agreed_root.as_ptr(),
                dispute.a_root.as_ptr(),
                dispute.b_root.as_ptr(),
                dispute.a_opening.as_ptr(),
                dispute.a_opening.len(),
                dispute.b_opening.as_ptr(),
                dispute.b_opening.len(),
                err,
            )
        })?;
        crate::dispute::OpRuling::from_json(&text)
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_replay_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replay").finish_non_exhaustive()
    }
}

/// How [`verify_step`] compares the replayed step (`pot_verify_mode`).
///
/// ```
/// assert_eq!(pot::VerifyMode::default(), pot::VerifyMode::Bitwise);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum VerifyMode {
    /// The replayed `S_t` and loss equal leaf `t`'s, bit for bit.
    #[default]
    Bitwise,
    /// The cross-architecture path: the replayed update's norm bucket
    /// matches the bucket of the served `S_{t-1} -> S_t` (section 13). Needs
    /// the served post-state.
    NormBucket,
}

impl VerifyMode {
    fn to_sys(self) -> sys::pot_verify_mode {
        match self {
            VerifyMode::Bitwise => sys::pot_verify_mode::POT_VERIFY_BITWISE,
            VerifyMode::NormBucket => sys::pot_verify_mode::POT_VERIFY_NORM_BUCKET,
        }
    }
}

/// What [`verify_step`] found (`pot_verify_result`): on success, and with
/// the failure as far as the verification got.
///
/// ```
/// let v = pot::StepVerification::default();
/// assert!(v.replay.is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepVerification {
    /// The replayed step (state digest, loss, update norm, bucket: the
    /// witness value of section 19); `None` when the replay did not run.
    pub replay: Option<ReplayResult>,
    /// Leaf `t`'s state digest; set once the checks of
    /// [`verify_opening`](crate::verify_opening) passed (zero before).
    pub committed_state_digest: Digest,
    /// Leaf `t`'s loss; set with `committed_state_digest`.
    pub committed_loss: f64,
    /// Leaf `t`'s update norm, committed at training time; set with
    /// `committed_state_digest`.
    pub committed_update_norm: f64,
    /// The bucket of `committed_update_norm` at the spec's resolution: what
    /// [`VerifyMode::NormBucket`] compares the replay with.
    pub committed_norm_bucket: i64,
    /// Norm-bucket path, once the replay ran (0 otherwise; since 0.3.0): the
    /// committed loss's relative distance from the replayed loss.
    pub loss_error: f64,
    /// ... the served `S_t`'s update's relative distance from the replayed
    /// update (`S_t - S_{t-1}` over `param/`).
    pub update_error: f64,
    /// ... the largest such distance of one tensor of 64 or more elements.
    pub tensor_update_error: f64,
}

impl StepVerification {
    fn from_sys(r: &sys::pot_verify_result) -> StepVerification {
        StepVerification {
            replay: (r.replayed != 0).then_some(ReplayResult {
                post_state_digest: Digest(r.replayed_state_digest.bytes),
                loss: r.loss,
                update_norm: r.update_norm,
                norm_bucket: r.norm_bucket,
                gradient: GradientTrace::from_sys(&r.gradient),
                gradient_digest: Digest(r.gradient_digest.bytes),
            }),
            committed_state_digest: Digest(r.committed_state_digest.bytes),
            committed_loss: r.committed_loss,
            committed_update_norm: r.committed_update_norm,
            committed_norm_bucket: r.committed_norm_bucket,
            loss_error: r.loss_error,
            update_error: r.update_error,
            tensor_update_error: r.tensor_update_error,
        }
    }
}

/// Why [`verify_step`] rejected a step: the first failed check, the error
/// naming it, and what the verification found up to there.
///
/// `check` is `None` when no check ran (bad arguments, a libpot without
/// LibTorch, an ABI mismatch); `verification` is then the default. Displays
/// as `step rejected at <check>: <error>`, and converts into [`Error`] for
/// `?`.
///
/// ```
/// let f = pot::StepFailure {
///     check: Some(pot::OpeningCheck::ReplayedState),
///     error: pot::Error::new(pot::ErrorKind::ProofMismatch, "step 5 replays to another state"),
///     verification: pot::StepVerification::default(),
/// };
/// assert!(f.to_string().starts_with("step rejected at replayed_state: POT_E_PROOF_MISMATCH"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct StepFailure {
    /// The first check that failed, `None` when none ran.
    pub check: Option<OpeningCheck>,
    /// The status and message of the failure.
    pub error: Error,
    /// What the verification computed before it stopped (the replay's
    /// values when the replay ran).
    pub verification: StepVerification,
}

impl fmt::Display for StepFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.check {
            Some(check) => write!(f, "step rejected at {check}: {}", self.error),
            None => write!(f, "step not verified: {}", self.error),
        }
    }
}

impl std::error::Error for StepFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<StepFailure> for Error {
    fn from(f: StepFailure) -> Error {
        f.error
    }
}

/// Verifies a challenged step completely (section 21.5): every check of
/// [`verify_opening`](crate::verify_opening) on `manifest`, then the spec
/// against the commitment ([`OpeningCheck::Spec`]), the program file
/// against the spec ([`OpeningCheck::Program`]), the replay from the served
/// `pre_state` (`S_{t-1}`) with the manifest's schedule entry, samples and
/// next learning rate ([`OpeningCheck::Replay`]), and the comparison of
/// `mode` ([`OpeningCheck::ReplayedState`] and
/// [`OpeningCheck::ReplayedLoss`], or [`OpeningCheck::ReplayedBucket`]).
/// `post_state` is the served `S_t` ([`VerifyMode::NormBucket`] needs it).
/// `intra_op_threads` 0 replays with the spec's thread count (another count
/// only makes sense with `NormBucket`). Thread-safe (replays run one at a
/// time).
///
/// # Errors
/// A [`StepFailure`] with the first failed check, its status
/// ([`ProofMismatch`](crate::ErrorKind::ProofMismatch) for a replay that
/// differs) and message, and what was found up to there.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::path::Path;
/// let commitment = pot::Commitment::decode(&std::fs::read("ck/commitment.bin")?)?;
/// let spec = pot::Spec::from_json(&std::fs::read_to_string("run/spec.json")?)?;
/// let manifest = std::fs::read("opening-5.bin")?;
/// let root: pot::Digest = "461e00b666fa93f8bd534ab5e13319b5411f26697e4b4f66800098818489f56d".parse()?;
/// match pot::verify_step(&commitment, &spec, "run/program.pt".as_ref(), 5, 6, &root, &manifest,
///                        Path::new("state-4.safetensors"), None, pot::VerifyMode::Bitwise, 0) {
///     Ok(v) => println!("step 5 verified: replayed {}", v.replay.unwrap().post_state_digest),
///     Err(failure) => println!("{failure}"),
/// }
/// # Ok(())
/// # }
/// ```
// too_many_arguments: pot_verify_step's arguments, one for one.
// result_large_err: a failure carries what was found (as pot_verify_result
// does); a step's replay dwarfs moving it, so it is not boxed.
#[allow(clippy::too_many_arguments, clippy::result_large_err)]
pub fn verify_step(
    commitment: &Commitment,
    spec: &Spec,
    program: &Path,
    challenged_step: u64,
    log_size: u64,
    log_root: &Digest,
    manifest: &[u8],
    pre_state: &Path,
    post_state: Option<&Path>,
    mode: VerifyMode,
    intra_op_threads: u32,
) -> std::result::Result<StepVerification, StepFailure> {
    let no_check = |error: Error| StepFailure { check: None, error, verification: StepVerification::default() };
    let program = path_cstring(program).map_err(no_check)?;
    let pre = path_cstring(pre_state).map_err(no_check)?;
    let post: Option<CString> = post_state.map(path_cstring).transpose().map_err(no_check)?;
    // check = POT_CHECK_OK: stays so when the call fails before any check.
    let mut out =
        sys::pot_verify_result { struct_size: size_of::<sys::pot_verify_result>() as u32, ..Default::default() };
    let result = call(|err| unsafe {
        sys::pot_verify_step(
            &mut out,
            commitment.as_ptr(),
            spec.as_ptr(),
            program.as_ptr(),
            challenged_step,
            log_size,
            log_root.as_ptr(),
            manifest.as_ptr(),
            manifest.len(),
            pre.as_ptr(),
            opt_ptr(&post),
            mode.to_sys(),
            intra_op_threads,
            err,
        )
    });
    match result {
        Ok(()) => Ok(StepVerification::from_sys(&out)),
        Err(error) => Err(match OpeningCheck::from_raw(out.check.0) {
            Some(check) => StepFailure { check: Some(check), error, verification: StepVerification::from_sys(&out) },
            None => no_check(error),
        }),
    }
}

/// The statement (JSON text) a committee member commits to after
/// [`verify_step`] (`pot_witness_statement`, docs/PROTOCOL.md section 19):
/// challenge `challenge_id` on step `step` of run `run_id` in `mode`; the
/// environment this process replays in ([`framework_version`],
/// `intra_op_threads` as passed to `verify_step`, 0 for the spec's, and
/// [`hardware_class`]); and the finding of `outcome`: `replayed` with the
/// replayed digest, bucket and gradient digest when the opening passed its checks and the
/// replay ran, else `invalid_opening` naming the failed check. A member that
/// received no opening states `{"kind": "unavailable", ...}` itself.
///
/// # Errors
/// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a failure
/// before any check ran; [`Unsupported`](crate::ErrorKind::Unsupported)
/// without LibTorch.
pub fn witness_statement(
    outcome: &std::result::Result<StepVerification, StepFailure>,
    spec: &Spec,
    run_id: &Digest,
    step: u64,
    challenge_id: u64,
    mode: VerifyMode,
    intra_op_threads: u32,
) -> Result<String> {
    let (check, verification) = match outcome {
        Ok(v) => (sys::pot_opening_check::POT_CHECK_OK, v),
        Err(f) => (sys::pot_opening_check(f.check.map_or(0, |c| c.raw())), &f.verification),
    };
    let mut r =
        sys::pot_verify_result { struct_size: size_of::<sys::pot_verify_result>() as u32, check, ..Default::default() };
    if let Some(replay) = verification.replay {
        r.replayed = 1;
        r.replayed_state_digest.bytes = replay.post_state_digest.0;
        r.norm_bucket = replay.norm_bucket;
        r.gradient_digest.bytes = replay.gradient_digest.0;
    }
    ffi::string_out(|out, err| unsafe {
        sys::pot_witness_statement(
            out,
            &r,
            spec.as_ptr(),
            run_id.as_ptr(),
            step,
            challenge_id,
            mode.to_sys(),
            intra_op_threads,
            err,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_match_the_header() {
        assert_eq!(VerifyMode::Bitwise.to_sys(), sys::pot_verify_mode::POT_VERIFY_BITWISE);
        assert_eq!(VerifyMode::NormBucket.to_sys(), sys::pot_verify_mode::POT_VERIFY_NORM_BUCKET);
    }

    #[test]
    fn verification_from_a_result_without_replay() {
        let r = sys::pot_verify_result { committed_loss: 0.5, committed_norm_bucket: 3, ..Default::default() };
        let v = StepVerification::from_sys(&r);
        assert_eq!(v.replay, None);
        assert_eq!(v.committed_loss, 0.5);
        let r = sys::pot_verify_result { replayed: 1, loss: 2.0, norm_bucket: -7, ..Default::default() };
        let v = StepVerification::from_sys(&r);
        assert_eq!(v.replay.map(|x| (x.loss, x.norm_bucket)), Some((2.0, -7)));
    }
}
