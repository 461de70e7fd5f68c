package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"runtime"
)

// StepInput is the inputs of one step (pot_step_input, PROTOCOL.md 21.4):
// the run, the S_{t-1} file, the step's canonical schedule entry and one
// safetensors sample per index of the entry, in order. libpot copies what
// it is given. Replay.StepWith takes one built beforehand; Step, Trace,
// OpenOpNode and RefereeDecideOp build one from their arguments. Safe for
// concurrent use.
type StepInput struct {
	h handle[*C.pot_step_input]
}

// NewStepInput builds a step's inputs. runID may be nil unless the spec's
// seed policy is per_step. StatusMalformed for an entry that does not
// decode or a sample that is not safetensors (the message names the sample
// and its dataset index), StatusOutOfRange for more samples than the entry
// lists.
func NewStepInput(runID *Digest, preStatePath string, scheduleEntry []byte, samples [][]byte) (*StepInput, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	pre, err := cString(preStatePath, "pre-state path")
	if err != nil {
		return nil, err
	}
	defer freeString(pre)
	var run *C.pot_digest
	if runID != nil {
		id := *runID // a copy: the C call reads it while the caller's may change
		run = id.c()
	}
	var p *C.pot_step_input
	err = status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_step_input_new(&p, run, pre, bytesPtr(scheduleEntry), C.size_t(len(scheduleEntry)), cerr)
	})
	runtime.KeepAlive(scheduleEntry)
	if err != nil {
		return nil, err
	}
	in := &StepInput{}
	in.h.set(p, "StepInput")
	runtime.SetFinalizer(in, (*StepInput).Close)
	for _, s := range samples {
		if err := in.AddSample(s); err != nil {
			in.Close()
			return nil, err
		}
	}
	return in, nil
}

// AddSample appends the safetensors payload of the entry's next index.
func (in *StepInput) AddSample(sample []byte) error {
	err := in.h.write(func(p *C.pot_step_input, cerr **C.pot_error) C.pot_status {
		return C.pot_step_input_add_sample(p, bytesPtr(sample), C.size_t(len(sample)), cerr)
	})
	runtime.KeepAlive(sample)
	return err
}

// SampleCount returns the number of samples added (0 once closed).
func (in *StepInput) SampleCount() int {
	var n int
	in.h.peek(func(p *C.pot_step_input) { n = int(C.pot_step_input_sample_count(p)) })
	return n
}

// Step returns the step its schedule entry names (0 once closed).
func (in *StepInput) Step() uint64 {
	var s uint64
	in.h.peek(func(p *C.pot_step_input) { s = uint64(C.pot_step_input_step(p)) })
	return s
}

// Close frees the input. It is safe to call more than once.
func (in *StepInput) Close() error {
	runtime.SetFinalizer(in, nil)
	return in.h.close(func(p *C.pot_step_input) error { C.pot_step_input_free(p); return nil })
}

// stepCall is a C call on a replay and a step input.
type stepCall func(r *C.pot_replay, in *C.pot_step_input, cerr **C.pot_error) C.pot_status

// withInput runs call with the replay's and in's handles, under in's read
// lock and then the replay's (exclusive) lock.
func (r *Replay) withInput(in *StepInput, call stepCall) error {
	return in.h.withRead(func(ip *C.pot_step_input) error {
		return r.h.write(func(rp *C.pot_replay, cerr **C.pot_error) C.pot_status { return call(rp, ip, cerr) })
	})
}

// withStep builds the step's inputs from the arguments for one call.
func (r *Replay) withStep(runID *Digest, preStatePath string, scheduleEntry []byte, samples [][]byte,
	call stepCall) error {
	in, err := NewStepInput(runID, preStatePath, scheduleEntry, samples)
	if err != nil {
		return err
	}
	defer in.Close()
	return r.withInput(in, call)
}
