package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"errors"
	"runtime"
	"strconv"
	"unsafe"
)

// ProgramDigestFile returns the model program digest a spec carries,
// tagged("pot/v1/program", the file's bytes) (PROTOCOL.md section 21.2).
// It works in every build of libpot, with or without LibTorch. StatusIO
// when the file cannot be read.
func ProgramDigestFile(path string) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	cs, err := cString(path, "program path")
	if err != nil {
		return Digest{}, err
	}
	defer freeString(cs)
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_program_digest_file(out, cs, cerr)
	})
}

// ReplayAvailable reports whether the loaded libpot was built with the
// LibTorch replay layer (pot_replay_available). Without it NewReplay,
// VerifyStep, NewRecorder, OpenCheckpoints and the recorder's methods
// return an *Error with code StatusUnsupported.
func ReplayAvailable() bool { return C.pot_replay_available() != 0 }

// HardwareClass returns this process's hardware class
// (pot_replay_hardware_class, PROTOCOL.md section 14.4), the value a spec's
// hardware_class must hold for its steps to be trained or replayed bit for
// bit here, e.g. "cpu-x86_64/aten:avx2/onednn:avx2". It is fixed for the
// process (ATEN_CPU_CAPABILITY and ONEDNN_MAX_CPU_ISA are read when LibTorch
// first needs them). StatusUnsupported without LibTorch.
func HardwareClass() (string, error) {
	if abiErr != nil {
		return "", abiErr
	}
	var s *C.char
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_replay_hardware_class(&s, cerr)
	}); err != nil {
		return "", err
	}
	return C.GoString(s), nil // the string lives as long as the process
}

// FrameworkVersion returns the LibTorch version this libpot replays with
// (pot_replay_framework_version, e.g. "1.13.0"): the framework_version a
// witness states in its environment (PROTOCOL.md section 19).
// StatusUnsupported without LibTorch.
func FrameworkVersion() (string, error) {
	if abiErr != nil {
		return "", abiErr
	}
	var s *C.char
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_replay_framework_version(&s, cerr)
	}); err != nil {
		return "", err
	}
	return C.GoString(s), nil // static storage
}

// pinSlices returns C views of bufs for a `const uint8_t *const *` and a
// `const size_t *` argument: pointers to the slices' first bytes (nil for
// an empty slice), pinned with p so that the pointer array may be passed to
// C (cgo's rules), and the lengths. Unpin p after the call.
func pinSlices(p *runtime.Pinner, bufs [][]byte) ([]*C.uint8_t, []C.size_t) {
	ptrs := make([]*C.uint8_t, len(bufs))
	lens := make([]C.size_t, len(bufs))
	for i, b := range bufs {
		if len(b) > 0 {
			p.Pin(&b[0])
			ptrs[i] = (*C.uint8_t)(unsafe.Pointer(&b[0]))
		}
		lens[i] = C.size_t(len(b))
	}
	return ptrs, lens
}

// Replay is a TorchScript model program loaded and bound to a spec, ready
// to replay steps (pot_replay, PROTOCOL.md section 21). A replay changes
// process-wide LibTorch state (the default CPU generator, the intra-op
// thread count), so libpot runs replays one at a time, even on distinct
// handles; a replay must not overlap LibTorch work of the program's own in
// another thread. It is safe for concurrent use (calls are serialised).
type Replay struct {
	h handle[*C.pot_replay]
}

// NewReplay loads the TorchScript program at programPath for spec (the
// spec is copied: it may be closed afterwards). Errors: StatusProofMismatch
// when the program's digest is not the spec's model_program_digest,
// StatusInvalidArgument when it is not a TorchScript module whose forward
// takes tensors, StatusIO when it cannot be read, StatusUnsupported when
// libpot was built without LibTorch (ReplayAvailable).
func NewReplay(spec *Spec, programPath string) (*Replay, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cs, err := cString(programPath, "program path")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	var p *C.pot_replay
	if err := spec.h.read(func(s *C.pot_spec, cerr **C.pot_error) C.pot_status {
		return C.pot_replay_new(&p, s, cs, cerr)
	}); err != nil {
		return nil, err
	}
	r := &Replay{}
	r.h.set(p, "Replay")
	runtime.SetFinalizer(r, (*Replay).Close)
	return r, nil
}

// Close frees the loaded program. It is safe to call more than once.
func (r *Replay) Close() error {
	runtime.SetFinalizer(r, nil)
	return r.h.close(func(p *C.pot_replay) error { C.pot_replay_free(p); return nil })
}

// InputName returns the name of argument index of the program's forward
// (after self): the name of a sample tensor. StatusOutOfRange past the
// last argument.
func (r *Replay) InputName(index int) (string, error) {
	var s string
	err := r.h.withWrite(func(p *C.pot_replay) error {
		if index < 0 {
			return newError(StatusOutOfRange, "input index %d is negative", index)
		}
		var name *C.char
		if err := status(func(cerr **C.pot_error) C.pot_status {
			return C.pot_replay_input_name(&name, p, C.size_t(index), cerr)
		}); err != nil {
			return err
		}
		s = C.GoString(name) // the string lives as long as the handle
		return nil
	})
	return s, err
}

// InputNames returns the names of the forward's arguments in order: the
// sample tensor names, in the order the batch is passed.
func (r *Replay) InputNames() ([]string, error) {
	names := []string{}
	for i := 0; ; i++ {
		n, err := r.InputName(i)
		if err != nil {
			if errors.Is(err, ErrOutOfRange) {
				return names, nil
			}
			return nil, err
		}
		names = append(names, n)
	}
}

// ReplayResult is what a replayed step gives (pot_replay_result).
type ReplayResult struct {
	PostStateDigest Digest        // digest of the replayed S_t
	Loss            float64       // the step leaf's loss (PROTOCOL.md section 21.3)
	UpdateNorm      float64       // L2 norm of S_t - S_{t-1} over the "param/" tensors (section 13)
	NormBucket      int64         // the update norm's bucket at the spec's resolution
	Gradient        GradientTrace // what the step's gradient did (check 27)
	// GradientDigest is the state digest of the gradient the optimizer
	// consumed, tensors named "grad/<parameter>" (PROTOCOL.md section 19):
	// what a witness states and only a replay gives.
	GradientDigest Digest
}

// GradientTrace is what a replayed step's gradient did (pot_gradient_trace,
// check 27 gradient_ignored, PROTOCOL.md section 21.5): the update applied
// with the step's gradient and, from the same S_{t-1}, with a zero
// gradient. An element differs when its bits differ; parameters without a
// gradient are not counted.
type GradientTrace struct {
	LearningRate          float64 // the spec's rate of the step
	ParamElements         uint64  // elements of the updated parameters
	MovedElements         uint64  // ... that differ from S_{t-1}
	GradientElements      uint64  // ... that differ from the zero-gradient update
	OptimElements         uint64  // optimizer-state elements written (no step counters)
	OptimGradientElements uint64  // ... that differ from the zero-gradient update
	Ignored               bool    // check 27 fails on this trace
}

func gradientTrace(g *C.pot_gradient_trace) GradientTrace {
	return GradientTrace{
		LearningRate:          float64(g.learning_rate),
		ParamElements:         uint64(g.param_elements),
		MovedElements:         uint64(g.moved_elements),
		GradientElements:      uint64(g.gradient_elements),
		OptimElements:         uint64(g.optim_elements),
		OptimGradientElements: uint64(g.optim_gradient_elements),
		Ignored:               g.ignored != 0,
	}
}

func replayResult(r *C.pot_replay_result) ReplayResult {
	return ReplayResult{
		PostStateDigest: *(*Digest)(unsafe.Pointer(&r.post_state_digest)),
		Loss:            float64(r.loss),
		UpdateNorm:      float64(r.update_norm),
		NormBucket:      int64(r.norm_bucket),
		Gradient:        gradientTrace(&r.gradient),
		GradientDigest:  *(*Digest)(unsafe.Pointer(&r.gradient_digest)),
	}
}

// Step replays one step of run runID (Commitment.RunID) from the state file
// at preStatePath (S_{t-1}). runID may be nil unless the spec's seed policy
// is per_step, whose seeds name the run (StatusInvalidArgument then).
// scheduleEntry is the step's canonical schedule entry
// (ScheduleEntry.Encode, SeededScheduleEntry); it gives the step and its
// micro-batches. samples[i] is the safetensors payload of the entry's i-th
// dataset index, in the entry's order. The learning rates are the spec's
// (Spec.LearningRates): S_{t-1}'s hparam/lr must be step t's rate, and the
// replayed S_t records step t+1's. When postStatePath is not "", the
// replayed S_t is written there (canonical safetensors, atomically). The
// samples are only read during the call.
//
// Errors: StatusInvalidArgument for a pre-state holding another learning
// rate than the spec's, a state or batch that does not fit the
// program and spec (the message names the tensor) or a sample count other
// than the entry's, StatusNonFinite when the loss is NaN or infinite,
// StatusBackend for a LibTorch failure, StatusIO for a state file that
// cannot be read or written.
func (r *Replay) Step(runID *Digest, preStatePath string, scheduleEntry []byte, samples [][]byte,
	postStatePath string) (ReplayResult, error) {
	in, err := NewStepInput(runID, preStatePath, scheduleEntry, samples)
	if err != nil {
		return ReplayResult{}, err
	}
	defer in.Close()
	return r.StepWith(in, postStatePath)
}

// StepWith replays the step of a StepInput built beforehand, as Step does.
func (r *Replay) StepWith(in *StepInput, postStatePath string) (ReplayResult, error) {
	post, err := optString(postStatePath, "post-state path")
	if err != nil {
		return ReplayResult{}, err
	}
	defer freeString(post)
	out := C.pot_replay_result{struct_size: C.sizeof_pot_replay_result}
	if err := r.withInput(in, func(rp *C.pot_replay, p *C.pot_step_input, cerr **C.pot_error) C.pot_status {
		return C.pot_replay_step(&out, rp, p, post, cerr)
	}); err != nil {
		return ReplayResult{}, err
	}
	return replayResult(&out), nil
}

// VerifyMode is how VerifyStep compares the replayed step (pot_verify_mode).
type VerifyMode uint32

// The verification modes of pot.h.
const (
	// VerifyBitwise: the replayed S_t and loss equal leaf t's, bit for bit.
	VerifyBitwise VerifyMode = C.POT_VERIFY_BITWISE
	// VerifyNormBucket: the cross-architecture path; the replayed update's
	// norm bucket matches the bucket of the served S_{t-1} -> S_t (PROTOCOL.md
	// section 13). It needs the served post-state.
	VerifyNormBucket VerifyMode = C.POT_VERIFY_NORM_BUCKET
)

// String returns "bitwise" or "norm_bucket" (the names of `pot verify
// --mode` are "bitwise" and "bucket"), or "VerifyMode(n)".
func (m VerifyMode) String() string {
	switch m {
	case VerifyBitwise:
		return "bitwise"
	case VerifyNormBucket:
		return "norm_bucket"
	}
	return "VerifyMode(" + strconv.FormatUint(uint64(m), 10) + ")"
}

// VerifyResult is what VerifyStep found (pot_verify_result), also when the
// step is rejected.
type VerifyResult struct {
	// Check is CheckOK when the step verified, else the first failed check.
	Check OpeningCheck
	// Replayed is true when the replay ran; Replay is then set.
	Replayed bool
	// Replay holds the replayed state digest, loss, update norm and bucket:
	// the witness value of PROTOCOL.md section 19.
	Replay ReplayResult
	// CommittedStateDigest, CommittedLoss and CommittedUpdateNorm come from
	// leaf t, CommittedNormBucket is the bucket of CommittedUpdateNorm at the
	// spec's resolution (what VerifyNormBucket compares the replay with);
	// they are set once the checks of VerifyOpening passed (Check >=
	// CheckSpec or OK).
	CommittedStateDigest Digest
	CommittedLoss        float64
	CommittedUpdateNorm  float64
	CommittedNormBucket  int64
	// Norm-bucket path, once the replay ran (0 otherwise; since 0.3.0):
	// LossError is the committed loss's relative distance from the replayed
	// loss, UpdateError the served S_t's update's from the replayed update
	// (S_t - S_{t-1} over param/), TensorUpdateError the largest of one
	// tensor of 64 or more elements (PROTOCOL.md 21.5).
	LossError         float64
	UpdateError       float64
	TensorUpdateError float64
}

// VerifyStep verifies a challenged step completely (PROTOCOL.md section
// 21.5): every check of VerifyOpening, then the spec against the
// commitment (CheckSpec), the program at programPath against the spec
// (CheckProgram), the replay from the served S_{t-1} at preStatePath with
// the manifest's schedule entry, samples and next learning rate
// (CheckReplay), and the comparison of mode (CheckReplayedState and
// CheckReplayedLoss, or CheckReplayedBucket, CheckReplayedLoss within its
// tolerance and CheckReplayedUpdate), then CheckGradientIgnored. postStatePath ("" for none)
// is the served S_t; VerifyNormBucket needs it. intraOpThreads 0 replays
// with the spec's thread count (another count only makes sense with
// VerifyNormBucket).
//
// It returns a result with CheckOK and a nil error when the step verified.
// Otherwise it returns the result with the first failed check (and the
// replay's values when it ran) and an *Error whose code is that check's
// status (StatusProofMismatch for a replay that differs) and whose message
// names it. A failure before any check ran (bad arguments, a closed
// handle, StatusUnsupported without LibTorch, an ABI mismatch) returns a
// zero result (Check = CheckOK) with the error.
func VerifyStep(commitment *Commitment, spec *Spec, programPath string, challengedStep, logSize uint64,
	logRoot Digest, manifest []byte, preStatePath, postStatePath string, mode VerifyMode,
	intraOpThreads uint32) (VerifyResult, error) {
	if abiErr != nil {
		return VerifyResult{}, abiErr
	}
	prog, err := cString(programPath, "program path")
	if err != nil {
		return VerifyResult{}, err
	}
	defer freeString(prog)
	pre, err := cString(preStatePath, "pre-state path")
	if err != nil {
		return VerifyResult{}, err
	}
	defer freeString(pre)
	post, err := optString(postStatePath, "post-state path")
	if err != nil {
		return VerifyResult{}, err
	}
	defer freeString(post)
	// check POT_CHECK_OK, not replayed: left so (a zero result) by a closed handle
	out := C.pot_verify_result{struct_size: C.sizeof_pot_verify_result}
	err = readBoth(&commitment.h, &spec.h, func(c *C.pot_commitment, s *C.pot_spec, cerr **C.pot_error) C.pot_status {
		return C.pot_verify_step(&out, c, s, prog, C.uint64_t(challengedStep), C.uint64_t(logSize), cDigest(logRoot),
			bytesPtr(manifest), C.size_t(len(manifest)), pre, post, C.pot_verify_mode(mode), C.uint32_t(intraOpThreads),
			cerr)
	})
	res := VerifyResult{
		Check:                OpeningCheck(out.check),
		Replayed:             out.replayed != 0,
		CommittedStateDigest: *(*Digest)(unsafe.Pointer(&out.committed_state_digest)),
		CommittedLoss:        float64(out.committed_loss),
		CommittedUpdateNorm:  float64(out.committed_update_norm),
		CommittedNormBucket:  int64(out.committed_norm_bucket),
		LossError:            float64(out.loss_error),
		UpdateError:          float64(out.update_error),
		TensorUpdateError:    float64(out.tensor_update_error),
	}
	if res.Replayed {
		res.Replay = ReplayResult{
			PostStateDigest: *(*Digest)(unsafe.Pointer(&out.replayed_state_digest)),
			Loss:            float64(out.loss),
			UpdateNorm:      float64(out.update_norm),
			NormBucket:      int64(out.norm_bucket),
			Gradient:        gradientTrace(&out.gradient),
			GradientDigest:  *(*Digest)(unsafe.Pointer(&out.gradient_digest)),
		}
	}
	return res, err
}

// WitnessStatement returns the statement (JSON text) a committee member
// commits to after VerifyStep (pot_witness_statement, PROTOCOL.md section
// 19): challenge challengeID on step `step` of run runID in mode; the
// environment this process replays in (FrameworkVersion, intraOpThreads as
// passed to VerifyStep, 0 for the spec's, and HardwareClass); and the
// finding: "replayed" with the replayed digest, bucket and gradient digest
// when the opening passed its checks and the replay ran, else
// "invalid_opening" naming res.Check. A member that received no opening states
// {"kind": "unavailable", ...} itself. StatusUnsupported without LibTorch.
func WitnessStatement(res VerifyResult, spec *Spec, runID Digest, step, challengeID uint64, mode VerifyMode,
	intraOpThreads uint32) (string, error) {
	if abiErr != nil {
		return "", abiErr
	}
	in := C.pot_verify_result{struct_size: C.sizeof_pot_verify_result}
	in.check = C.pot_opening_check(res.Check)
	if res.Replayed {
		in.replayed = 1
		in.replayed_state_digest = *cDigest(res.Replay.PostStateDigest)
		in.norm_bucket = C.int64_t(res.Replay.NormBucket)
		in.gradient_digest = *cDigest(res.Replay.GradientDigest)
	}
	return stringVia(spec.h.read, func(s *C.pot_spec, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_witness_statement(out, &in, s, cDigest(runID), C.uint64_t(step), C.uint64_t(challengeID),
			C.pot_verify_mode(mode), C.uint32_t(intraOpThreads), cerr)
	})
}
