//! Hashing: SHA-256, element types, tensor and state digests, and the
//! chunk-range records of sharded states (docs/PROTOCOL.md sections 4-6).

use crate::digest::Digest;
use crate::error::{Error, ErrorKind, Result};
use crate::ffi::{self, call, cstring, digest_out, non_null};
use crate::sys;
use std::fmt;
use std::ptr::NonNull;
use std::str::FromStr;

/// Plain SHA-256 of `data` (no domain tag).
///
/// ```
/// assert_eq!(
///     pot::sha256(b"abc")?.to_hex(),
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// # Ok::<(), pot::Error>(())
/// ```
pub fn sha256(data: &[u8]) -> Result<Digest> {
    digest_out(|out, err| unsafe { sys::pot_sha256(out, data.as_ptr().cast(), data.len(), err) })
}

/// The tensor names and prefixes of a training state (`pot_state_part`,
/// docs/PROTOCOL.md 21.1), spelled by libpot.
///
/// ```
/// assert_eq!(pot::StatePart::Lr.name(), "hparam/lr");
/// assert_eq!(format!("{}w", pot::StatePart::ParamPrefix.name()), "param/w");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatePart {
    /// `"param/"`: `param/<parameter>`.
    ParamPrefix,
    /// `"buffer/"`: `buffer/<buffer>`.
    BufferPrefix,
    /// `"optim/"`: `optim/<parameter>/<key>`.
    OptimPrefix,
    /// `"hparam/lr"`: group 0's rate of the next step; group `g`'s is `hparam/lr/<g>`.
    Lr,
    /// `"rng/cpu"`: the CPU generator's state.
    Rng,
    /// `"grad/"`: a witness's gradient state, `grad/<parameter>`.
    GradPrefix,
}

impl StatePart {
    /// The name or prefix (`pot_state_part_name`).
    pub fn name(self) -> &'static str {
        let part = match self {
            StatePart::ParamPrefix => sys::pot_state_part::POT_STATE_PARAM_PREFIX,
            StatePart::BufferPrefix => sys::pot_state_part::POT_STATE_BUFFER_PREFIX,
            StatePart::OptimPrefix => sys::pot_state_part::POT_STATE_OPTIM_PREFIX,
            StatePart::Lr => sys::pot_state_part::POT_STATE_LR,
            StatePart::Rng => sys::pot_state_part::POT_STATE_RNG,
            StatePart::GradPrefix => sys::pot_state_part::POT_STATE_GRAD_PREFIX,
        };
        // SAFETY: a pot_state_part value; the result is NULL or a
        // NUL-terminated string in static storage (ASCII).
        unsafe { ffi::static_str(sys::pot_state_part_name(part)) }
    }
}

/// Element type of a tensor (`pot_dtype`). The values are part of the
/// tensor digest.
///
/// ```
/// use pot::Dtype;
///
/// assert_eq!(Dtype::BF16.size(), 2);
/// assert_eq!(Dtype::F32.name(), "F32");
/// assert_eq!("I64".parse::<Dtype>()?, Dtype::I64);
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Dtype {
    /// `BOOL`, one byte.
    Bool,
    /// `U8`.
    U8,
    /// `I8`.
    I8,
    /// `I16`.
    I16,
    /// `U16`.
    U16,
    /// `I32`.
    I32,
    /// `U32`.
    U32,
    /// `I64`.
    I64,
    /// `U64`.
    U64,
    /// `F16` (IEEE half).
    F16,
    /// `BF16` (bfloat16).
    BF16,
    /// `F32`.
    F32,
    /// `F64`.
    F64,
}

const DTYPES: [Dtype; 13] = [
    Dtype::Bool,
    Dtype::U8,
    Dtype::I8,
    Dtype::I16,
    Dtype::U16,
    Dtype::I32,
    Dtype::U32,
    Dtype::I64,
    Dtype::U64,
    Dtype::F16,
    Dtype::BF16,
    Dtype::F32,
    Dtype::F64,
];

impl Dtype {
    /// Every dtype, in `pot_dtype` order.
    ///
    /// ```
    /// assert_eq!(pot::Dtype::ALL.len(), 13);
    /// ```
    pub const ALL: &'static [Dtype] = &DTYPES;

    /// The `pot_dtype` value (frozen: `Bool` is 1, `F64` is 13).
    ///
    /// ```
    /// assert_eq!(pot::Dtype::F32.raw(), 12);
    /// ```
    pub fn raw(self) -> u32 {
        DTYPES.iter().position(|d| *d == self).map_or(0, |i| i as u32 + 1)
    }

    /// The dtype of a `pot_dtype` value, `None` for one this crate does not know.
    ///
    /// ```
    /// assert_eq!(pot::Dtype::from_raw(1), Some(pot::Dtype::Bool));
    /// assert_eq!(pot::Dtype::from_raw(99), None);
    /// ```
    pub fn from_raw(raw: u32) -> Option<Dtype> {
        (1..=DTYPES.len() as u32).contains(&raw).then(|| DTYPES[raw as usize - 1])
    }

    /// Bytes per element (`pot_dtype_size`).
    ///
    /// ```
    /// assert_eq!(pot::Dtype::F64.size(), 8);
    /// ```
    pub fn size(self) -> usize {
        // SAFETY: takes any value.
        unsafe { sys::pot_dtype_size(sys::pot_dtype(self.raw())) }
    }

    /// The safetensors name (`"F32"`, `"BF16"`...), from `pot_dtype_name`.
    ///
    /// ```
    /// assert_eq!(pot::Dtype::Bool.name(), "BOOL");
    /// ```
    pub fn name(self) -> &'static str {
        // SAFETY: returns NULL or static storage.
        unsafe { ffi::static_str(sys::pot_dtype_name(sys::pot_dtype(self.raw()))) }
    }

    /// The dtype of a safetensors name (`pot_dtype_from_name`).
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] for an unknown name.
    ///
    /// ```
    /// assert_eq!(pot::Dtype::from_name("U16")?, pot::Dtype::U16);
    /// assert_eq!(pot::Dtype::from_name("F8").unwrap_err().kind(), pot::ErrorKind::Unsupported);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn from_name(name: &str) -> Result<Dtype> {
        let c = cstring(name, "dtype name")?;
        let mut out = sys::pot_dtype(0);
        call(|err| unsafe { sys::pot_dtype_from_name(&mut out, c.as_ptr(), err) })?;
        Dtype::from_raw(out.0).ok_or_else(|| unknown_dtype(out.0))
    }

    pub(crate) fn to_sys(self) -> sys::pot_dtype {
        sys::pot_dtype(self.raw())
    }
}

pub(crate) fn unknown_dtype(raw: u32) -> Error {
    Error::new(ErrorKind::Unsupported, format!("dtype {raw} is not known to this version of the pot crate"))
}

impl fmt::Display for Dtype {
    /// The safetensors name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dtype {
    type Err = Error;
    fn from_str(s: &str) -> Result<Dtype> {
        Dtype::from_name(s)
    }
}

/// Canonical digest of one tensor: its bytes (little-endian, row-major)
/// hashed as [`CHUNK_SIZE`](crate::CHUNK_SIZE) chunks under an RFC 6962
/// tree, bound with name, dtype and shape. `threads` = 0 uses all cores; the
/// digest does not depend on it.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when `data.len()` is not the element size
/// times the product of `shape` or the name is empty or not valid;
/// [`ErrorKind::Limit`] past [`MAX_DIMS`](crate::MAX_DIMS) dims or
/// [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES).
///
/// ```
/// // docs/PROTOCOL.md section 4.1, the worked example.
/// let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
/// let d = pot::tensor_digest("w", pot::Dtype::F32, &[2, 2], &data, 1)?;
/// assert_eq!(d, pot::tensor_digest("w", pot::Dtype::F32, &[2, 2], &data, 0)?);
/// assert!(pot::tensor_digest("w", pot::Dtype::F32, &[3], &data, 1).is_err());
/// # Ok::<(), pot::Error>(())
/// ```
pub fn tensor_digest(name: &str, dtype: Dtype, shape: &[u64], data: &[u8], threads: u32) -> Result<Digest> {
    let name = cstring(name, "tensor name")?;
    digest_out(|out, err| unsafe {
        sys::pot_tensor_digest(
            out,
            name.as_ptr(),
            dtype.to_sys(),
            shape.as_ptr(),
            shape.len(),
            data.as_ptr().cast(),
            data.len(),
            threads,
            err,
        )
    })
}

/// Hashes bytes `[offset, offset + data.len())` of a tensor of `total_bytes`
/// bytes into a chunk-range record, for a sharded state whose ranks each
/// hold part of a tensor; a [`TensorAssembler`] joins the records.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] unless `offset` is a multiple of
/// [`CHUNK_SIZE`](crate::CHUNK_SIZE), and the length too unless the range
/// ends the tensor.
///
/// ```
/// let data = vec![5u8; 100_000];
/// let first = pot::chunk_range_hash(&data[..65536], 0, 100_000, 1)?;
/// let second = pot::chunk_range_hash(&data[65536..], 65536, 100_000, 1)?;
/// let mut asm = pot::TensorAssembler::new("t", pot::Dtype::U8, &[100_000])?;
/// asm.add(&second)?;
/// asm.add(&first)?;
/// assert_eq!(asm.finish()?, pot::tensor_digest("t", pot::Dtype::U8, &[100_000], &data, 1)?);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn chunk_range_hash(data: &[u8], offset: u64, total_bytes: u64, threads: u32) -> Result<Vec<u8>> {
    ffi::bytes_out(|out, err| unsafe {
        sys::pot_chunk_range_hash(out, data.as_ptr().cast(), data.len(), offset, total_bytes, threads, err)
    })
}

/// A state being digested (`pot_state`): named tensors (parameters,
/// buffers, optimizer state...), each digested as it is added; the bytes are
/// not kept.
///
/// `Send` (pot.h: distinct handles may be used from distinct threads) but
/// not `Sync` (one handle must not be used by two threads at once).
///
/// ```
/// use pot::{Dtype, State};
///
/// let mut s = State::new()?;
/// s.set_threads(1)?;
/// s.add_tensor("b", Dtype::U8, &[2], &[1, 2])?;
/// s.add_tensor_digest("a", &pot::tensor_digest("a", Dtype::U8, &[1], &[9], 1)?)?;
/// assert_eq!(s.len(), 2);
/// let digest = s.digest()?;
/// let proof = s.tensor_proof("b")?;
/// let b = pot::tensor_digest("b", Dtype::U8, &[2], &[1, 2], 1)?;
/// State::verify_tensor(&digest, &b, &proof)?;
/// # Ok::<(), pot::Error>(())
/// ```
pub struct State {
    raw: NonNull<sys::pot_state>,
}

// SAFETY: pot.h allows distinct handles on distinct threads; a pot_state has
// no thread affinity. Not Sync: one handle must not be used by two threads at
// once, and its &self methods are not documented as safe concurrently.
unsafe impl Send for State {}

impl State {
    /// An empty state (its digest is that of no tensors).
    ///
    /// ```
    /// let s = pot::State::new()?;
    /// assert!(s.is_empty());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new() -> Result<State> {
        let mut raw = std::ptr::null_mut();
        call(|err| unsafe { sys::pot_state_new(&mut raw, err) })?;
        Ok(State { raw: non_null(raw)? })
    }

    /// Threads used to hash each tensor added later (0 = all cores, the
    /// default). The digest does not depend on it.
    ///
    /// ```
    /// let mut s = pot::State::new()?;
    /// s.set_threads(2)?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn set_threads(&mut self, threads: u32) -> Result<()> {
        call(|err| unsafe { sys::pot_state_set_threads(self.raw.as_ptr(), threads, err) })
    }

    /// Digests a tensor and adds it (arguments as [`tensor_digest`]).
    ///
    /// # Errors
    /// As [`tensor_digest`]; [`ErrorKind::Duplicate`] when the name is
    /// present; [`ErrorKind::Limit`] past 2^20 tensors.
    ///
    /// ```
    /// let mut s = pot::State::new()?;
    /// s.add_tensor("x", pot::Dtype::I8, &[3], &[1, 2, 3])?;
    /// let again = s.add_tensor("x", pot::Dtype::I8, &[3], &[1, 2, 3]).unwrap_err();
    /// assert_eq!(again.kind(), pot::ErrorKind::Duplicate);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn add_tensor(&mut self, name: &str, dtype: Dtype, shape: &[u64], data: &[u8]) -> Result<()> {
        let name = cstring(name, "tensor name")?;
        call(|err| unsafe {
            sys::pot_state_add_tensor(
                self.raw.as_ptr(),
                name.as_ptr(),
                dtype.to_sys(),
                shape.as_ptr(),
                shape.len(),
                data.as_ptr().cast(),
                data.len(),
                err,
            )
        })
    }

    /// Adds a tensor digest computed elsewhere ([`tensor_digest`] or a
    /// [`TensorAssembler`] on another rank).
    ///
    /// ```
    /// let mut a = pot::State::new()?;
    /// a.add_tensor("x", pot::Dtype::U8, &[1], &[7])?;
    /// let mut b = pot::State::new()?;
    /// b.add_tensor_digest("x", &pot::tensor_digest("x", pot::Dtype::U8, &[1], &[7], 1)?)?;
    /// assert_eq!(a.digest()?, b.digest()?);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn add_tensor_digest(&mut self, name: &str, tensor_digest: &Digest) -> Result<()> {
        let name = cstring(name, "tensor name")?;
        call(|err| unsafe {
            sys::pot_state_add_tensor_digest(self.raw.as_ptr(), name.as_ptr(), tensor_digest.as_ptr(), err)
        })
    }

    /// Number of tensors added.
    ///
    /// ```
    /// assert_eq!(pot::State::new()?.len(), 0);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        // SAFETY: live handle.
        unsafe { sys::pot_state_tensor_count(self.raw.as_ptr()) }
    }

    /// Whether no tensor was added.
    ///
    /// ```
    /// assert!(pot::State::new()?.is_empty());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The state digest over the tensors added so far (in bytewise name
    /// order, whatever the order they were added in).
    ///
    /// ```
    /// let mut a = pot::State::new()?;
    /// a.add_tensor("x", pot::Dtype::U8, &[1], &[1])?;
    /// a.add_tensor("y", pot::Dtype::U8, &[1], &[2])?;
    /// let mut b = pot::State::new()?;
    /// b.add_tensor("y", pot::Dtype::U8, &[1], &[2])?;
    /// b.add_tensor("x", pot::Dtype::U8, &[1], &[1])?;
    /// assert_eq!(a.digest()?, b.digest()?);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn digest(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_state_digest(out, self.raw.as_ptr(), err) })
    }

    /// The statistics table of the tensors added so far (`pot_state_stats`,
    /// docs/PROTOCOL.md 5.2), computed as each was added.
    ///
    /// # Errors
    /// [`State`](ErrorKind::State) when a tensor was added by its digest alone.
    pub fn stats(&self) -> Result<crate::StateStats> {
        let table = crate::ffi::bytes_out(|out, err| unsafe { sys::pot_state_stats(out, self.raw.as_ptr(), err) })?;
        crate::StateStats::decode(&table)
    }

    /// Proof that the named tensor belongs to the state (docs/PROTOCOL.md
    /// 5.1), to check with [`State::verify_tensor`].
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`] when the name is absent.
    ///
    /// ```
    /// let mut s = pot::State::new()?;
    /// s.add_tensor("x", pot::Dtype::U8, &[1], &[1])?;
    /// assert!(!s.tensor_proof("x")?.is_empty());
    /// assert_eq!(s.tensor_proof("y").unwrap_err().kind(), pot::ErrorKind::NotFound);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn tensor_proof(&self, name: &str) -> Result<Vec<u8>> {
        let name = cstring(name, "tensor name")?;
        ffi::bytes_out(|out, err| unsafe { sys::pot_state_tensor_proof(out, self.raw.as_ptr(), name.as_ptr(), err) })
    }

    /// Checks that `tensor_digest` is part of the state with `state_digest`,
    /// by a proof of [`State::tensor_proof`]. Thread-safe.
    ///
    /// # Errors
    /// [`ErrorKind::ProofMismatch`] when it is not; [`ErrorKind::Malformed`]
    /// or [`ErrorKind::Limit`] for proof bytes that do not decode;
    /// [`ErrorKind::OutOfRange`] or [`ErrorKind::ProofLength`] for
    /// inconsistent positions.
    ///
    /// ```
    /// let mut s = pot::State::new()?;
    /// s.add_tensor("x", pot::Dtype::U8, &[1], &[1])?;
    /// s.add_tensor("y", pot::Dtype::U8, &[1], &[2])?;
    /// let proof = s.tensor_proof("x")?;
    /// let x = pot::tensor_digest("x", pot::Dtype::U8, &[1], &[1], 1)?;
    /// let y = pot::tensor_digest("y", pot::Dtype::U8, &[1], &[2], 1)?;
    /// pot::State::verify_tensor(&s.digest()?, &x, &proof)?;
    /// let err = pot::State::verify_tensor(&s.digest()?, &y, &proof).unwrap_err();
    /// assert_eq!(err.kind(), pot::ErrorKind::ProofMismatch);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn verify_tensor(state_digest: &Digest, tensor_digest: &Digest, proof: &[u8]) -> Result<()> {
        call(|err| unsafe {
            sys::pot_state_verify_tensor(
                state_digest.as_ptr(),
                tensor_digest.as_ptr(),
                proof.as_ptr(),
                proof.len(),
                err,
            )
        })
    }
}

impl Drop for State {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_state_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State").field("tensors", &self.len()).finish()
    }
}

/// Joins chunk-range records ([`chunk_range_hash`]) into the digest
/// [`tensor_digest`] gives for the whole tensor (`pot_tensor_assembler`).
///
/// `Send`, not `Sync` (pot.h's rule for handles).
///
/// ```
/// let data = vec![1u8; 10];
/// let mut asm = pot::TensorAssembler::new("t", pot::Dtype::U8, &[10])?;
/// asm.add(&pot::chunk_range_hash(&data, 0, 10, 1)?)?;
/// assert_eq!(asm.finish()?, pot::tensor_digest("t", pot::Dtype::U8, &[10], &data, 1)?);
/// # Ok::<(), pot::Error>(())
/// ```
pub struct TensorAssembler {
    raw: NonNull<sys::pot_tensor_assembler>,
}

// SAFETY: no thread affinity; not Sync by pot.h's one-thread-per-handle rule.
unsafe impl Send for TensorAssembler {}

impl TensorAssembler {
    /// An assembler for the tensor with this name, dtype and shape.
    ///
    /// ```
    /// let asm = pot::TensorAssembler::new("t", pot::Dtype::F32, &[4, 4])?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new(name: &str, dtype: Dtype, shape: &[u64]) -> Result<TensorAssembler> {
        let name = cstring(name, "tensor name")?;
        let mut raw = std::ptr::null_mut();
        call(|err| unsafe {
            sys::pot_tensor_assembler_new(&mut raw, name.as_ptr(), dtype.to_sys(), shape.as_ptr(), shape.len(), err)
        })?;
        Ok(TensorAssembler { raw: non_null(raw)? })
    }

    /// Adds a record.
    ///
    /// # Errors
    /// [`ErrorKind::Malformed`] when it does not decode;
    /// [`ErrorKind::InvalidArgument`] when it is for a tensor of another size
    /// or overlaps a record added.
    ///
    /// ```
    /// let mut asm = pot::TensorAssembler::new("t", pot::Dtype::U8, &[3])?;
    /// assert_eq!(asm.add(b"junk").unwrap_err().kind(), pot::ErrorKind::Malformed);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn add(&mut self, record: &[u8]) -> Result<()> {
        call(|err| unsafe { sys::pot_tensor_assembler_add(self.raw.as_ptr(), record.as_ptr(), record.len(), err) })
    }

    /// The tensor digest.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] while some bytes are not covered.
    ///
    /// ```
    /// let asm = pot::TensorAssembler::new("t", pot::Dtype::U8, &[3])?;
    /// assert_eq!(asm.finish().unwrap_err().kind(), pot::ErrorKind::InvalidArgument);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn finish(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_tensor_assembler_finish(out, self.raw.as_ptr(), err) })
    }
}

impl Drop for TensorAssembler {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_tensor_assembler_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for TensorAssembler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorAssembler").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_round_trip_through_libpot() {
        for &d in Dtype::ALL {
            assert_eq!(Dtype::from_raw(d.raw()), Some(d));
            assert_eq!(Dtype::from_name(d.name()).unwrap(), d);
            assert!(d.size() >= 1);
        }
        assert_eq!(Dtype::F64.raw(), sys::pot_dtype::POT_DTYPE_F64.0);
        assert_eq!(Dtype::Bool.raw(), sys::pot_dtype::POT_DTYPE_BOOL.0);
        assert_eq!(Dtype::from_raw(0), None);
    }

    #[test]
    fn nul_in_a_name_is_refused_before_the_call() {
        let e = tensor_digest("a\0b", Dtype::U8, &[1], &[0], 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("NUL"));
    }
}
