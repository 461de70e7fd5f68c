package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"runtime"
)

// LeafHash returns the RFC 6962 leaf hash SHA-256(0x00 || data).
func LeafHash(data []byte) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_merkle_leaf_hash(out, voidPtr(data), C.size_t(len(data)), cerr)
	})
}

// NodeHash returns the RFC 6962 node hash SHA-256(0x01 || left || right).
func NodeHash(left, right Digest) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_merkle_node_hash(out, cDigest(left), cDigest(right), cerr)
	})
}

// JoinProof concatenates proof hashes into the wire form of a proof.
func JoinProof(hashes []Digest) []byte {
	out := make([]byte, 0, len(hashes)*DigestSize)
	for _, h := range hashes {
		out = append(out, h[:]...)
	}
	return out
}

// SplitProof splits a proof in wire form into its hashes; StatusMalformed
// when the length is not a multiple of DigestSize.
func SplitProof(proof []byte) ([]Digest, error) {
	if len(proof)%DigestSize != 0 {
		return nil, newError(StatusMalformed, "a proof of %d bytes is not a whole number of %d-byte hashes",
			len(proof), DigestSize)
	}
	out := make([]Digest, len(proof)/DigestSize)
	for i := range out {
		copy(out[i][:], proof[i*DigestSize:])
	}
	return out, nil
}

// VerifyInclusion returns nil when leafHash is leaf index of the tree of
// size leaves with the given root, by the RFC 6962 inclusion proof (its
// hashes concatenated, deepest first; RFC 9162 section 2.1.3.2). Errors:
// StatusOutOfRange when index >= size, StatusProofLength when the proof has
// the wrong number of hashes, StatusProofMismatch when it does not lead to
// root, StatusMalformed for a length that is not a multiple of 32,
// StatusLimit past 128 hashes.
func VerifyInclusion(index, size uint64, leafHash Digest, proof []byte, root Digest) error {
	if abiErr != nil {
		return abiErr
	}
	return status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_merkle_verify_inclusion(C.uint64_t(index), C.uint64_t(size), cDigest(leafHash), bytesPtr(proof),
			C.size_t(len(proof)), cDigest(root), cerr)
	})
}

// VerifyConsistency returns nil when the tree of size2 leaves with root2
// extends the tree of size1 leaves with root1, by the RFC 6962 consistency
// proof (RFC 9162 section 2.1.4.2). StatusOutOfRange when size1 == 0 or
// size1 > size2; other errors as VerifyInclusion. Equal sizes need an empty
// proof and equal roots.
func VerifyConsistency(size1, size2 uint64, root1, root2 Digest, proof []byte) error {
	if abiErr != nil {
		return abiErr
	}
	return status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_merkle_verify_consistency(C.uint64_t(size1), C.uint64_t(size2), cDigest(root1), cDigest(root2),
			bytesPtr(proof), C.size_t(len(proof)), cerr)
	})
}

// Log is the trainer-side append-only log (pot_log): it appends leaves and
// gives the root in O(log n) memory. It is safe for concurrent use (calls
// are serialised).
type Log struct {
	h handle[*C.pot_log]
}

func newLog(p *C.pot_log) *Log {
	l := &Log{}
	l.h.set(p, "Log")
	runtime.SetFinalizer(l, (*Log).Close)
	return l
}

// NewLog returns an empty log.
func NewLog() (*Log, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_log
	if err := status(func(cerr **C.pot_error) C.pot_status { return C.pot_log_new(&p, cerr) }); err != nil {
		return nil, err
	}
	return newLog(p), nil
}

// LoadLog restores a log saved with Log.Save; StatusMalformed unless data
// is exactly what Save produces for some size.
func LoadLog(data []byte) (*Log, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_log
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_log_load(&p, bytesPtr(data), C.size_t(len(data)), cerr)
	}); err != nil {
		return nil, err
	}
	return newLog(p), nil
}

// Close frees the log. It is safe to call more than once.
func (l *Log) Close() error {
	runtime.SetFinalizer(l, nil)
	return l.h.close(func(p *C.pot_log) error { C.pot_log_free(p); return nil })
}

// Append appends a leaf whose hash is SHA-256(0x00 || data).
func (l *Log) Append(data []byte) error {
	return l.h.write(func(p *C.pot_log, cerr **C.pot_error) C.pot_status {
		return C.pot_log_append(p, voidPtr(data), C.size_t(len(data)), cerr)
	})
}

// AppendHash appends a leaf given by its leaf hash.
func (l *Log) AppendHash(leafHash Digest) error {
	return l.h.write(func(p *C.pot_log, cerr **C.pot_error) C.pot_status {
		return C.pot_log_append_hash(p, cDigest(leafHash), cerr)
	})
}

// Size returns the number of leaves (0 after Close).
func (l *Log) Size() uint64 {
	var n uint64
	l.h.peekExclusive(func(p *C.pot_log) { n = uint64(C.pot_log_size(p)) })
	return n
}

// Root returns the root of the leaves appended so far (SHA-256 of nothing
// when empty).
func (l *Log) Root() (Digest, error) {
	return digestVia(l.h.write, func(p *C.pot_log, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_log_root(out, p, cerr)
	})
}

// Save serialises the log (u64le size, then its border hashes) to resume
// it later with LoadLog.
func (l *Log) Save() ([]byte, error) {
	return bytesVia(l.h.write, func(p *C.pot_log, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_log_save(out, p, cerr)
	})
}

// Tree is the prover-side Merkle tree (pot_tree): it stores every node, in
// a file or in memory, and serves roots, leaf hashes and proofs for any
// earlier size. It is safe for concurrent use: the read methods (Size,
// Root, LeafHash, InclusionProof, ConsistencyProof) run in parallel, while
// Append, AppendHash, Flush and Close take exclusive access.
type Tree struct {
	h handle[*C.pot_tree]
}

func openTree(path *C.char) (*Tree, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_tree
	if err := status(func(cerr **C.pot_error) C.pot_status { return C.pot_tree_open(&p, path, cerr) }); err != nil {
		return nil, err
	}
	t := &Tree{}
	t.h.set(p, "Tree")
	runtime.SetFinalizer(t, (*Tree).Close)
	return t, nil
}

// OpenTree opens the stored tree file at path (PROTOCOL.md section 7.2),
// creating it when missing. StatusIO, or StatusMalformed for a file that is
// not a tree file or whose last append was interrupted.
func OpenTree(path string) (*Tree, error) {
	cs, err := cString(path, "path")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	return openTree(cs)
}

// NewMemoryTree returns an empty tree kept in memory.
func NewMemoryTree() (*Tree, error) { return openTree(nil) }

// Close flushes the tree (returning the flush error, if any) and frees it.
// It is safe to call more than once.
func (t *Tree) Close() error {
	runtime.SetFinalizer(t, nil)
	return t.h.close(func(p *C.pot_tree) error {
		err := status(func(cerr **C.pot_error) C.pot_status { return C.pot_tree_flush(p, cerr) })
		C.pot_tree_free(p)
		return err
	})
}

// Append appends a leaf (hash SHA-256(0x00 || data)) and returns its index.
func (t *Tree) Append(data []byte) (uint64, error) {
	var index C.uint64_t
	err := t.h.write(func(p *C.pot_tree, cerr **C.pot_error) C.pot_status {
		return C.pot_tree_append(&index, p, voidPtr(data), C.size_t(len(data)), cerr)
	})
	return uint64(index), err
}

// AppendHash appends a leaf given by its leaf hash and returns its index.
func (t *Tree) AppendHash(leafHash Digest) (uint64, error) {
	var index C.uint64_t
	err := t.h.write(func(p *C.pot_tree, cerr **C.pot_error) C.pot_status {
		return C.pot_tree_append_hash(&index, p, cDigest(leafHash), cerr)
	})
	return uint64(index), err
}

// Flush writes buffered appends to the file.
func (t *Tree) Flush() error {
	return t.h.write(func(p *C.pot_tree, cerr **C.pot_error) C.pot_status { return C.pot_tree_flush(p, cerr) })
}

// Size returns the number of leaves (0 after Close).
func (t *Tree) Size() uint64 {
	var n uint64
	t.h.peek(func(p *C.pot_tree) { n = uint64(C.pot_tree_size(p)) })
	return n
}

// Root returns the root of the first size leaves; StatusOutOfRange when
// size > Size().
func (t *Tree) Root(size uint64) (Digest, error) {
	return digestVia(t.h.read, func(p *C.pot_tree, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_tree_root(out, p, C.uint64_t(size), cerr)
	})
}

// LeafHash returns the leaf hash of leaf index; StatusOutOfRange when
// index >= Size().
func (t *Tree) LeafHash(index uint64) (Digest, error) {
	return digestVia(t.h.read, func(p *C.pot_tree, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_tree_leaf_hash(out, p, C.uint64_t(index), cerr)
	})
}

// InclusionProof returns the inclusion proof of leaf index in the tree of
// its first size leaves (hashes concatenated, deepest first);
// StatusOutOfRange unless index < size <= Size().
func (t *Tree) InclusionProof(index, size uint64) ([]byte, error) {
	return bytesVia(t.h.read, func(p *C.pot_tree, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_tree_inclusion_proof(out, p, C.uint64_t(index), C.uint64_t(size), cerr)
	})
}

// ConsistencyProof returns the consistency proof from size1 to size2
// leaves; StatusOutOfRange unless 0 < size1 <= size2 <= Size().
func (t *Tree) ConsistencyProof(size1, size2 uint64) ([]byte, error) {
	return bytesVia(t.h.read, func(p *C.pot_tree, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_tree_consistency_proof(out, p, C.uint64_t(size1), C.uint64_t(size2), cerr)
	})
}
