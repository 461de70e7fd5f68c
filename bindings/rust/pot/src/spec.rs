//! The execution spec (docs/PROTOCOL.md section 14).

use crate::digest::Digest;
use crate::error::{Error, ErrorKind, Result};
use crate::ffi::{self, call, cstring, digest_out, non_null};
use crate::sys;
use std::fmt;
use std::ptr::{self, NonNull};

/// A validated execution spec (`pot_spec`): everything a verifier needs to
/// replay a step as the miner ran it.
///
/// `Send` and `Sync`: pot.h documents it as immutable, readable from several
/// threads at once.
///
/// ```
/// let json = r#"{"framework": "pytorch", "framework_version": "2.3.0",
///   "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
///   "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
///   "optimizer": {"kind": "sgd", "lr": 0.1},
///   "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2",
///   "seed_policy": {"kind": "per_step", "base_seed": 7}, "norm_bucket_resolution": 16}"#;
/// let spec = pot::Spec::from_json(json)?;
/// assert_eq!(spec.seed_policy()?, pot::SeedPolicy::PerStep { base_seed: 7 });
/// assert_eq!(spec.intra_op_threads(), 1);
/// let again = pot::Spec::decode(&spec.encode()?)?;
/// assert_eq!(again.digest()?, spec.digest()?);
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Spec {
    raw: NonNull<sys::pot_spec>,
}

// SAFETY: pot.h: "Immutable: may be read from several threads at once"; no
// thread affinity, and every method takes &self.
unsafe impl Send for Spec {}
// SAFETY: as above.
unsafe impl Sync for Spec {}

/// How a run seeds its randomness (`pot_seed_policy` and its seed).
///
/// ```
/// let p = pot::SeedPolicy::SingleSeed { seed: 3 };
/// assert_ne!(p, pot::SeedPolicy::None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SeedPolicy {
    /// A seed per step, derived from `base_seed`
    /// ([`seed_derive`](crate::protocol::seed_derive)).
    PerStep {
        /// The base seed.
        base_seed: u64,
    },
    /// One seed for the whole run.
    SingleSeed {
        /// The seed.
        seed: u64,
    },
    /// No randomness (then dropout must be 0).
    None,
}

impl Spec {
    /// Parses the JSON form (docs/cli.md) and validates it.
    ///
    /// # Errors
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) naming the first rule
    /// broken or the bad key; [`Malformed`](ErrorKind::Malformed) for text
    /// that is not JSON.
    ///
    /// ```
    /// assert_eq!(pot::Spec::from_json("{").unwrap_err().kind(), pot::ErrorKind::Malformed);
    /// let err = pot::Spec::from_json("{}").unwrap_err();
    /// assert_eq!(err.kind(), pot::ErrorKind::InvalidArgument);
    /// assert!(!err.message().is_empty());
    /// ```
    pub fn from_json(json: &str) -> Result<Spec> {
        let json = cstring(json, "spec JSON")?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_spec_from_json(&mut raw, json.as_ptr(), err) })?;
        Ok(Spec { raw: non_null(raw)? })
    }

    /// Decodes canonical bytes.
    ///
    /// # Errors
    /// [`Malformed`](ErrorKind::Malformed) unless they are exactly the
    /// canonical encoding, [`InvalidArgument`](ErrorKind::InvalidArgument)
    /// when a rule is broken, [`Limit`](ErrorKind::Limit) past 65536 bytes.
    ///
    /// ```
    /// assert!(pot::Spec::decode(&[0xff]).is_err());
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Spec> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_spec_decode(&mut raw, bytes.as_ptr(), bytes.len(), err) })?;
        Ok(Spec { raw: non_null(raw)? })
    }

    /// The canonical bytes (a `pot.v2.ExecutionSpec` message).
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "2.3.0", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16}"#)?;
    /// let bytes = spec.encode()?;
    /// assert_eq!(&bytes[..9], b"\x0a\x07pytorch");
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn encode(&self) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_spec_encode(out, self.raw.as_ptr(), err) })
    }

    /// The JSON form.
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "2.3.0", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16}"#)?;
    /// let json = spec.to_json()?;
    /// assert_eq!(pot::Spec::from_json(&json)?.digest()?, spec.digest()?);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn to_json(&self) -> Result<String> {
        ffi::string_out(|out, err| unsafe { sys::pot_spec_to_json(out, self.raw.as_ptr(), err) })
    }

    /// The spec digest, `tagged("pot/v1/spec", canonical bytes)`.
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "2.3.0", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16}"#)?;
    /// let digest: pot::Digest = spec.digest()?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn digest(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_spec_digest(out, self.raw.as_ptr(), err) })
    }

    /// The seed policy and its seed.
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "2.3.0", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16}"#)?;
    /// assert_eq!(spec.seed_policy()?, pot::SeedPolicy::None);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn seed_policy(&self) -> Result<SeedPolicy> {
        let mut policy = sys::pot_seed_policy(0);
        let mut seed = 0u64;
        call(|err| unsafe { sys::pot_spec_seed_policy(&mut policy, &mut seed, self.raw.as_ptr(), err) })?;
        match policy {
            sys::pot_seed_policy::POT_SEED_PER_STEP => Ok(SeedPolicy::PerStep { base_seed: seed }),
            sys::pot_seed_policy::POT_SEED_SINGLE_SEED => Ok(SeedPolicy::SingleSeed { seed }),
            sys::pot_seed_policy::POT_SEED_NONE => Ok(SeedPolicy::None),
            other => Err(Error::new(
                ErrorKind::Unsupported,
                format!("seed policy {} is not known to this version of the pot crate", other.0),
            )),
        }
    }

    /// The pinned intra-op thread count.
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "2.3.0", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "intra_op_threads": 4, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16}"#)?;
    /// assert_eq!(spec.intra_op_threads(), 4);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn intra_op_threads(&self) -> u32 {
        // SAFETY: live handle.
        unsafe { sys::pot_spec_intra_op_threads(self.raw.as_ptr()) }
    }

    /// The norm-bucket resolution (buckets per doubling).
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "2.3.0", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16}"#)?;
    /// assert_eq!(spec.norm_bucket_resolution(), 16);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn norm_bucket_resolution(&self) -> u32 {
        // SAFETY: live handle.
        unsafe { sys::pot_spec_norm_bucket_resolution(self.raw.as_ptr()) }
    }

    /// The learning rates of training steps `first..first+count`
    /// (`pot_spec_learning_rates`): the optimizer's lr through the spec's
    /// `lr_schedule`, as torch 1.13's schedulers give
    /// `param_groups[0]["lr"]` before each optimizer step, bit for bit.
    /// `S_t`'s `hparam/lr` must be the rate of step `t+1`. Costs
    /// `O(first + count)`: ask for a run's rates in chunks, not once per step.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for `first = 0`,
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) past step 2^32,
    /// [`Limit`](crate::ErrorKind::Limit) for `count` above
    /// [`MAX_RATES_PER_CALL`](crate::MAX_RATES_PER_CALL) (before allocating).
    ///
    /// ```
    /// # let spec = pot::Spec::from_json(r#"{"framework": "pytorch", "framework_version": "1.13.1", "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "dtype": "F32", "attention_backend": "math", "dropout": 0.0, "optimizer": {"kind": "sgd", "lr": 1.0}, "batch_size": 8, "intra_op_threads": 1, "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16, "lr_schedule": {"phases": [{"kind": "exponential", "gamma": 0.5}]}}"#)?;
    /// assert_eq!(spec.learning_rates(1, 4)?, [1.0, 0.5, 0.25, 0.125]);
    /// assert_eq!(spec.learning_rates(3, 1)?, [0.25]);
    /// assert_eq!(spec.learning_rates(0, 1).unwrap_err().kind(), pot::ErrorKind::InvalidArgument);
    /// assert_eq!(spec.learning_rates(1, pot::MAX_RATES_PER_CALL + 1).unwrap_err().kind(), pot::ErrorKind::Limit);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn learning_rates(&self, first: u64, count: usize) -> Result<Vec<f64>> {
        crate::error::check_count(count, crate::MAX_RATES_PER_CALL, "learning rates", "MAX_RATES_PER_CALL")?;
        let mut out = vec![0.0f64; count];
        // SAFETY: live handle; out holds count doubles.
        call(|err| unsafe { sys::pot_spec_learning_rates(out.as_mut_ptr(), count, self.raw.as_ptr(), first, err) })?;
        Ok(out)
    }

    /// The spec's parameter groups (docs/PROTOCOL.md 14.5): 1 + its
    /// `param_groups`.
    pub fn group_count(&self) -> u32 {
        // SAFETY: live handle.
        unsafe { sys::pot_spec_group_count(self.raw.as_ptr()) }
    }

    /// [`learning_rates`](Self::learning_rates) for parameter group `group`
    /// (`pot_spec_group_learning_rates`): its optimizer's lr through the one
    /// `lr_schedule`; `S_t` holds group g's rate of step `t+1` as
    /// `hparam/lr/<g>`.
    ///
    /// # Errors
    /// As `learning_rates`, and [`OutOfRange`](crate::ErrorKind::OutOfRange)
    /// for a group past [`group_count`](Self::group_count).
    pub fn group_learning_rates(&self, group: u32, first: u64, count: usize) -> Result<Vec<f64>> {
        crate::error::check_count(count, crate::MAX_RATES_PER_CALL, "learning rates", "MAX_RATES_PER_CALL")?;
        let mut out = vec![0.0f64; count];
        // SAFETY: live handle; out holds count doubles.
        call(|err| unsafe {
            sys::pot_spec_group_learning_rates(out.as_mut_ptr(), count, self.raw.as_ptr(), group, first, err)
        })?;
        Ok(out)
    }

    pub(crate) fn as_ptr(&self) -> *const sys::pot_spec {
        self.raw.as_ptr()
    }
}

impl Spec {
    /// Takes ownership of a handle made by the C API.
    pub(crate) fn from_raw(raw: NonNull<sys::pot_spec>) -> Spec {
        Spec { raw }
    }
}

impl Drop for Spec {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_spec_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.digest() {
            Ok(d) => f.debug_struct("Spec").field("digest", &d).finish(),
            Err(_) => f.debug_struct("Spec").finish_non_exhaustive(),
        }
    }
}
