package pot_test

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

func f32le(values ...float32) []byte {
	out := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

func statsOf(t *testing.T, dir string, name string, values ...float32) *pot.StateStats {
	t.Helper()
	w, err := pot.NewSafetensorsWriter()
	check(t, err)
	defer w.Close()
	data := f32le(values...)
	check(t, w.Add(name, pot.DTypeF32, []uint64{uint64(len(values))}, data))
	path := filepath.Join(dir, "s.safetensors")
	check(t, w.Write(path))
	f, err := pot.OpenSafetensors(path)
	check(t, err)
	defer f.Close()
	s, err := f.Stats(0)
	check(t, err)
	return s
}

func TestStateStatsAndFlags(t *testing.T) {
	dir := t.TempDir()
	before := statsOf(t, dir, "param/wpe", 3, -4, 0)
	rows, err := before.Tensors()
	check(t, err)
	if len(rows) != 1 || rows[0].Name != "param/wpe" || rows[0].Elements != 3 || rows[0].MaxAbs != 4 ||
		rows[0].L2Norm == nil || *rows[0].L2Norm != 5 || rows[0].Zeros != 1 {
		t.Fatalf("rows %+v", rows)
	}
	// The digest, recomputed from the bytes (PROTOCOL 2 and 5.2).
	tag := "pot/v1/state-stats"
	if want := sha256.Sum256(append(append([]byte{byte(len(tag))}, tag...), before.Bytes()...)); pot.Digest(want) != before.Digest() {
		t.Fatalf("digest %x, want %x", before.Digest(), want)
	}
	// Round 3, attack 1: 1e15 in the positional embedding.
	after := statsOf(t, dir, "param/wpe", 1e15, -4, 0)
	flags, err := pot.StateFlags(before, after)
	check(t, err)
	if len(flags) != 2 || flags[0].Rule != "max_abs_jump" || flags[1].Rule != "norm_jump" || *flags[0].After != float64(float32(1e15)) {
		t.Fatalf("flags %+v", flags)
	}
	same, err := pot.StateFlags(before, before)
	check(t, err)
	if len(same) != 0 {
		t.Fatalf("an unchanged state flagged: %+v", same)
	}
	_, err = pot.DecodeStateStats(before.Bytes()[:10])
	wantCode(t, err, pot.StatusMalformed)
	// The run's flagged steps (what it seals with on the ledger): the
	// poisoning step 2 alone, then the same state again.
	run, err := pot.RunFlags([]*pot.StateStats{before, after, after})
	check(t, err)
	if len(run) != 1 || run[0].Step != 2 || len(run[0].Flags) != 2 || run[0].Flags[0].Rule != "max_abs_jump" {
		t.Fatalf("run flags %+v", run)
	}
	none, err := pot.RunFlags(nil)
	check(t, err)
	if len(none) != 0 {
		t.Fatalf("no tables flagged %+v", none)
	}
}
