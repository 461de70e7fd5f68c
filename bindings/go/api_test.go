package pot_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

func TestVersion(t *testing.T) {
	if err := pot.ABIError(); err != nil {
		t.Fatal(err)
	}
	if pot.LoadedABIVersion() != pot.ABIVersion {
		t.Fatalf("loaded ABI %d, built for %d", pot.LoadedABIVersion(), pot.ABIVersion)
	}
	if v := pot.Version(); v == "" || strings.Count(v, ".") != 2 {
		t.Fatalf("Version() = %q", v)
	}
}

func TestErrors(t *testing.T) {
	// A malformed hex digest.
	for _, s := range []string{"", "00", strings.Repeat("g", 64), strings.Repeat("0", 65), "ab\x00cd"} {
		_, err := pot.ParseDigest(s)
		wantCode(t, err, pot.StatusMalformed)
		if !errors.Is(err, pot.ErrMalformed) || errors.Is(err, pot.ErrProofMismatch) {
			t.Fatalf("errors.Is on %v", err)
		}
	}
	// Either case parses; String is lower case.
	d, err := pot.ParseDigest(strings.Repeat("aB", 32))
	check(t, err)
	if d.String() != strings.Repeat("ab", 32) {
		t.Fatalf("String() = %s", d)
	}

	// A proof of the wrong length: leaf 0 of 2 needs one hash.
	lh, err := pot.LeafHash([]byte("a"))
	check(t, err)
	err = pot.VerifyInclusion(0, 2, lh, nil, lh)
	wantCode(t, err, pot.StatusProofLength)
	var pe *pot.Error
	if !errors.As(err, &pe) || pe.Code.String() != "POT_E_PROOF_LENGTH" {
		t.Fatalf("code name %v", pe.Code)
	}
	if !strings.Contains(err.Error(), "POT_E_PROOF_LENGTH") || !strings.Contains(err.Error(), pe.Message) {
		t.Fatalf("Error() = %q", err.Error())
	}
	if !errors.Is(err, pot.ErrProofLength) || errors.Is(err, pot.ErrProofMismatch) {
		t.Fatal("errors.Is does not compare codes")
	}
	// Wrapped errors still match.
	wrapped := errors.Join(errors.New("context"), err)
	if !errors.Is(wrapped, pot.ErrProofLength) || !errors.As(wrapped, &pe) {
		t.Fatal("wrapped error lost its code")
	}
	// Not a whole number of hashes; too many hashes; a wrong hash.
	wantCode(t, pot.VerifyInclusion(0, 2, lh, make([]byte, 33), lh), pot.StatusMalformed)
	wantCode(t, pot.VerifyInclusion(0, 2, lh, make([]byte, 129*32), lh), pot.StatusLimit)
	wantCode(t, pot.VerifyInclusion(0, 2, lh, make([]byte, 32), lh), pot.StatusProofMismatch)
	wantCode(t, pot.VerifyInclusion(2, 2, lh, nil, lh), pot.StatusOutOfRange)
	wantCode(t, pot.VerifyConsistency(0, 2, lh, lh, nil), pot.StatusOutOfRange)
	_, err = pot.SplitProof(make([]byte, 31))
	wantCode(t, err, pot.StatusMalformed)

	// Names of the codes.
	for code, name := range map[pot.Status]string{
		pot.StatusOK: "POT_OK", pot.StatusInvalidArgument: "POT_E_INVALID_ARGUMENT",
		pot.StatusConflict: "POT_E_CONFLICT", pot.StatusNonFinite: "POT_E_NONFINITE", pot.Status(999): "POT_E_UNKNOWN",
	} {
		if code.String() != name {
			t.Errorf("%d.String() = %s, want %s", uint32(code), code, name)
		}
	}
	// NUL bytes cannot cross the C API.
	_, err = pot.TensorDigest("a\x00b", pot.DTypeU8, []uint64{1}, []byte{1}, 1)
	wantCode(t, err, pot.StatusInvalidArgument)
}

func TestDigestText(t *testing.T) {
	d, err := pot.Sha256([]byte("abc"))
	check(t, err)
	if d.String() != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("sha256(abc) = %v", d)
	}
	b, err := json.Marshal(map[string]pot.Digest{"d": d})
	check(t, err)
	var back map[string]pot.Digest
	check(t, json.Unmarshal(b, &back))
	if back["d"] != d {
		t.Fatal("JSON round trip")
	}
	err = json.Unmarshal([]byte(`{"d": "zz"}`), &back)
	if !errors.Is(err, pot.ErrMalformed) {
		t.Fatalf("bad JSON digest: %v", err)
	}
	if p := pot.JoinProof([]pot.Digest{d, d}); len(p) != 64 {
		t.Fatal("JoinProof")
	} else if hs, err := pot.SplitProof(p); err != nil || len(hs) != 2 || hs[1] != d {
		t.Fatal("SplitProof")
	}
}

func TestDTypes(t *testing.T) {
	for _, c := range []struct {
		t    pot.DType
		name string
		size int
	}{{pot.DTypeBool, "BOOL", 1}, {pot.DTypeI16, "I16", 2}, {pot.DTypeBF16, "BF16", 2}, {pot.DTypeF32, "F32", 4},
		{pot.DTypeU64, "U64", 8}, {pot.DTypeF64, "F64", 8}} {
		if c.t.String() != c.name || c.t.Size() != c.size {
			t.Errorf("%d: %s %d", uint32(c.t), c.t, c.t.Size())
		}
		if p, err := pot.ParseDType(c.name); err != nil || p != c.t {
			t.Errorf("ParseDType(%s) = %v, %v", c.name, p, err)
		}
	}
	if pot.DType(99).String() != "DType(99)" || pot.DType(99).Size() != 0 {
		t.Error("invalid dtype")
	}
	_, err := pot.ParseDType("F99")
	wantCode(t, err, pot.StatusUnsupported)
	// The byte count must match the shape.
	_, err = pot.TensorDigest("w", pot.DTypeF32, []uint64{2, 2}, make([]byte, 15), 0)
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.TensorDigest("w", pot.DTypeU8, make([]uint64, 33), nil, 0)
	wantCode(t, err, pot.StatusLimit)
	// JSON text past MaxJSONBytes is refused before parsing.
	l, err := pot.NewLedger(pot.LedgerConfig{DrawDelay: 1, OpeningWindow: 1, CommitWindow: 1, RevealWindow: 1, MaxCommitteeSize: 1, MinStake: 1, MaxRounds: 1, MaxAttempts: 1, DisputeWindow: 1, DisputeArity: 2, TaskBond: 1, MinerBond: 1, DisputeBond: 1, MaxTaskBlocks: 1, MaxOpenTasks: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Apply(strings.Repeat(" ", pot.MaxJSONBytes) + "{}")
	wantCode(t, err, pot.StatusLimit)
}

func f32bytes(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func TestSafetensors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.safetensors")
	w, err := pot.NewSafetensorsWriter()
	check(t, err)
	data := f32bytes(1, 2, 3, 4)
	check(t, w.Add("w", pot.DTypeF32, []uint64{2, 2}, data))
	check(t, w.Add("b", pot.DTypeU8, []uint64{3}, []byte{7, 8, 9}))
	check(t, w.Add("empty", pot.DTypeF16, []uint64{0}, nil))
	wantCode(t, w.Add("b", pot.DTypeU8, []uint64{1}, []byte{1}), pot.StatusDuplicate)
	check(t, w.SetMetadata("format", "pt"))
	// The writer copied the data: changing the slice now changes nothing.
	data[0] = 0xff
	check(t, w.Write(path))
	inMemory, err := w.Bytes()
	check(t, err)
	if onDisk, _ := os.ReadFile(path); string(onDisk) != string(inMemory) {
		t.Fatal("SafetensorsWriter.Bytes is not the file Write wrote")
	}
	check(t, w.Close())
	check(t, w.Close())
	wantCode(t, w.Write(path), pot.StatusState)

	f, err := pot.OpenSafetensors(path)
	check(t, err)
	defer f.Close()
	if f.Count() != 3 {
		t.Fatalf("Count = %d", f.Count())
	}
	// Bytewise name order: b, empty, w.
	info, err := f.Tensor(2)
	check(t, err)
	if info.Name != "w" || info.DType != pot.DTypeF32 || len(info.Shape) != 2 || info.Shape[0] != 2 || info.NBytes != 16 {
		t.Fatalf("Tensor(2) = %+v", info)
	}
	got, err := f.TensorData(2)
	check(t, err)
	if !bytes.Equal(got, f32bytes(1, 2, 3, 4)) {
		t.Fatalf("TensorData = %x", got)
	}
	if info, err := f.Tensor(1); err != nil || info.Name != "empty" || info.NBytes != 0 || len(info.Shape) != 1 {
		t.Fatalf("Tensor(1) = %+v, %v", info, err)
	}
	if i, err := f.Find("b"); err != nil || i != 0 {
		t.Fatalf("Find(b) = %d, %v", i, err)
	}
	_, err = f.Find("nope")
	wantCode(t, err, pot.StatusNotFound)
	_, err = f.Tensor(3)
	wantCode(t, err, pot.StatusOutOfRange)
	_, err = f.Tensor(-1)
	wantCode(t, err, pot.StatusOutOfRange)
	if m, err := f.Metadata("format"); err != nil || m != "pt" {
		t.Fatalf("Metadata = %q, %v", m, err)
	}
	_, err = f.Metadata("other")
	wantCode(t, err, pot.StatusNotFound)

	// The file digest equals a State with the same tensors.
	st, err := pot.NewState()
	check(t, err)
	defer st.Close()
	check(t, st.SetThreads(1))
	check(t, st.AddTensor("w", pot.DTypeF32, []uint64{2, 2}, f32bytes(1, 2, 3, 4)))
	td, err := pot.TensorDigest("b", pot.DTypeU8, []uint64{3}, []byte{7, 8, 9}, 0)
	check(t, err)
	check(t, st.AddTensorDigest("b", td))
	check(t, st.AddTensor("empty", pot.DTypeF16, []uint64{0}, nil))
	want, err := st.Digest()
	check(t, err)
	if d, err := f.Digest(0); err != nil || d != want {
		t.Fatalf("Digest = %v, %v; want %v", d, err, want)
	}
	_, err = st.TensorProof("nope")
	wantCode(t, err, pot.StatusNotFound)
	wantCode(t, st.AddTensor("w", pot.DTypeF32, []uint64{1}, f32bytes(1)), pot.StatusDuplicate)

	// Errors opening files.
	_, err = pot.OpenSafetensors(filepath.Join(dir, "missing"))
	wantCode(t, err, pot.StatusIO)
	bad := filepath.Join(dir, "bad.safetensors")
	check(t, os.WriteFile(bad, []byte("\x02\x00\x00\x00\x00\x00\x00\x00{]"), 0o644))
	_, err = pot.SafetensorsDigestFile(bad, 0)
	wantCode(t, err, pot.StatusMalformed)

	// After Close: errors and zero values, never a crash.
	check(t, f.Close())
	if f.Count() != 0 {
		t.Fatal("Count after Close")
	}
	_, err = f.Digest(0)
	wantCode(t, err, pot.StatusState)
}

func TestUpdateNorm(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, vs ...float32) *pot.Safetensors {
		w, err := pot.NewSafetensorsWriter()
		check(t, err)
		defer w.Close()
		check(t, w.Add("model.w", pot.DTypeF32, []uint64{uint64(len(vs))}, f32bytes(vs...)))
		check(t, w.Add("step", pot.DTypeI64, nil, make([]byte, 8)))
		p := filepath.Join(dir, name)
		check(t, w.Write(p))
		f, err := pot.OpenSafetensors(p)
		check(t, err)
		return f
	}
	pre := write("pre", 1, 2, 3)
	defer pre.Close()
	post := write("post", 1, 5, 7)
	defer post.Close()
	norm, err := pot.UpdateNorm(pre, post, "")
	check(t, err)
	if norm != 5 { // sqrt(0 + 9 + 16)
		t.Fatalf("norm = %v, want 5", norm)
	}
	if n, err := pot.UpdateNorm(pre, pre, "model."); err != nil || n != 0 {
		t.Fatalf("norm of no update = %v, %v", n, err)
	}
	_, err = pot.UpdateNorm(pre, post, "nothing.")
	wantCode(t, err, pot.StatusInvalidArgument)
	b, err := pot.NormBucket(norm, 16)
	check(t, err)
	if b != int64(math.Floor(16*math.Log2(5))) {
		t.Fatalf("bucket %d", b)
	}
	if !pot.NormBucketsMatch(b, b+1) || pot.NormBucketsMatch(b, b+2) {
		t.Fatal("adjacent buckets")
	}
	if z, err := pot.NormBucket(0, 16); err != nil || z != pot.NormBucketZero {
		t.Fatalf("bucket(0) = %d, %v", z, err)
	}
	if z, err := pot.NormBucket(math.NaN(), 16); err != nil || z != pot.NormBucketNonFinite {
		t.Fatalf("bucket(NaN) = %d, %v", z, err)
	}
	if pot.NormBucketsMatch(pot.NormBucketZero, pot.NormBucketZero+1) {
		t.Fatal("sentinels match only themselves")
	}
	_, err = pot.NormBucket(-1, 16)
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.NormBucket(1, 0)
	wantCode(t, err, pot.StatusInvalidArgument)
}

func TestTreeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.tree")
	tr, err := pot.OpenTree(path)
	check(t, err)
	for i := 0; i < 5; i++ {
		idx, err := tr.Append([]byte{byte(i)})
		check(t, err)
		if idx != uint64(i) {
			t.Fatalf("index %d", idx)
		}
	}
	check(t, tr.Flush())
	root5, err := tr.Root(5)
	check(t, err)
	_, err = tr.Root(6)
	wantCode(t, err, pot.StatusOutOfRange)
	_, err = tr.LeafHash(5)
	wantCode(t, err, pot.StatusOutOfRange)
	_, err = tr.ConsistencyProof(0, 5)
	wantCode(t, err, pot.StatusOutOfRange)
	check(t, tr.Close())
	check(t, tr.Close())
	_, err = tr.Append(nil)
	wantCode(t, err, pot.StatusState)

	// Reopened, the file holds the same tree and keeps growing.
	tr, err = pot.OpenTree(path)
	check(t, err)
	defer tr.Close()
	if tr.Size() != 5 {
		t.Fatalf("reopened size %d", tr.Size())
	}
	if r, _ := tr.Root(5); r != root5 {
		t.Fatal("reopened root differs")
	}
	lh, err := pot.LeafHash([]byte{5})
	check(t, err)
	_, err = tr.AppendHash(lh)
	check(t, err)
	if got, _ := tr.LeafHash(5); got != lh {
		t.Fatal("LeafHash")
	}
	root6, _ := tr.Root(6)
	proof, err := tr.ConsistencyProof(5, 6)
	check(t, err)
	check(t, pot.VerifyConsistency(5, 6, root5, root6, proof))
	wantCode(t, pot.VerifyConsistency(5, 6, root6, root6, proof), pot.StatusProofMismatch)

	// A file that is not a tree file.
	bad := filepath.Join(t.TempDir(), "bad.tree")
	check(t, os.WriteFile(bad, []byte("not a tree file at all"), 0o644))
	_, err = pot.OpenTree(bad)
	wantCode(t, err, pot.StatusMalformed)
}

func TestLogErrors(t *testing.T) {
	l, err := pot.NewLog()
	check(t, err)
	lh, _ := pot.LeafHash(nil)
	check(t, l.AppendHash(lh))
	check(t, l.Append(nil))
	if l.Size() != 2 {
		t.Fatal("size")
	}
	check(t, l.Close())
	if l.Size() != 0 {
		t.Fatal("size after Close")
	}
	_, err = l.Root()
	wantCode(t, err, pot.StatusState)
	_, err = pot.LoadLog([]byte{1, 2, 3})
	wantCode(t, err, pot.StatusMalformed)
}

func TestProtocolErrors(t *testing.T) {
	var id pot.Digest
	_, err := pot.ChallengeDerive(nil, id, 10, 1)
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.ChallengeDerive([]byte("b"), id, 3, 4)
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.ChallengeDerive([]byte("b"), id, 1<<40, pot.MaxChallengeRounds+1)
	wantCode(t, err, pot.StatusLimit)
	_, err = pot.ChallengeDerive(make([]byte, pot.MaxBeaconBytes+1), id, 10, 1)
	wantCode(t, err, pot.StatusLimit)
	_, err = pot.StepLeaf{Step: 0}.Encode()
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.StepLeaf{Step: 1, UpdateNorm: math.Copysign(0, -1)}.Encode() // a norm's sign bit is clear
	wantCode(t, err, pot.StatusInvalidArgument)
	v1 := append(append([]byte{11}, "pot/v1/step"...), make([]byte, 48)...) // protocol 1: no run, no norm
	_, err = pot.DecodeStepLeaf(v1)
	wantCode(t, err, pot.StatusMalformed)
	_, err = pot.ChallengesNeeded(100, 0, 0.5)
	wantCode(t, err, pot.StatusInvalidArgument)
	if b, err := pot.SecurityBond(100, 0.25); err != nil || b != 300 {
		t.Errorf("SecurityBond(100, 0.25) = %d, %v; want 300", b, err)
	}
	_, err = pot.SecurityBond(1, 0)
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.SecurityBond(math.MaxUint64, 1e-3)
	wantCode(t, err, pot.StatusOutOfRange)
	_, err = pot.DecodeScheduleEntry([]byte("nope"))
	wantCode(t, err, pot.StatusMalformed)
	_, err = pot.SampleDigest([]byte("nope"))
	wantCode(t, err, pot.StatusMalformed)
	_, err = pot.CommitmentFromJSON(`{}`)
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.DecodeCommitment([]byte{0xff})
	wantCode(t, err, pot.StatusMalformed)
}

func TestVerdict(t *testing.T) {
	committed, _ := pot.Sha256([]byte("S_t"))
	other, _ := pot.Sha256([]byte("other"))

	v, err := pot.NewVerdict(pot.WitnessBitwise, 2)
	check(t, err)
	defer v.Close()
	check(t, v.AddReveal([]byte("alice"), committed, 0))
	check(t, v.AddReveal([]byte("bob"), committed, 0))
	check(t, v.AddReveal([]byte("carol"), other, 0))
	d, err := v.Decide(&committed, nil)
	check(t, err)
	if d.Outcome != pot.VerdictPass || d.ClusterSize != 2 || d.Reason == "" || d.Outcome.String() != "PASS" {
		t.Fatalf("decision %+v", d)
	}
	d, err = v.Decide(&other, nil)
	check(t, err)
	if d.Outcome != pot.VerdictFail {
		t.Fatalf("decision %+v", d)
	}
	_, err = v.Decide(nil, nil)
	wantCode(t, err, pot.StatusInvalidArgument)
	check(t, v.AddReveal([]byte("alice"), committed, 0))
	_, err = v.Decide(&committed, nil)
	wantCode(t, err, pot.StatusInvalidArgument)

	nb, err := pot.NewVerdict(pot.WitnessNormBucket, 2)
	check(t, err)
	defer nb.Close()
	check(t, nb.AddReveal([]byte("alice"), other, -1199))
	check(t, nb.AddReveal([]byte("bob"), committed, -1199))
	bucket := int64(-1200) // of the opened leaf's committed update norm
	d, err = nb.Decide(nil, &bucket)
	check(t, err)
	if d.Outcome != pot.VerdictPass || d.ClusterSize != 2 {
		t.Fatalf("norm-bucket decision %+v", d)
	}
	check(t, nb.AddReveal([]byte("carol"), committed, 5))
	check(t, nb.AddReveal([]byte("dave"), committed, 5))
	d, err = nb.Decide(nil, &bucket)
	check(t, err)
	if d.Outcome != pot.VerdictInconclusive || d.Outcome.String() != "INCONCLUSIVE" {
		t.Fatalf("tie decision %+v", d)
	}
	if pot.WitnessNormBucket.String() != "norm_bucket" {
		t.Fatal("mode name")
	}

	salt, err := pot.WitnessSalt()
	check(t, err)
	salt2, err := pot.WitnessSalt()
	check(t, err)
	if len(salt) != pot.WitnessSaltSize || bytes.Equal(salt, salt2) {
		t.Fatal("salts")
	}
	st := `{"run_id": "` + strings.Repeat("ab", 32) + `", "step": 3, "challenge_id": 1, "mode": "bitwise",
		"environment": {"framework_version": "1.13.0", "intra_op_threads": 1, "hardware_class": "cpu"},
		"kind": "unavailable"}`
	c, err := pot.WitnessCommitment(st, salt, []byte("id"))
	check(t, err)
	check(t, pot.VerifyWitnessReveal(c, st, salt, []byte("id")))
	_, err = pot.WitnessCommitment(st, salt[:8], []byte("id"))
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.WitnessCommitment(strings.Replace(st, `"unavailable"`, `"abstained"`, 1), salt, []byte("id"))
	wantCode(t, err, pot.StatusInvalidArgument)
	_, err = pot.WitnessCommitment(`{"run_id":`, salt, []byte("id"))
	wantCode(t, err, pot.StatusMalformed)
}

func TestLossCheck(t *testing.T) {
	p, err := pot.NewLossCheckParams()
	check(t, err)
	defer p.Close()
	if w, err := p.Get(pot.LossWindow); err != nil || w != 20 {
		t.Fatalf("default window %v, %v", w, err)
	}
	wantCode(t, p.Set(pot.LossWindow, 0), pot.StatusInvalidArgument)
	wantCode(t, p.Set(pot.LossWindow, 2.5), pot.StatusInvalidArgument)
	check(t, p.Set(pot.LossWindow, 10))
	if w, _ := p.Get(pot.LossWindow); w != 10 {
		t.Fatalf("window %v", w)
	}

	// A falling curve with a NaN at step 30 and a frozen stretch 61-80.
	losses := make([]float64, 100)
	for i := range losses {
		losses[i] = 3 * math.Exp(-float64(i)/40)
	}
	losses[29] = math.NaN()
	for i := 60; i < 80; i++ {
		losses[i] = 0.75
	}
	flags, err := p.Run(losses)
	check(t, err)
	kinds := map[pot.LossFlagKind][2]uint64{}
	for _, f := range flags {
		kinds[f.Kind] = [2]uint64{f.FirstStep, f.LastStep}
		if f.Message == "" || !strings.HasPrefix(f.String(), f.Kind.String()+" steps ") {
			t.Errorf("flag %v", f)
		}
	}
	if kinds[pot.LossNonFinite] != [2]uint64{30, 30} || kinds[pot.LossFrozen] != [2]uint64{61, 80} {
		t.Fatalf("flags %v", flags)
	}
	if pot.LossNonFinite.String() != "non_finite" || pot.LossFlagKind(77).String() != "unknown" {
		t.Fatal("flag names")
	}
	flags, err = pot.CheckLosses(nil, nil)
	check(t, err)
	if len(flags) != 0 {
		t.Fatal("flags of nothing")
	}
}

func TestClosedHandles(t *testing.T) {
	st, _ := pot.NewState()
	st.Close()
	wantCode(t, st.AddTensor("w", pot.DTypeU8, []uint64{1}, []byte{1}), pot.StatusState)
	if st.Count() != 0 {
		t.Fatal("Count")
	}
	spec, err := pot.SpecFromJSON(sampleSpecJSON)
	check(t, err)
	spec.Close()
	_, err = spec.Digest()
	wantCode(t, err, pot.StatusState)
	if spec.IntraOpThreads() != 0 {
		t.Fatal("IntraOpThreads after Close")
	}
	l, _ := pot.NewLedger(pot.LedgerConfig{DrawDelay: 1, OpeningWindow: 1, CommitWindow: 1, RevealWindow: 1, MaxCommitteeSize: 1, MinStake: 1, MaxRounds: 1, MaxAttempts: 1, DisputeWindow: 1, DisputeArity: 2, TaskBond: 1, MinerBond: 1, DisputeBond: 1, MaxTaskBlocks: 1, MaxOpenTasks: 1})
	l.Close()
	_, err = l.Apply(`{}`)
	wantCode(t, err, pot.StatusState)
	_, err = pot.NewLedger(pot.LedgerConfig{})
	wantCode(t, err, pot.StatusInvalidArgument)
	// The error names the field.
	_, err = pot.NewLedger(pot.LedgerConfig{DrawDelay: 1, CommitWindow: 1, RevealWindow: 1, MaxCommitteeSize: 1, MinStake: 1, MaxRounds: 1, MaxAttempts: 1, DisputeWindow: 1, DisputeArity: 2, TaskBond: 1, MinerBond: 1, DisputeBond: 1, MaxTaskBlocks: 1, MaxOpenTasks: 1})
	wantCode(t, err, pot.StatusInvalidArgument)
	if !strings.Contains(err.Error(), "opening_window") {
		t.Fatalf("the error does not name opening_window: %v", err)
	}
	// A referee is a hex identity: the config keeps it, and refuses another.
	withReferee := pot.LedgerConfig{DrawDelay: 1, OpeningWindow: 1, CommitWindow: 1, RevealWindow: 1, MaxCommitteeSize: 1, MinStake: 1, MaxRounds: 1, MaxAttempts: 1, DisputeWindow: 1, DisputeArity: 2, TaskBond: 1, MinerBond: 1, DisputeBond: 1, MaxTaskBlocks: 1, MaxOpenTasks: 1, Referee: "726566"}
	l, err = pot.NewLedger(withReferee)
	check(t, err)
	info, err := l.Apply(`{"call": "ledger_info"}`)
	check(t, err)
	if !strings.Contains(info, `"referee":"726566"`) {
		t.Fatalf("ledger_info does not give the referee: %s", info)
	}
	l.Close()
	withReferee.Referee = "not hex"
	_, err = pot.NewLedger(withReferee)
	wantCode(t, err, pot.StatusInvalidArgument)
	v, _ := pot.NewVerdict(pot.WitnessBitwise, 1)
	v.Close()
	wantCode(t, v.AddReveal([]byte("a"), pot.Digest{}, 0), pot.StatusState)
	o, _ := pot.NewOpening(pot.Digest{}, 1, 1, pot.Digest{})
	o.Close()
	_, err = o.Encode()
	wantCode(t, err, pot.StatusState)
	a, _ := pot.NewTensorAssembler("t", pot.DTypeU8, []uint64{1})
	a.Close()
	_, err = a.Finish()
	wantCode(t, err, pot.StatusState)
}

const sampleSpecJSON = `{"attention_backend": "math", "batch_size": 2, "dropout": 0.0, "dtype": "F32",
 "framework": "pytorch", "framework_version": "1.13.1", "hardware_class": "cpu-x86_64/aten:avx2/onednn:avx2", "intra_op_threads": 1,
 "model_program_digest": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
 "norm_bucket_resolution": 16, "optimizer": {"kind": "sgd", "lr": 0.1}, "seed_policy": {"kind": "none"}}`

// TestWorkedExampleIndependent recomputes PROTOCOL.md section 4.1 with
// crypto/sha256 only and compares it with TensorDigest.
func TestWorkedExampleIndependent(t *testing.T) {
	data := f32bytes(1, 2, 3, 4)
	chunkRoot := sha256.Sum256(append([]byte{0}, data...))
	body := []byte{1, 0, 0, 0, 'w', 12, 2, 0, 0, 0}
	body = append(body, u64le(2)...)
	body = append(body, u64le(2)...)
	body = append(body, u64le(16)...)
	body = append(body, 0, 0, 1, 0) // u32le(65536)
	body = append(body, chunkRoot[:]...)
	tag := "pot/v1/tensor"
	want := sha256.Sum256(append(append([]byte{byte(len(tag))}, tag...), body...))
	got, err := pot.TensorDigest("w", pot.DTypeF32, []uint64{2, 2}, data, 0)
	check(t, err)
	if got != pot.Digest(want) {
		t.Fatalf("TensorDigest = %v, independent %x", got, want)
	}
}
