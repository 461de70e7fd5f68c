package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"math"
	"runtime"
	"unsafe"
)

// OpeningCheck names one check of VerifyOpening and VerifyStep
// (pot_opening_check), in the order they run (PROTOCOL.md sections 18 and
// 21.5). Values are frozen.
type OpeningCheck uint32

// The checks of pot.h.
const (
	CheckOK                OpeningCheck = C.POT_CHECK_OK                  // every check passed
	CheckManifest          OpeningCheck = C.POT_CHECK_MANIFEST            // the bytes are a canonical manifest
	CheckRunID             OpeningCheck = C.POT_CHECK_RUN_ID              // it is for the commitment's run
	CheckStep              OpeningCheck = C.POT_CHECK_STEP                // 1 <= t <= declared steps (and t <= log size)
	CheckLogSize           OpeningCheck = C.POT_CHECK_LOG_SIZE            // the proofs are for the posted root's size
	CheckPostLeaf          OpeningCheck = C.POT_CHECK_POST_LEAF           // leaf t decodes and names step t
	CheckPostLeafProof     OpeningCheck = C.POT_CHECK_POST_LEAF_PROOF     // leaf t is in the posted log
	CheckPreStateCommitted OpeningCheck = C.POT_CHECK_PRE_STATE_COMMITTED // t = 1: the pre-state is the committed initial state
	CheckPreLeaf           OpeningCheck = C.POT_CHECK_PRE_LEAF            // t > 1: leaf t-1 decodes, names step t-1, commits to the pre-state digest
	CheckPreLeafProof      OpeningCheck = C.POT_CHECK_PRE_LEAF_PROOF      // leaf t-1 is in the posted log
	CheckScheduleEntry     OpeningCheck = C.POT_CHECK_SCHEDULE_ENTRY      // the entry decodes and is for step t
	CheckScheduleProof     OpeningCheck = C.POT_CHECK_SCHEDULE_PROOF      // it is in the committed schedule
	CheckSampleCount       OpeningCheck = C.POT_CHECK_SAMPLE_COUNT        // one sample per scheduled index
	CheckSampleIndex       OpeningCheck = C.POT_CHECK_SAMPLE_INDEX        // each sample's index is the scheduled one
	CheckSamplePayload     OpeningCheck = C.POT_CHECK_SAMPLE_PAYLOAD      // each payload is a valid sample
	CheckSampleProof       OpeningCheck = C.POT_CHECK_SAMPLE_PROOF        // each sample digest is in the committed dataset
	CheckPreStateDigest    OpeningCheck = C.POT_CHECK_PRE_STATE_DIGEST    // the served S_{t-1} digests to the pre-state digest
	CheckPostStateDigest   OpeningCheck = C.POT_CHECK_POST_STATE_DIGEST   // the served S_t digests to leaf t's state digest
	// VerifyStep only, after the checks above (PROTOCOL.md section 21.5):
	CheckSpec           OpeningCheck = C.POT_CHECK_SPEC            // the spec is the commitment's
	CheckProgram        OpeningCheck = C.POT_CHECK_PROGRAM         // the model program is the spec's (and loads)
	CheckReplay         OpeningCheck = C.POT_CHECK_REPLAY          // the step replays (the message says why not)
	CheckReplayedState  OpeningCheck = C.POT_CHECK_REPLAYED_STATE  // bitwise: the replayed S_t is leaf t's state
	CheckReplayedLoss   OpeningCheck = C.POT_CHECK_REPLAYED_LOSS   // bitwise: the replayed loss has leaf t's bits
	CheckReplayedBucket OpeningCheck = C.POT_CHECK_REPLAYED_BUCKET // norm bucket: the replayed update's bucket matches leaf t's committed one
	// After the checks of VerifyOpening, and during and after VerifyStep's replay:
	CheckNonFinite OpeningCheck = C.POT_CHECK_NONFINITE // no NaN or infinity in leaf t's loss, a served state, a gradient, the replayed loss or S_t
	// The served S_{t-1} (cross-architecture: also S_t) holds another
	// learning rate than the spec's schedule gives step t (t+1).
	CheckLearningRate OpeningCheck = C.POT_CHECK_LEARNING_RATE
	// CheckCommittedNorm: leaf t's update norm is not, bit for bit, the norm
	// from S_{t-1} to the served (or, bitwise, the replayed) S_t.
	CheckCommittedNorm OpeningCheck = C.POT_CHECK_COMMITTED_NORM
	// CheckGradientIgnored: the replayed S_t does not depend on the step's
	// gradient (a zero gradient gives the same state: saturated optimizer
	// state).
	CheckGradientIgnored OpeningCheck = C.POT_CHECK_GRADIENT_IGNORED
	// CheckSubnormal: a served state holds more subnormal values than one in
	// 4096 of its param/ elements or one in 16 of the others (since 0.3.0).
	CheckSubnormal OpeningCheck = C.POT_CHECK_SUBNORMAL
	// CheckReplayedUpdate (VerifyStep, norm bucket): the served S_t's update
	// is not the replayed one within the tolerances (since 0.3.0).
	CheckReplayedUpdate OpeningCheck = C.POT_CHECK_REPLAYED_UPDATE
	// CheckTaskProgram (VerifyStep, last): the task's program, not the
	// miner's work, decides the step: its result depends on the thread count,
	// or its declared randomness changes nothing (since 0.3.0). The ledger
	// never counts it against the miner.
	CheckTaskProgram OpeningCheck = C.POT_CHECK_TASK_PROGRAM
	// CheckStateStats: a state's statistics table is not the one its leaf
	// commits (served S_{t-1} or S_t, or the replayed S_t; since 0.3.0).
	CheckStateStats OpeningCheck = C.POT_CHECK_STATE_STATS
	// CheckRunFlags: the opening's run record (every leaf, every table, the
	// flagged steps) is not the posted log's, lists other steps than its
	// tables flag, or other than the run sealed with on the ledger
	// (Commitment.SetSealedFlags; since 0.3.0).
	CheckRunFlags OpeningCheck = C.POT_CHECK_RUN_FLAGS
)

// String returns the stable lower-case name of the check
// (pot_opening_check_name: "ok", "post_leaf_proof", ...), or "unknown".
func (c OpeningCheck) String() string {
	if uint64(c) > math.MaxInt32 {
		return "unknown"
	}
	return C.GoString(C.pot_opening_check_name(C.pot_opening_check(c)))
}

// Opening is an opening manifest being built by the miner for one
// challenged step (pot_opening, PROTOCOL.md section 18). States are not
// part of it: name the served files with SetStateRefs. Every setter copies
// its bytes. It is safe for concurrent use (calls are serialised).
type Opening struct {
	h handle[*C.pot_opening]
}

// NewOpening starts a manifest for step of run runID, whose leaf proofs are
// made against the posted log root of logSize leaves, with the digest of
// the state before the step.
func NewOpening(runID Digest, step, logSize uint64, preStateDigest Digest) (*Opening, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_opening
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_opening_new(&p, cDigest(runID), C.uint64_t(step), C.uint64_t(logSize), cDigest(preStateDigest),
			cerr)
	}); err != nil {
		return nil, err
	}
	o := &Opening{}
	o.h.set(p, "Opening")
	runtime.SetFinalizer(o, (*Opening).Close)
	return o, nil
}

// Close frees the opening. It is safe to call more than once.
func (o *Opening) Close() error {
	runtime.SetFinalizer(o, nil)
	return o.h.close(func(p *C.pot_opening) error { C.pot_opening_free(p); return nil })
}

// SetPreLeaf sets leaf t-1 and its inclusion proof (not for step 1).
func (o *Opening) SetPreLeaf(leaf, proof []byte) error {
	return o.h.write(func(p *C.pot_opening, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_set_pre_leaf(p, bytesPtr(leaf), C.size_t(len(leaf)), bytesPtr(proof),
			C.size_t(len(proof)), cerr)
	})
}

// SetPostLeaf sets leaf t and its inclusion proof.
func (o *Opening) SetPostLeaf(leaf, proof []byte) error {
	return o.h.write(func(p *C.pot_opening, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_set_post_leaf(p, bytesPtr(leaf), C.size_t(len(leaf)), bytesPtr(proof),
			C.size_t(len(proof)), cerr)
	})
}

// SetSchedule sets the schedule entry of step t and its inclusion proof in
// the schedule root.
func (o *Opening) SetSchedule(entry, proof []byte) error {
	return o.h.write(func(p *C.pot_opening, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_set_schedule(p, bytesPtr(entry), C.size_t(len(entry)), bytesPtr(proof),
			C.size_t(len(proof)), cerr)
	})
}

// AddSample appends the next sample of the batch: its dataset index, its
// safetensors bytes and its inclusion proof in the dataset root.
func (o *Opening) AddSample(index uint64, payload, proof []byte) error {
	return o.h.write(func(p *C.pot_opening, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_add_sample(p, C.uint64_t(index), bytesPtr(payload), C.size_t(len(payload)),
			bytesPtr(proof), C.size_t(len(proof)), cerr)
	})
}

// SetStream records the descriptor (Stream.Encode) a token-stream
// dataset's windows are proven against (docs/PROTOCOL.md 15.1, 18).
func (o *Opening) SetStream(descriptor []byte) error {
	err := o.h.write(func(p *C.pot_opening, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_set_stream(p, bytesPtr(descriptor), C.size_t(len(descriptor)), cerr)
	})
	runtime.KeepAlive(descriptor)
	return err
}

// AddWindow appends the next sample of a stream dataset's batch: its window
// index and window proof (Stream.ProveWindow); the verifier rebuilds the
// sample from it.
func (o *Opening) AddWindow(index uint64, proof []byte) error {
	err := o.h.write(func(p *C.pot_opening, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_add_window(p, C.uint64_t(index), bytesPtr(proof), C.size_t(len(proof)), cerr)
	})
	runtime.KeepAlive(proof)
	return err
}

// SetRunRecord sets the run record every opening serves since 0.3.0
// (PROTOCOL.md 18, fields 16-18; check 32): the logSize step leaves
// concatenated, the statistics table of S_1..S_logSize in order
// (StateStats.Bytes), and the steps those tables flag (RunFlags),
// ascending.
func (o *Opening) SetRunRecord(leaves []byte, tables [][]byte, flaggedSteps []uint64) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs, lens := pinSlices(&pin, tables)
	err := o.h.write(func(p *C.pot_opening, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_set_run_record(p, bytesPtr(leaves), C.size_t(len(leaves)), unsafe.SliceData(ptrs),
			unsafe.SliceData(lens), C.size_t(len(tables)), shapePtr(flaggedSteps), C.size_t(len(flaggedSteps)), cerr)
	})
	runtime.KeepAlive(leaves)
	runtime.KeepAlive(tables)
	runtime.KeepAlive(flaggedSteps)
	return err
}

// SetStateRefs records where the state files are served (paths or URIs;
// "" for none). StatusLimit for a reference that is too long.
func (o *Opening) SetStateRefs(preStateRef, postStateRef string) error {
	pre, err := optString(preStateRef, "pre-state reference")
	if err != nil {
		return err
	}
	defer freeString(pre)
	post, err := optString(postStateRef, "post-state reference")
	if err != nil {
		return err
	}
	defer freeString(post)
	return o.h.write(func(p *C.pot_opening, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_set_state_refs(p, pre, post, cerr)
	})
}

// Encode returns the canonical manifest bytes (a pot.v2.OpeningManifest).
// StatusLimit past 256 MiB.
func (o *Opening) Encode() ([]byte, error) {
	return bytesVia(o.h.write, func(p *C.pot_opening, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_encode(out, p, cerr)
	})
}

// Digest returns the manifest digest, tagged("pot/v1/opening", canonical
// bytes): what the ledger records.
func (o *Opening) Digest() (Digest, error) {
	return digestVia(o.h.write, func(p *C.pot_opening, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_digest(out, p, cerr)
	})
}

// VerifyOpening verifies manifest bytes as the opening of challengedStep
// (a valid opening of another step fails CheckStep) against the commitment
// and the posted log root of logSize leaves and, when the paths are not "", the
// served state files (digested as they stream, on threads threads; 0 = all
// cores). Everything but the replay itself is checked.
//
// It returns (CheckOK, nil) when every check passes. Otherwise it returns
// the first failed check and an *Error whose code is that check's status
// (StatusProofMismatch, StatusMalformed, StatusIO, ...) and whose message
// names it. A failure before any check ran (a closed commitment, an ABI
// mismatch) returns CheckOK with the error.
func VerifyOpening(commitment *Commitment, challengedStep, logSize uint64, logRoot Digest, manifest []byte,
	preStatePath, postStatePath string, threads uint32) (OpeningCheck, error) {
	if abiErr != nil {
		return CheckOK, abiErr
	}
	pre, err := optString(preStatePath, "pre-state path")
	if err != nil {
		return CheckOK, err
	}
	defer freeString(pre)
	post, err := optString(postStatePath, "post-state path")
	if err != nil {
		return CheckOK, err
	}
	defer freeString(post)
	check := C.pot_opening_check(C.POT_CHECK_OK)
	err = commitment.h.read(func(c *C.pot_commitment, cerr **C.pot_error) C.pot_status {
		return C.pot_opening_verify(&check, c, C.uint64_t(challengedStep), C.uint64_t(logSize), cDigest(logRoot),
			bytesPtr(manifest), C.size_t(len(manifest)), pre, post, C.uint32_t(threads), cerr)
	})
	return OpeningCheck(check), err
}
