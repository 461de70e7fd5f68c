//! The protocol's arithmetic: per-step seeds, step leaves, challenges, the
//! security figures and norm buckets (docs/PROTOCOL.md sections 9-13).

use crate::digest::Digest;
use crate::error::{Error, ErrorKind, Result};
use crate::ffi::{call, cstring};
use crate::safetensors::Safetensors;
use crate::sys;

/// Seed of step `step` of run `run_id` ([`Commitment::run_id`](crate::Commitment::run_id))
/// under the `per_step` seed policy: the first 8 bytes (little-endian) of a
/// tagged SHA-256 of `(base_seed, run_id, step)` (docs/PROTOCOL.md section
/// 9). Two runs of one task draw different seeds. Thread-safe.
///
/// ```
/// let run = pot::Digest([0x5c; 32]);
/// let mut other = run;
/// other.0[31] ^= 1;
/// assert_ne!(pot::protocol::seed_derive(42, &run, 7)?, pot::protocol::seed_derive(42, &other, 7)?);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn seed_derive(base_seed: u64, run_id: &Digest, step: u64) -> Result<u64> {
    let mut out = 0u64;
    call(|err| unsafe { sys::pot_seed_derive(&mut out, base_seed, run_id.as_ptr(), step, err) })?;
    Ok(out)
}

/// The leaf the checkpoint log holds for one step (from 1) of a run: the
/// run, the step, the digest of the state after it, the loss and the update
/// norm from `S_{t-1}` to `S_t` over the `param/` tensors ([`update_norm`]),
/// committed at training time (docs/PROTOCOL.md sections 10 and 13).
/// Append [`encode`](StepLeaf::encode)'s bytes to a [`Log`](crate::Log) or
/// [`Tree`](crate::Tree) (leaf index `step - 1`).
///
/// ```
/// use pot::{Digest, StepLeaf};
///
/// let leaf = StepLeaf { run_id: Digest::new([9; 32]), step: 3, state_digest: Digest::new([1; 32]), stats_digest: Digest::new([2; 32]), loss: 0.25, update_norm: 0.5 };
/// let bytes: [u8; pot::STEP_LEAF_SIZE] = leaf.encode()?;
/// assert_eq!(StepLeaf::decode(&bytes)?, leaf);
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepLeaf {
    /// The run the step belongs to ([`Commitment::run_id`](crate::Commitment::run_id)).
    pub run_id: Digest,
    /// The step, from 1.
    pub step: u64,
    /// Digest of the state after the step.
    pub state_digest: Digest,
    /// Digest of that state's statistics table
    /// ([`StateStats::digest`](crate::StateStats::digest), docs/PROTOCOL.md 5.2).
    pub stats_digest: Digest,
    /// The loss of the step (kept as its IEEE-754 bits, so `-0.0` and NaN
    /// payloads survive).
    pub loss: f64,
    /// The update norm of the step (kept as its bits; the sign bit is clear).
    pub update_norm: f64,
}

impl StepLeaf {
    /// The [`STEP_LEAF_SIZE`](crate::STEP_LEAF_SIZE) bytes of the leaf.
    ///
    /// # Errors
    /// [`InvalidArgument`](ErrorKind::InvalidArgument) for step 0 or an
    /// update norm with its sign bit set.
    ///
    /// ```
    /// let leaf = pot::StepLeaf { run_id: pot::Digest::default(), step: 0, state_digest: pot::Digest::default(), stats_digest: pot::Digest::default(), loss: 1.0, update_norm: 0.0 };
    /// assert_eq!(leaf.encode().unwrap_err().kind(), pot::ErrorKind::InvalidArgument);
    /// let negative = pot::StepLeaf { step: 1, update_norm: -0.0, ..leaf };
    /// assert_eq!(negative.encode().unwrap_err().kind(), pot::ErrorKind::InvalidArgument);
    /// ```
    pub fn encode(&self) -> Result<[u8; crate::STEP_LEAF_SIZE]> {
        let mut out = [0u8; crate::STEP_LEAF_SIZE];
        call(|err| unsafe {
            sys::pot_step_leaf_encode(
                out.as_mut_ptr(),
                self.run_id.as_ptr(),
                self.step,
                self.state_digest.as_ptr(),
                self.stats_digest.as_ptr(),
                self.loss,
                self.update_norm,
                err,
            )
        })?;
        Ok(out)
    }

    /// Parses step leaf bytes.
    ///
    /// # Errors
    /// [`Malformed`](ErrorKind::Malformed) unless they are exactly what
    /// [`encode`](StepLeaf::encode) produces (a version-1 or version-2 leaf
    /// is refused naming its version).
    ///
    /// ```
    /// assert_eq!(pot::StepLeaf::decode(&[0; 132]).unwrap_err().kind(), pot::ErrorKind::Malformed);
    /// ```
    pub fn decode(leaf: &[u8]) -> Result<StepLeaf> {
        let mut run = sys::pot_digest::default();
        let mut step = 0u64;
        let mut digest = sys::pot_digest::default();
        let mut stats = sys::pot_digest::default();
        let (mut loss, mut norm) = (0f64, 0f64);
        call(|err| unsafe {
            sys::pot_step_leaf_decode(
                &mut run,
                &mut step,
                &mut digest,
                &mut stats,
                &mut loss,
                &mut norm,
                leaf.as_ptr(),
                leaf.len(),
                err,
            )
        })?;
        Ok(StepLeaf {
            run_id: Digest(run.bytes),
            step,
            state_digest: Digest(digest.bytes),
            stats_digest: Digest(stats.bytes),
            loss,
            update_norm: norm,
        })
    }
}

/// The `rounds` distinct challenged steps (each in `1..=num_steps`, uniform,
/// without modulo bias) derived from a beacon value and a run id, in round
/// order (docs/PROTOCOL.md section 11). Thread-safe.
///
/// # Errors
/// [`InvalidArgument`](ErrorKind::InvalidArgument) when `num_steps` is 0,
/// `rounds > num_steps` or the beacon is empty; [`Limit`](ErrorKind::Limit)
/// past [`MAX_CHALLENGE_ROUNDS`](crate::MAX_CHALLENGE_ROUNDS) rounds or
/// [`MAX_BEACON_BYTES`](crate::MAX_BEACON_BYTES).
///
/// ```
/// let run_id: pot::Digest = "5221807b2f1b1382725bca2ae8f07b17cb3e13fd732c97cc4aa8454bb8be7af4".parse()?;
/// assert_eq!(pot::protocol::challenge_derive(&[0x01], &run_id, 8, 8)?, [2, 7, 1, 3, 6, 8, 4, 5]);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn challenge_derive(beacon: &[u8], run_id: &Digest, num_steps: u64, rounds: usize) -> Result<Vec<u64>> {
    if rounds as u64 > crate::MAX_CHALLENGE_ROUNDS {
        // Refused before allocating `rounds` outputs; libpot would say the same.
        return Err(Error::new(
            ErrorKind::Limit,
            format!("{rounds} challenge rounds exceed POT_MAX_CHALLENGE_ROUNDS ({})", crate::MAX_CHALLENGE_ROUNDS),
        ));
    }
    let mut steps = vec![0u64; rounds];
    call(|err| unsafe {
        sys::pot_challenge_derive(
            steps.as_mut_ptr(),
            rounds,
            beacon.as_ptr(),
            beacon.len(),
            run_id.as_ptr(),
            num_steps,
            err,
        )
    })?;
    Ok(steps)
}

/// Probability that `challenges` distinct challenges over `steps` steps hit
/// at least one of `forged` forged steps: `1 - C(n-m, k) / C(n, k)`.
///
/// ```
/// let p = pot::protocol::detection_probability(10, 2, 3)?;
/// assert!((p - 8.0 / 15.0).abs() < 1e-12);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn detection_probability(steps: u64, forged: u64, challenges: u64) -> Result<f64> {
    let mut out = 0f64;
    call(|err| unsafe { sys::pot_security_detection_probability(&mut out, steps, forged, challenges, err) })?;
    Ok(out)
}

/// Smallest number of challenges whose detection probability reaches
/// `target` (`0 < target < 1`, `forged > 0`).
///
/// # Errors
/// [`InvalidArgument`](ErrorKind::InvalidArgument) for a target outside
/// (0, 1); [`Limit`](ErrorKind::Limit) when more than
/// [`MAX_CHALLENGE_ROUNDS`](crate::MAX_CHALLENGE_ROUNDS) would be needed.
///
/// ```
/// let k = pot::protocol::challenges_needed(10_000, 100, 0.99)?;
/// assert!(pot::protocol::detection_probability(10_000, 100, k)? >= 0.99);
/// assert!(pot::protocol::detection_probability(10_000, 100, k - 1)? < 0.99);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn challenges_needed(steps: u64, forged: u64, target: f64) -> Result<u64> {
    let mut out = 0u64;
    call(|err| unsafe { sys::pot_security_challenges_needed(&mut out, steps, forged, target, err) })?;
    Ok(out)
}

/// The least bond `B` with `p * B >= (1 - p) * reward` (PROTOCOL.md section
/// 12.2): a miner that forges then gains nothing in expectation.
///
/// # Errors
/// [`InvalidArgument`](ErrorKind::InvalidArgument) unless `0 < p <= 1`;
/// [`OutOfRange`](ErrorKind::OutOfRange) past `2^64 - 1`.
///
/// ```
/// assert_eq!(pot::protocol::security_bond(100, 0.25)?, 300);
/// assert_eq!(pot::protocol::security_bond(100, 1.0)?, 0);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn security_bond(reward: u64, detection_probability: f64) -> Result<u64> {
    let mut out = 0u64;
    call(|err| unsafe { sys::pot_security_bond(&mut out, reward, detection_probability, err) })?;
    Ok(out)
}

/// `floor(resolution * log2(norm))` (resolution 1..=65536 buckets per
/// doubling); [`norm_bucket_zero`] for 0 and [`norm_bucket_nonfinite`] for
/// NaN or an infinite norm.
///
/// # Errors
/// [`InvalidArgument`](ErrorKind::InvalidArgument) for a negative norm or a
/// resolution out of range.
///
/// ```
/// use pot::protocol::norm_bucket;
/// assert_eq!(norm_bucket(1.0, 16)?, 0);
/// assert_eq!(norm_bucket(3.0, 1)?, 1);
/// assert_eq!(norm_bucket(0.0, 8)?, pot::protocol::norm_bucket_zero());
/// assert!(norm_bucket(-1.0, 8).is_err());
/// # Ok::<(), pot::Error>(())
/// ```
pub fn norm_bucket(norm: f64, resolution: u32) -> Result<i64> {
    let mut out = 0i64;
    call(|err| unsafe { sys::pot_norm_bucket(&mut out, norm, resolution, err) })?;
    Ok(out)
}

/// Whether a committed and an observed bucket match: equal or adjacent
/// (the sentinels match only themselves).
///
/// ```
/// use pot::protocol::norm_buckets_match;
/// assert!(norm_buckets_match(-1200, -1199));
/// assert!(!norm_buckets_match(-1200, -1198));
/// ```
pub fn norm_buckets_match(committed: i64, observed: i64) -> bool {
    // SAFETY: pure function of two integers.
    unsafe { sys::pot_norm_buckets_match(committed, observed) != 0 }
}

/// The bucket of an exact-zero norm (matches only itself).
///
/// ```
/// assert_eq!(pot::protocol::norm_bucket_zero(), i64::MIN);
/// ```
pub fn norm_bucket_zero() -> i64 {
    // SAFETY: no arguments.
    unsafe { sys::pot_norm_bucket_zero() }
}

/// The bucket of a NaN or infinite norm (matches only itself).
///
/// ```
/// assert_eq!(pot::protocol::norm_bucket(f64::NAN, 4)?, pot::protocol::norm_bucket_nonfinite());
/// # Ok::<(), pot::Error>(())
/// ```
pub fn norm_bucket_nonfinite() -> i64 {
    // SAFETY: no arguments.
    unsafe { sys::pot_norm_bucket_nonfinite() }
}

/// L2 norm of `post - pre` over the floating-point tensors whose names start
/// with `prefix` (`""` = all), in float64, in the fixed order of
/// docs/PROTOCOL.md section 13.
///
/// # Errors
/// [`InvalidArgument`](ErrorKind::InvalidArgument) when the two states hold
/// different such tensors or none.
///
/// ```
/// let dir = std::env::temp_dir();
/// let (a, b) = (dir.join(format!("pot-doc-norm-a-{}", std::process::id())), dir.join(format!("pot-doc-norm-b-{}", std::process::id())));
/// let (x, y): (Vec<u8>, Vec<u8>) = (
///     [0.0f64, 0.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
///     [3.0f64, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
/// );
/// for (path, data) in [(&a, &x), (&b, &y)] {
///     let mut w = pot::SafetensorsWriter::new()?;
///     w.add("w", pot::Dtype::F64, &[2], data)?;
///     w.write(path)?;
/// }
/// let norm = pot::protocol::update_norm(&pot::Safetensors::open(&a)?, &pot::Safetensors::open(&b)?, "")?;
/// assert_eq!(norm, 5.0);
/// # std::fs::remove_file(&a).unwrap(); std::fs::remove_file(&b).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
pub fn update_norm(pre: &Safetensors, post: &Safetensors, prefix: &str) -> Result<f64> {
    let prefix = cstring(prefix, "prefix")?;
    let mut out = 0f64;
    call(|err| unsafe { sys::pot_update_norm(&mut out, pre.as_ptr(), post.as_ptr(), prefix.as_ptr(), err) })?;
    Ok(out)
}
