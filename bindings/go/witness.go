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

// WitnessSalt returns WitnessSaltSize fresh bytes from OpenSSL's CSPRNG.
func WitnessSalt() ([]byte, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	out := make([]byte, WitnessSaltSize)
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_witness_salt((*C.uint8_t)(unsafe.Pointer(&out[0])), cerr)
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// WitnessCommitment returns the commitment a committee member posts
// before revealing its statement (pot_witness_commitment, PROTOCOL.md
// section 19): statementJSON is the statement's JSON form (run_id, step,
// challenge_id, mode, environment, kind and the kind's keys; WitnessStatement
// builds it after VerifyStep), bound with the salt (16..64 bytes) and the
// member's identity (1..256 bytes). StatusInvalidArgument naming the key
// for a statement outside the rules, StatusMalformed for text that is not
// JSON.
func WitnessCommitment(statementJSON string, salt, identity []byte) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	cs, err := cString(statementJSON, "witness statement")
	if err != nil {
		return Digest{}, err
	}
	defer freeString(cs)
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_witness_commitment(out, cs, bytesPtr(salt), C.size_t(len(salt)), bytesPtr(identity),
			C.size_t(len(identity)), cerr)
	})
}

// VerifyWitnessReveal returns nil when the reveal (statement, salt,
// identity) opens commitment; StatusProofMismatch when the statement
// (another challenge, environment or finding), the salt or the identity
// differ from those committed.
func VerifyWitnessReveal(commitment Digest, statementJSON string, salt, identity []byte) error {
	if abiErr != nil {
		return abiErr
	}
	cs, err := cString(statementJSON, "witness statement")
	if err != nil {
		return err
	}
	defer freeString(cs)
	return status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_witness_verify_reveal(cDigest(commitment), cs, bytesPtr(salt), C.size_t(len(salt)),
			bytesPtr(identity), C.size_t(len(identity)), cerr)
	})
}

// WitnessMode says which revealed values a Verdict clusters
// (pot_witness_mode).
type WitnessMode uint32

// The witness modes of pot.h.
const (
	WitnessBitwise    WitnessMode = C.POT_WITNESS_BITWISE     // clusters of replayed state digests
	WitnessNormBucket WitnessMode = C.POT_WITNESS_NORM_BUCKET // clusters of norm buckets
)

// String returns "bitwise", "norm_bucket" (the ledger's names) or
// "WitnessMode(n)".
func (m WitnessMode) String() string {
	switch m {
	case WitnessBitwise:
		return "bitwise"
	case WitnessNormBucket:
		return "norm_bucket"
	}
	return "WitnessMode(" + strconv.FormatUint(uint64(m), 10) + ")"
}

// VerdictOutcome is the outcome of a Verdict (pot_verdict_outcome).
type VerdictOutcome uint32

// The outcomes of pot.h.
const (
	VerdictPass         VerdictOutcome = C.POT_VERDICT_PASS
	VerdictFail         VerdictOutcome = C.POT_VERDICT_FAIL
	VerdictInconclusive VerdictOutcome = C.POT_VERDICT_INCONCLUSIVE
)

// String returns "PASS", "FAIL", "INCONCLUSIVE" or "VerdictOutcome(n)".
func (o VerdictOutcome) String() string {
	switch o {
	case VerdictPass:
		return "PASS"
	case VerdictFail:
		return "FAIL"
	case VerdictInconclusive:
		return "INCONCLUSIVE"
	}
	return "VerdictOutcome(" + strconv.FormatUint(uint64(o), 10) + ")"
}

// Decision is the result of Verdict.Decide.
type Decision struct {
	Outcome     VerdictOutcome
	ClusterSize int    // reveals in the largest cluster
	Reason      string // why it decided so, in English
}

// Verdict collects revealed witness values and decides (pot_verdict). It
// is safe for concurrent use (calls are serialised).
type Verdict struct {
	h handle[*C.pot_verdict]
}

// NewVerdict returns an empty verdict in the given mode, whose winning
// cluster needs quorum reveals.
func NewVerdict(mode WitnessMode, quorum uint32) (*Verdict, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_verdict
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_verdict_new(&p, C.pot_witness_mode(mode), C.uint32_t(quorum), cerr)
	}); err != nil {
		return nil, err
	}
	v := &Verdict{}
	v.h.set(p, "Verdict")
	runtime.SetFinalizer(v, (*Verdict).Close)
	return v, nil
}

// Close frees the verdict. It is safe to call more than once.
func (v *Verdict) Close() error {
	runtime.SetFinalizer(v, nil)
	return v.h.close(func(p *C.pot_verdict) error { C.pot_verdict_free(p); return nil })
}

// AddReveal adds one verifier's revealed value: its replayed state digest
// and bucket.
func (v *Verdict) AddReveal(identity []byte, replayedState Digest, bucket int64) error {
	return v.h.write(func(p *C.pot_verdict, cerr **C.pot_error) C.pot_status {
		return C.pot_verdict_add_reveal(p, bytesPtr(identity), C.size_t(len(identity)), cDigest(replayedState),
			C.int64_t(bucket), cerr)
	})
}

// Decide decides over the reveals added. The largest cluster of equal
// values must reach the quorum and be strictly larger than any other (else
// VerdictInconclusive); it is then compared with committedState (bitwise
// mode: must not be nil) or, allowing adjacent buckets, with
// committedBucket, the bucket of the opened leaf's update norm (norm-bucket
// mode: must not be nil). StatusInvalidArgument for an identity revealed
// twice or a missing argument.
func (v *Verdict) Decide(committedState *Digest, committedBucket *int64) (Decision, error) {
	var committed *C.pot_digest
	if committedState != nil {
		committed = cDigest(*committedState)
	}
	var bucket *C.int64_t
	if committedBucket != nil {
		b := C.int64_t(*committedBucket)
		bucket = &b
	}
	var d Decision
	if err := v.h.withWrite(func(p *C.pot_verdict) error {
		var outcome C.pot_verdict_outcome
		var cluster C.size_t
		if err := status(func(cerr **C.pot_error) C.pot_status {
			return C.pot_verdict_decide(&outcome, &cluster, p, committed, bucket, cerr)
		}); err != nil {
			return err
		}
		d = Decision{Outcome: VerdictOutcome(outcome), ClusterSize: int(cluster),
			Reason: C.GoString(C.pot_verdict_reason(p))}
		return nil
	}); err != nil {
		return Decision{}, err
	}
	return d, nil
}
