//! Safe Rust binding of libpot, the Proof-of-Training SDK.
//!
//! `pot` wraps the C API of `include/pot.h` (through the `pot-sys` crate):
//! handles become owned types that free themselves on `Drop`, every fallible
//! call returns [`Result<T, pot::Error>`](Result) whose [`ErrorKind`] mirrors
//! `pot_status`, byte strings go in as `&[u8]` and come back as `Vec<u8>`,
//! and 32-byte digests are [`Digest`] values. docs/PROTOCOL.md in the pot
//! repository defines every digest, leaf and proof byte for byte.
//!
//! ```
//! use pot::{Digest, Dtype, State};
//!
//! // Digest a state of one tensor, prove the tensor is in it, verify the proof.
//! let weights: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! let mut state = State::new()?;
//! state.add_tensor("w", Dtype::F32, &[2, 2], &weights)?;
//! let root: Digest = state.digest()?;
//! let proof = state.tensor_proof("w")?;
//! let w = pot::tensor_digest("w", Dtype::F32, &[2, 2], &weights, 0)?;
//! State::verify_tensor(&root, &w, &proof)?;
//! println!("state {root}");
//! # Ok::<(), pot::Error>(())
//! ```
//!
//! # ABI check
//!
//! The first call into the library compares the loaded libpot's
//! `pot_abi_version()` with the [`ABI_VERSION`] this crate was built against;
//! when they differ, that call and every later one fails with
//! [`ErrorKind::AbiMismatch`] instead of calling into an incompatible
//! library. [`check_abi`] runs the check on demand.
//!
//! # Threads
//!
//! As pot.h says: distinct handles may be used from distinct threads, and one
//! handle not by two threads at once. So every handle type is [`Send`], and
//! only those pot.h documents as safe to share are [`Sync`]:
//! [`Safetensors`], [`Spec`], [`Commitment`] (immutable) and [`Tree`] (its
//! `&self` methods are the reads pot.h allows on several threads at once;
//! appending and flushing take `&mut self`). Functions without a handle are
//! thread-safe; replays ([`Replay::step`], [`verify_step`], re-derivations
//! of [`Checkpoints`]) change process-wide LibTorch state, so libpot runs
//! them one at a time.
//!
//! # Replay
//!
//! The [`replay`] and [`recorder`] modules need a libpot built with
//! LibTorch ([`replay::available`]); without it their constructors and
//! [`verify_step`] fail with [`ErrorKind::Unsupported`].
#![deny(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

mod digest;
mod error;
mod ffi;

pub mod commitment;
pub mod dispute;
pub mod hash;
pub mod ledger;
pub mod losscheck;
pub mod merkle;
pub mod opening;
pub mod protocol;
pub mod recorder;
pub mod replay;
pub mod safetensors;
pub mod spec;
pub mod statecheck;
pub mod stream;
pub mod task;
pub mod witness;

pub use commitment::{
    Commitment, CommitmentDigests, ScheduleEntry, SeededSchedule, sample_digest, uniform_schedule_stream,
};
pub use digest::Digest;
pub use dispute::{BisectionState, OpDispute, OpRuling, OpTrace, StepBisection};
pub use error::{Error, ErrorKind, Result};
pub use hash::{Dtype, State, StatePart, TensorAssembler, chunk_range_hash, sha256, tensor_digest};
pub use ledger::{Ledger, LedgerConfig};
pub use losscheck::{LossCheckParam, LossCheckParams, LossFlag, LossFlagKind};
pub use merkle::{Log, Tree};
pub use opening::{Opening, OpeningCheck, OpeningFailure, verify_opening};
pub use protocol::StepLeaf;
pub use recorder::{Checkpoints, Recorder};
pub use replay::{
    GradientTrace, Replay, ReplayResult, StepFailure, StepInput, StepVerification, VerifyMode, program_digest_file,
    verify_step, witness_statement,
};
pub use safetensors::{Safetensors, SafetensorsWriter, TensorView};
pub use spec::{SeedPolicy, Spec};
pub use statecheck::{FlaggedStep, StateFlag, StateStats, TensorStats, run_flags, state_flags};
pub use stream::{Stream, shard_root_file};
pub use task::Task;
pub use witness::{Decision, Verdict, VerdictOutcome, WitnessMode};

use pot_sys as sys;
use std::sync::OnceLock;

// The examples of bindings/rust/README.md run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// Version of pot.h this crate was built against, e.g. `"0.3.0"`.
///
/// ```
/// assert_eq!(pot::VERSION, format!("{}.{}.{}", pot::VERSION_MAJOR, pot::VERSION_MINOR, pot::VERSION_PATCH));
/// ```
pub const VERSION: &str = match sys::POT_VERSION_STRING.split_last() {
    Some((0, text)) => match std::str::from_utf8(text) {
        Ok(text) => text,
        Err(_) => panic!("POT_VERSION_STRING is not UTF-8"),
    },
    _ => panic!("POT_VERSION_STRING is not NUL-terminated"),
};
/// Major version of pot.h this crate was built against.
///
/// ```
/// assert_eq!(pot::VERSION_MAJOR, 0);
/// ```
pub const VERSION_MAJOR: u32 = sys::POT_VERSION_MAJOR;
/// Minor version of pot.h this crate was built against.
///
/// ```
/// assert!(pot::VERSION_MINOR >= 1);
/// ```
pub const VERSION_MINOR: u32 = sys::POT_VERSION_MINOR;
/// Patch version of pot.h this crate was built against.
///
/// ```
/// let _patch: u32 = pot::VERSION_PATCH;
/// ```
pub const VERSION_PATCH: u32 = sys::POT_VERSION_PATCH;
/// ABI version of pot.h this crate was built against (`POT_ABI_VERSION`, the
/// SONAME major of libpot.so).
///
/// ```
/// assert_eq!(pot::ABI_VERSION, pot::abi_version());
/// ```
pub const ABI_VERSION: u32 = sys::POT_ABI_VERSION;
/// Bytes of a digest (`POT_DIGEST_SIZE`).
///
/// ```
/// assert_eq!(pot::DIGEST_SIZE, 32);
/// ```
pub const DIGEST_SIZE: usize = sys::POT_DIGEST_SIZE as usize;
/// Bytes per chunk leaf of a tensor digest (`POT_CHUNK_SIZE`).
///
/// ```
/// assert_eq!(pot::CHUNK_SIZE, 65536);
/// ```
pub const CHUNK_SIZE: u32 = sys::POT_CHUNK_SIZE;
/// The longest tensor name accepted, in bytes (`POT_MAX_NAME_BYTES`).
///
/// ```
/// assert_eq!(pot::MAX_NAME_BYTES, 1024);
/// ```
pub const MAX_NAME_BYTES: usize = sys::POT_MAX_NAME_BYTES as usize;
/// The largest tensor rank accepted (`POT_MAX_DIMS`).
///
/// ```
/// assert_eq!(pot::MAX_DIMS, 32);
/// ```
pub const MAX_DIMS: usize = sys::POT_MAX_DIMS as usize;
/// Bytes of a step leaf (`POT_STEP_LEAF_SIZE`).
///
/// ```
/// assert_eq!(pot::STEP_LEAF_SIZE, 132);
/// ```
pub const STEP_LEAF_SIZE: usize = sys::POT_STEP_LEAF_SIZE as usize;
/// The most challenges one derivation may draw (`POT_MAX_CHALLENGE_ROUNDS`).
///
/// ```
/// assert_eq!(pot::MAX_CHALLENGE_ROUNDS, 65536);
/// ```
pub const MAX_CHALLENGE_ROUNDS: u64 = sys::POT_MAX_CHALLENGE_ROUNDS as u64;
/// The longest beacon value accepted, in bytes (`POT_MAX_BEACON_BYTES`).
///
/// ```
/// assert_eq!(pot::MAX_BEACON_BYTES, 1024);
/// ```
pub const MAX_BEACON_BYTES: usize = sys::POT_MAX_BEACON_BYTES as usize;
/// The longest JSON text accepted (`POT_MAX_JSON_BYTES`): specs and
/// commitments from JSON and ledger calls past it fail with `Status::Limit`.
///
/// ```
/// assert_eq!(pot::MAX_JSON_BYTES, 1 << 20);
/// ```
pub const MAX_JSON_BYTES: usize = sys::POT_MAX_JSON_BYTES as usize;
/// The most positions one [`SeededSchedule::stream`] call returns
/// (`POT_MAX_STREAM_POSITIONS`).
///
/// ```
/// assert_eq!(pot::MAX_STREAM_POSITIONS, 1 << 24);
/// ```
pub const MAX_STREAM_POSITIONS: usize = sys::POT_MAX_STREAM_POSITIONS as usize;
/// The most learning rates one [`Spec::learning_rates`] call returns
/// (`POT_MAX_RATES_PER_CALL`).
///
/// ```
/// assert_eq!(pot::MAX_RATES_PER_CALL, 1 << 24);
/// ```
pub const MAX_RATES_PER_CALL: usize = sys::POT_MAX_RATES_PER_CALL as usize;
/// Bytes of a fresh witness salt (`POT_WITNESS_SALT_SIZE`).
///
/// ```
/// assert_eq!(pot::WITNESS_SALT_SIZE, 32);
/// ```
pub const WITNESS_SALT_SIZE: usize = sys::POT_WITNESS_SALT_SIZE as usize;

/// Version of the libpot loaded at run time, e.g. `"0.3.0"`.
///
/// ```
/// assert!(!pot::version_string().is_empty());
/// ```
pub fn version_string() -> &'static str {
    // SAFETY: pot_version_string returns a NUL-terminated string in static storage.
    unsafe { ffi::static_str(sys::pot_version_string()) }
}

/// The number of statuses the loaded libpot has, `POT_OK` included
/// (`pot_status_count`): each of `0..status_count()` has a name, and
/// [`ErrorKind::from_status`] knows each (a later libpot's new codes are
/// [`ErrorKind::Unknown`]).
///
/// ```
/// for s in 1..pot::status_count() {
///     assert!(!matches!(pot::ErrorKind::from_status(s), None | Some(pot::ErrorKind::Unknown(_))));
/// }
/// ```
pub fn status_count() -> u32 {
    // SAFETY: no arguments, no preconditions.
    unsafe { sys::pot_status_count() }
}

/// ABI version of the libpot loaded at run time (`pot_abi_version()`).
///
/// ```
/// assert_eq!(pot::abi_version(), pot::ABI_VERSION);
/// ```
pub fn abi_version() -> u32 {
    // SAFETY: no arguments, no preconditions.
    unsafe { sys::pot_abi_version() }
}

/// Checks that the loaded libpot has the ABI this crate was built for.
///
/// Every fallible function of this crate runs this check first (its result
/// is computed once and cached), so calling it is only needed to fail early,
/// e.g. at program start.
///
/// # Errors
///
/// [`ErrorKind::AbiMismatch`] naming both versions when they differ.
///
/// ```
/// pot::check_abi()?;
/// # Ok::<(), pot::Error>(())
/// ```
pub fn check_abi() -> Result<()> {
    static ABI: OnceLock<Result<()>> = OnceLock::new();
    ABI.get_or_init(|| compare_abi(abi_version(), ABI_VERSION)).clone()
}

/// The ABI check proper, apart from the cache so that it can be tested.
fn compare_abi(loaded: u32, built: u32) -> Result<()> {
    if loaded == built { Ok(()) } else { Err(error::abi_mismatch(loaded, built)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_check_passes_for_the_loaded_library() {
        check_abi().unwrap();
        assert_eq!(abi_version(), ABI_VERSION);
        assert_eq!(version_string(), VERSION);
    }

    #[test]
    fn abi_check_fails_clearly_on_a_mismatch() {
        let err = compare_abi(ABI_VERSION + 1, ABI_VERSION).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AbiMismatch);
        assert!(err.message().contains(&format!("ABI version {}", ABI_VERSION + 1)));
        assert!(compare_abi(3, 3).is_ok());
    }
}
