package pot

/*
#include <pot.h>
*/
import "C"

import (
	"runtime"
	"sync"
)

// handle guards one C handle for a Go type that wraps it: the lock, the
// closed check, the error conversion and the KeepAlive that every call on
// the handle needs, written once. P is the C pointer type (*C.pot_log: cgo's
// opaque structs cannot be type arguments, pointers to them can). A wrapper
// embeds a handle (never copied: it holds a lock), names itself in kind
// ("Log") for the closed error, and calls read for the C functions that
// only read the handle (docs/concurrency.md "shared"; they run in parallel)
// and write for the others (one at a time, and never beside a read). A
// wrapper documented as serialising all its calls uses only the write forms
// and peekExclusive.
type handle[P comparable] struct {
	mu   sync.RWMutex
	p    P
	kind string
}

// cCall is the signature of a C call made on a locked handle: p is the
// handle (never nil), cerr the call's pot_error out-parameter.
type cCall[P comparable] func(p P, cerr **C.pot_error) C.pot_status

// read runs call under the shared lock: the closed error when the handle
// is closed, else the call's error (nil on POT_OK).
func (h *handle[P]) read(call cCall[P]) error {
	return h.withRead(func(p P) error {
		return status(func(cerr **C.pot_error) C.pot_status { return call(p, cerr) })
	})
}

// write runs call under the exclusive lock, as read does.
func (h *handle[P]) write(call cCall[P]) error {
	return h.withWrite(func(p P) error {
		return status(func(cerr **C.pot_error) C.pot_status { return call(p, cerr) })
	})
}

// withRead runs f with the handle under the shared lock, or returns the
// closed error: for the calls that do more than one C call under the lock
// (a second handle's lock, checks, reading what the call points to).
func (h *handle[P]) withRead(f func(p P) error) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.run(f)
}

// withWrite is withRead under the exclusive lock.
func (h *handle[P]) withWrite(f func(p P) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.run(f)
}

func (h *handle[P]) run(f func(p P) error) error {
	var none P
	if h.p == none {
		return closedError(h.kind)
	}
	err := f(h.p)
	runtime.KeepAlive(h)
	return err
}

// peek runs f on the handle under the shared lock, nil once closed: for the
// C getters that take NULL and cannot fail (sizes, counts).
func (h *handle[P]) peek(f func(p P)) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	f(h.p)
	runtime.KeepAlive(h)
}

// peekExclusive is peek under the exclusive lock, for the wrappers whose
// calls are all serialised.
func (h *handle[P]) peekExclusive(f func(p P)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h.p)
	runtime.KeepAlive(h)
}

// set stores a new C handle (from a constructor) and the wrapper's name;
// the constructor then registers the wrapper's finalizer (its Close).
func (h *handle[P]) set(p P, kind string) {
	h.p = p
	h.kind = kind
}

// close frees the handle with free once; later calls do nothing. It
// returns what free returns (nil when already closed).
func (h *handle[P]) close(free func(p P) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var none P
	if h.p == none {
		return nil
	}
	err := free(h.p)
	h.p = none
	return err
}

// readBoth runs call with a's and b's handles, both under their shared
// locks (a's first): for the C calls that read two handles. a and b must
// be distinct (a read lock is not taken twice).
func readBoth[P, Q comparable](a *handle[P], b *handle[Q], call func(p P, q Q, cerr **C.pot_error) C.pot_status) error {
	return a.withRead(func(p P) error {
		return b.read(func(q Q, cerr **C.pot_error) C.pot_status { return call(p, q, cerr) })
	})
}

// status runs a C call that needs no handle: its error, nil on POT_OK.
func status(call func(cerr **C.pot_error) C.pot_status) error {
	var cerr *C.pot_error
	return toError(call(&cerr), cerr)
}

// bytesOut runs a C call that writes one pot_bytes and returns its copy in
// Go memory (the pot_bytes freed), or the call's error.
func bytesOut(call func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status) ([]byte, error) {
	var out C.pot_bytes
	if err := status(func(cerr **C.pot_error) C.pot_status { return call(&out, cerr) }); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// stringOut is bytesOut for a NUL-terminated text result.
func stringOut(call func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status) (string, error) {
	var out C.pot_bytes
	if err := status(func(cerr **C.pot_error) C.pot_status { return call(&out, cerr) }); err != nil {
		return "", err
	}
	return takeString(&out), nil
}

// The outputs of a C call made on a locked handle: run is the handle's read
// or write (h.read for a call that only reads it), call the C call with its
// output. Each returns the output copied into Go memory (a pot_bytes
// freed), or the call's error.

// bytesVia returns the pot_bytes a call writes.
func bytesVia[P comparable](run func(cCall[P]) error,
	call func(p P, out *C.pot_bytes, cerr **C.pot_error) C.pot_status) ([]byte, error) {
	var out C.pot_bytes
	if err := run(func(p P, cerr **C.pot_error) C.pot_status { return call(p, &out, cerr) }); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// stringVia returns the NUL-terminated text a call writes.
func stringVia[P comparable](run func(cCall[P]) error,
	call func(p P, out *C.pot_bytes, cerr **C.pot_error) C.pot_status) (string, error) {
	var out C.pot_bytes
	if err := run(func(p P, cerr **C.pot_error) C.pot_status { return call(p, &out, cerr) }); err != nil {
		return "", err
	}
	return takeString(&out), nil
}

// digestVia returns the pot_digest a call writes (the zero digest on error).
func digestVia[P comparable](run func(cCall[P]) error,
	call func(p P, out *C.pot_digest, cerr **C.pot_error) C.pot_status) (Digest, error) {
	var d Digest
	if err := run(func(p P, cerr **C.pot_error) C.pot_status { return call(p, d.c(), cerr) }); err != nil {
		return Digest{}, err
	}
	return d, nil
}
