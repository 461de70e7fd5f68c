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

// Recorder is the trainer-side recorder (pot_recorder, PROTOCOL.md section
// 21.4): it digests every state, appends the step leaves to the log and
// keeps every k-th state as a checkpoint in a directory that Checkpoints
// serves openings from. States are passed as a SafetensorsWriter holding
// the tensors under the canonical names of section 21.1 (it is only read).
// It is safe for concurrent use (calls are serialised). All its methods
// need a libpot built with LibTorch (StatusUnsupported otherwise).
type Recorder struct {
	h handle[*C.pot_recorder]
}

// NewRecorder creates the checkpoint directory dir (StatusConflict when it
// already holds a run) and copies the program at programPath into it
// (StatusProofMismatch when its digest is not the spec's). A checkpoint is
// kept every checkpointEvery steps (>= 1), and of S_0 and the last step.
func NewRecorder(dir string, spec *Spec, programPath string, checkpointEvery uint64) (*Recorder, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cdir, err := cString(dir, "directory")
	if err != nil {
		return nil, err
	}
	defer freeString(cdir)
	prog, err := cString(programPath, "program path")
	if err != nil {
		return nil, err
	}
	defer freeString(prog)
	var p *C.pot_recorder
	if err := spec.h.read(func(s *C.pot_spec, cerr **C.pot_error) C.pot_status {
		return C.pot_recorder_new(&p, cdir, s, prog, C.uint64_t(checkpointEvery), cerr)
	}); err != nil {
		return nil, err
	}
	return newRecorder(p), nil
}

func newRecorder(p *C.pot_recorder) *Recorder {
	r := &Recorder{}
	r.h.set(p, "Recorder")
	runtime.SetFinalizer(r, (*Recorder).Close)
	return r
}

// ResumeRecorder reopens the directory of a recorder whose process stopped
// (killed at any point, crashed, or closed early) to continue its run. The
// run continues after the last stored checkpoint c that the log and
// steps.jsonl hold whole (later records, torn writes included, are cut
// back); it returns the recorder, c, and the checkpoint file of S_c to load
// into the model and optimizer (the next step begun is c + 1).
// StatusState for a directory without a commitment, StatusNotFound without
// a run, StatusMalformed (naming the file) for what no crash leaves.
func ResumeRecorder(dir string) (*Recorder, uint64, string, error) {
	if abiErr != nil {
		return nil, 0, "", abiErr
	}
	cdir, err := cString(dir, "directory")
	if err != nil {
		return nil, 0, "", err
	}
	defer freeString(cdir)
	var p *C.pot_recorder
	var step C.uint64_t
	var path C.pot_bytes
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_recorder_resume(&p, &step, &path, cdir, cerr)
	}); err != nil {
		return nil, 0, "", err
	}
	return newRecorder(p), uint64(step), string(takeBytes(&path)), nil
}

// Close frees the recorder (what it wrote stays on disk; call Finish first
// to flush the log). It is safe to call more than once.
func (r *Recorder) Close() error {
	runtime.SetFinalizer(r, nil)
	return r.h.close(func(p *C.pot_recorder) error { C.pot_recorder_free(p); return nil })
}

// writerCall is a C call on a recorder and a writer that writes a digest.
type writerCall func(r *C.pot_recorder, w *C.pot_safetensors_writer, out *C.pot_digest,
	cerr **C.pot_error) C.pot_status

// withWriter runs call with the recorder's and the writer's C handles,
// both locked (the recorder's first), and returns the digest it wrote.
func (r *Recorder) withWriter(w *SafetensorsWriter, call writerCall) (Digest, error) {
	var d Digest
	if err := r.h.withWrite(func(rp *C.pot_recorder) error {
		return w.h.write(func(wp *C.pot_safetensors_writer, cerr **C.pot_error) C.pot_status {
			return call(rp, wp, d.c(), cerr)
		})
	}); err != nil {
		return Digest{}, err
	}
	return d, nil
}

// Start records S_0 (checkpoint 0) and returns its digest, the
// commitment's initial_state_digest. StatusState when S_0 is already
// recorded.
func (r *Recorder) Start(s0 *SafetensorsWriter) (Digest, error) {
	return r.withWriter(s0,
		func(p *C.pot_recorder, w *C.pot_safetensors_writer, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
			return C.pot_recorder_start(out, p, w, cerr)
		})
}

// SetCommitment records the training commitment and its schedule entries
// (steps 1..n, in order, as ScheduleEntry.Encode gives them), checked
// against it (StatusProofMismatch for another spec, initial state or
// schedule root). Openings need it; call it after Start and before the
// first step.
func (r *Recorder) SetCommitment(commitment *Commitment, entries [][]byte) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs, lens := pinSlices(&pin, entries)
	err := r.h.withWrite(func(rp *C.pot_recorder) error {
		return commitment.h.read(func(c *C.pot_commitment, cerr **C.pot_error) C.pot_status {
			return C.pot_recorder_set_commitment(rp, c, unsafe.SliceData(ptrs), unsafe.SliceData(lens),
				C.size_t(len(entries)), cerr)
		})
	})
	runtime.KeepAlive(entries)
	return err
}

// BeginStep starts step (the next one; StatusState otherwise) and applies
// the spec's seed policy to LibTorch's default CPU generator of this
// process. Under per_step it returns the step's seed, so that a trainer
// with its own torch can call torch.manual_seed(seed) too; under
// single_seed (which restores S_{t-1}'s rng/cpu) and none it returns 0.
func (r *Recorder) BeginStep(step uint64) (uint64, error) {
	var seed C.uint64_t
	if err := r.h.write(func(p *C.pot_recorder, cerr **C.pot_error) C.pot_status {
		return C.pot_recorder_begin_step(&seed, p, C.uint64_t(step), cerr)
	}); err != nil {
		return 0, err
	}
	return uint64(seed), nil
}

// EndStep ends the step begun with S_t (holding hparam/lr, and rng/cpu
// under single_seed) and the step's loss (PROTOCOL.md section 21.3), and
// returns S_t's digest, the state digest of the step's leaf.
func (r *Recorder) EndStep(state *SafetensorsWriter, loss float64) (Digest, error) {
	return r.withWriter(state,
		func(p *C.pot_recorder, w *C.pot_safetensors_writer, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
			return C.pot_recorder_end_step(out, p, w, C.double(loss), cerr)
		})
}

// Size returns the number of steps recorded (0 after Close, or without
// LibTorch).
func (r *Recorder) Size() uint64 {
	var n uint64
	r.h.peekExclusive(func(p *C.pot_recorder) { n = uint64(C.pot_recorder_size(p)) })
	return n
}

// Root returns the root of the log's first size leaves (what the miner
// posts on chain). StatusOutOfRange past Size.
func (r *Recorder) Root(size uint64) (Digest, error) {
	return digestVia(r.h.write, func(p *C.pot_recorder, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_recorder_root(out, p, C.uint64_t(size), cerr)
	})
}

// ConsistencyProof returns the RFC 6962 consistency proof of the log from
// size1 to size2 leaves (concatenated hashes, for VerifyConsistency).
func (r *Recorder) ConsistencyProof(size1, size2 uint64) ([]byte, error) {
	return bytesVia(r.h.write, func(p *C.pot_recorder, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_recorder_consistency_proof(out, p, C.uint64_t(size1), C.uint64_t(size2), cerr)
	})
}

// Finish flushes the log and returns its root. With a commitment, every
// declared step must be recorded (StatusState).
func (r *Recorder) Finish() (Digest, error) {
	return digestVia(r.h.write, func(p *C.pot_recorder, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_recorder_finish(out, p, cerr)
	})
}

// Checkpoints is a recorder's checkpoint directory opened to serve
// openings (pot_checkpoints, PROTOCOL.md section 21.4). It caches the
// states it re-derives (in the directory's derived/). It is safe for
// concurrent use (calls are serialised). It needs a libpot built with
// LibTorch (StatusUnsupported otherwise).
type Checkpoints struct {
	h handle[*C.pot_checkpoints]
}

// OpenCheckpoints opens the checkpoint directory dir written by a
// Recorder: StatusNotFound when it holds no run, StatusMalformed when its
// files disagree.
func OpenCheckpoints(dir string) (*Checkpoints, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cdir, err := cString(dir, "directory")
	if err != nil {
		return nil, err
	}
	defer freeString(cdir)
	var p *C.pot_checkpoints
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_checkpoints_open(&p, cdir, cerr)
	}); err != nil {
		return nil, err
	}
	c := &Checkpoints{}
	c.h.set(p, "Checkpoints")
	runtime.SetFinalizer(c, (*Checkpoints).Close)
	return c, nil
}

// Close frees the handle. It is safe to call more than once.
func (c *Checkpoints) Close() error {
	runtime.SetFinalizer(c, nil)
	return c.h.close(func(p *C.pot_checkpoints) error { C.pot_checkpoints_free(p); return nil })
}

// Size returns the number of steps recorded (0 after Close).
func (c *Checkpoints) Size() uint64 {
	var n uint64
	c.h.peekExclusive(func(p *C.pot_checkpoints) { n = uint64(C.pot_checkpoints_size(p)) })
	return n
}

// StatePath returns the path of a file holding S_step and the number of
// steps replayed to make it: 0 when a checkpoint or an earlier
// re-derivation holds it, else it is re-derived from the nearest
// checkpoint before it with the samples of datasetDir (one
// %06d.safetensors file per dataset index), each replayed state checked
// against the log (StatusProofMismatch).
func (c *Checkpoints) StatePath(step uint64, datasetDir string) (path string, replayed uint64, err error) {
	cdir, err := cString(datasetDir, "dataset directory")
	if err != nil {
		return "", 0, err
	}
	defer freeString(cdir)
	var n C.uint64_t
	path, err = stringVia(c.h.write, func(p *C.pot_checkpoints, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_checkpoints_state_path(out, &n, p, C.uint64_t(step), cdir, cerr)
	})
	if err != nil {
		return "", 0, err
	}
	return path, uint64(n), nil
}

// Opening returns the opening manifest of step against the log's first
// logSize leaves, with the samples read from datasetDir (checked against
// the committed dataset root). Its pre-state reference names the file of
// S_{step-1} (re-derived when needed; StatePath(step-1, datasetDir) gives
// the same path) and, when servePostState is true, its post-state
// reference names S_step (the cross-architecture path; it may cost another
// re-derivation). StatusState when the recorder had no commitment,
// StatusOutOfRange for a step outside 1..logSize.
func (c *Checkpoints) Opening(step, logSize uint64, datasetDir string, servePostState bool) ([]byte, error) {
	cdir, err := cString(datasetDir, "dataset directory")
	if err != nil {
		return nil, err
	}
	defer freeString(cdir)
	serve := C.int(0)
	if servePostState {
		serve = 1
	}
	return bytesVia(c.h.write, func(p *C.pot_checkpoints, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_checkpoints_opening(out, p, C.uint64_t(step), C.uint64_t(logSize), cdir, serve, cerr)
	})
}

// RunFlags returns the flagged steps of the log's first logSize leaves
// (pot_checkpoints_run_flags), from the tables kept in stats/: what the miner
// seals its run with on the ledger (docs/ledger.md 2.3: post_checkpoint_root's
// flagged_steps). Every opening lists them (CheckRunFlags).
// StatusOutOfRange past Size().
func (c *Checkpoints) RunFlags(logSize uint64) ([]FlaggedStep, error) {
	var out C.pot_bytes
	if err := c.h.write(func(cp *C.pot_checkpoints, cerr **C.pot_error) C.pot_status {
		return C.pot_checkpoints_run_flags(&out, cp, C.uint64_t(logSize), cerr)
	}); err != nil {
		return nil, err
	}
	return flaggedSteps(takeBytes(&out))
}

// Leaf returns the committed step leaf of step and its inclusion proof in
// the log's first logSize leaves (pot_checkpoints_leaf): what the miner
// posts for that step in a ledger dispute (docs/ledger.md 2.12, 2.13).
// Replays nothing. StatusOutOfRange unless 1 <= step <= logSize <= Size().
func (c *Checkpoints) Leaf(step, logSize uint64) (leaf, proof []byte, err error) {
	var l, p C.pot_bytes
	if err := c.h.write(func(cp *C.pot_checkpoints, cerr **C.pot_error) C.pot_status {
		return C.pot_checkpoints_leaf(&l, &p, cp, C.uint64_t(step), C.uint64_t(logSize), cerr)
	}); err != nil {
		return nil, nil, err
	}
	return takeBytes(&l), takeBytes(&p), nil
}
