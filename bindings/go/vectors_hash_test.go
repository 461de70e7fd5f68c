package pot_test

import (
	"bytes"
	"path/filepath"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

type tensorVector struct {
	Comment string   `json:"comment"`
	Name    string   `json:"name"`
	DType   string   `json:"dtype"`
	Shape   []uint64 `json:"shape"`
	Seed    string   `json:"seed"`
	NBytes  int      `json:"nbytes"`
	Digest  string   `json:"digest"`
}

type hashVectors struct {
	ChunkSize     int            `json:"chunk_size"`
	TensorDigests []tensorVector `json:"tensor_digests"`
	StateDigests  []struct {
		Comment      string   `json:"comment"`
		Tensors      []string `json:"tensors"`
		Digest       string   `json:"digest"`
		TensorProofs []struct {
			Tensor string `json:"tensor"`
			Proof  string `json:"proof"`
		} `json:"tensor_proofs"`
	} `json:"state_digests"`
	ChunkRanges []struct {
		Comment string `json:"comment"`
		Tensor  string `json:"tensor"`
		Records []struct {
			Offset uint64 `json:"offset"`
			Length uint64 `json:"length"`
			Record string `json:"record"`
		} `json:"records"`
		Digest string `json:"digest"`
	} `json:"chunk_ranges"`
	StateStats []struct {
		Comment string `json:"comment"`
		Table   string `json:"table"`
		Digest  string `json:"digest"`
	} `json:"state_stats"`
	StateFlags []struct {
		Comment string          `json:"comment"`
		Before  string          `json:"before"`
		After   string          `json:"after"`
		Flags   []pot.StateFlag `json:"flags"`
	} `json:"state_flags"`
	LogStates []struct {
		Leaves uint64 `json:"leaves"`
		Root   string `json:"root"`
		Saved  string `json:"saved"`
	} `json:"log_states"`
}

func (v tensorVector) dtype(t *testing.T) pot.DType {
	d, err := pot.ParseDType(v.DType)
	check(t, err)
	return d
}

func TestHashVectors(t *testing.T) {
	var v hashVectors
	loadVectors(t, "hash.json", &v)
	if v.ChunkSize != pot.ChunkSize {
		t.Fatalf("chunk_size %d, ChunkSize %d", v.ChunkSize, pot.ChunkSize)
	}
	tensors := map[string]tensorVector{}
	data := map[string][]byte{}
	for _, tv := range v.TensorDigests {
		tensors[tv.Name] = tv
		data[tv.Name] = stream(tv.Seed, tv.NBytes)
	}

	t.Run("tensor_digests", func(t *testing.T) {
		for _, tv := range v.TensorDigests {
			for _, threads := range []uint32{0, 1, 3} {
				got, err := pot.TensorDigest(tv.Name, tv.dtype(t), tv.Shape, data[tv.Name], threads)
				check(t, err)
				if got.String() != tv.Digest {
					t.Errorf("%s (%s, %d threads): %v, want %s", tv.Name, tv.Comment, threads, got, tv.Digest)
				}
			}
		}
		if len(v.TensorDigests) != 20 {
			t.Fatalf("%d tensor vectors, want 20", len(v.TensorDigests))
		}
	})

	t.Run("state_stats", func(t *testing.T) {
		for _, sv := range v.StateStats {
			s, err := pot.DecodeStateStats(mustHex(t, sv.Table))
			check(t, err)
			if s.Digest().String() != sv.Digest {
				t.Errorf("%s: digest %v, want %s", sv.Comment, s.Digest(), sv.Digest)
			}
		}
		for _, fv := range v.StateFlags {
			before, err := pot.DecodeStateStats(mustHex(t, fv.Before))
			check(t, err)
			after, err := pot.DecodeStateStats(mustHex(t, fv.After))
			check(t, err)
			got, err := pot.StateFlags(before, after)
			check(t, err)
			if len(got) != len(fv.Flags) {
				t.Fatalf("%s: %d flags, want %d", fv.Comment, len(got), len(fv.Flags))
			}
			for i := range got {
				g, w := got[i], fv.Flags[i]
				if g.Rule != w.Rule || g.Tensor != w.Tensor || *g.Before != *w.Before || *g.After != *w.After {
					t.Errorf("%s: flag %d %+v, want %+v", fv.Comment, i, g, w)
				}
			}
		}
		if len(v.StateStats) < 4 || len(v.StateFlags) < 4 {
			t.Fatalf("%d tables and %d flag cases", len(v.StateStats), len(v.StateFlags))
		}
	})

	t.Run("state_digests", func(t *testing.T) {
		dir := t.TempDir()
		for i, sv := range v.StateDigests {
			st, err := pot.NewState()
			check(t, err)
			w, err := pot.NewSafetensorsWriter()
			check(t, err)
			for _, name := range sv.Tensors {
				tv := tensors[name]
				check(t, st.AddTensor(name, tv.dtype(t), tv.Shape, data[name]))
				check(t, w.Add(name, tv.dtype(t), tv.Shape, data[name]))
			}
			if st.Count() != len(sv.Tensors) {
				t.Errorf("Count = %d, want %d", st.Count(), len(sv.Tensors))
			}
			want := mustDigest(t, sv.Digest)
			got, err := st.Digest()
			check(t, err)
			if got != want {
				t.Errorf("state %q: %v, want %v", sv.Comment, got, want)
			}
			for _, tp := range sv.TensorProofs {
				proof, err := st.TensorProof(tp.Tensor)
				check(t, err)
				if !bytes.Equal(proof, mustHex(t, tp.Proof)) {
					t.Errorf("state %q: proof of %s = %x, want %s", sv.Comment, tp.Tensor, proof, tp.Proof)
				}
				tv := tensors[tp.Tensor]
				td, err := pot.TensorDigest(tv.Name, tv.dtype(t), tv.Shape, data[tv.Name], 0)
				check(t, err)
				check(t, pot.VerifyTensorProof(want, td, proof))
				// Another tensor's digest, or a flipped proof byte, must not verify.
				other := td
				other[0] ^= 1
				wantCode(t, pot.VerifyTensorProof(want, other, proof), pot.StatusProofMismatch)
				bad := append([]byte(nil), proof...)
				bad[len(bad)-1] ^= 1
				wantCode(t, pot.VerifyTensorProof(want, td, bad), pot.StatusProofMismatch)
			}
			// The same tensors written as safetensors digest the same.
			path := filepath.Join(dir, "state.safetensors")
			check(t, w.Write(path))
			fd, err := pot.SafetensorsDigestFile(path, 0)
			check(t, err)
			if fd != want {
				t.Errorf("state %d: file digest %v, want %v", i, fd, want)
			}
			check(t, w.Close())
			check(t, st.Close())
		}
	})

	t.Run("chunk_ranges", func(t *testing.T) {
		for _, cv := range v.ChunkRanges {
			tv := tensors[cv.Tensor]
			b := data[cv.Tensor]
			a, err := pot.NewTensorAssembler(tv.Name, tv.dtype(t), tv.Shape)
			check(t, err)
			// Add the records last to first: the assembler orders them.
			for i := len(cv.Records) - 1; i >= 0; i-- {
				r := cv.Records[i]
				rec, err := pot.ChunkRangeHash(b[r.Offset:r.Offset+r.Length], r.Offset, uint64(len(b)), 1)
				check(t, err)
				if !bytes.Equal(rec, mustHex(t, r.Record)) {
					t.Errorf("%s: record at %d = %x, want %s", cv.Comment, r.Offset, rec, r.Record)
				}
				check(t, a.Add(rec))
			}
			got, err := a.Finish()
			check(t, err)
			if got.String() != cv.Digest || cv.Digest != tv.Digest {
				t.Errorf("%s: assembled %v, want %s", cv.Comment, got, cv.Digest)
			}
			check(t, a.Close())
		}
	})

	t.Run("log_states", func(t *testing.T) {
		for _, lv := range v.LogStates {
			log, err := pot.NewLog()
			check(t, err)
			tree, err := pot.NewMemoryTree()
			check(t, err)
			for i := uint64(0); i < lv.Leaves; i++ {
				check(t, log.Append(u64le(i)))
				lh, err := pot.LeafHash(u64le(i))
				check(t, err)
				_, err = tree.AppendHash(lh)
				check(t, err)
			}
			root, err := log.Root()
			check(t, err)
			troot, err := tree.Root(lv.Leaves)
			check(t, err)
			if root.String() != lv.Root || troot.String() != lv.Root {
				t.Errorf("%d leaves: log root %v, tree root %v, want %s", lv.Leaves, root, troot, lv.Root)
			}
			saved, err := log.Save()
			check(t, err)
			if !bytes.Equal(saved, mustHex(t, lv.Saved)) {
				t.Errorf("%d leaves: saved %x, want %s", lv.Leaves, saved, lv.Saved)
			}
			loaded, err := pot.LoadLog(saved)
			check(t, err)
			if loaded.Size() != lv.Leaves {
				t.Errorf("loaded size %d, want %d", loaded.Size(), lv.Leaves)
			}
			// The restored log goes on as the original.
			check(t, loaded.Append(u64le(lv.Leaves)))
			check(t, log.Append(u64le(lv.Leaves)))
			r1, _ := loaded.Root()
			r2, _ := log.Root()
			if r1 != r2 {
				t.Errorf("restored log diverged: %v vs %v", r1, r2)
			}
			// A truncated save is refused.
			if len(saved) > 8 {
				_, err = pot.LoadLog(saved[:len(saved)-1])
				wantCode(t, err, pot.StatusMalformed)
			}
			loaded.Close()
			log.Close()
			tree.Close()
		}
	})
}
