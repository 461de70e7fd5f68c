package pot_test

import (
	"bytes"
	"encoding/json"
	"errors"
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
	if len(v.Calls) != 54 {
		t.Fatalf("%d calls, want 54", len(v.Calls))
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
