package pot_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// vectorsDir holds the shared known-answer vectors of the repository.
var vectorsDir = filepath.Join("..", "..", "tests", "vectors")

// loadVectors decodes tests/vectors/<name> into v, keeping numbers exact.
func loadVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir, name))
	if err != nil {
		t.Fatalf("reading vectors: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func mustDigest(t *testing.T, s string) pot.Digest {
	t.Helper()
	d, err := pot.ParseDigest(s)
	if err != nil {
		t.Fatalf("ParseDigest(%q): %v", s, err)
	}
	return d
}

func mustU64(t *testing.T, n json.Number) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil {
		t.Fatalf("not a u64: %s", n)
	}
	return v
}

func mustI64(t *testing.T, n json.Number) int64 {
	t.Helper()
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		t.Fatalf("not an i64: %s", n)
	}
	return v
}

func mustF64(t *testing.T, n json.Number) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.String(), 64)
	if err != nil {
		t.Fatalf("not a float: %s", n)
	}
	return v
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantCode fails unless err is a *pot.Error with the given code and a
// message.
func wantCode(t *testing.T, err error, code pot.Status) {
	t.Helper()
	var pe *pot.Error
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *pot.Error with code %v", err, code)
	}
	if pe.Code != code {
		t.Fatalf("got code %v (%v), want %v", pe.Code, err, code)
	}
	if pe.Message == "" {
		t.Fatalf("error %v has no message", code)
	}
}

// stream is the tensor byte stream of hash.json: the first n bytes of
// SHA-256(seed || u64le(0)) || SHA-256(seed || u64le(1)) || ...
// It is computed with crypto/sha256, independently of libpot.
func stream(seed string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	var ctr [8]byte
	for i := uint64(0); len(out) < n; i++ {
		binary.LittleEndian.PutUint64(ctr[:], i)
		h := sha256.New()
		h.Write([]byte(seed))
		h.Write(ctr[:])
		out = h.Sum(out)
	}
	return out[:n]
}

func u64le(v uint64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return b[:]
}
