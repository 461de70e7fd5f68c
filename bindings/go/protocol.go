package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"math"
	"unsafe"
)

// SeedDerive returns the seed of step of run runID (Commitment.RunID) under
// the per_step seed policy: the first 8 bytes (little-endian) of a tagged
// SHA-256 of (baseSeed, runID, step) (PROTOCOL.md section 9). Two runs of
// one task draw different seeds.
func SeedDerive(baseSeed uint64, runID Digest, step uint64) (uint64, error) {
	if abiErr != nil {
		return 0, abiErr
	}
	var out C.uint64_t
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_seed_derive(&out, C.uint64_t(baseSeed), cDigest(runID), C.uint64_t(step), cerr)
	}); err != nil {
		return 0, err
	}
	return uint64(out), nil
}

// StepLeaf is the content of the checkpoint-log leaf of one training step
// (PROTOCOL.md section 10): it names the run and commits, at training time,
// the state's statistics table every verifier reading the state checks, and
// the update norm the cross-architecture check compares replays with.
type StepLeaf struct {
	RunID       Digest  // the run the step belongs to (Commitment.RunID)
	Step        uint64  // the step, from 1
	StateDigest Digest  // digest of the state after the step
	StatsDigest Digest  // digest of that state's statistics table (StateStats.Digest, PROTOCOL.md 5.2)
	Loss        float64 // the loss, kept as its IEEE-754 binary64 bits
	UpdateNorm  float64 // UpdateNorm over "param/" from S_{Step-1} to S_Step, kept as its bits
}

// Encode returns the StepLeafSize bytes of leaf data, to append with
// Log.Append or Tree.Append (leaf index Step-1). StatusInvalidArgument for
// step 0 or an update norm with its sign bit set.
func (l StepLeaf) Encode() ([]byte, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	out := make([]byte, StepLeafSize)
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_step_leaf_encode((*C.uint8_t)(unsafe.Pointer(&out[0])), cDigest(l.RunID), C.uint64_t(l.Step),
			cDigest(l.StateDigest), cDigest(l.StatsDigest), C.double(l.Loss), C.double(l.UpdateNorm), cerr)
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeStepLeaf parses step leaf data; StatusMalformed unless it is
// exactly what StepLeaf.Encode produces (a version-1 or version-2 leaf is
// refused naming its version).
func DecodeStepLeaf(leaf []byte) (StepLeaf, error) {
	if abiErr != nil {
		return StepLeaf{}, abiErr
	}
	var step C.uint64_t
	var run, d, stats Digest
	var loss, norm C.double
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_step_leaf_decode(run.c(), &step, d.c(), stats.c(), &loss, &norm, bytesPtr(leaf),
			C.size_t(len(leaf)), cerr)
	}); err != nil {
		return StepLeaf{}, err
	}
	return StepLeaf{RunID: run, Step: uint64(step), StateDigest: d, StatsDigest: stats, Loss: float64(loss),
		UpdateNorm: float64(norm)}, nil
}

// ChallengeDerive returns rounds distinct challenged steps, each in
// 1..numSteps, derived from the beacon value and the run id (PROTOCOL.md
// section 11). StatusInvalidArgument when numSteps is 0, rounds > numSteps
// or the beacon is empty; StatusLimit past MaxChallengeRounds rounds or
// MaxBeaconBytes.
func ChallengeDerive(beacon []byte, runID Digest, numSteps uint64, rounds int) ([]uint64, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	if rounds < 0 {
		return nil, newError(StatusInvalidArgument, "rounds = %d is negative", rounds)
	}
	if rounds > MaxChallengeRounds {
		return nil, newError(StatusLimit, "%d rounds exceed the limit of %d", rounds, MaxChallengeRounds)
	}
	steps := make([]uint64, rounds)
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_challenge_derive((*C.uint64_t)(unsafe.Pointer(unsafe.SliceData(steps))), C.size_t(rounds),
			bytesPtr(beacon), C.size_t(len(beacon)), cDigest(runID), C.uint64_t(numSteps), cerr)
	}); err != nil {
		return nil, err
	}
	return steps, nil
}

// DetectionProbability returns the probability that challenges distinct
// challenges over steps steps hit at least one of forged forged steps:
// 1 - C(n-m, k) / C(n, k) (PROTOCOL.md section 12).
func DetectionProbability(steps, forged, challenges uint64) (float64, error) {
	if abiErr != nil {
		return 0, abiErr
	}
	var out C.double
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_security_detection_probability(&out, C.uint64_t(steps), C.uint64_t(forged), C.uint64_t(challenges),
			cerr)
	}); err != nil {
		return 0, err
	}
	return float64(out), nil
}

// ChallengesNeeded returns the smallest number of challenges whose
// detection probability reaches target (0 < target < 1, forged > 0).
// StatusLimit when more than MaxChallengeRounds would be needed.
func ChallengesNeeded(steps, forged uint64, target float64) (uint64, error) {
	if abiErr != nil {
		return 0, abiErr
	}
	var out C.uint64_t
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_security_challenges_needed(&out, C.uint64_t(steps), C.uint64_t(forged), C.double(target), cerr)
	}); err != nil {
		return 0, err
	}
	return uint64(out), nil
}

// SecurityBond returns the least bond B with p * B >= (1 - p) * reward
// (PROTOCOL.md section 12.2): forging then gains nothing in expectation.
// StatusInvalidArgument unless 0 < p <= 1; StatusOutOfRange past 2^64 - 1.
func SecurityBond(reward uint64, detectionProbability float64) (uint64, error) {
	if abiErr != nil {
		return 0, abiErr
	}
	var out C.uint64_t
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_security_bond(&out, C.uint64_t(reward), C.double(detectionProbability), cerr)
	}); err != nil {
		return 0, err
	}
	return uint64(out), nil
}

// Norm-bucket sentinels (PROTOCOL.md section 13): each matches only itself.
const (
	NormBucketZero      int64 = math.MinInt64 // bucket of an exact-zero norm
	NormBucketNonFinite int64 = math.MaxInt64 // bucket of a NaN or infinite norm
)

// NormBucket returns floor(resolution * log2(norm)) (resolution 1..65536
// buckets per doubling), or NormBucketZero / NormBucketNonFinite.
// StatusInvalidArgument for a negative norm or a resolution out of range.
func NormBucket(norm float64, resolution uint32) (int64, error) {
	if abiErr != nil {
		return 0, abiErr
	}
	var out C.int64_t
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_norm_bucket(&out, C.double(norm), C.uint32_t(resolution), cerr)
	}); err != nil {
		return 0, err
	}
	return int64(out), nil
}

// NormBucketsMatch reports whether two buckets are equal or adjacent (a
// sentinel matches only itself).
func NormBucketsMatch(committed, observed int64) bool {
	return C.pot_norm_buckets_match(C.int64_t(committed), C.int64_t(observed)) != 0
}

// UpdateNorm returns the L2 norm of post - pre over the floating-point
// tensors whose names start with prefix ("" = all), in float64, in the
// order of PROTOCOL.md section 13. StatusInvalidArgument when the two
// states hold different such tensors, or none.
func UpdateNorm(pre, post *Safetensors, prefix string) (float64, error) {
	cs, err := cString(prefix, "prefix")
	if err != nil {
		return 0, err
	}
	defer freeString(cs)
	var out C.double
	call := func(a, b *C.pot_safetensors, cerr **C.pot_error) C.pot_status {
		return C.pot_update_norm(&out, a, b, cs, cerr)
	}
	if post == pre { // one lock, taken once
		err = pre.h.read(func(p *C.pot_safetensors, cerr **C.pot_error) C.pot_status { return call(p, p, cerr) })
	} else {
		err = readBoth(&pre.h, &post.h, call)
	}
	if err != nil {
		return 0, err
	}
	return float64(out), nil
}
