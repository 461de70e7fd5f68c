package pot_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// run is a toy training run made through the binding, as the C sample
// samples/protocol_flow makes one: 8 samples, 6 steps of batch 2.
type run struct {
	dir        string
	commitment *pot.Commitment
	runID      pot.Digest
	logRoot    pot.Digest
	states     []pot.Digest
	log        *pot.Tree
	schedule   *pot.Tree
	dataset    *pot.Tree
	stream     *pot.Stream // a token-stream dataset (newStreamRun), else nil
	n          uint64      // the dataset size
}

const (
	runSamples = 8
	runSteps   = 6
	runBatch   = 2
	runSeed    = 1234
)

func writeVector(t *testing.T, path, name string, v []float32) {
	t.Helper()
	w, err := pot.NewSafetensorsWriter()
	check(t, err)
	defer w.Close()
	check(t, w.Add(name, pot.DTypeF32, []uint64{uint64(len(v))}, f32bytes(v...)))
	check(t, w.Write(path))
}

func (r *run) statePath(t uint64) string {
	return filepath.Join(r.dir, fmt.Sprintf("state-%d.safetensors", t))
}

func newRun(t *testing.T) *run { return buildRun(t, false) }

// newStreamRun is the run on a token stream (docs/PROTOCOL.md 15.1):
// train.bin of 3000 uint16 tokens, windows of 17, opened as window proofs.
func newStreamRun(t *testing.T) *run { return buildRun(t, true) }

func buildRun(t *testing.T, streamed bool) *run {
	t.Helper()
	r := &run{dir: t.TempDir(), n: runSamples}
	var err error
	if streamed {
		b := make([]byte, 2*3000)
		for j := 0; j < 3000; j++ {
			binary.LittleEndian.PutUint16(b[2*j:], uint16((7*j+3)%50257))
		}
		path := filepath.Join(r.dir, "train.bin")
		check(t, os.WriteFile(path, b, 0o644))
		root, tokens, err := pot.ShardRootFile(path, pot.DTypeU16)
		check(t, err)
		r.stream, err = pot.StreamFromJSON(fmt.Sprintf(`{"token_dtype": "U16", "output_dtype": "I64", "window": 17,
			"views": [{"name": "x", "start": 0, "length": 16}, {"name": "y", "start": 1, "length": 16}],
			"shards": [{"tokens": %d, "root": "%s"}]}`, tokens, root))
		check(t, err)
		t.Cleanup(func() { r.stream.Close() })
		r.n = r.stream.Size()
	}
	r.dataset, err = pot.NewMemoryTree()
	check(t, err)
	r.schedule, err = pot.NewMemoryTree()
	check(t, err)
	r.log, err = pot.NewMemoryTree()
	check(t, err)
	t.Cleanup(func() { r.dataset.Close(); r.schedule.Close(); r.log.Close() })
	for i := 0; i < runSamples && !streamed; i++ {
		p := filepath.Join(r.dir, fmt.Sprintf("sample-%d.safetensors", i))
		writeVector(t, p, "x", []float32{float32(i), float32(i * i)})
		b, err := os.ReadFile(p)
		check(t, err)
		d, err := pot.SampleDigest(b)
		check(t, err)
		_, err = r.dataset.Append(d[:])
		check(t, err)
	}
	w := []float32{0.5, -1, 2, 0.25}
	for step := uint64(0); step <= runSteps; step++ {
		if step > 0 {
			for i := range w {
				w[i] = w[i]*0.9 + 0.01*float32(step)
			}
			e, err := pot.SeededScheduleEntry(runSeed, r.n, runBatch, 1, step)
			check(t, err)
			_, err = r.schedule.Append(e)
			check(t, err)
		}
		writeVector(t, r.statePath(step), "param/w", w)
		d, err := pot.SafetensorsDigestFile(r.statePath(step), 1)
		check(t, err)
		r.states = append(r.states, d)
	}
	sroot, err := r.schedule.Root(runSteps)
	check(t, err)
	var droot pot.Digest
	if streamed {
		droot, err = r.stream.Root()
	} else {
		droot, err = r.dataset.Root(runSamples)
	}
	check(t, err)
	r.commitment, err = pot.CommitmentFromJSON(fmt.Sprintf(`{"initial_state_digest": "%s", "schedule_root": "%s",
		"task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "%s", "dataset_size": %d, "spec_digest": "%064d",
		"declared_steps": %d, "miner_identity": "6d696e6572"}`, r.states[0], sroot, droot, r.n, 0, runSteps))
	check(t, err)
	t.Cleanup(func() { r.commitment.Close() })
	r.runID, err = r.commitment.RunID()
	check(t, err)
	// The leaves name the run, so they follow the commitment.
	for step := uint64(1); step <= runSteps; step++ {
		_, err = r.log.Append(r.leaf(t, step))
		check(t, err)
	}
	r.logRoot, err = r.log.Root(runSteps)
	check(t, err)
	return r
}

// leaf is leaf step of the run: its state, loss and the update norm of the
// state files (pot.UpdateNorm over "param/").
func (r *run) leaf(t *testing.T, step uint64) []byte {
	t.Helper()
	a, err := pot.OpenSafetensors(r.statePath(step - 1))
	check(t, err)
	defer a.Close()
	b, err := pot.OpenSafetensors(r.statePath(step))
	check(t, err)
	defer b.Close()
	norm, err := pot.UpdateNorm(a, b, "param/")
	check(t, err)
	stats, err := b.Stats(1)
	check(t, err)
	leaf, err := pot.StepLeaf{RunID: r.runID, Step: step, StateDigest: r.states[step], StatsDigest: stats.Digest(),
		Loss: 1 / float64(step), UpdateNorm: norm}.Encode()
	check(t, err)
	return leaf
}

// open builds the manifest of step as the miner serves it.
func (r *run) open(t *testing.T, step uint64) []byte {
	t.Helper()
	o, err := pot.NewOpening(r.runID, step, runSteps, r.states[step-1])
	check(t, err)
	defer o.Close()
	if step > 1 {
		leaf := r.leaf(t, step-1)
		proof, err := r.log.InclusionProof(step-2, runSteps)
		check(t, err)
		check(t, o.SetPreLeaf(leaf, proof))
	}
	leaf := r.leaf(t, step)
	proof, err := r.log.InclusionProof(step-1, runSteps)
	check(t, err)
	check(t, o.SetPostLeaf(leaf, proof))
	entry, err := pot.SeededScheduleEntry(runSeed, r.n, runBatch, 1, step)
	check(t, err)
	proof, err = r.schedule.InclusionProof(step-1, runSteps)
	check(t, err)
	check(t, o.SetSchedule(entry, proof))
	e, err := pot.DecodeScheduleEntry(entry)
	check(t, err)
	if e.Step != step || len(e.Microbatches) != 1 || len(e.Microbatches[0]) != runBatch {
		t.Fatalf("schedule entry %+v", e)
	}
	if r.stream != nil {
		enc, err := r.stream.Encode()
		check(t, err)
		check(t, o.SetStream(enc))
	}
	for _, idx := range e.Microbatches[0] {
		if r.stream != nil {
			proof, err := r.stream.ProveWindow(idx, filepath.Join(r.dir, "train.bin"))
			check(t, err)
			check(t, o.AddWindow(idx, proof))
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("sample-%d.safetensors", idx)))
		check(t, err)
		proof, err := r.dataset.InclusionProof(idx, runSamples)
		check(t, err)
		check(t, o.AddSample(idx, b, proof))
	}
	check(t, o.SetStateRefs(filepath.Base(r.statePath(step-1)), ""))
	// The run record (check 32): every leaf, every table, the flagged steps.
	leaves, tables := []byte{}, []*pot.StateStats{}
	raw := [][]byte{}
	for s := uint64(1); s <= runSteps; s++ {
		leaves = append(leaves, r.leaf(t, s)...)
		f, err := pot.OpenSafetensors(r.statePath(s))
		check(t, err)
		table, err := f.Stats(1)
		f.Close()
		check(t, err)
		tables = append(tables, table)
		raw = append(raw, table.Bytes())
	}
	flagged, err := pot.RunFlags(tables)
	check(t, err)
	steps := []uint64{}
	for _, f := range flagged {
		steps = append(steps, f.Step)
	}
	check(t, o.SetRunRecord(leaves, raw, steps))
	m, err := o.Encode()
	check(t, err)
	d1, err := o.Digest()
	check(t, err)
	if d1 == (pot.Digest{}) {
		t.Fatal("zero manifest digest")
	}
	return m
}

func TestOpeningFlow(t *testing.T) {
	r := newRun(t)
	steps, err := pot.ChallengeDerive([]byte("beacon"), r.runID, runSteps, 2)
	check(t, err)
	for _, step := range append(steps, 1) {
		m := r.open(t, step)
		c, err := pot.VerifyOpening(r.commitment, step, runSteps, r.logRoot, m, r.statePath(step-1), r.statePath(step), 1)
		if err != nil || c != pot.CheckOK {
			t.Fatalf("step %d: %v, %v", step, c, err)
		}
		// Without state files only the manifest is checked.
		if c, err := pot.VerifyOpening(r.commitment, step, runSteps, r.logRoot, m, "", "", 0); err != nil || c != pot.CheckOK {
			t.Fatalf("step %d without states: %v, %v", step, c, err)
		}
	}

	step := uint64(3)
	m := r.open(t, step)
	cases := []struct {
		name      string
		logRoot   pot.Digest
		manifest  []byte
		pre, post string
		check     pot.OpeningCheck
		code      pot.Status
	}{
		{"wrong log root", r.states[0], m, "", "", pot.CheckPostLeafProof, pot.StatusProofMismatch},
		{"truncated manifest", r.logRoot, m[:len(m)-1], "", "", pot.CheckManifest, pot.StatusMalformed},
		{"wrong pre-state", r.logRoot, m, r.statePath(step), "", pot.CheckPreStateDigest, pot.StatusProofMismatch},
		{"wrong post-state", r.logRoot, m, r.statePath(step - 1), r.statePath(step - 1), pot.CheckPostStateDigest,
			pot.StatusProofMismatch},
		{"missing state", r.logRoot, m, filepath.Join(r.dir, "missing"), "", pot.CheckPreStateDigest, pot.StatusIO},
	}
	for _, c := range cases {
		got, err := pot.VerifyOpening(r.commitment, step, runSteps, c.logRoot, c.manifest, c.pre, c.post, 1)
		if got != c.check {
			t.Errorf("%s: check %v, want %v (%v)", c.name, got, c.check, err)
		}
		wantCode(t, err, c.code)
	}
	// The run sealed on the ledger with none (this smooth run flags none):
	// the same; a ledger naming step 2 fails every opening at check 32.
	check(t, r.commitment.SetSealedFlags(nil))
	if c, err := pot.VerifyOpening(r.commitment, step, runSteps, r.logRoot, m, "", "", 1); err != nil || c != pot.CheckOK {
		t.Fatalf("sealed with none: %v, %v", c, err)
	}
	check(t, r.commitment.SetSealedFlags([]uint64{2}))
	got, err := pot.VerifyOpening(r.commitment, step, runSteps, r.logRoot, m, "", "", 1)
	if got != pot.CheckRunFlags || got.String() != "run_flags" {
		t.Errorf("sealed with step 2: check %v (%v)", got, err)
	}
	wantCode(t, err, pot.StatusProofMismatch)
	wantCode(t, r.commitment.SetSealedFlags([]uint64{3, 2}), pot.StatusInvalidArgument)
	check(t, r.commitment.SetSealedFlags(nil))
	if pot.CheckPostLeafProof.String() != "post_leaf_proof" || pot.CheckOK.String() != "ok" ||
		pot.OpeningCheck(1000).String() != "unknown" {
		t.Fatal("check names")
	}
	// Another run's commitment.
	other, err := pot.CommitmentFromJSON(fmt.Sprintf(`{"initial_state_digest": "%s", "schedule_root": "%s",
		"task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "%s", "dataset_size": 8, "spec_digest": "%064d",
		"declared_steps": 6, "miner_identity": "6f74686572"}`, r.states[0], r.states[0], r.states[0], 0))
	check(t, err)
	defer other.Close()
	got, err = pot.VerifyOpening(other, step, runSteps, r.logRoot, m, "", "", 1)
	if got != pot.CheckRunID {
		t.Errorf("other run: check %v (%v)", got, err)
	}
	// A valid opening of step 3 does not answer a challenge of step 4.
	got, err = pot.VerifyOpening(r.commitment, step+1, runSteps, r.logRoot, m, "", "", 1)
	if got != pot.CheckStep {
		t.Errorf("another step: check %v (%v)", got, err)
	}
	wantCode(t, err, pot.StatusProofMismatch)
}

// A run on a token stream: windows opened as window proofs verify.
func TestStreamOpeningFlow(t *testing.T) {
	r := newStreamRun(t)
	if r.n != 3000-16 {
		t.Fatalf("dataset size %d", r.n)
	}
	for _, step := range []uint64{1, 4} {
		m := r.open(t, step)
		c, err := pot.VerifyOpening(r.commitment, step, runSteps, r.logRoot, m, r.statePath(step-1), r.statePath(step), 1)
		if err != nil || c != pot.CheckOK {
			t.Fatalf("step %d: %v (%v)", step, c, err)
		}
	}
}
