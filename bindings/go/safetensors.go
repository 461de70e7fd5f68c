package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Safetensors is a safetensors file mapped read-only with its header
// validated (pot_safetensors). Tensors are indexed in bytewise name order.
// It is read-only and safe for concurrent use; Close waits for calls in
// progress.
type Safetensors struct {
	h handle[*C.pot_safetensors]
}

// TensorInfo describes one tensor of a safetensors file.
type TensorInfo struct {
	Name   string
	DType  DType
	Shape  []uint64
	NBytes uint64 // size of the tensor's data in bytes
}

// OpenSafetensors maps and validates the file at path. Errors:
// StatusIO (cannot open or map), StatusMalformed (bad header), StatusLimit
// (header over 100 MiB, too many tensors or dims), StatusUnsupported
// (unknown dtype).
func OpenSafetensors(path string) (*Safetensors, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cs, err := cString(path, "path")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	var p *C.pot_safetensors
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_open(&p, cs, cerr)
	}); err != nil {
		return nil, err
	}
	f := &Safetensors{}
	f.h.set(p, "Safetensors")
	runtime.SetFinalizer(f, (*Safetensors).Close)
	return f, nil
}

// Close unmaps the file. It is safe to call more than once.
func (f *Safetensors) Close() error {
	runtime.SetFinalizer(f, nil)
	return f.h.close(func(p *C.pot_safetensors) error { C.pot_safetensors_free(p); return nil })
}

// Count returns the number of tensors (0 after Close).
func (f *Safetensors) Count() int {
	var n int
	f.h.peek(func(p *C.pot_safetensors) { n = int(C.pot_safetensors_count(p)) })
	return n
}

// Tensor describes tensor index (0 <= index < Count, in bytewise name
// order). StatusOutOfRange for a bad index.
func (f *Safetensors) Tensor(index int) (TensorInfo, error) {
	var info TensorInfo
	// Under the lock: the pointers into the mapping are read after the call.
	if err := f.h.withRead(func(p *C.pot_safetensors) error {
		if index < 0 {
			return newError(StatusOutOfRange, "tensor index %d is negative", index)
		}
		var name *C.char
		var dtype C.pot_dtype
		var shape *C.uint64_t
		var ndim, nbytes C.size_t
		if err := status(func(cerr **C.pot_error) C.pot_status {
			return C.pot_safetensors_tensor(&name, &dtype, &shape, &ndim, nil, &nbytes, p, C.size_t(index), cerr)
		}); err != nil {
			return err
		}
		info = TensorInfo{Name: C.GoString(name), DType: DType(dtype), NBytes: uint64(nbytes), Shape: []uint64{}}
		if ndim > 0 {
			info.Shape = append(info.Shape, unsafe.Slice((*uint64)(unsafe.Pointer(shape)), int(ndim))...)
		}
		return nil
	}); err != nil {
		return TensorInfo{}, err
	}
	return info, nil
}

// TensorData returns a copy of the bytes of tensor index (little-endian,
// row-major). StatusOutOfRange for a bad index.
func (f *Safetensors) TensorData(index int) ([]byte, error) {
	var out []byte
	// Under the lock: the data in the mapping is copied after the call.
	if err := f.h.withRead(func(p *C.pot_safetensors) error {
		if index < 0 {
			return newError(StatusOutOfRange, "tensor index %d is negative", index)
		}
		var data unsafe.Pointer
		var nbytes C.size_t
		if err := status(func(cerr **C.pot_error) C.pot_status {
			return C.pot_safetensors_tensor(nil, nil, nil, nil, &data, &nbytes, p, C.size_t(index), cerr)
		}); err != nil {
			return err
		}
		out = make([]byte, int(nbytes))
		if nbytes > 0 {
			copy(out, unsafe.Slice((*byte)(data), int(nbytes)))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// Find returns the index of the named tensor; StatusNotFound when absent.
func (f *Safetensors) Find(name string) (int, error) {
	cs, err := cString(name, "tensor name")
	if err != nil {
		return 0, err
	}
	defer freeString(cs)
	var index C.size_t
	if err := f.h.read(func(p *C.pot_safetensors, cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_find(&index, p, cs, cerr)
	}); err != nil {
		return 0, err
	}
	return int(index), nil
}

// Metadata returns the value of a __metadata__ entry; StatusNotFound when
// absent.
func (f *Safetensors) Metadata(key string) (string, error) {
	cs, err := cString(key, "metadata key")
	if err != nil {
		return "", err
	}
	defer freeString(cs)
	var v string
	// Under the lock: the value in the mapping is read after the call.
	if err := f.h.withRead(func(p *C.pot_safetensors) error {
		var value *C.char
		if err := status(func(cerr **C.pot_error) C.pot_status {
			return C.pot_safetensors_metadata(&value, p, cs, cerr)
		}); err != nil {
			return err
		}
		v = C.GoString(value)
		return nil
	}); err != nil {
		return "", err
	}
	return v, nil
}

// Digest returns the state digest of the file's tensors (metadata
// excluded), hashed from the mapping on threads threads (0 = all cores):
// equal to a State holding the same tensors.
func (f *Safetensors) Digest(threads uint32) (Digest, error) {
	return digestVia(f.h.read, func(p *C.pot_safetensors, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_digest(out, p, C.uint32_t(threads), cerr)
	})
}

// SafetensorsDigestFile opens the safetensors file at path, returns its
// state digest and closes it (errors as OpenSafetensors).
func SafetensorsDigestFile(path string, threads uint32) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	cs, err := cString(path, "path")
	if err != nil {
		return Digest{}, err
	}
	defer freeString(cs)
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_digest_file(out, cs, C.uint32_t(threads), cerr)
	})
}

// SafetensorsWriter collects tensors and writes a canonical safetensors
// file (pot_safetensors_writer). The C writer borrows tensor data, so Add
// copies each tensor's bytes into C memory that stays allocated until
// Close. It is safe for concurrent use (calls are serialised).
type SafetensorsWriter struct {
	h    handle[*C.pot_safetensors_writer]
	bufs []unsafe.Pointer // C copies of the tensor data, freed by Close; guarded by h's lock
}

// NewSafetensorsWriter returns an empty writer.
func NewSafetensorsWriter() (*SafetensorsWriter, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_safetensors_writer
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_writer_new(&p, cerr)
	}); err != nil {
		return nil, err
	}
	w := &SafetensorsWriter{}
	w.h.set(p, "SafetensorsWriter")
	runtime.SetFinalizer(w, (*SafetensorsWriter).Close)
	return w, nil
}

// Close frees the writer and the copies of the tensor data. It is safe to
// call more than once.
func (w *SafetensorsWriter) Close() error {
	runtime.SetFinalizer(w, nil)
	return w.h.close(func(p *C.pot_safetensors_writer) error {
		C.pot_safetensors_writer_free(p)
		for _, b := range w.bufs { // only Add, on an open writer, appends
			C.free(b)
		}
		w.bufs = nil
		return nil
	})
}

// Add validates a tensor (as TensorDigest; StatusDuplicate for a repeated
// name) and records it. data is copied: the caller may reuse it at once.
func (w *SafetensorsWriter) Add(name string, dtype DType, shape []uint64, data []byte) error {
	cs, err := cString(name, "tensor name")
	if err != nil {
		return err
	}
	defer freeString(cs)
	return w.h.withWrite(func(p *C.pot_safetensors_writer) error {
		var buf unsafe.Pointer
		if len(data) > 0 {
			buf = C.CBytes(data)
		}
		if err := status(func(cerr **C.pot_error) C.pot_status {
			return C.pot_safetensors_writer_add(p, cs, C.pot_dtype(dtype), shapePtr(shape), C.size_t(len(shape)), buf,
				C.size_t(len(data)), cerr)
		}); err != nil {
			if buf != nil {
				C.free(buf)
			}
			return err
		}
		if buf != nil {
			w.bufs = append(w.bufs, buf)
		}
		return nil
	})
}

// SetMetadata sets a __metadata__ string entry, replacing an earlier value.
func (w *SafetensorsWriter) SetMetadata(key, value string) error {
	ck, err := cString(key, "metadata key")
	if err != nil {
		return err
	}
	defer freeString(ck)
	cv, err := cString(value, "metadata value")
	if err != nil {
		return err
	}
	defer freeString(cv)
	return w.h.write(func(p *C.pot_safetensors_writer, cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_writer_set_metadata(p, ck, cv, cerr)
	})
}

// Write writes the file through a temporary file and a rename, so path
// never holds a partial file (StatusIO on failure). The writer may be
// written again.
func (w *SafetensorsWriter) Write(path string) error {
	cs, err := cString(path, "path")
	if err != nil {
		return err
	}
	defer freeString(cs)
	return w.h.write(func(p *C.pot_safetensors_writer, cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_writer_write(p, cs, cerr)
	})
}

// Bytes returns the canonical file Write would write, in memory.
func (w *SafetensorsWriter) Bytes() ([]byte, error) {
	return bytesVia(w.h.write, func(p *C.pot_safetensors_writer, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_writer_bytes(out, p, cerr)
	})
}
