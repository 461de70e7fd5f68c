//! [`Digest`]: a 32-byte SHA-256 value.

use crate::error::{Error, ErrorKind, Result};
use crate::sys;
use std::fmt;
use std::str::FromStr;

/// A 32-byte digest (`pot_digest`): state and tensor digests, Merkle roots
/// and leaf hashes, run ids, commitments.
///
/// Displays as 64 lower-case hex characters and parses from 64 hex
/// characters of either case.
///
/// ```
/// use pot::Digest;
///
/// let empty: Digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".parse()?;
/// assert_eq!(empty, pot::sha256(b"")?);
/// assert_eq!(empty.as_bytes()[0], 0xe3);
/// assert_eq!(format!("{empty}"), empty.to_hex());
/// # Ok::<(), pot::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct Digest(pub [u8; 32]);

// Digest is passed to libpot as a pot_digest: the layouts must agree.
const _: () = assert!(size_of::<Digest>() == size_of::<sys::pot_digest>());
const _: () = assert!(align_of::<Digest>() == align_of::<sys::pot_digest>());

impl Digest {
    /// Bytes of a digest (32).
    ///
    /// ```
    /// assert_eq!(pot::Digest::SIZE, pot::DIGEST_SIZE);
    /// ```
    pub const SIZE: usize = 32;

    /// The digest with these bytes.
    ///
    /// ```
    /// let d = pot::Digest::new([7; 32]);
    /// assert_eq!(d.0, [7; 32]);
    /// ```
    pub const fn new(bytes: [u8; 32]) -> Digest {
        Digest(bytes)
    }

    /// The 32 bytes.
    ///
    /// ```
    /// assert_eq!(pot::Digest::new([1; 32]).as_bytes(), &[1; 32]);
    /// ```
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest in exactly 32 bytes.
    ///
    /// # Errors
    /// [`ErrorKind::Malformed`] for any other length.
    ///
    /// ```
    /// let d = pot::Digest::from_slice(&[0u8; 32])?;
    /// assert_eq!(d, pot::Digest::default());
    /// assert_eq!(pot::Digest::from_slice(&[0u8; 31]).unwrap_err().kind(), pot::ErrorKind::Malformed);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Digest> {
        <[u8; 32]>::try_from(bytes)
            .map(Digest)
            .map_err(|_| Error::new(ErrorKind::Malformed, format!("a digest is 32 bytes, not {}", bytes.len())))
    }

    /// Parses exactly 64 hex characters (either case), like `pot_digest_from_hex`.
    ///
    /// # Errors
    /// [`ErrorKind::Malformed`] for anything else.
    ///
    /// ```
    /// let d = pot::Digest::from_hex(&"AB".repeat(32))?;
    /// assert_eq!(d.0, [0xab; 32]);
    /// assert!(pot::Digest::from_hex("xyz").is_err());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn from_hex(hex: &str) -> Result<Digest> {
        let b = hex.as_bytes();
        if b.len() != 64 {
            return Err(Error::new(ErrorKind::Malformed, format!("a digest is 64 hex characters, not {}", b.len())));
        }
        let mut out = [0u8; 32];
        for (i, pair) in b.chunks_exact(2).enumerate() {
            match (nibble(pair[0]), nibble(pair[1])) {
                (Some(hi), Some(lo)) => out[i] = hi << 4 | lo,
                _ => {
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        format!("not a hex digit at position {} of a digest", 2 * i),
                    ));
                }
            }
        }
        Ok(Digest(out))
    }

    /// The 64 lower-case hex characters.
    ///
    /// ```
    /// assert_eq!(pot::Digest::new([0xff; 32]).to_hex(), "ff".repeat(32));
    /// ```
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    pub(crate) fn as_ptr(&self) -> *const sys::pot_digest {
        (self as *const Digest).cast()
    }
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(self, f)
    }
}

impl fmt::LowerHex for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl FromStr for Digest {
    type Err = Error;
    fn from_str(s: &str) -> Result<Digest> {
        Digest::from_hex(s)
    }
}

impl From<[u8; 32]> for Digest {
    fn from(bytes: [u8; 32]) -> Digest {
        Digest(bytes)
    }
}

impl From<Digest> for [u8; 32] {
    fn from(d: Digest) -> [u8; 32] {
        d.0
    }
}

impl AsRef<[u8]> for Digest {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl TryFrom<&[u8]> for Digest {
    type Error = Error;
    fn try_from(bytes: &[u8]) -> Result<Digest> {
        Digest::from_slice(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn hex_agrees_with_libpot() {
        let d = Digest(std::array::from_fn(|i| (i * 37 + 5) as u8));
        let mut buf = [0 as std::ffi::c_char; 65];
        // SAFETY: buf has the 65 bytes pot_digest_to_hex writes.
        let s = unsafe { sys::pot_digest_to_hex(buf.as_mut_ptr(), d.as_ptr(), std::ptr::null_mut()) };
        assert_eq!(s, sys::pot_status::POT_OK);
        // SAFETY: NUL-terminated by pot_digest_to_hex.
        let c = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert_eq!(c, d.to_hex());
        assert_eq!(Digest::from_hex(&c.to_uppercase()).unwrap(), d);
        assert_eq!(format!("{d:?}"), format!("Digest({c})"));
    }

    #[test]
    fn malformed_hex() {
        for bad in [
            "",
            "0",
            &"0".repeat(63),
            &"0".repeat(65),
            &format!("{}g", "0".repeat(63)),
            &format!("+{}", "0".repeat(63)),
        ] {
            let e = Digest::from_hex(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Malformed, "{bad:?}");
            assert!(!e.message().is_empty());
        }
        // Non-ASCII input of the right byte length is refused too.
        assert!(Digest::from_hex(&format!("é{}", "0".repeat(62))).is_err());
    }
}
