//! safetensors state files: a validating reader, a canonical writer, and
//! the state digest of a file.

use crate::digest::Digest;
use crate::error::Result;
use crate::ffi::{self, call, cstring, digest_out, non_null, path_cstring};
use crate::hash::{Dtype, unknown_dtype};
use crate::sys;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::{self, NonNull};

/// The state digest of a safetensors file's tensors (metadata excluded):
/// open, digest and close in one call. Equal to a [`State`](crate::State)
/// holding the same tensors.
///
/// # Errors
/// As [`Safetensors::open`].
///
/// ```
/// let path = std::env::temp_dir().join(format!("pot-doc-digest-file-{}.safetensors", std::process::id()));
/// let mut w = pot::SafetensorsWriter::new()?;
/// w.add("x", pot::Dtype::U8, &[2], &[1, 2])?;
/// w.write(&path)?;
/// let mut s = pot::State::new()?;
/// s.add_tensor("x", pot::Dtype::U8, &[2], &[1, 2])?;
/// assert_eq!(pot::safetensors::digest_file(&path, 0)?, s.digest()?);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
pub fn digest_file(path: impl AsRef<Path>, threads: u32) -> Result<Digest> {
    let path = path_cstring(path.as_ref())?;
    digest_out(|out, err| unsafe { sys::pot_safetensors_digest_file(out, path.as_ptr(), threads, err) })
}

/// A safetensors file mapped read-only, its header validated
/// (`pot_safetensors`). Tensors are indexed in bytewise name order.
///
/// `Send` and `Sync`: pot.h documents the handle as read-only and usable
/// from several threads at once, and every method takes `&self`.
///
/// ```
/// # let path = std::env::temp_dir().join(format!("pot-doc-reader-{}.safetensors", std::process::id()));
/// # let mut w = pot::SafetensorsWriter::new()?;
/// # w.add("b", pot::Dtype::U16, &[2], &[1, 0, 2, 0])?;
/// # w.add("a", pot::Dtype::U8, &[], &[9])?;
/// # w.set_metadata("format", "pt")?;
/// # w.write(&path)?;
/// let file = pot::Safetensors::open(&path)?;
/// assert_eq!(file.len(), 2);
/// let a = file.tensor(0)?;
/// assert_eq!((a.name, a.dtype, a.shape, a.data), ("a", pot::Dtype::U8, &[][..], &[9u8][..]));
/// assert_eq!(file.find("b")?, Some(1));
/// assert_eq!(file.metadata("format")?, Some("pt"));
/// assert_eq!(file.digest(0)?, pot::safetensors::digest_file(&path, 0)?);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Safetensors {
    raw: NonNull<sys::pot_safetensors>,
}

// SAFETY: pot.h: "Read-only: may be used from several threads at once". The
// handle has no thread affinity and no method mutates it.
unsafe impl Send for Safetensors {}
// SAFETY: as above; all methods are &self reads of an immutable mapping.
unsafe impl Sync for Safetensors {}

/// One tensor of a [`Safetensors`] file, borrowed from its mapping.
///
/// ```
/// # let path = std::env::temp_dir().join(format!("pot-doc-view-{}.safetensors", std::process::id()));
/// # let mut w = pot::SafetensorsWriter::new()?;
/// # w.add("m", pot::Dtype::F32, &[1, 2], &[0; 8])?;
/// # w.write(&path)?;
/// let file = pot::Safetensors::open(&path)?;
/// let m: pot::TensorView<'_> = file.tensor(0)?;
/// assert_eq!(m.shape, &[1, 2]);
/// assert_eq!(m.data.len(), 8);
/// assert_eq!(m.digest(1)?, pot::tensor_digest("m", pot::Dtype::F32, &[1, 2], &[0; 8], 1)?);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorView<'a> {
    /// The tensor's name.
    pub name: &'a str,
    /// Its element type.
    pub dtype: Dtype,
    /// Its shape (empty for a scalar).
    pub shape: &'a [u64],
    /// Its bytes, little-endian, row-major.
    pub data: &'a [u8],
}

impl TensorView<'_> {
    /// The tensor digest of this tensor ([`tensor_digest`](crate::tensor_digest)).
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-view-digest-{}.safetensors", std::process::id()));
    /// # let mut w = pot::SafetensorsWriter::new()?;
    /// # w.add("x", pot::Dtype::U8, &[1], &[3])?;
    /// # w.write(&path)?;
    /// let file = pot::Safetensors::open(&path)?;
    /// let x = file.tensor(0)?;
    /// assert_eq!(x.digest(0)?, pot::tensor_digest("x", pot::Dtype::U8, &[1], &[3], 0)?);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn digest(&self, threads: u32) -> Result<Digest> {
        crate::tensor_digest(self.name, self.dtype, self.shape, self.data, threads)
    }
}

impl Safetensors {
    /// Opens and maps a file, validating its header (sizes bounded, offsets
    /// inside the file, no gaps or overlaps, byte lengths consistent with
    /// dtype and shape, no duplicate keys).
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) (cannot open or map),
    /// [`Malformed`](crate::ErrorKind::Malformed) (bad header),
    /// [`Limit`](crate::ErrorKind::Limit) (header over 100 MiB, too many
    /// tensors or dims), [`Unsupported`](crate::ErrorKind::Unsupported) (dtype).
    ///
    /// ```
    /// let err = pot::Safetensors::open("/nonexistent/x.safetensors").unwrap_err();
    /// assert_eq!(err.kind(), pot::ErrorKind::Io);
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Safetensors> {
        let path = path_cstring(path.as_ref())?;
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_safetensors_open(&mut raw, path.as_ptr(), err) })?;
        Ok(Safetensors { raw: non_null(raw)? })
    }

    /// Number of tensors.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-len-{}.safetensors", std::process::id()));
    /// # pot::SafetensorsWriter::new()?.write(&path)?;
    /// assert_eq!(pot::Safetensors::open(&path)?.len(), 0);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        // SAFETY: live handle.
        unsafe { sys::pot_safetensors_count(self.raw.as_ptr()) }
    }

    /// Whether the file holds no tensor.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-empty-{}.safetensors", std::process::id()));
    /// # pot::SafetensorsWriter::new()?.write(&path)?;
    /// assert!(pot::Safetensors::open(&path)?.is_empty());
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tensor `index` (in bytewise name order), borrowed from the mapping.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfRange`](crate::ErrorKind::OutOfRange) for an index
    /// `>= len()`.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-tensor-{}.safetensors", std::process::id()));
    /// # pot::SafetensorsWriter::new()?.write(&path)?;
    /// let file = pot::Safetensors::open(&path)?;
    /// assert_eq!(file.tensor(0).unwrap_err().kind(), pot::ErrorKind::OutOfRange);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn tensor(&self, index: usize) -> Result<TensorView<'_>> {
        let mut name = ptr::null();
        let mut dtype = sys::pot_dtype(0);
        let mut shape = ptr::null();
        let mut ndim = 0usize;
        let mut data = ptr::null();
        let mut nbytes = 0usize;
        call(|err| unsafe {
            sys::pot_safetensors_tensor(
                &mut name,
                &mut dtype,
                &mut shape,
                &mut ndim,
                &mut data,
                &mut nbytes,
                self.raw.as_ptr(),
                index,
                err,
            )
        })?;
        // SAFETY: pot.h: the pointers stay valid until pot_safetensors_free,
        // i.e. for the borrow of self.
        unsafe {
            Ok(TensorView {
                name: ffi::borrowed_str(name)?,
                dtype: Dtype::from_raw(dtype.0).ok_or_else(|| unknown_dtype(dtype.0))?,
                shape: ffi::slice(shape, ndim),
                data: ffi::slice(data.cast::<u8>(), nbytes),
            })
        }
    }

    /// Every tensor, in index order.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-iter-{}.safetensors", std::process::id()));
    /// # let mut w = pot::SafetensorsWriter::new()?;
    /// # w.add("y", pot::Dtype::U8, &[1], &[1])?;
    /// # w.add("x", pot::Dtype::U8, &[1], &[2])?;
    /// # w.write(&path)?;
    /// let file = pot::Safetensors::open(&path)?;
    /// let names: Vec<&str> = file.tensors().map(|t| t.map(|t| t.name)).collect::<pot::Result<_>>()?;
    /// assert_eq!(names, ["x", "y"]);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn tensors(&self) -> impl ExactSizeIterator<Item = Result<TensorView<'_>>> + '_ {
        (0..self.len()).map(|i| self.tensor(i))
    }

    /// Index of the named tensor, `None` when absent.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-find-{}.safetensors", std::process::id()));
    /// # let mut w = pot::SafetensorsWriter::new()?;
    /// # w.add("x", pot::Dtype::U8, &[1], &[2])?;
    /// # w.write(&path)?;
    /// let file = pot::Safetensors::open(&path)?;
    /// assert_eq!(file.find("x")?, Some(0));
    /// assert_eq!(file.find("nope")?, None);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn find(&self, name: &str) -> Result<Option<usize>> {
        let name = cstring(name, "tensor name")?;
        let mut index = 0usize;
        not_found_is_none(call(|err| unsafe {
            sys::pot_safetensors_find(&mut index, self.raw.as_ptr(), name.as_ptr(), err)
        }))
        .map(|found| found.map(|()| index))
    }

    /// The named tensor, `None` when absent.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-get-{}.safetensors", std::process::id()));
    /// # let mut w = pot::SafetensorsWriter::new()?;
    /// # w.add("x", pot::Dtype::U8, &[1], &[2])?;
    /// # w.write(&path)?;
    /// let file = pot::Safetensors::open(&path)?;
    /// assert_eq!(file.get("x")?.map(|t| t.data), Some(&[2u8][..]));
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn get(&self, name: &str) -> Result<Option<TensorView<'_>>> {
        self.find(name)?.map(|i| self.tensor(i)).transpose()
    }

    /// Value of a `__metadata__` entry, `None` when absent.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-meta-{}.safetensors", std::process::id()));
    /// # let mut w = pot::SafetensorsWriter::new()?;
    /// # w.set_metadata("step", "7")?;
    /// # w.write(&path)?;
    /// let file = pot::Safetensors::open(&path)?;
    /// assert_eq!(file.metadata("step")?, Some("7"));
    /// assert_eq!(file.metadata("other")?, None);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn metadata(&self, key: &str) -> Result<Option<&str>> {
        let key = cstring(key, "metadata key")?;
        let mut value = ptr::null();
        match not_found_is_none(call(|err| unsafe {
            sys::pot_safetensors_metadata(&mut value, self.raw.as_ptr(), key.as_ptr(), err)
        }))? {
            // SAFETY: valid until pot_safetensors_free, i.e. for the borrow of self.
            Some(()) => Ok(Some(unsafe { ffi::borrowed_str(value)? })),
            None => Ok(None),
        }
    }

    /// State digest of the file's tensors (metadata excluded), hashed
    /// straight from the mapping; `threads` = 0 uses all cores.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("pot-doc-fdigest-{}.safetensors", std::process::id()));
    /// # pot::SafetensorsWriter::new()?.write(&path)?;
    /// let file = pot::Safetensors::open(&path)?;
    /// assert_eq!(file.digest(1)?, pot::State::new()?.digest()?);
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn digest(&self, threads: u32) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_safetensors_digest(out, self.raw.as_ptr(), threads, err) })
    }

    pub(crate) fn as_ptr(&self) -> *const sys::pot_safetensors {
        self.raw.as_ptr()
    }
}

fn not_found_is_none(r: Result<()>) -> Result<Option<()>> {
    match r {
        Ok(()) => Ok(Some(())),
        Err(e) if e.kind() == crate::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl Drop for Safetensors {
    fn drop(&mut self) {
        // SAFETY: we own the handle; borrowed views cannot outlive self.
        unsafe { sys::pot_safetensors_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Safetensors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Safetensors").field("tensors", &self.len()).finish()
    }
}

/// Collects tensors and writes a canonical safetensors file
/// (`pot_safetensors_writer`).
///
/// The writer borrows each tensor's bytes until it is dropped (pot.h: the
/// data must stay valid and unchanged until the write), which the lifetime
/// `'a` enforces: the data cannot be freed or changed while the writer lives.
///
/// `Send`, not `Sync` (pot.h's rule for handles).
///
/// ```
/// let path = std::env::temp_dir().join(format!("pot-doc-writer-{}.safetensors", std::process::id()));
/// let weights = vec![0u8; 16];
/// let mut w = pot::SafetensorsWriter::new()?;
/// w.add("w", pot::Dtype::F32, &[2, 2], &weights)?;
/// w.set_metadata("format", "pt")?;
/// w.write(&path)?;
/// assert_eq!(pot::Safetensors::open(&path)?.tensor(0)?.data, &weights[..]);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
///
/// The borrow is checked at compile time:
///
/// ```compile_fail
/// let mut w = pot::SafetensorsWriter::new().unwrap();
/// {
///     let data = vec![0u8; 4];
///     w.add("x", pot::Dtype::U8, &[4], &data).unwrap();
/// } // `data` dropped here while still borrowed
/// w.write("/tmp/x.safetensors").unwrap();
/// ```
pub struct SafetensorsWriter<'a> {
    raw: NonNull<sys::pot_safetensors_writer>,
    _data: PhantomData<&'a [u8]>,
}

// SAFETY: no thread affinity; the borrowed data is &'a [u8], which is Send.
// Not Sync: pot.h's one-thread-per-handle rule.
unsafe impl Send for SafetensorsWriter<'_> {}

impl<'a> SafetensorsWriter<'a> {
    /// An empty writer.
    ///
    /// ```
    /// let w = pot::SafetensorsWriter::new()?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new() -> Result<SafetensorsWriter<'a>> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_safetensors_writer_new(&mut raw, err) })?;
        Ok(SafetensorsWriter { raw: non_null(raw)?, _data: PhantomData })
    }

    /// Validates (as [`tensor_digest`](crate::tensor_digest)) and records a
    /// tensor, borrowing `data` until the writer is dropped.
    ///
    /// # Errors
    /// As [`tensor_digest`](crate::tensor_digest);
    /// [`ErrorKind::Duplicate`](crate::ErrorKind::Duplicate) for a repeated name.
    ///
    /// ```
    /// let mut w = pot::SafetensorsWriter::new()?;
    /// w.add("x", pot::Dtype::U8, &[1], &[1])?;
    /// assert_eq!(w.add("x", pot::Dtype::U8, &[1], &[1]).unwrap_err().kind(), pot::ErrorKind::Duplicate);
    /// assert_eq!(w.add("y", pot::Dtype::U16, &[1], &[1]).unwrap_err().kind(), pot::ErrorKind::InvalidArgument);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn add(&mut self, name: &str, dtype: Dtype, shape: &[u64], data: &'a [u8]) -> Result<()> {
        let name = cstring(name, "tensor name")?;
        call(|err| unsafe {
            sys::pot_safetensors_writer_add(
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

    /// Sets a `__metadata__` string entry (replacing an earlier value).
    ///
    /// ```
    /// let mut w = pot::SafetensorsWriter::new()?;
    /// w.set_metadata("format", "pt")?;
    /// w.set_metadata("format", "np")?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn set_metadata(&mut self, key: &str, value: &str) -> Result<()> {
        let key = cstring(key, "metadata key")?;
        let value = cstring(value, "metadata value")?;
        call(|err| unsafe {
            sys::pot_safetensors_writer_set_metadata(self.raw.as_ptr(), key.as_ptr(), value.as_ptr(), err)
        })
    }

    /// Writes the file through a temporary file and a rename, so `path`
    /// never holds a partial file. The writer may be written again.
    ///
    /// # Errors
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) on failure.
    ///
    /// ```
    /// let w = pot::SafetensorsWriter::new()?;
    /// assert_eq!(w.write("/nonexistent/dir/x.safetensors").unwrap_err().kind(), pot::ErrorKind::Io);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_cstring(path.as_ref())?;
        call(|err| unsafe { sys::pot_safetensors_writer_write(self.raw.as_ptr(), path.as_ptr(), err) })
    }

    /// The canonical file [`write`](Self::write) would write, as bytes in
    /// memory.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_safetensors_writer_bytes(out, self.raw.as_ptr(), err) })
    }

    pub(crate) fn as_ptr(&self) -> *const sys::pot_safetensors_writer {
        self.raw.as_ptr()
    }
}

impl Drop for SafetensorsWriter<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the handle; the borrowed data outlives it ('a).
        unsafe { sys::pot_safetensors_writer_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for SafetensorsWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SafetensorsWriter").finish_non_exhaustive()
    }
}
