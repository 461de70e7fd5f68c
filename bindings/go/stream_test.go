package pot_test

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// A train.bin of uint16 tokens committed where it lies; windows proven from
// it and checked into their samples; a forged proof refused
// (PROTOCOL.md 15.1).
func TestStreamWindowsProveTheirSamples(t *testing.T) {
	dir := t.TempDir()
	var shards []map[string]any
	for s, n := range []int{4000, 1500} {
		b := make([]byte, 2*n)
		for j := 0; j < n; j++ {
			binary.LittleEndian.PutUint16(b[2*j:], uint16((s+31*j)%50257))
		}
		path := filepath.Join(dir, "train"+string(rune('0'+s))+".bin")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		root, tokens, err := pot.ShardRootFile(path, pot.DTypeU16)
		if err != nil || tokens != uint64(n) {
			t.Fatalf("ShardRootFile: %v, %d tokens", err, tokens)
		}
		shards = append(shards, map[string]any{"tokens": tokens, "root": root.String()})
	}
	j, _ := json.Marshal(map[string]any{"token_dtype": "U16", "output_dtype": "I64", "window": 33,
		"views":  []map[string]any{{"name": "x", "start": 0, "length": 32}, {"name": "y", "start": 1, "length": 32}},
		"shards": shards})
	s, err := pot.StreamFromJSON(string(j))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Size() != (4000-32)+(1500-32) {
		t.Fatalf("size %d", s.Size())
	}
	enc, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := pot.DecodeStream(enc)
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := s.Root()
	r2, _ := back.Root()
	if r1 != r2 {
		t.Fatal("decoded descriptor has another root")
	}
	for _, i := range []uint64{0, 2030, 3967, 3968, s.Size() - 1} {
		shard, offset, err := s.Locate(i)
		if err != nil {
			t.Fatal(err)
		}
		proof, err := s.ProveWindow(i, filepath.Join(dir, "train"+string(rune('0'+shard))+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		sample, err := s.CheckWindow(i, proof)
		if err != nil {
			t.Fatalf("window %d: %v", i, err)
		}
		read, err := s.Sample(i, filepath.Join(dir, "train"+string(rune('0'+shard))+".bin"))
		check(t, err)
		if string(read) != string(sample) {
			t.Fatalf("window %d: the sample read from the file is not the proven one", i)
		}
		// The sample's last 32*8 bytes are y: token offset+1 first.
		y0 := binary.LittleEndian.Uint64(sample[len(sample)-32*8:])
		if want := (uint64(shard) + 31*(offset+1)) % 50257; y0 != want {
			t.Fatalf("window %d: y[0] = %d, want %d", i, y0, want)
		}
		forged := append([]byte(nil), proof...)
		forged[20] ^= 1
		_, err = s.CheckWindow(i, forged)
		wantCode(t, err, pot.StatusProofMismatch)
	}
	_, _, err = s.Locate(s.Size())
	wantCode(t, err, pot.StatusOutOfRange)
	_, err = pot.StreamFromJSON(`{"token_dtype": "F32"}`)
	wantCode(t, err, pot.StatusInvalidArgument)
}
