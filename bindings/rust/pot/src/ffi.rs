//! Helpers shared by the wrappers: calling, byte and digest outputs, strings.

use crate::error::{Error, Result, invalid};
use crate::sys;
use std::ffi::{CStr, CString, c_char};
use std::path::Path;
use std::ptr;

/// Runs one fallible C call after the ABI check, turning its status and
/// owned `pot_error` into a `Result`.
pub(crate) fn call<F>(f: F) -> Result<()>
where
    F: FnOnce(*mut *mut sys::pot_error) -> sys::pot_status,
{
    crate::check_abi()?;
    let mut err: *mut sys::pot_error = ptr::null_mut();
    let status = f(&mut err);
    if status == sys::pot_status::POT_OK {
        // pot.h: *err is written only on failure; free defensively anyway.
        // SAFETY: err is NULL or owned by us.
        unsafe { sys::pot_error_free(err) };
        Ok(())
    } else {
        // SAFETY: err is NULL or the owned error of this failure.
        Err(unsafe { Error::from_raw(status, err) })
    }
}

/// A `pot_bytes` that frees itself.
struct OwnedBytes(sys::pot_bytes);

impl Drop for OwnedBytes {
    fn drop(&mut self) {
        // SAFETY: the buffer is NULL or was allocated by libpot for us.
        unsafe { sys::pot_bytes_free(&mut self.0) };
    }
}

/// Runs a call that fills a `pot_bytes` and returns a copy of the bytes.
pub(crate) fn bytes_out<F>(f: F) -> Result<Vec<u8>>
where
    F: FnOnce(*mut sys::pot_bytes, *mut *mut sys::pot_error) -> sys::pot_status,
{
    let mut out = OwnedBytes(sys::pot_bytes { data: ptr::null_mut(), len: 0 });
    call(|err| f(&mut out.0, err))?;
    if out.0.data.is_null() || out.0.len == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: libpot wrote a buffer of len bytes at data, freed by OwnedBytes.
    Ok(unsafe { std::slice::from_raw_parts(out.0.data, out.0.len) }.to_vec())
}

/// Runs a call that fills two `pot_bytes` and returns copies of both.
pub(crate) fn two_bytes_out<F>(f: F) -> Result<(Vec<u8>, Vec<u8>)>
where
    F: FnOnce(*mut sys::pot_bytes, *mut sys::pot_bytes, *mut *mut sys::pot_error) -> sys::pot_status,
{
    let mut a = OwnedBytes(sys::pot_bytes { data: ptr::null_mut(), len: 0 });
    let mut b = OwnedBytes(sys::pot_bytes { data: ptr::null_mut(), len: 0 });
    call(|err| f(&mut a.0, &mut b.0, err))?;
    let copy = |o: &OwnedBytes| {
        if o.0.data.is_null() || o.0.len == 0 {
            Vec::new()
        } else {
            // SAFETY: libpot wrote a buffer of len bytes at data, freed by OwnedBytes.
            unsafe { std::slice::from_raw_parts(o.0.data, o.0.len) }.to_vec()
        }
    };
    Ok((copy(&a), copy(&b)))
}

/// Like [`bytes_out`] for JSON outputs: UTF-8 text.
pub(crate) fn string_out<F>(f: F) -> Result<String>
where
    F: FnOnce(*mut sys::pot_bytes, *mut *mut sys::pot_error) -> sys::pot_status,
{
    String::from_utf8(bytes_out(f)?)
        .map_err(|e| Error::new(crate::ErrorKind::Internal, format!("libpot returned text that is not UTF-8: {e}")))
}

/// Runs a call that writes one `pot_digest`.
pub(crate) fn digest_out<F>(f: F) -> Result<crate::Digest>
where
    F: FnOnce(*mut sys::pot_digest, *mut *mut sys::pot_error) -> sys::pot_status,
{
    let mut out = sys::pot_digest::default();
    call(|err| f(&mut out, err))?;
    Ok(crate::Digest(out.bytes))
}

/// A list of byte strings as the C API takes one (`const uint8_t *const *`,
/// `const size_t *`, count): pointers into the caller's buffers, which must
/// outlive the call.
pub(crate) struct ByteList {
    ptrs: Vec<*const u8>,
    lens: Vec<usize>,
}

impl ByteList {
    pub(crate) fn new<'a, I: IntoIterator<Item = &'a [u8]>>(items: I) -> Self {
        let (ptrs, lens) = items.into_iter().map(|b| (b.as_ptr(), b.len())).unzip();
        ByteList { ptrs, lens }
    }
    pub(crate) fn ptrs(&self) -> *const *const u8 {
        self.ptrs.as_ptr()
    }
    pub(crate) fn lens(&self) -> *const usize {
        self.lens.as_ptr()
    }
    pub(crate) fn len(&self) -> usize {
        self.ptrs.len()
    }
}

/// A NUL-terminated copy of `s`; `InvalidArgument` naming `what` when `s`
/// holds a NUL byte.
pub(crate) fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| invalid(format!("{what} contains a NUL byte")))
}

/// A NUL-terminated copy of a path.
pub(crate) fn path_cstring(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes =
        path.to_str().ok_or_else(|| invalid(format!("path {} is not UTF-8", path.display())))?.as_bytes().to_vec();
    CString::new(bytes).map_err(|_| invalid(format!("path {} contains a NUL byte", path.display())))
}

/// `opt` as a C string pointer (NULL for `None`), keeping the storage in `keep`.
pub(crate) fn opt_ptr(keep: &Option<CString>) -> *const c_char {
    keep.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

/// A string in static storage from libpot.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that lives forever.
pub(crate) unsafe fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    // SAFETY: per the contract above.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("")
}

/// A string owned by a handle, valid for `'a`.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn borrowed_str<'a>(p: *const c_char) -> Result<&'a str> {
    if p.is_null() {
        return Ok("");
    }
    // SAFETY: per the contract above.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::new(crate::ErrorKind::Malformed, "libpot returned a string that is not UTF-8"))
}

/// A slice from a C pointer and length, empty for NULL.
///
/// # Safety
/// When `len > 0`, `p` points to `len` initialised values valid for `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize) -> &'a [T] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: per the contract above.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

/// A handle a successful `_new` returned: never NULL, but checked rather than trusted.
pub(crate) fn non_null<T>(raw: *mut T) -> Result<std::ptr::NonNull<T>> {
    std::ptr::NonNull::new(raw)
        .ok_or_else(|| Error::new(crate::ErrorKind::Internal, "libpot returned success but no handle"))
}
