package pot_test

import (
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// The binding's statuses are libpot's list, no more and no fewer: each
// code below StatusCount has a Status constant with an Err sentinel.
func TestStatusListIsLibpots(t *testing.T) {
	known := []pot.Status{pot.StatusOK, pot.StatusInvalidArgument, pot.StatusOutOfMemory, pot.StatusIO,
		pot.StatusMalformed, pot.StatusLimit, pot.StatusOutOfRange, pot.StatusProofLength, pot.StatusProofMismatch,
		pot.StatusDuplicate, pot.StatusState, pot.StatusUnsupported, pot.StatusBackend, pot.StatusInternal,
		pot.StatusNotFound, pot.StatusPermission, pot.StatusConflict, pot.StatusNonFinite}
	if n := pot.StatusCount(); n != uint32(len(known)) {
		t.Fatalf("libpot has %d statuses, the binding %d", n, len(known))
	}
	for i, s := range known {
		if uint32(s) != uint32(i) || s.String() == "POT_E_UNKNOWN" {
			t.Fatalf("status %d: %v", i, s)
		}
	}
	if got := pot.Status(pot.StatusCount()).String(); got != "POT_E_UNKNOWN" {
		t.Fatalf("the status past the last is %s", got)
	}
}

// State part names as PROTOCOL.md 21.1 writes them.
func TestStatePartNames(t *testing.T) {
	want := map[pot.StatePart]string{pot.StateParamPrefix: "param/", pot.StateBufferPrefix: "buffer/",
		pot.StateOptimPrefix: "optim/", pot.StateLR: "hparam/lr", pot.StateRNG: "rng/cpu",
		pot.StateGradPrefix: "grad/"}
	for p, name := range want {
		if p.Name() != name {
			t.Fatalf("%d: %q, want %q", p, p.Name(), name)
		}
	}
	if pot.StatePart(0).Name() != "" || pot.StatePart(99).Name() != "" {
		t.Fatal("a value that is not a state part has a name")
	}
}
