package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"encoding/json"
	"runtime"
)

// Task is a validated task (pot_task, PROTOCOL.md section 17.1): what a
// task owner fixes before anyone trains (the spec and model program, the
// dataset, S_0, the schedule, the step bounds and the challenge policy). It
// is immutable and safe for concurrent use.
type Task struct {
	h handle[*C.pot_task]
}

func newTask(p *C.pot_task) *Task {
	t := &Task{}
	t.h.set(p, "Task")
	runtime.SetFinalizer(t, (*Task).Close)
	return t
}

// TaskFromJSON parses the JSON form of a task (docs/cli.md "Task");
// StatusInvalidArgument names the rule or key, StatusUnsupported another
// protocol version, StatusMalformed text that is not JSON.
func TaskFromJSON(json string) (*Task, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cs, err := cString(json, "task JSON")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	var p *C.pot_task
	if err := status(func(cerr **C.pot_error) C.pot_status { return C.pot_task_from_json(&p, cs, cerr) }); err != nil {
		return nil, err
	}
	return newTask(p), nil
}

// DecodeTask decodes canonical pot.v2.Task bytes; StatusUnsupported for
// another protocol version, StatusMalformed unless canonical, StatusLimit
// past 73728 bytes.
func DecodeTask(data []byte) (*Task, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_task
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_task_decode(&p, bytesPtr(data), C.size_t(len(data)), cerr)
	}); err != nil {
		return nil, err
	}
	return newTask(p), nil
}

// Close frees the task. It is safe to call more than once.
func (t *Task) Close() error {
	runtime.SetFinalizer(t, nil)
	return t.h.close(func(p *C.pot_task) error { C.pot_task_free(p); return nil })
}

// Encode returns the canonical bytes (what the ledger's post_task carries).
func (t *Task) Encode() ([]byte, error) {
	return bytesVia(t.h.read, func(p *C.pot_task, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_task_encode(out, p, cerr)
	})
}

// ToJSON returns the JSON form of the task.
func (t *Task) ToJSON() (string, error) {
	return stringVia(t.h.read, func(p *C.pot_task, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_task_to_json(out, p, cerr)
	})
}

// ID returns the task id, tagged("pot/v2/task", canonical bytes).
func (t *Task) ID() (Digest, error) {
	return digestVia(t.h.read, func(p *C.pot_task, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_task_id(out, p, cerr)
	})
}

// Spec returns the task's execution spec (a new Spec; Close it).
func (t *Task) Spec() (*Spec, error) {
	var p *C.pot_spec
	if err := t.h.read(func(tp *C.pot_task, cerr **C.pot_error) C.pot_status {
		return C.pot_task_spec(&p, tp, cerr)
	}); err != nil {
		return nil, err
	}
	return newSpec(p), nil
}

// CheckCommitment returns nil when the task admits the commitment;
// otherwise StatusInvalidArgument naming the first field that differs from
// what the task fixes, or StatusOutOfRange for declared steps outside the
// task's bounds.
func (t *Task) CheckCommitment(c *Commitment) error {
	return readBoth(&t.h, &c.h, func(tp *C.pot_task, cp *C.pot_commitment, cerr **C.pot_error) C.pot_status {
		return C.pot_task_check_commitment(tp, cp, cerr)
	})
}

// RunSeeded reports whether every run of the task trains on its own seeded
// order (schedule rule run_seeded or run_seeded_uniform, PROTOCOL.md 17.3)
// rather than one listed schedule.
func (t *Task) RunSeeded() (bool, error) {
	rule, err := t.scheduleRule()
	return err == nil && rule != C.POT_SCHEDULE_LISTED, err
}

// RunSeededUniform reports whether each run's indices are drawn with
// replacement (schedule rule run_seeded_uniform, PROTOCOL.md 16.3).
func (t *Task) RunSeededUniform() (bool, error) {
	rule, err := t.scheduleRule()
	return err == nil && rule == C.POT_SCHEDULE_RUN_SEEDED_UNIFORM, err
}

func (t *Task) scheduleRule() (C.pot_schedule_rule, error) {
	var rule C.pot_schedule_rule
	err := t.h.read(func(p *C.pot_task, cerr **C.pot_error) C.pot_status {
		return C.pot_task_schedule_rule(&rule, p, cerr)
	})
	return rule, err
}

// RunScheduleSeed returns, under a run-seeded task, the seed of the
// schedule of the run of miner for declaredSteps steps: entry t is
// SeededScheduleEntry(seed, datasetSize, batchSize, gradAccumMicrobatches,
// t). StatusInvalidArgument for a listed task or an identity outside 1..256
// bytes, StatusOutOfRange for a step count outside the task's bounds.
func (t *Task) RunScheduleSeed(miner []byte, declaredSteps uint64) (uint64, error) {
	var seed C.uint64_t
	err := t.h.read(func(p *C.pot_task, cerr **C.pot_error) C.pot_status {
		return C.pot_task_run_schedule_seed(&seed, p, bytesPtr(miner), C.size_t(len(miner)), C.uint64_t(declaredSteps),
			cerr)
	})
	runtime.KeepAlive(miner)
	if err != nil {
		return 0, err
	}
	return uint64(seed), nil
}

// RunSchedule returns, under a run-seeded task, the schedule of the run of
// miner for declaredSteps steps: for each step 1..declaredSteps its
// micro-batches of dataset indices, in order (what the training loop must
// feed). It reads the run's index stream in one pass (SeededScheduleStream,
// at most MaxStreamPositions per call). Errors as RunScheduleSeed.
func (t *Task) RunSchedule(miner []byte, declaredSteps uint64) ([][][]uint64, error) {
	seed, err := t.RunScheduleSeed(miner, declaredSteps)
	if err != nil {
		return nil, err
	}
	text, err := t.ToJSON()
	if err != nil {
		return nil, err
	}
	var shape struct {
		DatasetSize uint64 `json:"dataset_size"`
		Spec        struct {
			BatchSize    uint64 `json:"batch_size"`
			Microbatches uint64 `json:"grad_accum_microbatches"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(text), &shape); err != nil {
		return nil, newError(StatusInternal, "the task's JSON form does not parse: %v", err)
	}
	batch, micro := shape.Spec.BatchSize, shape.Spec.Microbatches
	// The task's bounds (checked by RunScheduleSeed) keep a run within
	// MaxStreamPositions, so one call reads it.
	total := declaredSteps * batch
	if total > MaxStreamPositions {
		return nil, newError(StatusLimit, "%d steps of %d samples exceed MaxStreamPositions", declaredSteps, batch)
	}
	uniform, err := t.RunSeededUniform()
	if err != nil {
		return nil, err
	}
	stream, err := scheduleStream(uniform, seed, shape.DatasetSize, 0, int(total))
	if err != nil {
		return nil, err
	}
	per := batch / micro
	steps := make([][][]uint64, declaredSteps)
	for s := range steps {
		steps[s] = make([][]uint64, micro)
		for j := range steps[s] {
			at := uint64(s)*batch + uint64(j)*per
			steps[s][j] = stream[at : at+per : at+per]
		}
	}
	return steps, nil
}

// Commitment returns the training commitment of miner for declaredSteps
// steps of the task: every other field is the task's (Close it). Errors as
// CheckCommitment.
func (t *Task) Commitment(miner []byte, declaredSteps uint64) (*Commitment, error) {
	var p *C.pot_commitment
	err := t.h.read(func(tp *C.pot_task, cerr **C.pot_error) C.pot_status {
		return C.pot_task_commitment(&p, tp, bytesPtr(miner), C.size_t(len(miner)), C.uint64_t(declaredSteps), cerr)
	})
	runtime.KeepAlive(miner)
	if err != nil {
		return nil, err
	}
	return newCommitment(p), nil
}
