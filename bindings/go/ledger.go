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

// LedgerConfig configures a new Ledger (docs/ledger.md section 1). Every
// integer field but MinerGrace must be at least 1 (DisputeArity 2..256).
// The JSON names are those of the "config" of a `pot ledger` transcript,
// and of the JSON object pot_ledger_new takes.
type LedgerConfig struct {
	DrawDelay        uint64 `json:"draw_delay"`         // blocks from a run's seal to the randomness its challenges use
	OpeningWindow    uint64 `json:"opening_window"`     // blocks from issue to the end of the opening phase
	CommitWindow     uint64 `json:"commit_window"`      // blocks from the opening to the end of the commit phase
	RevealWindow     uint64 `json:"reveal_window"`      // blocks from there to the end of the reveal phase
	MaxCommitteeSize uint32 `json:"max_committee_size"` // the largest committee a task may ask for, 1..1024
	MinStake         uint64 `json:"min_stake"`          // the least stake a verifier registers with
	MaxRounds        uint32 `json:"max_rounds"`         // the most challenge rounds a task may ask for
	MaxAttempts      uint32 `json:"max_attempts"`       // the most committees a challenge gets (1..16; 1: no re-run)
	DisputeWindow    uint64 `json:"dispute_window"`     // blocks each dispute round lasts (docs/ledger.md 2.12)
	DisputeArity     uint32 `json:"dispute_arity"`      // the dispute bisection's arity, 2..256
	// Bonds and bounds (docs/ledger.md 2.18), locked from the free balance
	// a runtime deposits for each identity.
	TaskBond      uint64 `json:"task_bond"`       // locked by post_task until prune_task
	MinerBond     uint64 `json:"miner_bond"`      // locked by start_training_commitment; a FAIL burns it
	DisputeBond   uint64 `json:"dispute_bond"`    // locked by open_dispute; pays the miner when the challenger loses
	MaxTaskBlocks uint64 `json:"max_task_blocks"` // a task ends at most this many blocks after its post
	MaxOpenTasks  uint32 `json:"max_open_tasks"`  // the most tasks one owner holds at once
	MinerGrace    uint64 `json:"miner_grace"`     // blocks a miner may answer a dispute past each deadline (0: none)
	// Referee is the hex identity that rules on an operator dispute where
	// the ledger cannot (docs/ledger.md 2.17); empty: no referee, and a
	// dispute ends when its step is found.
	Referee string `json:"referee,omitempty"`
}

// Ledger is the reference ledger (pot_ledger, docs/ledger.md): a
// deterministic state machine with the extrinsics' rules, driven by JSON
// calls. It is safe for concurrent use (calls are serialised, as a runtime
// executes extrinsics one at a time).
type Ledger struct {
	h handle[*C.pot_ledger]
}

func newLedger(p *C.pot_ledger) *Ledger {
	l := &Ledger{}
	l.h.set(p, "Ledger")
	runtime.SetFinalizer(l, (*Ledger).Close)
	return l
}

// NewLedger returns an empty ledger with the given configuration;
// StatusInvalidArgument when a field is 0.
func NewLedger(config LedgerConfig) (*Ledger, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	text, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	cs, err := cString(string(text), "ledger config")
	if err != nil {
		return nil, err
	}
	defer freeString(cs)
	var p *C.pot_ledger
	if err := status(func(cerr **C.pot_error) C.pot_status { return C.pot_ledger_new(&p, cs, cerr) }); err != nil {
		return nil, err
	}
	return newLedger(p), nil
}

// LoadLedger restores a state saved with Ledger.Save; StatusMalformed
// unless the bytes are exactly a state Save produces (every invariant is
// re-checked), StatusLimit past 64 MiB.
func LoadLedger(state []byte) (*Ledger, error) {
	if abiErr != nil {
		return nil, abiErr
	}
	var p *C.pot_ledger
	if err := status(func(cerr **C.pot_error) C.pot_status {
		return C.pot_ledger_load(&p, bytesPtr(state), C.size_t(len(state)), cerr)
	}); err != nil {
		return nil, err
	}
	return newLedger(p), nil
}

// Close frees the ledger. It is safe to call more than once.
func (l *Ledger) Close() error {
	runtime.SetFinalizer(l, nil)
	return l.h.close(func(p *C.pot_ledger) error { C.pot_ledger_free(p); return nil })
}

// Save returns the canonical state bytes: saving, loading and saving again
// gives the same bytes.
func (l *Ledger) Save() ([]byte, error) {
	return bytesVia(l.h.write, func(p *C.pot_ledger, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_ledger_save(out, p, cerr)
	})
}

// Apply applies one call, a JSON object such as
// {"call": "issue_challenge", "now": 103, ...} (docs/ledger.md section 5),
// and returns its JSON result ({"ok": true, ...}). A refused call returns
// an *Error with its specific code (StatusState, StatusPermission,
// StatusConflict, StatusNotFound, StatusProofMismatch, ...) and leaves the
// ledger exactly as it was.
func (l *Ledger) Apply(callJSON string) (string, error) {
	cs, err := cString(callJSON, "ledger call")
	if err != nil {
		return "", err
	}
	defer freeString(cs)
	return stringVia(l.h.write, func(p *C.pot_ledger, out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_ledger_apply(out, p, cs, cerr)
	})
}

// Outcome is a decoded outcome record (docs/PROTOCOL.md 20.1): what one
// attempt of a ledger challenge ended with, as the outcome log holds it.
type Outcome struct {
	ChallengeID    uint64   `json:"challenge_id"`
	Attempt        uint32   `json:"attempt"` // the committee's: 1 for the run's draw, 2.. for re-runs
	RunID          string   `json:"run_id"`  // hex
	Step           uint64   `json:"step"`
	Mode           string   `json:"mode"`    // "bitwise" or "norm_bucket"
	Verdict        string   `json:"verdict"` // "pass", "fail" or "inconclusive"
	Cause          string   `json:"cause"`   // agreement, no_opening, blame, no_committee, participation, split, task_program
	ClusterSize    uint64   `json:"cluster_size"`
	ClusterStake   uint64   `json:"cluster_stake"`
	CommitteeStake uint64   `json:"committee_stake"`
	Minority       []string `json:"minority"` // hex identities, sorted
	Silent         []string `json:"silent"`
	Misconfigured  []string `json:"misconfigured"`
	Unreplayed     []string `json:"unreplayed"`
}

// decodeLogLeaf decodes a leaf of the outcome log to its JSON object
// (pot_ledger_outcome_decode) and says whether it is a dispute record.
func decodeLogLeaf(record []byte) ([]byte, bool, error) {
	if abiErr != nil {
		return nil, false, abiErr
	}
	s, err := stringOut(func(out *C.pot_bytes, cerr **C.pot_error) C.pot_status {
		return C.pot_ledger_outcome_decode(out, bytesPtr(record), C.size_t(len(record)), cerr)
	})
	runtime.KeepAlive(record)
	if err != nil {
		return nil, false, err
	}
	text := []byte(s)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(text, &keys); err != nil {
		return nil, false, newError(StatusMalformed, "outcome log leaf JSON: %v", err)
	}
	_, dispute := keys["dispute_id"]
	return text, dispute, nil
}

// DecodeOutcome decodes an outcome record: the bytes of a
// finalize_challenge result's "outcome" hex, a leaf of the ledger's outcome
// log (pot_ledger_outcome_decode). StatusMalformed names the broken rule;
// StatusLimit past 266,350 bytes; StatusInvalidArgument for a dispute
// record (the log's other kind of leaf: DecodeDisputeRecord reads it).
func DecodeOutcome(record []byte) (Outcome, error) {
	text, dispute, err := decodeLogLeaf(record)
	if err != nil {
		return Outcome{}, err
	}
	if dispute {
		return Outcome{}, newError(StatusInvalidArgument, "a dispute record, not a challenge's outcome record: DecodeDisputeRecord reads it")
	}
	var o Outcome
	if err := json.Unmarshal(text, &o); err != nil {
		return Outcome{}, newError(StatusMalformed, "outcome record JSON: %v", err)
	}
	return o, nil
}

// DisputeRecord is a decoded dispute record (docs/PROTOCOL.md 20.2): how a
// ledger dispute ended, as the outcome log holds it.
type DisputeRecord struct {
	DisputeID  uint64 `json:"dispute_id"`
	RunID      string `json:"run_id"`     // hex
	Miner      string `json:"miner"`      // hex identity: party A, its claims its committed leaves
	Challenger string `json:"challenger"` // hex identity: the verifier that opened the dispute
	Lo         uint64 `json:"lo"`         // the interval it was opened over: (Lo, Hi]
	Hi         uint64 `json:"hi"`
	// step_found, miner_default, challenger_default, both_default, ruled,
	// referee_ruled, referee_default
	End    string `json:"end"`
	Phase  string `json:"phase"`  // where it ended: steps, traces, operators, openings, referee
	Rounds uint32 `json:"rounds"` // step bisection rounds
	Step   uint64 `json:"step"`   // once the step is found (step_found, or past the steps phase); else 0
	// Once the step is found: S_{Step-1}'s agreed digest and each party's
	// S_Step (hex); empty otherwise.
	Agreed           string `json:"agreed"`
	MinerDigest      string `json:"miner_digest"`
	ChallengerDigest string `json:"challenger_digest"`
	// Each party's operator trace of the step, once committed (nil before).
	MinerTrace      *TraceCommitment `json:"miner_trace"`
	ChallengerTrace *TraceCommitment `json:"challenger_trace"`
	OpRounds        uint32           `json:"op_rounds"` // operator bisection rounds
	Node            *uint64          `json:"node"`      // the openings phase on: the first differing node
	Rule            string           `json:"rule"`      // ruled, referee_ruled: opening, source, operator, post_state, step
	Losers          []string         `json:"losers"`    // "miner", "challenger"; none for step_found, referee_default
}

// TraceCommitment is a party's committed operator trace of the disputed
// step (docs/PROTOCOL.md 22.2): its node count and root (hex).
type TraceCommitment struct {
	Size uint64 `json:"size"`
	Root string `json:"root"`
}

// DecodeDisputeRecord decodes a dispute record: the bytes of the "record"
// hex of a dispute call that ended the dispute, a leaf of the outcome log.
// StatusMalformed names the broken rule; StatusInvalidArgument for a
// challenge's outcome record (DecodeOutcome reads it).
func DecodeDisputeRecord(record []byte) (DisputeRecord, error) {
	text, dispute, err := decodeLogLeaf(record)
	if err != nil {
		return DisputeRecord{}, err
	}
	if !dispute {
		return DisputeRecord{}, newError(StatusInvalidArgument, "a challenge's outcome record, not a dispute record: DecodeOutcome reads it")
	}
	var d DisputeRecord
	if err := json.Unmarshal(text, &d); err != nil {
		return DisputeRecord{}, newError(StatusMalformed, "dispute record JSON: %v", err)
	}
	return d, nil
}
