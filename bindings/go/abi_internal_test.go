package pot

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckABI(t *testing.T) {
	if err := checkABI(ABIVersion, ABIVersion, "0.1.0"); err != nil {
		t.Fatalf("same ABI: %v", err)
	}
	err := checkABI(ABIVersion+1, ABIVersion, "9.0.0")
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != StatusUnsupported {
		t.Fatalf("mismatch gives %v", err)
	}
	for _, want := range []string{"ABI", "9.0.0", fmt.Sprintf("POT_ABI_VERSION %d", ABIVersion),
		fmt.Sprintf("version %d", ABIVersion+1)} {
		if !strings.Contains(pe.Message, want) {
			t.Errorf("message %q lacks %q", pe.Message, want)
		}
	}
}

// TestABIMismatchRefusesCalls simulates a mismatched library: every
// fallible entry point returns the ABI error without calling libpot.
func TestABIMismatchRefusesCalls(t *testing.T) {
	saved := abiErr
	abiErr = checkABI(ABIVersion+1, ABIVersion, "9.0.0")
	defer func() { abiErr = saved }()
	if ABIError() == nil {
		t.Fatal("ABIError() is nil")
	}
	calls := map[string]error{}
	_, calls["Sha256"] = Sha256(nil)
	_, calls["ParseDigest"] = ParseDigest("00")
	_, calls["NewState"] = NewState()
	_, calls["NewMemoryTree"] = NewMemoryTree()
	_, calls["OpenSafetensors"] = OpenSafetensors("x")
	_, calls["SpecFromJSON"] = SpecFromJSON("{}")
	_, calls["NewLedger"] = NewLedger(LedgerConfig{1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 0, ""})
	_, calls["CheckLosses"] = CheckLosses(nil, nil)
	calls["VerifyInclusion"] = VerifyInclusion(0, 1, Digest{}, nil, Digest{})
	for name, err := range calls {
		if err != abiErr {
			t.Errorf("%s returned %v, want the ABI error", name, err)
		}
	}
}
