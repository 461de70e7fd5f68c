package pot_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// specJSON is a valid execution spec whose model program has the given
// digest (per_step seeds from base seed 7), of this process's hardware
// class where libpot has the replay.
func specJSON(program pot.Digest) string {
	class, err := pot.HardwareClass()
	if err != nil {
		class = "cpu-x86_64/aten:avx2/onednn:avx2"
	}
	return fmt.Sprintf(`{"framework": "pytorch", "framework_version": "1.13.1",
		"model_program_digest": "%s", "dtype": "F32", "attention_backend": "math", "dropout": 0.0,
		"optimizer": {"kind": "sgd", "lr": 0.1}, "batch_size": 2, "intra_op_threads": 1,
		"hardware_class": "%s", "seed_policy": {"kind": "per_step", "base_seed": 7},
		"norm_bucket_resolution": 16}`, program, class)
}

// The hardware class is this process's: the form of PROTOCOL.md 14.4, a
// valid spec field, and what ATEN_CPU_CAPABILITY selects.
func TestHardwareClass(t *testing.T) {
	class, err := pot.HardwareClass()
	if !pot.ReplayAvailable() {
		wantCode(t, err, pot.StatusUnsupported)
		return
	}
	check(t, err)
	if !strings.HasPrefix(class, "cpu-") || !strings.Contains(class, "/aten:") || !strings.Contains(class, "/onednn:") {
		t.Fatalf("hardware class %q is not of the form cpu-<arch>/aten:<capability>/onednn:<isa>", class)
	}
	if c := os.Getenv("ATEN_CPU_CAPABILITY"); c != "" && !strings.Contains(class, "/aten:"+c+"/") {
		t.Fatalf("hardware class %q under ATEN_CPU_CAPABILITY=%s", class, c)
	}
	js, err := mustSpec(t, pot.Digest{}).ToJSON()
	check(t, err)
	var fields map[string]any
	check(t, json.Unmarshal([]byte(js), &fields))
	if got := fields["hardware_class"]; got != class {
		t.Fatalf("spec hardware_class %v, want %q", got, class)
	}
}

func mustSpec(t *testing.T, program pot.Digest) *pot.Spec {
	t.Helper()
	s, err := pot.SpecFromJSON(specJSON(program))
	check(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestProgramDigestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "program.pt")
	check(t, os.WriteFile(path, []byte("abc"), 0o644))
	got, err := pot.ProgramDigestFile(path)
	check(t, err)
	// tagged(tag, data) = SHA-256(u8(len(tag)) || tag || data), computed here
	// with crypto/sha256, independently of libpot.
	want := sha256.Sum256(append([]byte("\x0epot/v1/program"), "abc"...))
	if got != pot.Digest(want) {
		t.Fatalf("ProgramDigestFile = %s, want %x", got, want)
	}
	_, err = pot.ProgramDigestFile(filepath.Join(t.TempDir(), "missing.pt"))
	wantCode(t, err, pot.StatusIO)
	_, err = pot.ProgramDigestFile("a\x00b")
	wantCode(t, err, pot.StatusInvalidArgument)
}

// TestReplayAvailability checks that ReplayAvailable tells what the
// replay, recorder and checkpoint constructors do.
func TestReplayAvailability(t *testing.T) {
	dir := t.TempDir()
	program := filepath.Join(dir, "program.pt")
	check(t, os.WriteFile(program, []byte("abc"), 0o644))
	pd, err := pot.ProgramDigestFile(program)
	check(t, err)
	spec := mustSpec(t, pd)
	other := mustSpec(t, pot.Digest{1})
	missing := filepath.Join(dir, "missing.pt")

	if !pot.ReplayAvailable() {
		t.Log("libpot was built without LibTorch: every replay entry point must say StatusUnsupported")
		_, err := pot.NewReplay(spec, program)
		wantCode(t, err, pot.StatusUnsupported)
		_, err = pot.NewRecorder(filepath.Join(dir, "ck"), spec, program, 1)
		wantCode(t, err, pot.StatusUnsupported)
		_, err = pot.OpenCheckpoints(filepath.Join(dir, "ck"))
		wantCode(t, err, pot.StatusUnsupported)
		c, err := pot.CommitmentFromJSON(fmt.Sprintf(`{"initial_state_digest": "%064d", "schedule_root": "%064d",
			"task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "%064d", "dataset_size": 1, "spec_digest": "%064d",
			"declared_steps": 1, "miner_identity": "6d696e6572"}`, 0, 0, 0, 0))
		check(t, err)
		defer c.Close()
		res, err := pot.VerifyStep(c, spec, program, 1, 1, pot.Digest{}, []byte("m"), "pre", "", pot.VerifyBitwise, 0)
		wantCode(t, err, pot.StatusUnsupported)
		if res.Check != pot.CheckOK || res.Replayed {
			t.Fatalf("VerifyStep without LibTorch: %+v", res)
		}
		return
	}

	_, err = pot.NewReplay(spec, missing)
	wantCode(t, err, pot.StatusIO)
	// A program whose digest is not the spec's.
	_, err = pot.NewReplay(other, program)
	wantCode(t, err, pot.StatusProofMismatch)
	// The spec's digest, but not TorchScript.
	_, err = pot.NewReplay(spec, program)
	wantCode(t, err, pot.StatusInvalidArgument)

	_, err = pot.NewRecorder(filepath.Join(dir, "ck-missing"), spec, missing, 1)
	wantCode(t, err, pot.StatusIO)
	_, err = pot.NewRecorder(filepath.Join(dir, "ck-other"), other, program, 1)
	wantCode(t, err, pot.StatusProofMismatch)
	_, err = pot.NewRecorder(filepath.Join(dir, "ck-zero"), spec, program, 0)
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.OpenCheckpoints(filepath.Join(dir, "nothing-here"))
	wantCode(t, err, pot.StatusNotFound)
}

func TestSpecLearningRates(t *testing.T) {
	spec, err := pot.SpecFromJSON(`{"framework": "pytorch", "framework_version": "1.13.1",
		"model_program_digest": "` + strings.Repeat("ab", 32) + `", "dtype": "F32", "attention_backend": "math",
		"dropout": 0, "optimizer": {"kind": "sgd", "lr": 1.0}, "batch_size": 1, "intra_op_threads": 1,
		"hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "seed_policy": {"kind": "none"}, "norm_bucket_resolution": 16,
		"lr_schedule": {"phases": [{"kind": "step", "step_size": 2, "gamma": 0.5}]}}`)
	check(t, err)
	defer spec.Close()
	got, err := spec.LearningRates(1, 6)
	check(t, err)
	want := []float64{1, 1, 0.5, 0.5, 0.25, 0.25}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rates %v, want %v", got, want)
		}
	}
	tail, err := spec.LearningRates(5, 2)
	check(t, err)
	if tail[0] != 0.25 || tail[1] != 0.25 {
		t.Fatalf("rates of steps 5, 6: %v", tail)
	}
	if none, err := spec.LearningRates(3, 0); err != nil || len(none) != 0 {
		t.Fatalf("no rates: %v %v", none, err)
	}
	_, err = spec.LearningRates(0, 1)
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = spec.LearningRates(1<<32, 2)
	wantCode(t, err, pot.StatusOutOfRange)
	_, err = spec.LearningRates(1, pot.MaxRatesPerCall+1) // refused before 128 MiB are allocated
	wantCode(t, err, pot.StatusLimit)
	spec.Close()
	_, err = spec.LearningRates(1, 1)
	wantCode(t, err, pot.StatusState)
}

func TestOpeningCheckNames(t *testing.T) {
	for c, name := range map[pot.OpeningCheck]string{
		pot.CheckSpec: "spec", pot.CheckProgram: "program", pot.CheckReplay: "replay",
		pot.CheckReplayedState: "replayed_state", pot.CheckReplayedLoss: "replayed_loss",
		pot.CheckReplayedBucket: "replayed_bucket", pot.CheckNonFinite: "nonfinite",
		pot.CheckLearningRate: "learning_rate", pot.CheckCommittedNorm: "committed_norm",
		pot.CheckGradientIgnored: "gradient_ignored",
	} {
		if c.String() != name {
			t.Errorf("check %d: %q, want %q", uint32(c), c.String(), name)
		}
	}
	if pot.CheckSpec != 18 || pot.CheckReplayedBucket != 23 || pot.CheckNonFinite != 24 ||
		pot.CheckLearningRate != 25 || pot.CheckCommittedNorm != 26 || pot.CheckGradientIgnored != 27 ||
		pot.CheckSubnormal != 28 || pot.CheckSubnormal.String() != "subnormal" ||
		pot.CheckReplayedUpdate != 29 || pot.CheckReplayedUpdate.String() != "replayed_update" ||
		pot.CheckTaskProgram != 30 || pot.CheckTaskProgram.String() != "task_program" ||
		pot.CheckStateStats != 31 || pot.CheckStateStats.String() != "state_stats" ||
		pot.CheckRunFlags != 32 || pot.CheckRunFlags.String() != "run_flags" {
		t.Fatal("check values")
	}
	if pot.VerifyBitwise.String() != "bitwise" || pot.VerifyNormBucket.String() != "norm_bucket" ||
		pot.VerifyMode(9).String() != "VerifyMode(9)" {
		t.Fatal("mode names")
	}
}

func f64bytes(v float64) []byte {
	return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
}

// stateWriter holds a toy training state under canonical names.
func stateWriter(t *testing.T, w []float32, lr float64) *pot.SafetensorsWriter {
	t.Helper()
	sw, err := pot.NewSafetensorsWriter()
	check(t, err)
	t.Cleanup(func() { sw.Close() })
	check(t, sw.Add("param/w", pot.DTypeF32, []uint64{uint64(len(w))}, f32bytes(w...)))
	check(t, sw.Add("hparam/lr", pot.DTypeF64, []uint64{}, f64bytes(lr)))
	return sw
}

// updateNormF32 is the update norm of PROTOCOL.md section 13 of one F32
// tensor: each difference in float64, the squares summed in order.
func updateNormF32(a, b []float32) float64 {
	sum := 0.0
	for i := range a {
		d := float64(b[i]) - float64(a[i])
		sum += d * d
	}
	return math.Sqrt(sum)
}

// stateDigest digests the same state through pot.State.
func toyState(t *testing.T, w []float32, lr float64) *pot.State {
	t.Helper()
	s, err := pot.NewState()
	check(t, err)
	check(t, s.AddTensor("param/w", pot.DTypeF32, []uint64{uint64(len(w))}, f32bytes(w...)))
	check(t, s.AddTensor("hparam/lr", pot.DTypeF64, []uint64{}, f64bytes(lr)))
	return s
}

func stateDigest(t *testing.T, w []float32, lr float64) pot.Digest {
	t.Helper()
	s := toyState(t, w, lr)
	defer s.Close()
	d, err := s.Digest()
	check(t, err)
	return d
}

// statsDigest is the digest of that state's statistics table (PROTOCOL.md 5.2).
func statsDigest(t *testing.T, w []float32, lr float64) pot.Digest {
	t.Helper()
	s := toyState(t, w, lr)
	defer s.Close()
	st, err := s.Stats()
	check(t, err)
	return st.Digest()
}

// TestRecorderAndCheckpoints records a toy run (states written by the
// test, no TorchScript: nothing is replayed with a checkpoint every step)
// and serves an opening from its checkpoint directory.
func TestRecorderAndCheckpoints(t *testing.T) {
	if !pot.ReplayAvailable() {
		t.Skip("libpot was built without LibTorch (TestReplayAvailability checks StatusUnsupported)")
	}
	const (
		samples = 4
		steps   = 3
		seed    = 99
	)
	dir := t.TempDir()
	program := filepath.Join(dir, "program.pt")
	check(t, os.WriteFile(program, []byte("abc"), 0o644))
	pd, err := pot.ProgramDigestFile(program)
	check(t, err)
	// The toy loop multiplies its rate by 0.9 after every step: an
	// exponential schedule, which the spec must name (the recorder refuses a
	// state whose rate is not the spec's).
	sj := strings.Replace(specJSON(pd), `"norm_bucket_resolution": 16}`,
		`"norm_bucket_resolution": 16, "lr_schedule": {"phases": [{"kind": "exponential", "gamma": 0.9}]}}`, 1)
	spec, err := pot.SpecFromJSON(sj)
	check(t, err)
	defer spec.Close()
	specDigest, err := spec.Digest()
	check(t, err)

	data := filepath.Join(dir, "samples")
	check(t, os.Mkdir(data, 0o755))
	dataset, err := pot.NewMemoryTree()
	check(t, err)
	defer dataset.Close()
	for i := 0; i < samples; i++ {
		p := filepath.Join(data, fmt.Sprintf("%06d.safetensors", i))
		writeVector(t, p, "x", []float32{float32(i), 1})
		b, err := os.ReadFile(p)
		check(t, err)
		d, err := pot.SampleDigest(b)
		check(t, err)
		_, err = dataset.Append(d[:])
		check(t, err)
	}
	var entries [][]byte
	for s := uint64(1); s <= steps; s++ {
		e, err := pot.SeededScheduleEntry(seed, samples, 2, 1, s)
		check(t, err)
		entries = append(entries, e)
	}
	sroot, err := pot.SeededScheduleRoot(seed, samples, 2, 1, steps)
	check(t, err)
	droot, err := dataset.Root(samples)
	check(t, err)

	ck := filepath.Join(dir, "ck")
	rec, err := pot.NewRecorder(ck, spec, program, 1)
	check(t, err)
	defer rec.Close()
	_, err = pot.NewRecorder(ck, spec, program, 1)
	wantCode(t, err, pot.StatusConflict)

	w := []float32{0.5, -1, 2}
	lr := 0.1
	_, err = rec.BeginStep(1)
	wantCode(t, err, pot.StatusState) // S_0 first
	d0, err := rec.Start(stateWriter(t, w, lr))
	check(t, err)
	if d0 != stateDigest(t, w, lr) {
		t.Fatal("Start does not return S_0's state digest")
	}
	commitment, err := pot.CommitmentFromJSON(fmt.Sprintf(`{"initial_state_digest": "%s", "schedule_root": "%s",
		"task_id": "7777777777777777777777777777777777777777777777777777777777777777", "dataset_root": "%s", "dataset_size": %d, "spec_digest": "%s",
		"declared_steps": %d, "miner_identity": "6d696e6572"}`, d0, sroot, droot, samples, specDigest, steps))
	check(t, err)
	defer commitment.Close()
	wantCode(t, rec.SetCommitment(commitment, entries[:2]), pot.StatusInvalidArgument)
	check(t, rec.SetCommitment(commitment, entries))
	runID, err := commitment.RunID()
	check(t, err)

	log, err := pot.NewMemoryTree()
	check(t, err)
	defer log.Close()
	states := []pot.Digest{d0}
	losses := []float64{0}
	for s := uint64(1); s <= steps; s++ {
		got, err := rec.BeginStep(s)
		check(t, err)
		want, err := pot.SeedDerive(7, runID, s)
		check(t, err)
		if got != want {
			t.Fatalf("step %d: seed %d, want SeedDerive(7, run, %d) = %d", s, got, s, want)
		}
		before := append([]float32(nil), w...)
		for i := range w {
			w[i] *= 0.5
		}
		lr *= 0.9
		loss := 1 / float64(s+1)
		d, err := rec.EndStep(stateWriter(t, w, lr), loss)
		check(t, err)
		if d != stateDigest(t, w, lr) {
			t.Fatalf("step %d: EndStep digest", s)
		}
		// The recorder's leaf names the run and commits the update norm;
		// the same leaf built here (the norm by PROTOCOL.md section 13 by
		// hand) gives the same roots below.
		leaf, err := pot.StepLeaf{RunID: runID, Step: s, StateDigest: d, StatsDigest: statsDigest(t, w, lr), Loss: loss,
			UpdateNorm: updateNormF32(before, w)}.Encode()
		check(t, err)
		_, err = log.Append(leaf)
		check(t, err)
		states = append(states, d)
		losses = append(losses, loss)
	}
	_, err = rec.BeginStep(steps + 1)
	wantCode(t, err, pot.StatusOutOfRange) // past the declared steps
	if rec.Size() != steps {
		t.Fatalf("Size() = %d", rec.Size())
	}
	root, err := log.Root(steps)
	check(t, err)
	for size := uint64(1); size <= steps; size++ {
		got, err := rec.Root(size)
		check(t, err)
		want, err := log.Root(size)
		check(t, err)
		if got != want {
			t.Fatalf("Root(%d)", size)
		}
	}
	_, err = rec.Root(steps + 1)
	wantCode(t, err, pot.StatusOutOfRange)
	root1, err := rec.Root(1)
	check(t, err)
	proof, err := rec.ConsistencyProof(1, steps)
	check(t, err)
	check(t, pot.VerifyConsistency(1, steps, root1, root, proof))
	fin, err := rec.Finish()
	check(t, err)
	if fin != root {
		t.Fatal("Finish root")
	}
	rec.Close()
	wantCode(t, func() error { _, err := rec.Finish(); return err }(), pot.StatusState)
	if rec.Size() != 0 {
		t.Fatal("Size after Close")
	}

	cp, err := pot.OpenCheckpoints(ck)
	check(t, err)
	defer cp.Close()
	if cp.Size() != steps {
		t.Fatalf("Checkpoints.Size() = %d", cp.Size())
	}
	pre, n, err := cp.StatePath(1, data)
	check(t, err)
	if n != 0 || !strings.HasPrefix(pre, ck) {
		t.Fatalf("StatePath(1) = %q, %d", pre, n)
	}
	if d, err := pot.SafetensorsDigestFile(pre, 1); err != nil || d != states[1] {
		t.Fatalf("S_1 file digests to %s (%v)", d, err)
	}
	_, _, err = cp.StatePath(steps+1, data)
	wantCode(t, err, pot.StatusOutOfRange)
	_, err = cp.Opening(0, steps, data, false)
	wantCode(t, err, pot.StatusOutOfRange)
	// A miner's claims in a ledger dispute: each committed leaf and its
	// proof in the sealed root (docs/ledger.md 2.13).
	for s := uint64(1); s <= steps; s++ {
		leaf, proof, err := cp.Leaf(s, steps)
		check(t, err)
		decoded, err := pot.DecodeStepLeaf(leaf)
		check(t, err)
		if decoded.Step != s || decoded.StateDigest != states[s] || decoded.RunID != runID {
			t.Fatalf("Leaf(%d) = %+v", s, decoded)
		}
		h, err := pot.LeafHash(leaf)
		check(t, err)
		check(t, pot.VerifyInclusion(s-1, steps, h, proof, root))
	}
	for _, bad := range [][2]uint64{{0, steps}, {steps + 1, steps}, {2, 1}, {1, steps + 1}} {
		_, _, err = cp.Leaf(bad[0], bad[1])
		wantCode(t, err, pot.StatusOutOfRange)
	}

	const step = 2
	m, err := cp.Opening(step, steps, data, true)
	check(t, err)
	post, _, err := cp.StatePath(step, data)
	check(t, err)
	c, err := pot.VerifyOpening(commitment, step, steps, root, m, pre, post, 1)
	if err != nil || c != pot.CheckOK {
		t.Fatalf("VerifyOpening of the served opening: %v, %v", c, err)
	}
	// VerifyStep gets past every check of VerifyOpening and the spec, and
	// stops at the program, which is not TorchScript: the task's (its digest
	// is the spec's), check 30.
	res, err := pot.VerifyStep(commitment, spec, program, step, steps, root, m, pre, post, pot.VerifyBitwise, 0)
	wantCode(t, err, pot.StatusInvalidArgument)
	if res.Check != pot.CheckTaskProgram || res.Replayed || res.CommittedStateDigest != states[step] ||
		res.CommittedLoss != losses[step] {
		t.Fatalf("VerifyStep: %+v (%v)", res, err)
	}
	// Another spec than the commitment's.
	res, err = pot.VerifyStep(commitment, mustSpec(t, pot.Digest{1}), program, step, steps, root, m, pre, post,
		pot.VerifyBitwise, 0)
	wantCode(t, err, pot.StatusProofMismatch)
	if res.Check != pot.CheckSpec {
		t.Fatalf("VerifyStep with another spec: %+v (%v)", res, err)
	}
	// A wrong pre-state: the checks of VerifyOpening come first.
	res, err = pot.VerifyStep(commitment, spec, program, step, steps, root, m, post, "", pot.VerifyBitwise, 0)
	wantCode(t, err, pot.StatusProofMismatch)
	if res.Check != pot.CheckPreStateDigest {
		t.Fatalf("VerifyStep with S_2 as the pre-state: %+v (%v)", res, err)
	}
	// What the member witnesses (PROTOCOL.md section 19): the failed check,
	// in this process's environment (threads 0: the spec's).
	runID, err = commitment.RunID()
	check(t, err)
	st, err := pot.WitnessStatement(res, spec, runID, step, 4, pot.VerifyBitwise, 0)
	check(t, err)
	var got map[string]any
	check(t, json.Unmarshal([]byte(st), &got))
	fw, err := pot.FrameworkVersion()
	check(t, err)
	hw, err := pot.HardwareClass()
	check(t, err)
	env := got["environment"].(map[string]any)
	if got["kind"] != "invalid_opening" || got["check"] != "pre_state_digest" || got["challenge_id"] != 4.0 ||
		env["framework_version"] != fw || env["hardware_class"] != hw || env["intra_op_threads"] != 1.0 {
		t.Fatalf("WitnessStatement: %s", st)
	}
	salt, err := pot.WitnessSalt()
	check(t, err)
	wc, err := pot.WitnessCommitment(st, salt, []byte("go"))
	check(t, err)
	check(t, pot.VerifyWitnessReveal(wc, st, salt, []byte("go")))
	// The norm-bucket path needs the served S_t: refused before any check.
	res, err = pot.VerifyStep(commitment, spec, program, step, steps, root, m, pre, "", pot.VerifyNormBucket, 0)
	wantCode(t, err, pot.StatusInvalidArgument)
	if res.Check != pot.CheckOK {
		t.Fatalf("VerifyStep without post-state: %+v", res)
	}
	cp.Close()
	_, err = cp.Opening(step, steps, data, false)
	wantCode(t, err, pot.StatusState)

	// The directory reopened as after a crash: the run continues after its
	// last checkpoint (every step here), with the same log.
	r2, at, path, err := pot.ResumeRecorder(ck)
	check(t, err)
	defer r2.Close()
	if at != steps || r2.Size() != steps || !strings.HasSuffix(path, fmt.Sprintf("checkpoints/%012d.safetensors", steps)) {
		t.Fatalf("ResumeRecorder: step %d, size %d, state %s", at, r2.Size(), path)
	}
	if got, err := r2.Root(steps); err != nil || got != root {
		t.Fatalf("resumed root %v (%v), want %v", got, err, root)
	}
	_, _, _, err = pot.ResumeRecorder(filepath.Join(dir, "nothing-here"))
	wantCode(t, err, pot.StatusNotFound)
}

// fixture is the directory tests/replay/make_fixture.sh prepares.
type fixture struct {
	dir    string
	run    string
	record struct {
		RunID pot.Digest `json:"run_id"`
		Root  pot.Digest `json:"root"`
		Size  uint64     `json:"size"`
	}
	meta struct {
		DatasetSize uint64   `json:"dataset_size"`
		ForwardArgs []string `json:"forward_args"`
		LossBits    []string `json:"loss_bits"`
	}
	schedule [][][]uint64
}

func loadFixture(t *testing.T) *fixture {
	t.Helper()
	dir := os.Getenv("POT_REPLAY_FIXTURE")
	if dir == "" {
		t.Skip("POT_REPLAY_FIXTURE is not set: skipping the end-to-end replay test " +
			"(make one with tests/replay/make_fixture.sh BUILD_DIR OUT_DIR)")
	}
	if !pot.ReplayAvailable() {
		t.Fatal("POT_REPLAY_FIXTURE is set but the loaded libpot was built without LibTorch")
	}
	f := &fixture{dir: dir, run: filepath.Join(dir, "run")}
	readJSON := func(path string, v any) {
		b, err := os.ReadFile(path)
		check(t, err)
		check(t, json.Unmarshal(b, v))
	}
	readJSON(filepath.Join(dir, "record.json"), &f.record)
	readJSON(filepath.Join(f.run, "run.json"), &f.meta)
	readJSON(filepath.Join(f.run, "schedule.json"), &f.schedule)
	return f
}

func (f *fixture) statePath(step uint64) string {
	return filepath.Join(f.run, "states", fmt.Sprintf("%06d.safetensors", step))
}

// copyDir copies a directory tree of regular files.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	check(t, filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(to, rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}))
}

// TestReplayEndToEnd serves and verifies the opening of step 5 of the
// fixture's recorded run, and replays step 5 directly.
func TestReplayEndToEnd(t *testing.T) {
	f := loadFixture(t)
	const step = 5
	samples := filepath.Join(f.run, "samples")
	// A private copy of the checkpoint directory: re-derived states are
	// cached in it, and the counts below assume an empty cache.
	ck := filepath.Join(t.TempDir(), "ck")
	copyDir(t, filepath.Join(f.dir, "ck"), ck)

	specText, err := os.ReadFile(filepath.Join(f.run, "spec.json"))
	check(t, err)
	spec, err := pot.SpecFromJSON(string(specText))
	check(t, err)
	defer spec.Close()
	cb, err := os.ReadFile(filepath.Join(ck, "commitment.bin"))
	check(t, err)
	commitment, err := pot.DecodeCommitment(cb)
	check(t, err)
	defer commitment.Close()
	runID, err := commitment.RunID()
	check(t, err)
	if runID != f.record.RunID || f.record.Size != 6 {
		t.Fatalf("commitment.bin is for run %s, record.json says %s (size %d)", runID, f.record.RunID, f.record.Size)
	}
	program := filepath.Join(f.run, "program.pt")

	cp, err := pot.OpenCheckpoints(ck)
	check(t, err)
	defer cp.Close()
	if cp.Size() != f.record.Size {
		t.Fatalf("Checkpoints.Size() = %d, record.json %d", cp.Size(), f.record.Size)
	}
	// Checkpoints every 3 steps: S_4 is re-derived from S_3 (one replay),
	// then cached.
	pre, n, err := cp.StatePath(step-1, samples)
	check(t, err)
	if n != 1 {
		t.Fatalf("S_4 re-derived with %d replays, want 1", n)
	}
	m, err := cp.Opening(step, f.record.Size, samples, false)
	check(t, err)
	if again, n, err := cp.StatePath(step-1, samples); err != nil || again != pre || n != 0 {
		t.Fatalf("StatePath(4) again: %q, %d, %v", again, n, err)
	}
	want, err := pot.SafetensorsDigestFile(f.statePath(step), 0)
	check(t, err)

	c, err := pot.VerifyOpening(commitment, step, f.record.Size, f.record.Root, m, pre, "", 0)
	if err != nil || c != pot.CheckOK {
		t.Fatalf("VerifyOpening: %v, %v", c, err)
	}
	res, err := pot.VerifyStep(commitment, spec, program, step, f.record.Size, f.record.Root, m, pre, "",
		pot.VerifyBitwise, 0)
	if err != nil || res.Check != pot.CheckOK {
		t.Fatalf("VerifyStep: %+v, %v", res, err)
	}
	if !res.Replayed || res.Replay.PostStateDigest != res.CommittedStateDigest || res.CommittedStateDigest != want ||
		math.Float64bits(res.Replay.Loss) != math.Float64bits(res.CommittedLoss) {
		t.Fatalf("VerifyStep: %+v, want replayed state %s", res, want)
	}

	// The same manifest with the pre-state of another step (S_2, re-derived
	// from S_0 with two replays).
	other, n, err := cp.StatePath(2, samples)
	check(t, err)
	if n != 2 {
		t.Fatalf("S_2 re-derived with %d replays, want 2", n)
	}
	res, err = pot.VerifyStep(commitment, spec, program, step, f.record.Size, f.record.Root, m, other, "",
		pot.VerifyBitwise, 0)
	wantCode(t, err, pot.StatusProofMismatch)
	if res.Check != pot.CheckPreStateDigest || res.Replayed {
		t.Fatalf("VerifyStep with S_2 as the pre-state: %+v", res)
	}

	// The cross-architecture path, with S_5 served too.
	mp, err := cp.Opening(step, f.record.Size, samples, true)
	check(t, err)
	post, _, err := cp.StatePath(step, samples)
	check(t, err)
	res, err = pot.VerifyStep(commitment, spec, program, step, f.record.Size, f.record.Root, mp, pre, post,
		pot.VerifyNormBucket, 0)
	if err != nil || res.Check != pot.CheckOK || !res.Replayed ||
		!pot.NormBucketsMatch(res.CommittedNormBucket, res.Replay.NormBucket) {
		t.Fatalf("VerifyStep (norm bucket): %+v, %v", res, err)
	}

	// Replay step 5 directly from the trainer's S_4.
	r, err := pot.NewReplay(spec, program)
	check(t, err)
	defer r.Close()
	names, err := r.InputNames()
	check(t, err)
	if strings.Join(names, ",") != strings.Join(f.meta.ForwardArgs, ",") {
		t.Fatalf("InputNames() = %q, run.json forward_args %q", names, f.meta.ForwardArgs)
	}
	_, err = r.InputName(len(names))
	wantCode(t, err, pot.StatusOutOfRange)
	entry, err := pot.ScheduleEntry{Step: step, Microbatches: f.schedule[step-1]}.Encode(f.meta.DatasetSize)
	check(t, err)
	var batch [][]byte
	for _, mb := range f.schedule[step-1] {
		for _, idx := range mb {
			b, err := os.ReadFile(filepath.Join(samples, fmt.Sprintf("%06d.safetensors", idx)))
			check(t, err)
			batch = append(batch, b)
		}
	}
	s5, err := pot.OpenSafetensors(f.statePath(step))
	check(t, err)
	i, err := s5.Find("hparam/lr")
	check(t, err)
	lrBytes, err := s5.TensorData(i)
	check(t, err)
	s5.Close()
	// torch's scheduler wrote the spec's rate of step 6 into S_5.
	rates, err := spec.LearningRates(step+1, 1)
	check(t, err)
	if held := math.Float64frombits(binary.LittleEndian.Uint64(lrBytes)); held != rates[0] {
		t.Fatalf("S_%d holds hparam/lr %v, the spec's rate of step %d is %v", step, held, step+1, rates[0])
	}

	out := filepath.Join(t.TempDir(), "s5.safetensors")
	// Under per_step the seed names the run: a step without its run is refused.
	_, err = r.Step(nil, f.statePath(step-1), entry, batch, "")
	wantCode(t, err, pot.StatusInvalidArgument)
	got, err := r.Step(&runID, f.statePath(step-1), entry, batch, out)
	check(t, err)
	if got.PostStateDigest != want {
		t.Fatalf("Replay.Step: state %s, want %s (the digest of states/000005.safetensors)", got.PostStateDigest, want)
	}
	// The step's gradient, which a witness states: set, and the same on a
	// second replay of the step (bitwise, one environment).
	again, err := r.Step(&runID, f.statePath(step-1), entry, batch, "")
	check(t, err)
	if got.GradientDigest == (pot.Digest{}) || again.GradientDigest != got.GradientDigest {
		t.Fatalf("Replay.Step: gradient digests %s and %s", got.GradientDigest, again.GradientDigest)
	}
	if d, err := pot.SafetensorsDigestFile(out, 0); err != nil || d != want {
		t.Fatalf("written S_5 digests to %s (%v)", d, err)
	}
	bits, err := strconv.ParseUint(f.meta.LossBits[step-1], 16, 64)
	check(t, err)
	if math.Float64bits(got.Loss) != bits {
		t.Fatalf("Replay.Step: loss %v (%016x), run.json %s", got.Loss, math.Float64bits(got.Loss), f.meta.LossBits[step-1])
	}
	if got != res.Replay {
		t.Fatalf("Replay.Step %+v differs from VerifyStep's replay %+v", got, res.Replay)
	}
	// Check 27's evidence: the honest step's gradient moved parameters.
	own, err := spec.LearningRates(step, 1)
	check(t, err)
	if g := got.Gradient; g.Ignored || g.GradientElements == 0 || g.GradientElements > g.ParamElements ||
		g.LearningRate != own[0] {
		t.Fatalf("Replay.Step gradient trace %+v (rate of the step %v)", g, own[0])
	}
	// A batch that does not fit the entry.
	_, err = r.Step(&runID, f.statePath(step-1), entry, batch[1:], "")
	wantCode(t, err, pot.StatusInvalidArgument)
	r.Close()
	_, err = r.Step(&runID, f.statePath(step-1), entry, batch, "")
	wantCode(t, err, pot.StatusState)
}

// A StepInput (pot_step_input) holds one parsed sample per index of its
// entry: a bad sample is refused as it is added, naming its position and
// dataset index, and one too many with StatusOutOfRange. No LibTorch needed.
func TestStepInputHoldsOneParsedSamplePerIndex(t *testing.T) {
	w, err := pot.NewSafetensorsWriter()
	check(t, err)
	defer w.Close()
	x := make([]byte, 8)
	binary.LittleEndian.PutUint32(x[0:], math.Float32bits(1))
	binary.LittleEndian.PutUint32(x[4:], math.Float32bits(2))
	check(t, w.Add("x", pot.DTypeF32, []uint64{2}, x))
	good, err := w.Bytes()
	check(t, err)
	entry, err := pot.ScheduleEntry{Step: 7, Microbatches: [][]uint64{{3, 5}}}.Encode(0)
	check(t, err)
	in, err := pot.NewStepInput(&pot.Digest{}, filepath.Join(t.TempDir(), "pre.safetensors"), entry, [][]byte{good})
	check(t, err)
	defer in.Close()
	if in.Step() != 7 || in.SampleCount() != 1 {
		t.Fatalf("step %d, %d samples; want 7, 1", in.Step(), in.SampleCount())
	}
	err = in.AddSample(good[:5])
	wantCode(t, err, pot.StatusMalformed)
	if !strings.Contains(err.Error(), "sample 1 (dataset index 5)") {
		t.Fatalf("error %q does not name the sample", err)
	}
	check(t, in.AddSample(good))
	err = in.AddSample(good)
	wantCode(t, err, pot.StatusOutOfRange)
	if in.SampleCount() != 2 {
		t.Fatalf("%d samples after refusals, want 2", in.SampleCount())
	}
	_, err = pot.NewStepInput(nil, "pre", entry[:len(entry)-1], nil)
	wantCode(t, err, pot.StatusMalformed)
	check(t, in.Close())
	if err := in.AddSample(good); err == nil {
		t.Fatal("AddSample on a closed StepInput succeeded")
	}
}
