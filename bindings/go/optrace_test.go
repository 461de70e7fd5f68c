package pot_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// TestOpTraceAndReferee traces step 5 of the fixture's run twice (one
// root), bisects the honest trace against a forger's whose node k has
// another result, and has the referee rule on node k: the forger, who sent
// the honest node's opening under its own root, loses at rule 1; the node's
// JSON round-trips.
func TestOpTraceAndReferee(t *testing.T) {
	f := loadFixture(t)
	const step = 5
	readFile := func(path string) []byte {
		b, err := os.ReadFile(path)
		check(t, err)
		return b
	}
	specText := readFile(filepath.Join(f.run, "spec.json"))
	spec, err := pot.SpecFromJSON(string(specText))
	check(t, err)
	defer spec.Close()
	r, err := pot.NewReplay(spec, filepath.Join(f.run, "program.pt"))
	check(t, err)
	defer r.Close()
	entry, err := pot.ScheduleEntry{Step: step, Microbatches: f.schedule[step-1]}.Encode(f.meta.DatasetSize)
	check(t, err)
	var batch [][]byte
	for _, mb := range f.schedule[step-1] {
		for _, i := range mb {
			batch = append(batch, readFile(filepath.Join(f.run, "samples", fmt.Sprintf("%06d.safetensors", i))))
		}
	}
	runID := f.record.RunID
	pre := f.statePath(step - 1)
	a, err := r.Trace(&runID, pre, entry, batch)
	check(t, err)
	defer a.Close()
	b, err := r.Trace(&runID, pre, entry, batch)
	check(t, err)
	defer b.Close()
	n, err := a.Len()
	check(t, err)
	ra, _ := a.Root(n)
	rb, _ := b.Root(n)
	if nb, _ := b.Len(); n < 50 || nb != n || ra != rb {
		t.Fatalf("two traces of one step: %d and %d nodes, roots %s and %s", n, nb, ra, rb)
	}
	res, err := a.ReplayResult()
	check(t, err)
	want, err := pot.SafetensorsDigestFile(f.statePath(step), 0)
	check(t, err)
	if res.PostStateDigest != want {
		t.Fatalf("the traced replay reached %s, want %s", res.PostStateDigest, want)
	}

	// The forger's trace: node k's first result has another chunk root.
	const k = 17
	node, err := a.Node(k)
	check(t, err)
	text, err := pot.OpNodeJSON(node)
	check(t, err)
	var j map[string]any
	check(t, json.Unmarshal([]byte(text), &j))
	out := j["outputs"].([]any)[0].(map[string]any)["tensor"].(map[string]any)
	out["chunk_root"] = "00000000000000000000000000000000000000000000000000000000000000ff"
	forgedText, _ := json.Marshal(j)
	forged, err := pot.OpNodeFromJSON(string(forgedText))
	check(t, err)
	if bytes.Equal(forged, node) {
		t.Fatal("the forged node is the honest one")
	}
	tree, err := pot.NewMemoryTree()
	check(t, err)
	defer tree.Close()
	for i := uint64(0); i < n; i++ {
		leaf, err := a.Node(i)
		check(t, err)
		if i == k {
			leaf = forged
		}
		_, err = tree.Append(leaf)
		check(t, err)
	}
	honestRoot := func(p uint64) pot.Digest { d, _ := a.Root(p); return d }
	forgerRoot := func(p uint64) pot.Digest { d, _ := tree.Root(p); return d }
	bis, err := pot.NewStepBisection(0, n, 4, honestRoot(0), honestRoot(n), forgerRoot(n))
	check(t, err)
	defer bis.Close()
	for {
		s, err := bis.State()
		check(t, err)
		if s.Done {
			break
		}
		pts, err := bis.Points()
		check(t, err)
		var ca, cb []pot.Digest
		for _, p := range pts {
			ca, cb = append(ca, honestRoot(p)), append(cb, forgerRoot(p))
		}
		check(t, bis.PlayRound(ca, cb))
	}
	s, _ := bis.State()
	if s.Hi != k+1 {
		t.Fatalf("the bisection ended at node %d, want %d", s.Hi-1, k)
	}
	opening, err := r.OpenOpNode(&runID, pre, entry, batch, k)
	check(t, err)
	preDigest, err := pot.SafetensorsDigestFile(pre, 0)
	check(t, err)
	ruling, err := r.RefereeDecideOp(&runID, pre, preDigest, entry, batch, pot.OpDispute{Index: k,
		AgreedRoot: s.Agreed, ARoot: honestRoot(k + 1), BRoot: forgerRoot(k + 1), AOpening: opening,
		BOpening: opening})
	check(t, err)
	if ruling.ALoses || !ruling.BLoses || ruling.Rule != "opening" {
		t.Fatalf("ruling %+v, want B to lose its opening", ruling)
	}
	_, err = r.RefereeDecideOp(&runID, pre, pot.Digest{}, entry, batch, pot.OpDispute{Index: k,
		AgreedRoot: s.Agreed, ARoot: honestRoot(k + 1), BRoot: forgerRoot(k + 1), AOpening: opening,
		BOpening: opening})
	wantCode(t, err, pot.StatusProofMismatch)
	_, err = r.OpenOpNode(&runID, pre, entry, batch, n+1)
	wantCode(t, err, pot.StatusOutOfRange)
}
