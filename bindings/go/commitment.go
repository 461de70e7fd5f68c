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

// SampleDigest returns the digest of one dataset sample given as
// safetensors bytes (PROTOCOL.md section 15). The dataset root is the RFC
// 6962 root over the sample digests, each appended as 32 bytes of leaf
// data (Tree.Append(d[:])) in dataset order. StatusMalformed for bytes
// that are not safetensors or hold no tensor, StatusLimit past 64 MiB.
func SampleDigest(safetensors []byte) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_sample_digest(out, bytesPtr(safetensors), C.size_t(len(safetensors)), cerr)
	})
}

// ScheduleEntry is the schedule entry of one step (PROTOCOL.md section
// 16.1): the dataset indices it trains on, split into micro-batches.
type ScheduleEntry struct {
	Step         uint64     // the step, from 1
	Microbatches [][]uint64 // dataset indices, one slice per micro-batch
}

// Encode returns the entry's bytes, the leaf data of leaf Step-1 of the
// schedule tree. StatusOutOfRange for an index >= datasetSize (pass 0 to
// skip that check); StatusInvalidArgument or StatusLimit for an entry the
// protocol does not allow (step 0, no or empty micro-batches, too many
// indices).
func (e ScheduleEntry) Encode(datasetSize uint64) ([]byte, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var indices []uint64
	sizes := make([]uint32, 0, len(e.Microbatches))
	for _, mb := range e.Microbatches {
		if uint64(len(mb)) > math.MaxUint32 {
			return nil, newError(StatusLimit, "a micro-batch of %d indices is too large", len(mb))
		}
		sizes = append(sizes, uint32(len(mb)))
		indices = append(indices, mb...)
	}
	return bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_schedule_entry_encode(out, C.uint64_t(e.Step), shapePtr(indices), C.size_t(len(indices)),
			(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(sizes))), C.size_t(len(sizes)), C.uint64_t(datasetSize), cerr)
	})
}

// DecodeScheduleEntry parses schedule entry bytes; StatusMalformed for
// bytes that are not a canonical entry.
func DecodeScheduleEntry(entry []byte) (ScheduleEntry, error) {
	if abiErr != nil {
		return ScheduleEntry{}, abiErr
	}
	var step C.uint64_t
	var count, micro C.size_t
	// First the numbers, then the contents.
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_schedule_entry_decode(&step, nil, &count, nil, &micro, bytesPtr(entry), C.size_t(len(entry)), cerr)
	}); err != nil {
		return ScheduleEntry{}, err
	}
	indices := make([]uint64, int(count))
	sizes := make([]uint32, int(micro))
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_schedule_entry_decode(&step, shapePtr(indices), &count,
			(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(sizes))), &micro, bytesPtr(entry), C.size_t(len(entry)), cerr)
	}); err != nil {
		return ScheduleEntry{}, err
	}
	e := ScheduleEntry{Step: uint64(step), Microbatches: make([][]uint64, 0, len(sizes))}
	at := 0
	for _, n := range sizes {
		e.Microbatches = append(e.Microbatches, indices[at:at+int(n):at+int(n)])
		at += int(n)
	}
	return e, nil
}

// SeededScheduleEntry returns the entry of step of the seeded schedule
// (epoch-wise permutations of the dataset from seed, PROTOCOL.md section
// 16.2); batchSize must be a multiple of microbatches.
func SeededScheduleEntry(seed, datasetSize uint64, batchSize, microbatches uint32, step uint64) ([]byte, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	return bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_seeded_schedule_entry(out, C.uint64_t(seed), C.uint64_t(datasetSize), C.uint32_t(batchSize),
			C.uint32_t(microbatches), C.uint64_t(step), cerr)
	})
}

// SeededScheduleRoot returns the root of the seeded schedule's first steps
// entries.
func SeededScheduleRoot(seed, datasetSize uint64, batchSize, microbatches uint32, steps uint64) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_seeded_schedule_root(out, C.uint64_t(seed), C.uint64_t(datasetSize),
			C.uint32_t(batchSize), C.uint32_t(microbatches), C.uint64_t(steps), cerr)
	})
}

// SeededScheduleStream returns positions first .. first+count-1 of the
// seeded schedule's index stream perm_0 || perm_1 || ... (PROTOCOL.md
// 16.2): step t's entry holds positions (t-1)*B .. t*B-1, micro-batch j the
// j-th B/M of them. One call costs about count + datasetSize draws, so a
// whole schedule is read in one pass (Task.RunSchedule). StatusLimit for a
// count above MaxStreamPositions, StatusInvalidArgument for a negative one.
func SeededScheduleStream(seed, datasetSize, first uint64, count int) ([]uint64, error) {
	return scheduleStream(false, seed, datasetSize, first, count)
}

// UniformScheduleStream returns positions first .. first+count-1 of the
// uniform schedule's index stream (PROTOCOL.md 16.3): each position an index
// drawn uniformly from [0, datasetSize) on its own, with replacement; steps
// and micro-batches take positions as in SeededScheduleStream. A call costs
// count draws. Errors as SeededScheduleStream.
func UniformScheduleStream(seed, datasetSize, first uint64, count int) ([]uint64, error) {
	return scheduleStream(true, seed, datasetSize, first, count)
}

func scheduleStream(uniform bool, seed, datasetSize, first uint64, count int) ([]uint64, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	if count < 0 {
		return nil, newError(StatusInvalidArgument, "count %d is negative", count)
	}
	if count > MaxStreamPositions { // refused before allocating
		return nil, newError(StatusLimit, "%d positions asked, at most %d per call (MaxStreamPositions)", count,
			MaxStreamPositions)
	}
	out := make([]uint64, count)
	err := status(func(cerr **C.pot_error) C.pot_status {
		if uniform {
			return C.pot_uniform_schedule_stream(shapePtr(out), C.size_t(count), C.uint64_t(seed),
				C.uint64_t(datasetSize), C.uint64_t(first), cerr)
		}
		return C.pot_seeded_schedule_stream(shapePtr(out), C.size_t(count), C.uint64_t(seed), C.uint64_t(datasetSize),
			C.uint64_t(first), cerr)
	})
	runtime.KeepAlive(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Commitment is a validated training commitment (pot_commitment,
// PROTOCOL.md section 17). It is immutable and safe for concurrent use.
type Commitment struct {
	h handle[*C.pot_commitment]
}

// CommitmentDigests are the digests a training commitment binds.
type CommitmentDigests struct {
	InitialState Digest // state digest of S_0
	ScheduleRoot Digest // root of the schedule entries
	DatasetRoot  Digest // root of the sample digests
	Spec         Digest // digest of the execution spec
}

func newCommitment(p *C.pot_commitment) *Commitment {
	c := &Commitment{}
	c.h.set(p, "Commitment")
	runtime.SetFinalizer(c, (*Commitment).Close)
	return c
}

// CommitmentFromJSON parses the JSON form of a commitment (docs/cli.md);
// StatusInvalidArgument names the rule broken, StatusMalformed for text
// that is not JSON.
func CommitmentFromJSON(json string) (*Commitment, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cs, err := cString(json, "commitment JSON")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	var p *C.pot_commitment
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_commitment_from_json(&p, cs, cerr)
	}); err != nil {
		return nil, err
	}
	return newCommitment(p), nil
}

// DecodeCommitment decodes canonical commitment bytes; StatusMalformed
// unless canonical, StatusLimit past 1024 bytes.
func DecodeCommitment(data []byte) (*Commitment, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_commitment
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_commitment_decode(&p, bytesPtr(data), C.size_t(len(data)), cerr)
	}); err != nil {
		return nil, err
	}
	return newCommitment(p), nil
}

// Close frees the commitment. It is safe to call more than once.
func (c *Commitment) Close() error {
	runtime.SetFinalizer(c, nil)
	return c.h.close(func(p *C.pot_commitment) error { C.pot_commitment_free(p); return nil })
}

// Encode returns the canonical bytes (a pot.v2.TrainingCommitment).
func (c *Commitment) Encode() ([]byte, error) {
	return bytesVia(c.h.read, func(p *C.pot_commitment, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_commitment_encode(out, p, cerr)
	})
}

// ToJSON returns the JSON form of the commitment.
func (c *Commitment) ToJSON() (string, error) {
	return stringVia(c.h.read, func(p *C.pot_commitment, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_commitment_to_json(out, p, cerr)
	})
}

// RunID returns the run id, tagged("pot/v2/run", canonical bytes).
func (c *Commitment) RunID() (Digest, error) {
	return digestVia(c.h.read, func(p *C.pot_commitment, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_commitment_run_id(out, p, cerr)
	})
}

// Digests returns the committed digests.
func (c *Commitment) Digests() (CommitmentDigests, error) {
	var out CommitmentDigests
	if err := c.h.read(func(p *C.pot_commitment, cerr **C.pot_error) C.pot_status {
		return C.pot_commitment_digests(out.InitialState.c(), out.ScheduleRoot.c(), out.DatasetRoot.c(), out.Spec.c(),
			p, cerr)
	}); err != nil {
		return CommitmentDigests{}, err
	}
	return out, nil
}

// DeclaredSteps returns the declared number of steps (= schedule entries);
// 0 after Close.
func (c *Commitment) DeclaredSteps() uint64 {
	var n uint64
	c.h.peek(func(p *C.pot_commitment) { n = uint64(C.pot_commitment_declared_steps(p)) })
	return n
}

// TaskID returns the id of the task the run answers to.
func (c *Commitment) TaskID() (Digest, error) {
	return digestVia(c.h.read, func(p *C.pot_commitment, out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_commitment_task_id(out, p, cerr)
	})
}

// SetSealedFlags records the flagged steps the run sealed with on the
// ledger (run_info's "flagged_steps", docs/ledger.md 2.3): VerifyOpening and
// VerifyStep then fail an opening that lists other steps (CheckRunFlags),
// so a flag hidden from the ledger fails every challenge.
// StatusInvalidArgument unless ascending within 1..DeclaredSteps. Waits for
// concurrent reads of the commitment.
func (c *Commitment) SetSealedFlags(steps []uint64) error {
	err := c.h.write(func(p *C.pot_commitment, cerr **C.pot_error) C.pot_status {
		return C.pot_commitment_set_sealed_flags(p, shapePtr(steps), C.size_t(len(steps)), cerr)
	})
	runtime.KeepAlive(steps)
	return err
}

// DatasetSize returns the committed dataset size; 0 after Close.
func (c *Commitment) DatasetSize() uint64 {
	var n uint64
	c.h.peek(func(p *C.pot_commitment) { n = uint64(C.pot_commitment_dataset_size(p)) })
	return n
}
