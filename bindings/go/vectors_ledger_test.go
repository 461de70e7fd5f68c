package pot_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// decodeJSON parses JSON keeping numbers exact, for comparisons.
func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %s: %v", b, err)
	}
	return v
}

func TestLedgerTranscript(t *testing.T) {
	var v struct {
		Config      pot.LedgerConfig             `json:"config"`
		Calls       []map[string]json.RawMessage `json:"calls"`
		StateSHA256 string                       `json:"state_sha256"`
	}
	loadVectors(t, "ledger_transcript.json", &v)
	ledger, err := pot.NewLedger(v.Config)
	check(t, err)
	defer ledger.Close()

	for i, call := range v.Calls {
		expect := "ok"
		if raw, ok := call["expect"]; ok {
			check(t, json.Unmarshal(raw, &expect))
		}
		wantResult, hasResult := call["result"]
		args := map[string]json.RawMessage{}
		for k, val := range call {
			if k != "expect" && k != "result" {
				args[k] = val
			}
		}
		text, err := json.Marshal(args)
		check(t, err)

		before, err := ledger.Save()
		check(t, err)
		out, err := ledger.Apply(string(text))
		var outcome string
		var result []byte
		if err == nil {
			outcome, result = "ok", []byte(out)
		} else {
			var pe *pot.Error
			if !errors.As(err, &pe) {
				t.Fatalf("call %d: %v is not a *pot.Error", i, err)
			}
			outcome = pe.Code.String()
			result, _ = json.Marshal(map[string]any{"ok": false, "status": outcome, "message": pe.Message})
			// A refused call leaves the ledger exactly as it was.
			after, err := ledger.Save()
			check(t, err)
			if !bytes.Equal(before, after) {
				t.Errorf("call %d: refused call changed the state", i)
			}
		}
		if outcome != expect {
			t.Errorf("call %d (%s): outcome %s, want %s (%s)", i, args["call"], outcome, expect, result)
		}
		if hasResult && !reflect.DeepEqual(decodeJSON(t, result), decodeJSON(t, wantResult)) {
			t.Errorf("call %d (%s): result %s, want %s", i, args["call"], result, wantResult)
		}
	}
	if len(v.Calls) != 134 {
		t.Fatalf("%d calls, want 134", len(v.Calls))
	}

	state, err := ledger.Save()
	check(t, err)
	sum, err := pot.Sha256(state)
	check(t, err)
	if sum.String() != v.StateSHA256 {
		t.Fatalf("state sha256 %v, want %s", sum, v.StateSHA256)
	}
	// Saving, loading and saving again gives the same bytes.
	loaded, err := pot.LoadLedger(state)
	check(t, err)
	defer loaded.Close()
	again, err := loaded.Save()
	check(t, err)
	if !bytes.Equal(again, state) {
		t.Fatal("save(load(state)) differs")
	}
	_, err = pot.LoadLedger(append(state, 0))
	wantCode(t, err, pot.StatusMalformed)
	_, err = ledger.Apply(`{"call": "no_such_call"}`)
	wantCode(t, err, pot.StatusInvalidArgument)
}

// Each finalization's outcome record, decoded from its bytes alone, says
// what the finalize_challenge result said; a broken record is refused.
func TestOutcomeRecordsDecode(t *testing.T) {
	var v struct {
		Calls []struct {
			Call        string          `json:"call"`
			ChallengeID uint64          `json:"challenge_id"`
			Expect      string          `json:"expect"`
			Result      json.RawMessage `json:"result"`
		} `json:"calls"`
	}
	loadVectors(t, "ledger_transcript.json", &v)
	// Challenge 0 twice (a re-run), then step 1's challenge, never opened.
	want := []struct {
		challenge uint64
		attempt   uint32
	}{{0, 1}, {0, 2}, {1, 1}}
	finals := 0
	for _, c := range v.Calls {
		if c.Call != "finalize_challenge" || c.Expect != "ok" {
			continue
		}
		if finals >= len(want) || c.ChallengeID != want[finals].challenge {
			t.Fatalf("finalization %d is of challenge %d", finals, c.ChallengeID)
		}
		attempt := want[finals].attempt
		finals++
		var raw struct {
			Outcome string `json:"outcome"`
		}
		var r pot.Outcome // the result's own verdict fields
		if err := json.Unmarshal(c.Result, &raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(c.Result, &r); err != nil {
			t.Fatal(err)
		}
		record, err := hex.DecodeString(raw.Outcome)
		check(t, err)
		o, err := pot.DecodeOutcome(record)
		check(t, err)
		if o.ChallengeID != c.ChallengeID || o.Attempt != attempt || o.Verdict != r.Verdict || o.Cause != r.Cause ||
			o.ClusterStake != r.ClusterStake ||
			!reflect.DeepEqual(o.Silent, r.Silent) || !reflect.DeepEqual(o.Minority, r.Minority) {
			t.Errorf("attempt %d: decoded %+v, the result says %+v", attempt, o, r)
		}
		_, err = pot.DecodeOutcome(append(record, 0))
		wantCode(t, err, pot.StatusMalformed)
	}
	if finals != len(want) {
		t.Fatalf("%d finalizations, want %d", finals, len(want))
	}
	_, err := pot.DecodeOutcome(make([]byte, 266351))
	wantCode(t, err, pot.StatusLimit)
}

// Each ended dispute's record (docs/PROTOCOL.md 20.2), decoded from its
// bytes alone, says what the call that ended it said; each kind of leaf is
// refused by the other's decoder.
func TestDisputeRecordsDecode(t *testing.T) {
	var v struct {
		Calls []struct {
			Call   string          `json:"call"`
			Expect string          `json:"expect"`
			Result json.RawMessage `json:"result"`
		} `json:"calls"`
	}
	loadVectors(t, "ledger_transcript.json", &v)
	var ends []string
	for _, c := range v.Calls {
		// Any dispute call may end one: claims, traces, openings, rulings.
		var end struct {
			Ended bool `json:"ended"`
		}
		if c.Expect != "ok" || json.Unmarshal(c.Result, &end) != nil || !end.Ended {
			continue
		}
		var r struct {
			Ended   bool              `json:"ended"`
			Record  string            `json:"record"`
			Outcome pot.DisputeRecord `json:"outcome"`
		}
		if err := json.Unmarshal(c.Result, &r); err != nil {
			t.Fatal(err)
		}
		if !r.Ended {
			continue
		}
		record, err := hex.DecodeString(r.Record)
		check(t, err)
		d, err := pot.DecodeDisputeRecord(record)
		check(t, err)
		if !reflect.DeepEqual(d, r.Outcome) {
			t.Errorf("decoded %+v, the result says %+v", d, r.Outcome)
		}
		ends = append(ends, fmt.Sprintf("%s %s %v", d.End, d.Rule, d.Losers))
		_, err = pot.DecodeOutcome(record)
		wantCode(t, err, pot.StatusInvalidArgument)
		_, err = pot.DecodeDisputeRecord(append(record, 0))
		wantCode(t, err, pot.StatusMalformed)
	}
	want := []string{"ruled source [challenger]", "miner_default  [miner]", "referee_ruled operator [challenger]"}
	if !reflect.DeepEqual(ends, want) {
		t.Fatalf("ends %q, want %q", ends, want)
	}
}
