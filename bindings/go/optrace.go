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

// OpTrace is the operator trace of one replayed step (pot_op_trace,
// docs/PROTOCOL.md 22.2): the top-level ATen operators of its forward,
// backward, clipping and optimizer update, then a node listing S_t, as the
// leaves of an RFC 6962 tree. The operator bisection is a StepBisection
// over node counts, each party claiming Root(p) at every point p (agreed
// at 0, the empty tree's root). Immutable: safe to read from goroutines.
type OpTrace struct {
	h handle[*C.pot_op_trace]
}

// Trace replays one step as Step does (no post-state file) and records its
// operator trace (pot_replay_trace); the step's results are the trace's
// ReplayResult. Same errors as Step.
func (r *Replay) Trace(runID *Digest, preStatePath string, scheduleEntry []byte, samples [][]byte) (*OpTrace, error) {
	var p *C.pot_op_trace
	if err := r.withStep(runID, preStatePath, scheduleEntry, samples,
		func(rp *C.pot_replay, in *C.pot_step_input, cerr **C.pot_error) C.pot_status {
			return C.pot_replay_trace(&p, rp, in, cerr)
		}); err != nil {
		return nil, err
	}
	t := &OpTrace{}
	t.h.set(p, "OpTrace")
	runtime.SetFinalizer(t, (*OpTrace).Close)
	return t, nil
}

// Close frees the trace. It is safe to call more than once.
func (t *OpTrace) Close() error {
	runtime.SetFinalizer(t, nil)
	return t.h.close(func(p *C.pot_op_trace) error { C.pot_op_trace_free(p); return nil })
}

// Len returns the number of nodes.
func (t *OpTrace) Len() (uint64, error) {
	var n C.uint64_t
	err := t.h.read(func(p *C.pot_op_trace, cerr **C.pot_error) C.pot_status {
		return C.pot_op_trace_size(&n, p, cerr)
	})
	return uint64(n), err
}

// Root returns the RFC 6962 root of the first size nodes (StatusOutOfRange
// past Len).
func (t *OpTrace) Root(size uint64) (Digest, error) {
	var d Digest
	err := t.h.read(func(p *C.pot_op_trace, cerr **C.pot_error) C.pot_status {
		return C.pot_op_trace_root(d.c(), p, C.uint64_t(size), cerr)
	})
	return d, err
}

// Node returns node index's leaf data (its leaf hash is SHA-256(0x00 ||
// data)); StatusOutOfRange past the last.
func (t *OpTrace) Node(index uint64) ([]byte, error) {
	return bytesVia(t.h.read, func(p *C.pot_op_trace, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_op_trace_node(out, p, C.uint64_t(index), cerr)
	})
}

// InclusionProof returns the RFC 6962 inclusion proof of node index among
// the first size nodes.
func (t *OpTrace) InclusionProof(index, size uint64) ([]byte, error) {
	return bytesVia(t.h.read, func(p *C.pot_op_trace, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_op_trace_inclusion_proof(out, p, C.uint64_t(index), C.uint64_t(size), cerr)
	})
}

// ConsistencyProof returns the RFC 6962 consistency proof from the first
// size1 nodes to size2.
func (t *OpTrace) ConsistencyProof(size1, size2 uint64) ([]byte, error) {
	return bytesVia(t.h.read, func(p *C.pot_op_trace, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_op_trace_consistency_proof(out, p, C.uint64_t(size1), C.uint64_t(size2), cerr)
	})
}

// ReplayResult returns the results of the replay that recorded the trace.
func (t *OpTrace) ReplayResult() (ReplayResult, error) {
	out := C.pot_replay_result{struct_size: C.sizeof_pot_replay_result}
	if err := t.h.read(func(p *C.pot_op_trace, cerr **C.pot_error) C.pot_status {
		return C.pot_op_trace_replay_result(&out, p, cerr)
	}); err != nil {
		return ReplayResult{}, err
	}
	return replayResult(&out), nil
}

// OpNodeJSON decodes a node's leaf data to JSON (pot_op_node_json):
// name, overload, inputs, outputs, each value an object naming its kind.
// StatusMalformed / StatusLimit for bytes that are not one node.
func OpNodeJSON(node []byte) (string, error) {
	if abiErr != nil {
		return "", abiErr
	}
	text, err := bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_op_node_json(out, bytesPtr(node), C.size_t(len(node)), cerr)
	})
	runtime.KeepAlive(node)
	if err != nil {
		return "", err
	}
	return string(text), nil
}

// OpNodeFromJSON is the inverse (pot_op_node_from_json): StatusMalformed
// naming the field, StatusLimit past a bound.
func OpNodeFromJSON(text string) ([]byte, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	cs, err := cString(text, "node JSON")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	return bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_op_node_from_json(out, cs, cerr)
	})
}

// OpenOpNode returns this party's opening of node index of its trace of the
// step (pot_replay_open_op_node, docs/PROTOCOL.md 22.3): it replays the step
// again and returns the node, its proofs, the sources its inputs name and
// its input tensors' bytes. StatusOutOfRange past the trace's end.
func (r *Replay) OpenOpNode(runID *Digest, preStatePath string, scheduleEntry []byte, samples [][]byte,
	index uint64) ([]byte, error) {
	var out C.pot_bytes
	if err := r.withStep(runID, preStatePath, scheduleEntry, samples,
		func(rp *C.pot_replay, in *C.pot_step_input, cerr **C.pot_error) C.pot_status {
			return C.pot_replay_open_op_node(&out, rp, in, C.uint64_t(index), cerr)
		}); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// OpRuling is the referee's ruling on a disputed node (pot_referee_decide_op).
type OpRuling struct {
	ALoses   bool   `json:"a_loses"`
	BLoses   bool   `json:"b_loses"`
	Rule     string `json:"rule"` // "opening", "source", "operator", "post_state", "step"
	Reason   string `json:"reason"`
	Executed bool   `json:"executed"` // one operator was run
	Replayed bool   `json:"replayed"` // the whole step was
}

// OpDispute is what the operator bisection ended with: node Index is the
// first that differs; both agree on AgreedRoot for the first Index nodes and
// claim ARoot and BRoot for the first Index + 1.
type OpDispute struct {
	Index                    uint64
	AgreedRoot, ARoot, BRoot Digest
	AOpening, BOpening       []byte
}

// RefereeDecideOp rules on node d.Index (pot_referee_decide_op). r must
// hold the task's spec; preStatePath must be the agreed S_{t-1}, whose
// digest is preStateDigest (StatusProofMismatch otherwise).
// StatusInvalidArgument when ARoot == BRoot.
func (r *Replay) RefereeDecideOp(runID *Digest, preStatePath string, preStateDigest Digest, scheduleEntry []byte,
	samples [][]byte, d OpDispute) (OpRuling, error) {
	pre, agreed, ar, br := preStateDigest, d.AgreedRoot, d.ARoot, d.BRoot
	var out C.pot_bytes
	err := r.withStep(runID, preStatePath, scheduleEntry, samples,
		func(rp *C.pot_replay, in *C.pot_step_input, cerr **C.pot_error) C.pot_status {
			return C.pot_referee_decide_op(&out, rp, in, pre.c(), C.uint64_t(d.Index), agreed.c(), ar.c(), br.c(),
				bytesPtr(d.AOpening), C.size_t(len(d.AOpening)), bytesPtr(d.BOpening), C.size_t(len(d.BOpening)), cerr)
		})
	runtime.KeepAlive(d.AOpening)
	runtime.KeepAlive(d.BOpening)
	if err != nil {
		return OpRuling{}, err
	}
	var ruling OpRuling
	if err := json.Unmarshal(takeBytes(&out), &ruling); err != nil {
		return OpRuling{}, newError(StatusInternal, "the ruling is not JSON: %v", err)
	}
	return ruling, nil
}
