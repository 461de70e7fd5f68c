package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"runtime"
	"strconv"
)

// DType is a tensor element type (pot_dtype). The values are part of the
// tensor digest and frozen.
type DType uint32

// The element types of pot.h.
const (
	DTypeBool DType = C.POT_DTYPE_BOOL
	DTypeU8   DType = C.POT_DTYPE_U8
	DTypeI8   DType = C.POT_DTYPE_I8
	DTypeI16  DType = C.POT_DTYPE_I16
	DTypeU16  DType = C.POT_DTYPE_U16
	DTypeI32  DType = C.POT_DTYPE_I32
	DTypeU32  DType = C.POT_DTYPE_U32
	DTypeI64  DType = C.POT_DTYPE_I64
	DTypeU64  DType = C.POT_DTYPE_U64
	DTypeF16  DType = C.POT_DTYPE_F16
	DTypeBF16 DType = C.POT_DTYPE_BF16
	DTypeF32  DType = C.POT_DTYPE_F32
	DTypeF64  DType = C.POT_DTYPE_F64
)

// String returns the safetensors name of the dtype ("F32", "BF16", ...),
// or "DType(n)" for a value that is not a dtype.
func (t DType) String() string {
	if uint64(t) <= 0x7FFFFFFF {
		if s := C.pot_dtype_name(C.pot_dtype(t)); s != nil {
			return C.GoString(s)
		}
	}
	return "DType(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Size returns the bytes per element, or 0 when t is not a dtype.
func (t DType) Size() int {
	if uint64(t) > 0x7FFFFFFF {
		return 0
	}
	return int(C.pot_dtype_size(C.pot_dtype(t)))
}

// ParseDType returns the dtype with the given safetensors name ("F32").
// An unknown name gives an *Error with code StatusUnsupported.
func ParseDType(name string) (DType, error) {
	if abiErr != nil {
		return 0, abiErr
	}
	cs, err := cString(name, "dtype name")
	if err != nil {
		return 0, err
	}
	defer freeString(cs)
	var out C.pot_dtype
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_dtype_from_name(&out, cs, cerr)
	}); err != nil {
		return 0, err
	}
	return DType(out), nil
}

// TensorDigest returns the canonical digest of one tensor (PROTOCOL.md
// section 4): data is its little-endian, row-major bytes, whose length must
// be the element size times the product of shape (StatusInvalidArgument
// otherwise). The name is 1..MaxNameBytes bytes of UTF-8 without NUL; at
// most MaxDims dimensions (StatusLimit). threads = 0 uses all cores; the
// digest does not depend on it.
func TensorDigest(name string, dtype DType, shape []uint64, data []byte, threads uint32) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	cs, err := cString(name, "tensor name")
	if err != nil {
		return Digest{}, err
	}
	defer freeString(cs)
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_tensor_digest(out, cs, C.pot_dtype(dtype), shapePtr(shape), C.size_t(len(shape)),
			voidPtr(data), C.size_t(len(data)), C.uint32_t(threads), cerr)
	})
}

// State is a training state being digested (pot_state): named tensors
// added one by one, each digested as it is added (the bytes are not kept).
// It is safe for concurrent use (calls are serialised).
type State struct {
	h handle[*C.pot_state]
}

// NewState returns an empty state.
func NewState() (*State, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_state
	if err := status(func(cerr **C.pot_error) C.pot_status { return C.pot_state_new(&p, cerr) }); err != nil {
		return nil, err
	}
	s := &State{}
	s.h.set(p, "State")
	runtime.SetFinalizer(s, (*State).Close)
	return s, nil
}

// Close frees the state. It is safe to call more than once.
func (s *State) Close() error {
	runtime.SetFinalizer(s, nil)
	return s.h.close(func(p *C.pot_state) error { C.pot_state_free(p); return nil })
}

// SetThreads sets the threads used to hash each tensor added later (0 =
// all cores, the default).
func (s *State) SetThreads(threads uint32) error {
	return s.h.write(func(p *C.pot_state, cerr **C.pot_error) C.pot_status {
		return C.pot_state_set_threads(p, C.uint32_t(threads), cerr)
	})
}

// AddTensor digests a tensor and adds it; the arguments are those of
// TensorDigest. StatusDuplicate when the name is present, StatusLimit past
// 2^20 tensors.
func (s *State) AddTensor(name string, dtype DType, shape []uint64, data []byte) error {
	cs, err := cString(name, "tensor name")
	if err != nil {
		return err
	}
	defer freeString(cs)
	return s.h.write(func(p *C.pot_state, cerr **C.pot_error) C.pot_status {
		return C.pot_state_add_tensor(p, cs, C.pot_dtype(dtype), shapePtr(shape), C.size_t(len(shape)), voidPtr(data),
			C.size_t(len(data)), cerr)
	})
}

// AddTensorDigest adds a tensor digest computed elsewhere (TensorDigest,
// or a TensorAssembler on another rank of a sharded run).
func (s *State) AddTensorDigest(name string, tensorDigest Digest) error {
	cs, err := cString(name, "tensor name")
	if err != nil {
		return err
	}
	defer freeString(cs)
	return s.h.write(func(p *C.pot_state, cerr **C.pot_error) C.pot_status {
		return C.pot_state_add_tensor_digest(p, cs, cDigest(tensorDigest), cerr)
	})
}

// Count returns the number of tensors added (0 after Close).
func (s *State) Count() int {
	var n int
	s.h.peekExclusive(func(p *C.pot_state) { n = int(C.pot_state_tensor_count(p)) })
	return n
}

// Digest returns the state digest over the tensors added so far, in
// canonical (bytewise) name order (PROTOCOL.md section 5).
func (s *State) Digest() (Digest, error) {
	return digestVia(s.h.write, func(p *C.pot_state, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_state_digest(out, p, cerr)
	})
}

// TensorProof returns the proof that the named tensor belongs to the state
// (PROTOCOL.md section 5.1), to check with VerifyTensorProof.
// StatusNotFound when the name is absent.
func (s *State) TensorProof(name string) ([]byte, error) {
	cs, err := cString(name, "tensor name")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	return bytesVia(s.h.write, func(p *C.pot_state, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_state_tensor_proof(out, p, cs, cerr)
	})
}

// VerifyTensorProof returns nil when tensorDigest is part of the state with
// stateDigest by proof (from State.TensorProof). StatusProofMismatch when
// it is not; StatusMalformed or StatusLimit for proof bytes that do not
// decode; StatusOutOfRange or StatusProofLength for inconsistent positions.
func VerifyTensorProof(stateDigest, tensorDigest Digest, proof []byte) error {
	if abiErr != nil {
		return abiErr
	}
	return status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_state_verify_tensor(cDigest(stateDigest), cDigest(tensorDigest), bytesPtr(proof),
			C.size_t(len(proof)), cerr)
	})
}

// ChunkRangeHash hashes bytes [offset, offset+len(data)) of a tensor of
// totalBytes bytes into a chunk-range record (PROTOCOL.md section 6), to be
// joined by a TensorAssembler. offset must be a multiple of ChunkSize, and
// len(data) too unless the range ends the tensor (StatusInvalidArgument).
func ChunkRangeHash(data []byte, offset, totalBytes uint64, threads uint32) ([]byte, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	return bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_chunk_range_hash(out, voidPtr(data), C.size_t(len(data)), C.uint64_t(offset),
			C.uint64_t(totalBytes), C.uint32_t(threads), cerr)
	})
}

// TensorAssembler joins chunk-range records into the digest TensorDigest
// gives for the whole tensor (pot_tensor_assembler). It is safe for
// concurrent use (calls are serialised).
type TensorAssembler struct {
	h handle[*C.pot_tensor_assembler]
}

// NewTensorAssembler starts assembling the digest of the tensor with the
// given name, dtype and shape (checked as by TensorDigest).
func NewTensorAssembler(name string, dtype DType, shape []uint64) (*TensorAssembler, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cs, err := cString(name, "tensor name")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	var p *C.pot_tensor_assembler
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_tensor_assembler_new(&p, cs, C.pot_dtype(dtype), shapePtr(shape), C.size_t(len(shape)), cerr)
	}); err != nil {
		return nil, err
	}
	a := &TensorAssembler{}
	a.h.set(p, "TensorAssembler")
	runtime.SetFinalizer(a, (*TensorAssembler).Close)
	return a, nil
}

// Close frees the assembler. It is safe to call more than once.
func (a *TensorAssembler) Close() error {
	runtime.SetFinalizer(a, nil)
	return a.h.close(func(p *C.pot_tensor_assembler) error { C.pot_tensor_assembler_free(p); return nil })
}

// Add adds a chunk-range record. StatusMalformed when it does not decode;
// StatusInvalidArgument when it is for a tensor of another size or
// overlaps a record added before.
func (a *TensorAssembler) Add(record []byte) error {
	return a.h.write(func(p *C.pot_tensor_assembler, cerr **C.pot_error) C.pot_status {
		return C.pot_tensor_assembler_add(p, bytesPtr(record), C.size_t(len(record)), cerr)
	})
}

// Finish returns the tensor digest. StatusInvalidArgument while some bytes
// are not covered by the records added.
func (a *TensorAssembler) Finish() (Digest, error) {
	return digestVia(a.h.write, func(p *C.pot_tensor_assembler, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_tensor_assembler_finish(out, p, cerr)
	})
}
