package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"runtime"
)

// Stream is a validated token-stream dataset (pot_stream, PROTOCOL.md
// section 15.1): token files committed over 4096-byte chunks, sample i the
// i-th window of W tokens, proven by the chunks that hold it. It is
// immutable and safe for concurrent use.
type Stream struct {
	h handle[*C.pot_stream]
}

func newStream(p *C.pot_stream) *Stream {
	s := &Stream{}
	s.h.set(p, "Stream")
	runtime.SetFinalizer(s, (*Stream).Close)
	return s
}

// StreamFromJSON parses the JSON form (docs/cli.md "Stream dataset");
// StatusInvalidArgument names the rule or key, StatusLimit a bound.
func StreamFromJSON(json string) (*Stream, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cs, err := cString(json, "stream JSON")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	var p *C.pot_stream
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_stream_from_json(&p, cs, cerr)
	}); err != nil {
		return nil, err
	}
	return newStream(p), nil
}

// DecodeStream decodes descriptor bytes; StatusUnsupported for another
// version, StatusMalformed for a truncated record or a trailing byte.
func DecodeStream(data []byte) (*Stream, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_stream
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_stream_decode(&p, bytesPtr(data), C.size_t(len(data)), cerr)
	}); err != nil {
		return nil, err
	}
	return newStream(p), nil
}

// Close frees the dataset. It is safe to call more than once.
func (s *Stream) Close() error {
	runtime.SetFinalizer(s, nil)
	return s.h.close(func(p *C.pot_stream) error { C.pot_stream_free(p); return nil })
}

// Encode returns the descriptor bytes.
func (s *Stream) Encode() ([]byte, error) {
	return bytesVia(s.h.read, func(p *C.pot_stream, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_stream_encode(out, p, cerr)
	})
}

// ToJSON returns the JSON form.
func (s *Stream) ToJSON() (string, error) {
	return stringVia(s.h.read, func(p *C.pot_stream, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_stream_to_json(out, p, cerr)
	})
}

// Root returns the dataset root, tagged("pot/v2/stream", descriptor).
func (s *Stream) Root() (Digest, error) {
	return digestVia(s.h.read, func(p *C.pot_stream, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_stream_root(out, p, cerr)
	})
}

// Size returns the number of windows (the dataset_size); 0 once closed.
func (s *Stream) Size() uint64 {
	var n uint64
	s.h.peek(func(p *C.pot_stream) { n = uint64(C.pot_stream_size(p)) })
	return n
}

// Locate returns the shard and first token of window index.
func (s *Stream) Locate(index uint64) (shard uint32, offset uint64, err error) {
	var cs C.uint32_t
	var co C.uint64_t
	if err := s.h.read(func(p *C.pot_stream, cerr **C.pot_error) C.pot_status {
		return C.pot_stream_locate(&cs, &co, p, C.uint64_t(index), cerr)
	}); err != nil {
		return 0, 0, err
	}
	return uint32(cs), uint64(co), nil
}

// ProveWindow returns the proof of window index, read from its shard's file.
func (s *Stream) ProveWindow(index uint64, shardPath string) ([]byte, error) {
	return s.fromShard(shardPath,
		func(p *C.pot_stream, out *C.pot_bytes, cp *C.char, cerr **C.pot_error) C.pot_status {
			return C.pot_stream_prove_window(out, p, C.uint64_t(index), cp, cerr)
		})
}

// Sample returns the sample of window index (safetensors bytes) read from
// its shard's file: what a trainer feeds the model. It is not checked
// against the shard root here; the opening's window proof binds it.
func (s *Stream) Sample(index uint64, shardPath string) ([]byte, error) {
	return s.fromShard(shardPath,
		func(p *C.pot_stream, out *C.pot_bytes, cp *C.char, cerr **C.pot_error) C.pot_status {
			return C.pot_stream_sample(out, p, C.uint64_t(index), cp, cerr)
		})
}

// fromShard runs a call that reads a shard file into bytes (the path is
// checked once the stream is known to be open).
func (s *Stream) fromShard(shardPath string,
	call func(p *C.pot_stream, out *C.pot_bytes, cp *C.char, cerr **C.pot_error) C.pot_status) ([]byte, error) {
	var data []byte
	err := s.h.withRead(func(p *C.pot_stream) error {
		cp, err := cString(shardPath, "shard path")
		if err != nil {
			return err
		}
		defer freeString(cp)
		data, err = bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status { return call(p, out, cp, cerr) })
		return err
	})
	return data, err
}

// CheckWindow checks a window proof and returns the window's sample
// (safetensors bytes); StatusProofMismatch when its chunks do not give the
// shard's root, StatusProofLength when its sizes are not the window's.
func (s *Stream) CheckWindow(index uint64, proof []byte) ([]byte, error) {
	out, err := bytesVia(s.h.read, func(p *C.pot_stream, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_stream_check_window(out, p, C.uint64_t(index), bytesPtr(proof), C.size_t(len(proof)), cerr)
	})
	runtime.KeepAlive(proof)
	return out, err
}

// ShardRootFile returns the shard root and token count of a token file of
// tokenDType (DTypeU16 or DTypeU32).
func ShardRootFile(path string, tokenDType DType) (Digest, uint64, error) {
	if abiErr != nil {
		return Digest{}, 0, abiErr
	}
	cp, err := cString(path, "path")
	if err != nil {
		return Digest{}, 0, err
	}
	defer freeString(cp)
	var tokens C.uint64_t
	d, err := digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_stream_shard_root_file(out, &tokens, cp, C.pot_dtype(tokenDType), cerr)
	})
	if err != nil {
		return Digest{}, 0, err
	}
	return d, uint64(tokens), nil
}
