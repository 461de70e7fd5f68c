//! RFC 6962 Merkle trees: leaf and node hashes, proof verification, the
//! trainer-side [`Log`] and the prover-side [`Tree`].
//!
//! Proofs are byte strings of concatenated 32-byte hashes in RFC 6962 order
//! (deepest first), at most 128 hashes.

use crate::digest::Digest;
use crate::error::Result;
use crate::ffi::{self, call, digest_out, non_null, path_cstring};
use crate::sys;
use std::fmt;
use std::path::Path;
use std::ptr::{self, NonNull};

/// `SHA-256(0x00 || data)`, the hash of a leaf.
///
/// ```
/// // RFC 6962: the root of a one-leaf tree is its leaf hash.
/// let mut log = pot::Log::new()?;
/// log.append(b"x")?;
/// assert_eq!(pot::merkle::leaf_hash(b"x")?, log.root()?);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn leaf_hash(data: &[u8]) -> Result<Digest> {
    digest_out(|out, err| unsafe { sys::pot_merkle_leaf_hash(out, data.as_ptr().cast(), data.len(), err) })
}

/// `SHA-256(0x01 || left || right)`, the hash of an interior node.
///
/// ```
/// use pot::merkle::{leaf_hash, node_hash};
/// let mut log = pot::Log::new()?;
/// log.append(b"a")?;
/// log.append(b"b")?;
/// assert_eq!(node_hash(&leaf_hash(b"a")?, &leaf_hash(b"b")?)?, log.root()?);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn node_hash(left: &Digest, right: &Digest) -> Result<Digest> {
    digest_out(|out, err| unsafe { sys::pot_merkle_node_hash(out, left.as_ptr(), right.as_ptr(), err) })
}

/// Checks that `leaf_hash` is leaf `index` of the tree of `size` leaves with
/// `root` (RFC 9162 section 2.1.3.2). Thread-safe.
///
/// # Errors
/// [`OutOfRange`](crate::ErrorKind::OutOfRange) when `index >= size`,
/// [`ProofLength`](crate::ErrorKind::ProofLength) when the proof has the
/// wrong number of hashes, [`ProofMismatch`](crate::ErrorKind::ProofMismatch)
/// when it does not lead to `root`, [`Malformed`](crate::ErrorKind::Malformed)
/// for a length that is not a multiple of 32, [`Limit`](crate::ErrorKind::Limit)
/// past 128 hashes.
///
/// ```
/// let mut tree = pot::Tree::in_memory()?;
/// for leaf in [b"a", b"b", b"c"] {
///     tree.append(leaf)?;
/// }
/// let proof = tree.inclusion_proof(1, 3)?;
/// let root = tree.root(3)?;
/// pot::merkle::verify_inclusion(1, 3, &pot::merkle::leaf_hash(b"b")?, &proof, &root)?;
/// let wrong = pot::merkle::verify_inclusion(1, 3, &pot::merkle::leaf_hash(b"x")?, &proof, &root);
/// assert_eq!(wrong.unwrap_err().kind(), pot::ErrorKind::ProofMismatch);
/// # Ok::<(), pot::Error>(())
/// ```
pub fn verify_inclusion(index: u64, size: u64, leaf_hash: &Digest, proof: &[u8], root: &Digest) -> Result<()> {
    call(|err| unsafe {
        sys::pot_merkle_verify_inclusion(
            index,
            size,
            leaf_hash.as_ptr(),
            proof.as_ptr(),
            proof.len(),
            root.as_ptr(),
            err,
        )
    })
}

/// Checks that the tree of `size2` leaves with `root2` extends the tree of
/// `size1` leaves with `root1` (RFC 9162 section 2.1.4.2). Equal sizes need
/// an empty proof and equal roots. Thread-safe.
///
/// # Errors
/// [`OutOfRange`](crate::ErrorKind::OutOfRange) when `size1 == 0` or
/// `size1 > size2`; otherwise as [`verify_inclusion`].
///
/// ```
/// let mut tree = pot::Tree::in_memory()?;
/// for i in 0u8..7 {
///     tree.append(&[i])?;
/// }
/// let proof = tree.consistency_proof(3, 7)?;
/// pot::merkle::verify_consistency(3, 7, &tree.root(3)?, &tree.root(7)?, &proof)?;
/// # Ok::<(), pot::Error>(())
/// ```
pub fn verify_consistency(size1: u64, size2: u64, root1: &Digest, root2: &Digest, proof: &[u8]) -> Result<()> {
    call(|err| unsafe {
        sys::pot_merkle_verify_consistency(
            size1,
            size2,
            root1.as_ptr(),
            root2.as_ptr(),
            proof.as_ptr(),
            proof.len(),
            err,
        )
    })
}

/// The trainer-side log (`pot_log`): appends leaves and gives the root in
/// O(log n) memory (it keeps only the tree's right border).
///
/// `Send`, not `Sync` (pot.h's rule for handles).
///
/// ```
/// let mut log = pot::Log::new()?;
/// log.append(b"step 1")?;
/// log.append_hash(&pot::merkle::leaf_hash(b"step 2")?)?;
/// assert_eq!(log.size(), 2);
/// let saved = log.save()?;
/// let resumed = pot::Log::load(&saved)?;
/// assert_eq!(resumed.root()?, log.root()?);
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Log {
    raw: NonNull<sys::pot_log>,
}

// SAFETY: no thread affinity. Not Sync: pot.h's one-thread-per-handle rule.
unsafe impl Send for Log {}

impl Log {
    /// An empty log.
    ///
    /// ```
    /// assert_eq!(pot::Log::new()?.size(), 0);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn new() -> Result<Log> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_log_new(&mut raw, err) })?;
        Ok(Log { raw: non_null(raw)? })
    }

    /// Restores a log saved with [`Log::save`].
    ///
    /// # Errors
    /// [`Malformed`](crate::ErrorKind::Malformed) unless the bytes are
    /// exactly what `save` produces for some size.
    ///
    /// ```
    /// assert_eq!(pot::Log::load(b"short").unwrap_err().kind(), pot::ErrorKind::Malformed);
    /// ```
    pub fn load(saved: &[u8]) -> Result<Log> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_log_load(&mut raw, saved.as_ptr(), saved.len(), err) })?;
        Ok(Log { raw: non_null(raw)? })
    }

    /// Appends a leaf whose hash is `SHA-256(0x00 || data)`.
    ///
    /// ```
    /// let mut log = pot::Log::new()?;
    /// log.append(b"")?;
    /// assert_eq!(log.size(), 1);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn append(&mut self, data: &[u8]) -> Result<()> {
        call(|err| unsafe { sys::pot_log_append(self.raw.as_ptr(), data.as_ptr().cast(), data.len(), err) })
    }

    /// Appends a leaf given by its leaf hash.
    ///
    /// ```
    /// let mut a = pot::Log::new()?;
    /// a.append(b"x")?;
    /// let mut b = pot::Log::new()?;
    /// b.append_hash(&pot::merkle::leaf_hash(b"x")?)?;
    /// assert_eq!(a.root()?, b.root()?);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn append_hash(&mut self, leaf_hash: &Digest) -> Result<()> {
        call(|err| unsafe { sys::pot_log_append_hash(self.raw.as_ptr(), leaf_hash.as_ptr(), err) })
    }

    /// Number of leaves.
    ///
    /// ```
    /// assert_eq!(pot::Log::new()?.size(), 0);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn size(&self) -> u64 {
        // SAFETY: live handle.
        unsafe { sys::pot_log_size(self.raw.as_ptr()) }
    }

    /// Root of the leaves appended so far (SHA-256 of nothing when empty).
    ///
    /// ```
    /// assert_eq!(pot::Log::new()?.root()?, pot::sha256(b"")?);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn root(&self) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_log_root(out, self.raw.as_ptr(), err) })
    }

    /// Serialises the log (u64le size, then its border hashes) to resume
    /// later with [`Log::load`].
    ///
    /// ```
    /// assert_eq!(pot::Log::new()?.save()?, [0u8; 8]);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn save(&self) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_log_save(out, self.raw.as_ptr(), err) })
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { sys::pot_log_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Log").field("size", &self.size()).finish()
    }
}

/// The prover-side tree (`pot_tree`): stores every node, in a file or in
/// memory, and serves the root, leaf hashes, inclusion and consistency
/// proofs for any earlier size.
///
/// `Send` and `Sync`: pot.h says reads (root, leaf hash, proofs) may run on
/// several threads at once and append and flush need exclusive access. Here
/// the reads take `&self` and [`append`](Tree::append),
/// [`append_hash`](Tree::append_hash) and [`flush`](Tree::flush) take
/// `&mut self`, so the borrow checker gives exactly that rule.
///
/// ```
/// let path = std::env::temp_dir().join(format!("pot-doc-tree-{}.tree", std::process::id()));
/// # let _ = std::fs::remove_file(&path);
/// {
///     let mut tree = pot::Tree::open(&path)?;
///     assert_eq!(tree.append(b"a")?, 0);
///     assert_eq!(tree.append(b"b")?, 1);
///     tree.flush()?;
/// }
/// let tree = pot::Tree::open(&path)?; // reopened from the file
/// assert_eq!(tree.size(), 2);
/// assert_eq!(tree.leaf_hash(1)?, pot::merkle::leaf_hash(b"b")?);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), pot::Error>(())
/// ```
pub struct Tree {
    raw: NonNull<sys::pot_tree>,
}

// SAFETY: no thread affinity (distinct handles on distinct threads are fine).
unsafe impl Send for Tree {}
// SAFETY: every &self method is a read that pot.h allows on several threads at
// once (pot_tree_size, _root, _leaf_hash, _inclusion_proof,
// _consistency_proof: the file is read with pread); the mutating calls
// (append, append_hash, flush) take &mut self, hence exclusive access.
unsafe impl Sync for Tree {}

impl Tree {
    /// Opens the tree file at `path`, creating it when missing.
    ///
    /// # Errors
    /// [`Io`](crate::ErrorKind::Io), or [`Malformed`](crate::ErrorKind::Malformed)
    /// for a file that is not a tree file or whose last append was interrupted.
    ///
    /// ```
    /// let err = pot::Tree::open("/nonexistent/dir/t.tree").unwrap_err();
    /// assert_eq!(err.kind(), pot::ErrorKind::Io);
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Tree> {
        let path = path_cstring(path.as_ref())?;
        Tree::open_raw(path.as_ptr())
    }

    /// A tree kept in memory.
    ///
    /// ```
    /// let tree = pot::Tree::in_memory()?;
    /// assert_eq!(tree.size(), 0);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn in_memory() -> Result<Tree> {
        Tree::open_raw(ptr::null())
    }

    fn open_raw(path: *const std::ffi::c_char) -> Result<Tree> {
        let mut raw = ptr::null_mut();
        call(|err| unsafe { sys::pot_tree_open(&mut raw, path, err) })?;
        Ok(Tree { raw: non_null(raw)? })
    }

    /// Appends a leaf (hash `SHA-256(0x00 || data)`) and returns its index.
    ///
    /// ```
    /// let mut tree = pot::Tree::in_memory()?;
    /// assert_eq!(tree.append(b"first")?, 0);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn append(&mut self, data: &[u8]) -> Result<u64> {
        let mut index = 0u64;
        call(|err| unsafe {
            sys::pot_tree_append(&mut index, self.raw.as_ptr(), data.as_ptr().cast(), data.len(), err)
        })?;
        Ok(index)
    }

    /// Appends a leaf given by its leaf hash and returns its index.
    ///
    /// ```
    /// let mut tree = pot::Tree::in_memory()?;
    /// let h = pot::merkle::leaf_hash(b"x")?;
    /// assert_eq!(tree.append_hash(&h)?, 0);
    /// assert_eq!(tree.leaf_hash(0)?, h);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn append_hash(&mut self, leaf_hash: &Digest) -> Result<u64> {
        let mut index = 0u64;
        call(|err| unsafe { sys::pot_tree_append_hash(&mut index, self.raw.as_ptr(), leaf_hash.as_ptr(), err) })?;
        Ok(index)
    }

    /// Writes buffered appends to the file (dropping the tree flushes too,
    /// but loses any error).
    ///
    /// ```
    /// let mut tree = pot::Tree::in_memory()?;
    /// tree.flush()?;
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn flush(&mut self) -> Result<()> {
        call(|err| unsafe { sys::pot_tree_flush(self.raw.as_ptr(), err) })
    }

    /// Number of leaves.
    ///
    /// ```
    /// let mut tree = pot::Tree::in_memory()?;
    /// tree.append(b"")?;
    /// assert_eq!(tree.size(), 1);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn size(&self) -> u64 {
        // SAFETY: live handle.
        unsafe { sys::pot_tree_size(self.raw.as_ptr()) }
    }

    /// Root of the first `size` leaves.
    ///
    /// # Errors
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) when `size > self.size()`.
    ///
    /// ```
    /// let mut tree = pot::Tree::in_memory()?;
    /// tree.append(b"a")?;
    /// assert_eq!(tree.root(0)?, pot::sha256(b"")?);
    /// assert_eq!(tree.root(2).unwrap_err().kind(), pot::ErrorKind::OutOfRange);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn root(&self, size: u64) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_tree_root(out, self.raw.as_ptr(), size, err) })
    }

    /// The leaf hash of leaf `index`.
    ///
    /// ```
    /// let mut tree = pot::Tree::in_memory()?;
    /// tree.append(b"a")?;
    /// assert_eq!(tree.leaf_hash(0)?, pot::merkle::leaf_hash(b"a")?);
    /// assert!(tree.leaf_hash(1).is_err());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn leaf_hash(&self, index: u64) -> Result<Digest> {
        digest_out(|out, err| unsafe { sys::pot_tree_leaf_hash(out, self.raw.as_ptr(), index, err) })
    }

    /// Inclusion proof of leaf `index` in the tree of its first `size` leaves.
    ///
    /// # Errors
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) unless
    /// `index < size <= self.size()`.
    ///
    /// ```
    /// let mut tree = pot::Tree::in_memory()?;
    /// tree.append(b"a")?;
    /// tree.append(b"b")?;
    /// assert_eq!(tree.inclusion_proof(0, 2)?, pot::merkle::leaf_hash(b"b")?.0);
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_tree_inclusion_proof(out, self.raw.as_ptr(), index, size, err) })
    }

    /// Consistency proof from `size1` to `size2` leaves.
    ///
    /// # Errors
    /// [`OutOfRange`](crate::ErrorKind::OutOfRange) unless
    /// `0 < size1 <= size2 <= self.size()`.
    ///
    /// ```
    /// let mut tree = pot::Tree::in_memory()?;
    /// tree.append(b"a")?;
    /// tree.append(b"b")?;
    /// assert_eq!(tree.consistency_proof(1, 2)?, pot::merkle::leaf_hash(b"b")?.0);
    /// assert!(tree.consistency_proof(2, 2)?.is_empty());
    /// # Ok::<(), pot::Error>(())
    /// ```
    pub fn consistency_proof(&self, size1: u64, size2: u64) -> Result<Vec<u8>> {
        ffi::bytes_out(|out, err| unsafe { sys::pot_tree_consistency_proof(out, self.raw.as_ptr(), size1, size2, err) })
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // SAFETY: we own the handle (pot_tree_free flushes first).
        unsafe { sys::pot_tree_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Tree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tree").field("size", &self.size()).finish()
    }
}
