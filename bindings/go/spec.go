package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"runtime"
	"strconv"
	"unsafe"
)

// SeedPolicy is the seed policy of an execution spec (pot_seed_policy).
type SeedPolicy uint32

// The seed policies of pot.h.
const (
	SeedPerStep    SeedPolicy = C.POT_SEED_PER_STEP    // a seed per step from a base seed (SeedDerive)
	SeedSingleSeed SeedPolicy = C.POT_SEED_SINGLE_SEED // one seed for the whole run
	SeedNone       SeedPolicy = C.POT_SEED_NONE        // no randomness
)

// String returns the JSON name of the policy ("per_step", "single_seed",
// "none"), or "SeedPolicy(n)".
func (p SeedPolicy) String() string {
	switch p {
	case SeedPerStep:
		return "per_step"
	case SeedSingleSeed:
		return "single_seed"
	case SeedNone:
		return "none"
	}
	return "SeedPolicy(" + strconv.FormatUint(uint64(p), 10) + ")"
}

// Spec is a validated execution spec (pot_spec, PROTOCOL.md section 14).
// It is immutable and safe for concurrent use.
type Spec struct {
	h handle[*C.pot_spec]
}

func newSpec(p *C.pot_spec) *Spec {
	s := &Spec{}
	s.h.set(p, "Spec")
	runtime.SetFinalizer(s, (*Spec).Close)
	return s
}

// SpecFromJSON parses the JSON form of a spec (docs/cli.md) and validates
// it. StatusInvalidArgument names the first rule broken or the bad key;
// StatusMalformed for text that is not JSON.
func SpecFromJSON(json string) (*Spec, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cs, err := cString(json, "spec JSON")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	var p *C.pot_spec
	if err := status(func(cerr **C.pot_error) C.pot_status { return C.pot_spec_from_json(&p, cs, cerr) }); err != nil {
		return nil, err
	}
	return newSpec(p), nil
}

// DecodeSpec decodes the canonical bytes of a spec: StatusMalformed unless
// they are exactly the canonical encoding, StatusInvalidArgument when a
// rule is broken, StatusLimit past 65536 bytes.
func DecodeSpec(data []byte) (*Spec, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_spec
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_spec_decode(&p, bytesPtr(data), C.size_t(len(data)), cerr)
	}); err != nil {
		return nil, err
	}
	return newSpec(p), nil
}

// Close frees the spec. It is safe to call more than once.
func (s *Spec) Close() error {
	runtime.SetFinalizer(s, nil)
	return s.h.close(func(p *C.pot_spec) error { C.pot_spec_free(p); return nil })
}

// Encode returns the canonical bytes (a pot.v2.ExecutionSpec message).
func (s *Spec) Encode() ([]byte, error) {
	return bytesVia(s.h.read, func(p *C.pot_spec, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_spec_encode(out, p, cerr)
	})
}

// ToJSON returns the JSON form of the spec.
func (s *Spec) ToJSON() (string, error) {
	return stringVia(s.h.read, func(p *C.pot_spec, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_spec_to_json(out, p, cerr)
	})
}

// Digest returns the spec digest, tagged("pot/v1/spec", canonical bytes).
func (s *Spec) Digest() (Digest, error) {
	return digestVia(s.h.read, func(p *C.pot_spec, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_spec_digest(out, p, cerr)
	})
}

// SeedPolicy returns the seed policy and its seed (the base seed for
// SeedPerStep, the seed for SeedSingleSeed, 0 for SeedNone).
func (s *Spec) SeedPolicy() (SeedPolicy, uint64, error) {
	var policy C.pot_seed_policy
	var seed C.uint64_t
	if err := s.h.read(func(p *C.pot_spec, cerr **C.pot_error) C.pot_status {
		return C.pot_spec_seed_policy(&policy, &seed, p, cerr)
	}); err != nil {
		return 0, 0, err
	}
	return SeedPolicy(policy), uint64(seed), nil
}

// IntraOpThreads returns the pinned intra-op thread count (0 after Close).
func (s *Spec) IntraOpThreads() uint32 {
	var n uint32
	s.h.peek(func(p *C.pot_spec) { n = uint32(C.pot_spec_intra_op_threads(p)) })
	return n
}

// LearningRates returns the learning rates of training steps
// first..first+count-1 (pot_spec_learning_rates): the optimizer's lr through
// the spec's lr_schedule, as torch 1.13's schedulers give
// param_groups[0]["lr"] before each optimizer step, bit for bit. S_t's
// hparam/lr must be the rate of step t+1. O(first + count): ask for a run's
// rates in chunks, not once per step. StatusInvalidArgument for first = 0,
// StatusOutOfRange past step 2^32.
func (s *Spec) LearningRates(first uint64, count int) ([]float64, error) {
	return s.GroupLearningRates(0, first, count)
}

// GroupCount returns the spec's parameter groups (docs/PROTOCOL.md 14.5):
// 1 + its param_groups (0 after Close).
func (s *Spec) GroupCount() uint32 {
	var n uint32
	s.h.peek(func(p *C.pot_spec) { n = uint32(C.pot_spec_group_count(p)) })
	return n
}

// GroupLearningRates is LearningRates for parameter group `group`
// (pot_spec_group_learning_rates): its optimizer's lr through the one
// lr_schedule; S_t holds group g's rate of step t+1 as hparam/lr/<g>.
// StatusOutOfRange for a group past GroupCount.
func (s *Spec) GroupLearningRates(group uint32, first uint64, count int) ([]float64, error) {
	if count < 0 {
		return nil, &Error{Code: StatusInvalidArgument, Message: "LearningRates: count < 0"}
	}
	if count > MaxRatesPerCall { // refused before allocating
		return nil, newError(StatusLimit, "%d learning rates asked, at most %d per call (MaxRatesPerCall)", count,
			MaxRatesPerCall)
	}
	out := make([]float64, count)
	var ptr *C.double
	if count > 0 {
		ptr = (*C.double)(unsafe.Pointer(&out[0]))
	}
	if err := s.h.read(func(p *C.pot_spec, cerr **C.pot_error) C.pot_status {
		return C.pot_spec_group_learning_rates(ptr, C.size_t(count), p, C.uint32_t(group), C.uint64_t(first), cerr)
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// NormBucketResolution returns the norm-bucket resolution in buckets per
// doubling (0 after Close).
func (s *Spec) NormBucketResolution() uint32 {
	var n uint32
	s.h.peek(func(p *C.pot_spec) { n = uint32(C.pot_spec_norm_bucket_resolution(p)) })
	return n
}
