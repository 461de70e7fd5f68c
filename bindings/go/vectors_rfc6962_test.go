package pot_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/bits"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

type rfc6962Vectors struct {
	EmptyTreeRoot struct {
		Hex string `json:"hex"`
	} `json:"empty_tree_root"`
	LeafInputs []struct {
		Index int    `json:"index"`
		Hex   string `json:"hex"`
	} `json:"leaf_inputs"`
	NodeHashes []struct {
		Level        int    `json:"level"`
		Index        int    `json:"index"`
		CoversLeaves [2]int `json:"covers_leaves"`
		Hex          string `json:"hex"`
	} `json:"node_hashes"`
	Roots []struct {
		TreeSize uint64 `json:"tree_size"`
		Hex      string `json:"hex"`
	} `json:"roots"`
	HasherKATs []struct {
		Op      string `json:"op"`
		DataHex string `json:"data_hex"`
		Hex     string `json:"hex"`
	} `json:"hasher_kats"`
	InclusionProofs []struct {
		LeafIndex    uint64   `json:"leaf_index"`
		TreeSize     uint64   `json:"tree_size"`
		Proof        []string `json:"proof"`
		Root         string   `json:"root"`
		LeafInputHex string   `json:"leaf_input_hex"`
	} `json:"inclusion_proofs"`
	ConsistencyProofs []struct {
		Size1 uint64   `json:"size1"`
		Size2 uint64   `json:"size2"`
		Proof []string `json:"proof"`
		Root1 string   `json:"root1"`
		Root2 string   `json:"root2"`
	} `json:"consistency_proofs"`
	VerifierProbes struct {
		Inclusion []struct {
			LeafIndex uint64   `json:"leaf_index"`
			TreeSize  uint64   `json:"tree_size"`
			LeafHash  string   `json:"leaf_hash"`
			Root      string   `json:"root"`
			Proof     []string `json:"proof"`
			Desc      string   `json:"desc"`
			WantError bool     `json:"want_error"`
		} `json:"inclusion"`
		Consistency []struct {
			Size1     uint64   `json:"size1"`
			Size2     uint64   `json:"size2"`
			Root1     string   `json:"root1"`
			Root2     string   `json:"root2"`
			Proof     []string `json:"proof"`
			Desc      string   `json:"desc"`
			WantError bool     `json:"want_error"`
		} `json:"consistency"`
	} `json:"verifier_probes"`
	Aggregate []struct {
		Name string `json:"name"`
		Hex  string `json:"hex"`
	} `json:"aggregate_vectors"`
}

// all32 reports whether every hex string is a 32-byte hash; only those
// probes can be passed through the Digest-typed API.
func all32(hs ...string) bool {
	for _, h := range hs {
		if len(h) != 2*pot.DigestSize {
			return false
		}
	}
	return true
}

func joinHex(t *testing.T, hs []string) []byte {
	var out []byte
	for _, h := range hs {
		out = append(out, mustHex(t, h)...)
	}
	return out
}

func treeOf(t *testing.T, leaves [][]byte) *pot.Tree {
	t.Helper()
	tr, err := pot.NewMemoryTree()
	check(t, err)
	for i, l := range leaves {
		idx, err := tr.Append(l)
		check(t, err)
		if idx != uint64(i) {
			t.Fatalf("Append returned index %d, want %d", idx, i)
		}
	}
	return tr
}

func TestRFC6962Vectors(t *testing.T) {
	var v rfc6962Vectors
	loadVectors(t, "rfc6962.json", &v)

	var leaves [][]byte
	for i, l := range v.LeafInputs {
		if l.Index != i {
			t.Fatalf("leaf_inputs out of order")
		}
		leaves = append(leaves, mustHex(t, l.Hex))
	}
	tree := treeOf(t, leaves)
	defer tree.Close()

	t.Run("empty", func(t *testing.T) {
		want := mustDigest(t, v.EmptyTreeRoot.Hex)
		empty, err := pot.NewMemoryTree()
		check(t, err)
		defer empty.Close()
		if got, err := empty.Root(0); err != nil || got != want {
			t.Fatalf("empty tree root %v, %v; want %v", got, err, want)
		}
		log, err := pot.NewLog()
		check(t, err)
		defer log.Close()
		if got, err := log.Root(); err != nil || got != want {
			t.Fatalf("empty log root %v, %v; want %v", got, err, want)
		}
	})

	t.Run("hasher", func(t *testing.T) {
		n := 0
		for _, k := range v.HasherKATs {
			var got pot.Digest
			var err error
			switch k.Op {
			case "empty_root":
				got, err = pot.Sha256(nil)
			case "leaf":
				got, err = pot.LeafHash(mustHex(t, k.DataHex))
			default:
				continue // "children" uses 4-byte children: not Digests
			}
			check(t, err)
			if got.String() != k.Hex {
				t.Errorf("%s: got %v want %s", k.Op, got, k.Hex)
			}
			n++
		}
		if n != 3 {
			t.Fatalf("checked %d hasher KATs, want 3", n)
		}
	})

	t.Run("roots", func(t *testing.T) {
		log, err := pot.NewLog()
		check(t, err)
		defer log.Close()
		for _, r := range v.Roots {
			for log.Size() < r.TreeSize {
				check(t, log.Append(leaves[log.Size()]))
			}
			got, err := tree.Root(r.TreeSize)
			check(t, err)
			if got.String() != r.Hex {
				t.Errorf("tree root(%d) = %v, want %s", r.TreeSize, got, r.Hex)
			}
			lr, err := log.Root()
			check(t, err)
			if lr.String() != r.Hex {
				t.Errorf("log root(%d) = %v, want %s", r.TreeSize, lr, r.Hex)
			}
		}
		if len(v.Roots) != 8 {
			t.Fatalf("%d roots, want 8", len(v.Roots))
		}
	})

	t.Run("nodes", func(t *testing.T) {
		for _, n := range v.NodeHashes {
			sub := treeOf(t, leaves[n.CoversLeaves[0]:n.CoversLeaves[1]])
			got, err := sub.Root(sub.Size())
			check(t, err)
			sub.Close()
			if got.String() != n.Hex {
				t.Errorf("node (%d,%d) = %v, want %s", n.Level, n.Index, got, n.Hex)
			}
		}
	})

	t.Run("inclusion_proofs", func(t *testing.T) {
		for _, p := range v.InclusionProofs {
			want := joinHex(t, p.Proof)
			got, err := tree.InclusionProof(p.LeafIndex, p.TreeSize)
			check(t, err)
			if !bytes.Equal(got, want) {
				t.Errorf("inclusion proof (%d, %d) = %x, want %x", p.LeafIndex, p.TreeSize, got, want)
			}
			lh, err := pot.LeafHash(mustHex(t, p.LeafInputHex))
			check(t, err)
			if err := pot.VerifyInclusion(p.LeafIndex, p.TreeSize, lh, want, mustDigest(t, p.Root)); err != nil {
				t.Errorf("published inclusion proof (%d, %d) rejected: %v", p.LeafIndex, p.TreeSize, err)
			}
		}
		// CT's invalid request (leaf 0 of snapshot 0) is out of range here.
		_, err := tree.InclusionProof(0, 0)
		wantCode(t, err, pot.StatusOutOfRange)
	})

	t.Run("consistency_proofs", func(t *testing.T) {
		for _, p := range v.ConsistencyProofs {
			want := joinHex(t, p.Proof)
			got, err := tree.ConsistencyProof(p.Size1, p.Size2)
			check(t, err)
			if !bytes.Equal(got, want) {
				t.Errorf("consistency proof (%d, %d) = %x, want %x", p.Size1, p.Size2, got, want)
			}
			err = pot.VerifyConsistency(p.Size1, p.Size2, mustDigest(t, p.Root1), mustDigest(t, p.Root2), want)
			if err != nil {
				t.Errorf("published consistency proof (%d, %d) rejected: %v", p.Size1, p.Size2, err)
			}
		}
	})

	t.Run("verifier_probes", func(t *testing.T) {
		run, total := 0, 0
		for _, p := range v.VerifierProbes.Inclusion {
			total++
			if !all32(append([]string{p.LeafHash, p.Root}, p.Proof...)...) {
				continue
			}
			run++
			err := pot.VerifyInclusion(p.LeafIndex, p.TreeSize, mustDigest(t, p.LeafHash), joinHex(t, p.Proof),
				mustDigest(t, p.Root))
			if (err != nil) != p.WantError {
				t.Errorf("inclusion probe %q: err = %v, want_error %v", p.Desc, err, p.WantError)
			}
		}
		for _, p := range v.VerifierProbes.Consistency {
			total++
			if !all32(append([]string{p.Root1, p.Root2}, p.Proof...)...) {
				continue
			}
			run++
			err := pot.VerifyConsistency(p.Size1, p.Size2, mustDigest(t, p.Root1), mustDigest(t, p.Root2),
				joinHex(t, p.Proof))
			if (err != nil) != p.WantError {
				t.Errorf("consistency probe %q: err = %v, want_error %v", p.Desc, err, p.WantError)
			}
		}
		if total != 196 || run != 143 {
			t.Fatalf("ran %d of %d probes, want 143 of 196", run, total)
		}
	})

	t.Run("aggregate", func(t *testing.T) {
		// d[i] = bytes([i]) for i < 130; one tree per start holds d[start:].
		const n = 130
		trees := make([]*pot.Tree, n+1)
		for start := 0; start <= n; start++ {
			var ls [][]byte
			for i := start; i < n; i++ {
				ls = append(ls, []byte{byte(i)})
			}
			trees[start] = treeOf(t, ls)
			defer trees[start].Close()
		}
		valid := func(start, end int) bool {
			if start == 0 || start == end {
				return true
			}
			return start%(1<<bits.Len(uint(end-start-1))) == 0
		}
		hashes, proofs := sha256.New(), sha256.New()
		for end := 0; end <= n; end++ {
			for start := 0; start <= end; start++ {
				if !valid(start, end) {
					continue
				}
				size := uint64(end - start)
				root, err := trees[start].Root(size)
				check(t, err)
				fmt.Fprintf(hashes, "[%d, %d) %s\n", start, end, root)
				for index := start; index < end; index++ {
					p, err := trees[start].InclusionProof(uint64(index-start), size)
					check(t, err)
					hs, err := pot.SplitProof(p)
					check(t, err)
					fmt.Fprintf(proofs, "%d [%d, %d)", index, start, end)
					for _, h := range hs {
						fmt.Fprintf(proofs, " %s", h)
					}
					fmt.Fprintln(proofs)
				}
			}
		}
		got := map[string]string{
			"subtree_hash_rolling_sha256":      fmt.Sprintf("%x", hashes.Sum(nil)),
			"subtree_inclusion_rolling_sha256": fmt.Sprintf("%x", proofs.Sum(nil)),
		}
		for _, a := range v.Aggregate {
			if got[a.Name] != a.Hex {
				t.Errorf("%s = %s, want %s", a.Name, got[a.Name], a.Hex)
			}
		}
		if len(v.Aggregate) != 2 {
			t.Fatalf("%d aggregate vectors, want 2", len(v.Aggregate))
		}
	})
}
