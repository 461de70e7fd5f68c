//! [`Error`], [`ErrorKind`] and [`Result`].

use crate::sys;
use std::ffi::CStr;
use std::fmt;

/// `Result<T, pot::Error>`, the return type of every fallible call.
///
/// ```
/// fn root_of(leaves: &[&[u8]]) -> pot::Result<pot::Digest> {
///     let mut log = pot::Log::new()?;
///     for leaf in leaves {
///         log.append(leaf)?;
///     }
///     log.root()
/// }
/// assert_eq!(root_of(&[])?, pot::sha256(b"")?);
/// # Ok::<(), pot::Error>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong: the `pot_status` of a failed call, plus
/// [`AbiMismatch`](ErrorKind::AbiMismatch) for a library of another ABI.
///
/// New codes may be appended to `pot_status` by later libpot versions:
/// those arrive as [`Unknown`](ErrorKind::Unknown) with the raw value, and
/// this enum is `#[non_exhaustive]` so that they can get their own variant.
///
/// ```
/// use pot::ErrorKind;
///
/// let err = "not hex".parse::<pot::Digest>().unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Malformed);
/// assert_eq!(ErrorKind::Malformed.name(), "POT_E_MALFORMED");
/// assert_eq!(ErrorKind::from_status(7), Some(ErrorKind::ProofLength));
/// assert_eq!(ErrorKind::from_status(1000), Some(ErrorKind::Unknown(1000)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `POT_E_INVALID_ARGUMENT`: a bad or inconsistent argument (also a
    /// string holding a NUL byte, refused by this crate before the call).
    InvalidArgument,
    /// `POT_E_OUT_OF_MEMORY`.
    OutOfMemory,
    /// `POT_E_IO`: a file could not be opened, read or written.
    Io,
    /// `POT_E_MALFORMED`: input bytes do not parse as the expected format.
    Malformed,
    /// `POT_E_LIMIT`: input exceeds a documented bound.
    Limit,
    /// `POT_E_OUT_OF_RANGE`: index or size outside the valid range.
    OutOfRange,
    /// `POT_E_PROOF_LENGTH`: a proof has the wrong number of hashes.
    ProofLength,
    /// `POT_E_PROOF_MISMATCH`: a proof is well-formed but does not verify.
    ProofMismatch,
    /// `POT_E_DUPLICATE`: a name given twice.
    Duplicate,
    /// `POT_E_STATE`: the call is not valid in the handle's current state.
    State,
    /// `POT_E_UNSUPPORTED`: valid input this version does not support.
    Unsupported,
    /// `POT_E_BACKEND`: OpenSSL (or LibTorch) reported a failure.
    Backend,
    /// `POT_E_INTERNAL`: a bug in pot.
    Internal,
    /// `POT_E_NOT_FOUND`: no entry under that name.
    NotFound,
    /// `POT_E_PERMISSION`: the caller's identity may not do this.
    Permission,
    /// `POT_E_CONFLICT`: contradicts what is already recorded.
    Conflict,
    /// `POT_E_NONFINITE`: a loss or norm that must be finite is NaN or infinite.
    NonFinite,
    /// The loaded libpot has another ABI version than the one this crate
    /// was built against (not a `pot_status`: detected by this crate).
    AbiMismatch,
    /// A `pot_status` this crate does not know (appended by a later libpot).
    Unknown(u32),
}

const KINDS: [(ErrorKind, &str); 17] = [
    (ErrorKind::InvalidArgument, "POT_E_INVALID_ARGUMENT"),
    (ErrorKind::OutOfMemory, "POT_E_OUT_OF_MEMORY"),
    (ErrorKind::Io, "POT_E_IO"),
    (ErrorKind::Malformed, "POT_E_MALFORMED"),
    (ErrorKind::Limit, "POT_E_LIMIT"),
    (ErrorKind::OutOfRange, "POT_E_OUT_OF_RANGE"),
    (ErrorKind::ProofLength, "POT_E_PROOF_LENGTH"),
    (ErrorKind::ProofMismatch, "POT_E_PROOF_MISMATCH"),
    (ErrorKind::Duplicate, "POT_E_DUPLICATE"),
    (ErrorKind::State, "POT_E_STATE"),
    (ErrorKind::Unsupported, "POT_E_UNSUPPORTED"),
    (ErrorKind::Backend, "POT_E_BACKEND"),
    (ErrorKind::Internal, "POT_E_INTERNAL"),
    (ErrorKind::NotFound, "POT_E_NOT_FOUND"),
    (ErrorKind::Permission, "POT_E_PERMISSION"),
    (ErrorKind::Conflict, "POT_E_CONFLICT"),
    (ErrorKind::NonFinite, "POT_E_NONFINITE"),
];

impl ErrorKind {
    /// The kind of a `pot_status` value; `None` for `POT_OK` (0).
    ///
    /// ```
    /// use pot::ErrorKind;
    /// assert_eq!(ErrorKind::from_status(0), None);
    /// assert_eq!(ErrorKind::from_status(10), Some(ErrorKind::State));
    /// ```
    pub fn from_status(status: u32) -> Option<ErrorKind> {
        match status {
            0 => None,
            s if (s as usize) <= KINDS.len() => Some(KINDS[s as usize - 1].0),
            s => Some(ErrorKind::Unknown(s)),
        }
    }

    /// The `pot_status` value of this kind; `None` for
    /// [`AbiMismatch`](ErrorKind::AbiMismatch), which is not a status.
    ///
    /// ```
    /// use pot::ErrorKind;
    /// assert_eq!(ErrorKind::ProofMismatch.status(), Some(8));
    /// assert_eq!(ErrorKind::AbiMismatch.status(), None);
    /// ```
    pub fn status(self) -> Option<u32> {
        match self {
            ErrorKind::AbiMismatch => None,
            ErrorKind::Unknown(s) => Some(s),
            kind => KINDS.iter().position(|(k, _)| *k == kind).map(|i| i as u32 + 1),
        }
    }

    /// The upper-case status name, as `pot_status_name` gives it
    /// (`"POT_E_STATE"`; `"POT_E_UNKNOWN"` for an unknown code), or
    /// `"POT_E_ABI_MISMATCH"` for [`AbiMismatch`](ErrorKind::AbiMismatch).
    ///
    /// ```
    /// assert_eq!(pot::ErrorKind::Permission.name(), "POT_E_PERMISSION");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::AbiMismatch => "POT_E_ABI_MISMATCH",
            ErrorKind::Unknown(_) => "POT_E_UNKNOWN",
            kind => KINDS.iter().find(|(k, _)| *k == kind).map_or("POT_E_UNKNOWN", |(_, n)| n),
        }
    }
}

impl fmt::Display for ErrorKind {
    /// The status name ([`ErrorKind::name`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: its [`ErrorKind`] and the library's message.
///
/// Displays as `POT_E_MALFORMED: <message>`.
///
/// ```
/// use pot::{Digest, ErrorKind, merkle};
///
/// let leaf = merkle::leaf_hash(b"a")?;
/// // One leaf needs an empty inclusion proof; 32 bytes is one hash too many.
/// let err = merkle::verify_inclusion(0, 1, &leaf, &[0u8; 32], &leaf).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::ProofLength);
/// assert!(!err.message().is_empty());
/// assert!(err.to_string().starts_with("POT_E_PROOF_LENGTH: "));
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with `message` (for code that wraps this crate).
    ///
    /// ```
    /// let err = pot::Error::new(pot::ErrorKind::NotFound, "no such run");
    /// assert_eq!(err.message(), "no such run");
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    /// What went wrong.
    ///
    /// ```
    /// let err = pot::Digest::from_hex("00").unwrap_err();
    /// assert_eq!(err.kind(), pot::ErrorKind::Malformed);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message (never empty for errors from libpot).
    ///
    /// ```
    /// let err = pot::Digest::from_hex("00").unwrap_err();
    /// assert!(err.message().contains("64"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The raw `pot_status` value, `None` for [`ErrorKind::AbiMismatch`].
    ///
    /// ```
    /// let err = pot::Digest::from_hex("00").unwrap_err();
    /// assert_eq!(err.status(), Some(4)); // POT_E_MALFORMED
    /// ```
    pub fn status(&self) -> Option<u32> {
        self.kind.status()
    }

    /// Takes an owned `pot_error` (may be NULL) returned with `status` and
    /// frees it.
    ///
    /// # Safety
    /// `err` is NULL or a `pot_error` from libpot that nobody else owns.
    pub(crate) unsafe fn from_raw(status: sys::pot_status, err: *mut sys::pot_error) -> Error {
        let kind = ErrorKind::from_status(status.0).unwrap_or(ErrorKind::Internal);
        let message = if err.is_null() {
            String::new()
        } else {
            // SAFETY: err is a live pot_error; its message is valid until freed.
            unsafe { CStr::from_ptr(sys::pot_error_message(err)) }.to_string_lossy().into_owned()
        };
        // SAFETY: we own err; pot_error_free accepts NULL.
        unsafe { sys::pot_error_free(err) };
        let message = if message.is_empty() { format!("libpot returned {}", kind.name()) } else { message };
        Error { kind, message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub(crate) fn abi_mismatch(loaded: u32, built: u32) -> Error {
    Error::new(
        ErrorKind::AbiMismatch,
        format!(
            "the loaded libpot has ABI version {loaded} but the pot crate was built against \
             ABI version {built} (pot.h); rebuild the crate against this libpot, or load the \
             libpot.so.{built} it was built for (check LD_LIBRARY_PATH)"
        ),
    )
}

/// [`Limit`](ErrorKind::Limit) when a call would return more than `max`
/// items (the bound `name` of pot.h): checked before the output is allocated.
pub(crate) fn check_count(count: usize, max: usize, what: &str, name: &str) -> Result<()> {
    if count > max {
        return Err(Error::new(ErrorKind::Limit, format!("{count} {what} asked, at most {max} per call ({name})")));
    }
    Ok(())
}

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_pot_status_name() {
        for code in 0u32..40 {
            // SAFETY: pot_status_name takes any value and returns static storage.
            let c = unsafe { CStr::from_ptr(sys::pot_status_name(sys::pot_status(code))) };
            let c = c.to_str().unwrap();
            match ErrorKind::from_status(code) {
                None => assert_eq!(c, "POT_OK"),
                Some(kind) => {
                    assert_eq!(kind.name(), c, "code {code}");
                    assert_eq!(kind.status(), Some(code));
                }
            }
        }
    }

    #[test]
    fn kinds_match_the_header_constants() {
        assert_eq!(ErrorKind::from_status(sys::pot_status::POT_E_INVALID_ARGUMENT.0), Some(ErrorKind::InvalidArgument));
        assert_eq!(ErrorKind::from_status(sys::pot_status::POT_E_PROOF_LENGTH.0), Some(ErrorKind::ProofLength));
        assert_eq!(ErrorKind::from_status(sys::pot_status::POT_E_CONFLICT.0), Some(ErrorKind::Conflict));
        assert_eq!(ErrorKind::from_status(sys::pot_status::POT_E_NONFINITE.0), Some(ErrorKind::NonFinite));
        assert_eq!(ErrorKind::from_status(sys::pot_status::POT_E_NONFINITE.0 + 1), Some(ErrorKind::Unknown(18)));
        // The crate's list is libpot's, no more and no fewer.
        assert_eq!(KINDS.len() as u32 + 1, crate::status_count());
    }

    #[test]
    fn abi_mismatch_message_names_both_versions() {
        let e = abi_mismatch(2, 1);
        assert_eq!(e.kind(), ErrorKind::AbiMismatch);
        assert_eq!(e.status(), None);
        assert!(e.message().contains("ABI version 2") && e.message().contains("ABI version 1"));
        assert!(e.to_string().starts_with("POT_E_ABI_MISMATCH: "));
    }

    #[test]
    fn from_raw_without_error_object_still_has_a_message() {
        // SAFETY: NULL is accepted.
        let e = unsafe { Error::from_raw(sys::pot_status::POT_E_IO, std::ptr::null_mut()) };
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(!e.message().is_empty());
    }
}
