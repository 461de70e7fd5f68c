//! Token-stream datasets (docs/PROTOCOL.md 15.1): token files committed over
//! 4096-byte chunks, sample `i` the `i`-th window of `W` tokens, proven by
//! the chunks that hold it.

use crate::digest::Digest;
use crate::error::Result;
use crate::ffi::{self, call, cstring, digest_out, non_null, path_cstring};
use crate::hash::Dtype;
use crate::sys;
use std::fmt;
use std::path::Path;
use std::ptr::{self, NonNull};

/// A validated stream dataset (`pot_stream`): token and output dtypes, the
/// window length, the views a window gives and each shard's token count and
/// root.
///
/// `Send` and `Sync`: pot.h documents it as immutable, and every method
/// takes `&self`.
pub struct Stream {
    raw: NonNull<sys::pot_stream>,
}

// SAFETY: pot.h: "Immutable"; no thread affinity, and every method takes &self.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// Parses the JSON form (docs/cli.md "Stream dataset") and validates it.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the rule
    /// or key, [`Limit`](crate::ErrorKind::Limit) for a bound.
    ///
    /// ```
    /// assert_eq!(pot::Stream::from_json("{}").unwrap_err().kind(), pot::ErrorKind::InvalidArgument);
    /// ```
    pub fn from_json(json: &str) -> Result<Stream> {
        let json = cstring(json, "stream JSON")?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_stream_from_json(&mut raw, json.as_ptr(), err) })?;
        Ok(Stream { raw: non_null(raw)? })
    }

    /// Decodes descriptor bytes.
    ///
    /// # Errors
    /// [`Unsupported`](crate::ErrorKind::Unsupported) for another version,
    /// [`Malformed`](crate::ErrorKind::Malformed) for a truncated record or a
    /// trailing byte.
    pub fn decode(bytes: &[u8]) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_stream_decode(&mut raw, bytes.as_ptr(), bytes.len(), err) })?;
        Ok(Stream { raw: non_null(raw)? })
    }

    /// The descriptor bytes.
    pub fn encode(&self) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_stream_encode(out, self.raw.as_ptr(), err) })
    }

    /// The JSON form.
    pub fn to_json(&self) -> Result<String> {
        ffi::string_out(|out, err| unsafe { sys::pot_stream_to_json(out, self.raw.as_ptr(), err) })
    }

    /// The dataset root, `tagged("pot/v2/stream", descriptor)`.
    pub fn root(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_stream_root(out, self.raw.as_ptr(), err) })
    }

    /// The number of windows (the dataset size).
    pub fn size(&self) -> u64 {
        // SAFETY: a live handle.
        unsafe { sys::pot_stream_size(self.raw.as_ptr()) }
    }

    /// The shard and first token of window `index`.
    ///
    /// # Errors
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) past [`size`](Stream::size).
    pub fn locate(&self, index: u64) -> Result<(u32, u64)> {
        let (mut shard, mut offset) = (0u32, 0u64);
        call(|err| unsafe { sys::pot_stream_locate(&mut shard, &mut offset, self.raw.as_ptr(), index, err) })?;
        Ok((shard, offset))
    }

    /// The proof of window `index`, read from its shard's file.
    pub fn prove_window(&self, index: u64, shard_path: &Path) -> Result<Vec<u8>> {
        let path = path_cstring(shard_path)?;
        ffi::bytes_out(|out, err| unsafe {
            sys::pot_stream_prove_window(out, self.raw.as_ptr(), index, path.as_ptr(), err)
        })
    }

    /// The sample of window `index` (safetensors bytes) read from its
    /// shard's file: what a trainer feeds the model. Not checked against the
    /// shard root here; the opening's window proof binds it.
    pub fn sample(&self, index: u64, shard_path: &Path) -> Result<Vec<u8>> {
        let path = path_cstring(shard_path)?;
        ffi::bytes_out(|out, err| unsafe { sys::pot_stream_sample(out, self.raw.as_ptr(), index, path.as_ptr(), err) })
    }

    /// Checks a window proof; the window's sample as safetensors bytes.
    ///
    /// # Errors
    /// [`ProofMismatch`](crate::ErrorKind::ProofMismatch) when its chunks do
    /// not give the shard's root, [`ProofLength`](crate::ErrorKind::ProofLength)
    /// when its sizes are not the window's.
    pub fn check_window(&self, index: u64, proof: &[u8]) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe {
            sys::pot_stream_check_window(out, self.raw.as_ptr(), index, proof.as_ptr(), proof.len(), err)
        })
    }
}

/// The shard root and token count of a token file of `token_dtype`
/// ([`Dtype::U16`] or [`Dtype::U32`]).
pub fn shard_root_file(path: &Path, token_dtype: Dtype) -> Result<(Digest, u64)> {
    let path = path_cstring(path)?;
    let mut tokens = 0u64;
    let root = digest_out(|out, err| unsafe {
        sys::pot_stream_shard_root_file(out, &mut tokens, path.as_ptr(), token_dtype.to_sys(), err)
    })?;
    Ok((root, tokens))
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_stream_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.root() {
            Ok(root) => f.debug_struct("Stream").field("root", &root).field("size", &self.size()).finish(),
            Err(_) => f.debug_struct("Stream").finish_non_exhaustive(),
        }
    }
}
