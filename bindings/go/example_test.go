package pot_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// The worked example of PROTOCOL.md section 4.1: tensor "w", F32, shape
// [2, 2], values 1, 2, 3, 4.
func ExampleTensorDigest() {
	data := make([]byte, 0, 16)
	for _, v := range []float32{1, 2, 3, 4} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	d, err := pot.TensorDigest("w", pot.DTypeF32, []uint64{2, 2}, data, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(d)
	// Output:
	// 1cce9ab68b0933c7c9434fea0abd5f4775be58eb2755b33203e8edf35545d8be
}

// A state digest, and the proof that one tensor belongs to it.
func ExampleState() {
	st, err := pot.NewState()
	if err != nil {
		panic(err)
	}
	defer st.Close()
	w := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40, 0, 0, 0x80, 0x40} // 1, 2, 3, 4 as F32
	if err := st.AddTensor("w", pot.DTypeF32, []uint64{2, 2}, w); err != nil {
		panic(err)
	}
	if err := st.AddTensor("b", pot.DTypeU8, []uint64{2}, []byte{1, 2}); err != nil {
		panic(err)
	}
	digest, _ := st.Digest()
	proof, _ := st.TensorProof("w")
	td, _ := pot.TensorDigest("w", pot.DTypeF32, []uint64{2, 2}, w, 0)
	fmt.Println(digest)
	fmt.Println(len(proof), pot.VerifyTensorProof(digest, td, proof))
	// Output:
	// 81e9031b321acf500bd8b98c1cdce9455f3484ba54e54084947c4cd195aca057
	// 80 <nil>
}

// Build a tree, prove a leaf and verify the proof; a proof of the wrong
// length is refused with StatusProofLength.
func ExampleVerifyInclusion() {
	tree, err := pot.NewMemoryTree()
	if err != nil {
		panic(err)
	}
	defer tree.Close()
	for _, leaf := range []string{"a", "b", "c", "d", "e"} {
		if _, err := tree.Append([]byte(leaf)); err != nil {
			panic(err)
		}
	}
	root, _ := tree.Root(5)
	proof, _ := tree.InclusionProof(2, 5)
	leafHash, _ := pot.LeafHash([]byte("c"))
	fmt.Println("root", root)
	fmt.Println("hashes", len(proof)/pot.DigestSize, "verify:", pot.VerifyInclusion(2, 5, leafHash, proof, root))

	err = pot.VerifyInclusion(2, 5, leafHash, proof[:32], root)
	var perr *pot.Error
	if errors.As(err, &perr) {
		fmt.Println(perr.Code, errors.Is(err, pot.ErrProofLength))
	}
	// Output:
	// root fe14a5426fbd70c0fa73f52342afed0da0bd23c4838662ccf6b88a3070ead97b
	// hashes 3 verify: <nil>
	// POT_E_PROOF_LENGTH true
}

// A malformed hex digest.
func ExampleParseDigest() {
	_, err := pot.ParseDigest("not hex")
	fmt.Println(errors.Is(err, pot.ErrMalformed))
	d, _ := pot.ParseDigest("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855")
	fmt.Println(d)
	// Output:
	// true
	// e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
}

// Challenged steps drawn from a beacon (the first vector of
// tests/vectors/protocol.json).
func ExampleChallengeDerive() {
	runID, _ := pot.ParseDigest("66b1eb530fb748a4f238f08cb2d42e447d5ab5f350d6cf89623200d5332a6920")
	beacon := []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	steps, err := pot.ChallengeDerive(beacon, runID, 1000, 10)
	fmt.Println(steps, err)
	p, _ := pot.DetectionProbability(10000, 100, 448)
	fmt.Printf("%.4f\n", p)
	// Output:
	// [498 939 829 606 911 786 598 33 497 365] <nil>
	// 0.9900
}

// The reference ledger refuses a call with a specific status and leaves its
// state unchanged.
func ExampleLedger_Apply() {
	l, err := pot.NewLedger(pot.LedgerConfig{DrawDelay: 1, OpeningWindow: 10, CommitWindow: 10, RevealWindow: 10, MaxCommitteeSize: 3, MinStake: 1, MaxRounds: 4, MaxAttempts: 2, DisputeWindow: 5, DisputeArity: 2,
		TaskBond: 10, MinerBond: 1000, DisputeBond: 100, MaxTaskBlocks: 100000, MaxOpenTasks: 8, MinerGrace: 10})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	_, err = l.Apply(`{"call": "finalize_challenge", "challenge_id": 0, "now": 1}`)
	fmt.Println(errors.Is(err, pot.ErrNotFound))
	// Output:
	// true
}

// The model program digest a spec carries (PROTOCOL.md section 21.2).
func ExampleProgramDigestFile() {
	dir, err := os.MkdirTemp("", "pot-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.pt")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		panic(err)
	}
	d, err := pot.ProgramDigestFile(path)
	if err != nil {
		panic(err)
	}
	fmt.Println(d)
	// Output:
	// fdfe6bb1377b889ae8fb1ccec3a96526a75d1aa9acafb8fa67f4a12a67461824
}

// The miner serves the opening of a challenged step from its recorder's
// checkpoint directory; the verifier replays it (PROTOCOL.md section 21.5).
func ExampleVerifyStep() {
	var (
		spec       *pot.Spec       // SpecFromJSON of the run's spec
		commitment *pot.Commitment // DecodeCommitment of ck/commitment.bin
		root       pot.Digest      // the posted log root
		size       uint64          // ... of size leaves
		step       uint64          // the challenged step
	)
	// Miner.
	ck, err := pot.OpenCheckpoints("ck")
	if err != nil {
		panic(err) // StatusUnsupported: libpot without LibTorch
	}
	defer ck.Close()
	manifest, err := ck.Opening(step, size, "samples", false)
	if err != nil {
		panic(err)
	}
	pre, _, err := ck.StatePath(step-1, "samples") // the file the manifest names
	if err != nil {
		panic(err)
	}
	// Verifier.
	res, err := pot.VerifyStep(commitment, spec, "program.pt", step, size, root, manifest, pre, "",
		pot.VerifyBitwise, 0)
	if err != nil {
		fmt.Printf("step %d rejected at %v: %v\n", step, res.Check, err)
		return
	}
	fmt.Printf("step %d verified: replayed state %s\n", step, res.Replay.PostStateDigest)
}
