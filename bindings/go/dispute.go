package pot

/*
#include <pot.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Bounds of a step bisection's arity (pot.h): a round has at most
// BisectionMaxPoints points.
const (
	BisectionMinArity  = C.POT_BISECTION_MIN_ARITY
	BisectionMaxArity  = C.POT_BISECTION_MAX_ARITY
	BisectionMaxPoints = C.POT_BISECTION_MAX_POINTS
)

// BisectionPoints returns the steps both parties claim in a round of a
// step bisection over (lo, hi] (docs/PROTOCOL.md 22.1): lo + floor(j (hi -
// lo) / arity) for j = 1..arity-1, or every step of lo+1..hi-1 when the
// interval is shorter than the arity. StatusInvalidArgument for lo >= hi
// or an arity outside 2..256.
func BisectionPoints(lo, hi uint64, arity uint32) ([]uint64, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var buf [BisectionMaxPoints]C.uint64_t
	count := C.size_t(len(buf))
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_bisection_points(&buf[0], &count, C.uint64_t(lo), C.uint64_t(hi), C.uint32_t(arity), cerr)
	}); err != nil {
		return nil, err
	}
	out := make([]uint64, count)
	for i := range out {
		out[i] = uint64(buf[i])
	}
	return out, nil
}

// BisectionRounds returns the most rounds a step bisection of (lo, hi]
// takes: ceil(log_arity(hi - lo)).
func BisectionRounds(lo, hi uint64, arity uint32) (uint32, error) {
	if abiErr != nil {
		return 0, abiErr
	}
	var r C.uint32_t
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_bisection_rounds(&r, C.uint64_t(lo), C.uint64_t(hi), C.uint32_t(arity), cerr)
	}); err != nil {
		return 0, err
	}
	return uint32(r), nil
}

// BisectionState is where a step bisection stands.
type BisectionState struct {
	Lo, Hi       uint64 // the interval (Lo, Hi] still disputed
	Arity        uint32
	RoundsPlayed uint32
	Done         bool   // Hi == Lo + 1: the dispute is step Hi
	Agreed       Digest // the digest both claim for S_Lo
	AHi, BHi     Digest // A's and B's claims for S_Hi
}

// StepBisection is one dispute's step bisection (pot_bisection): parties
// A and B agree on the digest of S_lo and claim different digests of
// S_hi; each round both claim the digests of the round's points, and the
// interval narrows to the first point where they differ. Its methods may be
// called from several goroutines (they take a lock).
type StepBisection struct {
	h handle[*C.pot_bisection]
}

// NewStepBisection starts a bisection of (lo, hi]. StatusInvalidArgument
// for lo >= hi, an arity outside 2..256, or aHi == bHi (nothing is
// disputed).
func NewStepBisection(lo, hi uint64, arity uint32, agreed, aHi, bHi Digest) (*StepBisection, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_bisection
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_bisection_new(&p, C.uint64_t(lo), C.uint64_t(hi), C.uint32_t(arity), cDigest(agreed), cDigest(aHi),
			cDigest(bHi), cerr)
	}); err != nil {
		return nil, err
	}
	b := &StepBisection{}
	b.h.set(p, "StepBisection")
	runtime.SetFinalizer(b, (*StepBisection).Close)
	return b, nil
}

// Close frees the bisection. It is safe to call more than once.
func (b *StepBisection) Close() error {
	runtime.SetFinalizer(b, nil)
	return b.h.close(func(p *C.pot_bisection) error { C.pot_bisection_free(p); return nil })
}

// State returns where the bisection stands.
func (b *StepBisection) State() (BisectionState, error) {
	info := C.pot_bisection_info{struct_size: C.sizeof_pot_bisection_info}
	if err := b.h.write(func(p *C.pot_bisection, cerr **C.pot_error) C.pot_status {
		return C.pot_bisection_info_get(&info, p, cerr)
	}); err != nil {
		return BisectionState{}, err
	}
	return BisectionState{Lo: uint64(info.lo), Hi: uint64(info.hi), Arity: uint32(info.arity),
		RoundsPlayed: uint32(info.rounds_played), Done: info.done != 0,
		Agreed: *(*Digest)(unsafe.Pointer(&info.agreed)), AHi: *(*Digest)(unsafe.Pointer(&info.a_hi)),
		BHi: *(*Digest)(unsafe.Pointer(&info.b_hi))}, nil
}

// Points returns the steps both parties claim this round. StatusState once
// the bisection is done.
func (b *StepBisection) Points() ([]uint64, error) {
	s, err := b.State()
	if err != nil {
		return nil, err
	}
	if s.Done {
		return nil, newError(StatusState, "the step bisection is done at step %d", s.Hi)
	}
	return BisectionPoints(s.Lo, s.Hi, s.Arity)
}

// PlayRound plays the current round: A's and B's digests for Points(), in
// order. StatusState once done; StatusInvalidArgument (nothing changes)
// when a list is not one digest per point.
func (b *StepBisection) PlayRound(aClaims, bClaims []Digest) error {
	if len(aClaims) != len(bClaims) {
		return newError(StatusInvalidArgument, "A claims %d digests and B %d: each party claims one per point",
			len(aClaims), len(bClaims))
	}
	var pa, pb *C.pot_digest
	if len(aClaims) > 0 {
		pa, pb = aClaims[0].c(), bClaims[0].c()
	}
	err := b.h.write(func(p *C.pot_bisection, cerr **C.pot_error) C.pot_status {
		return C.pot_bisection_play_round(p, pa, pb, C.size_t(len(aClaims)), cerr)
	})
	runtime.KeepAlive(aClaims)
	runtime.KeepAlive(bClaims)
	return err
}
