package pot

/*
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"encoding/json"
	"runtime"
	"unsafe"
)

// StateStats is a state's statistics table (docs/PROTOCOL.md 5.2): per
// tensor in name order its element count, max |x|, L2 norm and its
// non-finite, subnormal and zero elements, as canonical bytes.
type StateStats struct {
	table  []byte
	digest Digest
}

// TensorStats is one tensor's row of a table. L2Norm is nil when the sum of
// squares overflows binary64 (F64 tensors only).
type TensorStats struct {
	Name      string   `json:"name"`
	DType     string   `json:"dtype"`
	Elements  uint64   `json:"elements"`
	MaxAbs    float64  `json:"max_abs"`
	L2Norm    *float64 `json:"l2_norm"`
	Nonfinite uint64   `json:"nonfinite"`
	Subnormal uint64   `json:"subnormal"`
	Zeros     uint64   `json:"zeros"`
}

// StateFlag is one rule a step trips (PROTOCOL 5.3): "max_abs_jump",
// "norm_jump", "norm_collapse", "saturated", "nonfinite" or "changed", the
// tensor, and the compared statistic before and after (nil for an
// overflowed norm). A flag is a reason to replay the step, not a verdict.
type StateFlag struct {
	Rule   string   `json:"rule"`
	Tensor string   `json:"tensor"`
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
}

// DecodeStateStats validates a table's bytes (StatusMalformed, or
// StatusLimit past 2^20 tensors, for bytes no state's statistics could be).
func DecodeStateStats(table []byte) (*StateStats, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var d Digest
	err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_state_stats_digest(d.c(), bytesPtr(table), C.size_t(len(table)), cerr)
	})
	runtime.KeepAlive(table)
	if err != nil {
		return nil, err
	}
	return &StateStats{table: append([]byte(nil), table...), digest: d}, nil
}

// Stats computes the file's statistics table (pot_safetensors_stats); the bytes do
// not depend on threads (0 = every core).
func (f *Safetensors) Stats(threads uint32) (*StateStats, error) {
	return tableVia(f.h.read, func(p *C.pot_safetensors, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_safetensors_stats(out, p, C.uint32_t(threads), cerr)
	})
}

// tableVia runs a call that writes a statistics table on a handle.
func tableVia[P comparable](run func(cCall[P]) error,
	call func(p P, out *C.pot_bytes, cerr **C.pot_error) C.pot_status) (*StateStats, error) {
	var table []byte
	err := run(func(p P, cerr **C.pot_error) C.pot_status {
		var out C.pot_bytes
		st := call(p, &out, cerr)
		if st == C.POT_OK {
			table = takeBytes(&out)
		}
		return st
	})
	if err != nil {
		return nil, err
	}
	return DecodeStateStats(table)
}

// Stats returns the statistics table of the tensors added so far
// (pot_state_stats), computed as each was added; StatusState when a tensor
// was added by its digest alone.
func (s *State) Stats() (*StateStats, error) {
	return tableVia(s.h.write, func(p *C.pot_state, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_state_stats(out, p, cerr)
	})
}

// Bytes returns the table's canonical bytes.
func (s *StateStats) Bytes() []byte { return append([]byte(nil), s.table...) }

// Digest returns tagged("pot/v1/state-stats", table).
func (s *StateStats) Digest() Digest { return s.digest }

// Tensors returns the table's rows in name order.
func (s *StateStats) Tensors() ([]TensorStats, error) {
	text, err := bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_state_stats_to_json(out, bytesPtr(s.table), C.size_t(len(s.table)), cerr)
	})
	runtime.KeepAlive(s.table)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Tensors []TensorStats `json:"tensors"`
	}
	if err := json.Unmarshal(text, &doc); err != nil {
		return nil, err
	}
	return doc.Tensors, nil
}

// StateFlags returns the flags of the step from the state of before to that
// of after (pot_state_flags), by tensor in name order; empty when none.
func StateFlags(before, after *StateStats) ([]StateFlag, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	text, err := bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_state_flags(out, bytesPtr(before.table), C.size_t(len(before.table)), bytesPtr(after.table),
			C.size_t(len(after.table)), cerr)
	})
	runtime.KeepAlive(before.table)
	runtime.KeepAlive(after.table)
	if err != nil {
		return nil, err
	}
	flags := []StateFlag{}
	if err := json.Unmarshal(text, &flags); err != nil {
		return nil, err
	}
	return flags, nil
}

// FlaggedStep is a step of a run whose statistics trip a rule, with its
// flags.
type FlaggedStep struct {
	Step  uint64      `json:"step"`
	Flags []StateFlag `json:"flags"`
}

func flaggedSteps(text []byte) ([]FlaggedStep, error) {
	steps := []FlaggedStep{}
	if err := json.Unmarshal(text, &steps); err != nil {
		return nil, err
	}
	return steps, nil
}

// RunFlags returns the flagged steps of a run (pot_run_flags, PROTOCOL.md
// 5.3): tables[i] is the table of S_{i+1}; step 1 is compared with an empty
// table. What a miner seals its run with on the ledger (docs/ledger.md 2.3)
// and lists in every opening (CheckRunFlags).
func RunFlags(tables []*StateStats) ([]FlaggedStep, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	raw := make([][]byte, len(tables))
	for i, t := range tables {
		raw[i] = t.table
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs, lens := pinSlices(&pin, raw)
	text, err := bytesOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_run_flags(out, unsafe.SliceData(ptrs), unsafe.SliceData(lens), C.size_t(len(raw)), cerr)
	})
	runtime.KeepAlive(raw)
	if err != nil {
		return nil, err
	}
	return flaggedSteps(text)
}
