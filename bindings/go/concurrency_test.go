package pot_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// TestConcurrency runs goroutines that share one Tree (readers proving and
// verifying old sizes while a writer appends) and one Spec, while each also
// hashes with handles of its own. Run it under -race.
func TestConcurrency(t *testing.T) {
	const base = 64
	tree, err := pot.NewMemoryTree()
	check(t, err)
	defer tree.Close()
	for i := 0; i < base; i++ {
		_, err := tree.Append([]byte(fmt.Sprint("leaf ", i)))
		check(t, err)
	}
	root, err := tree.Root(base)
	check(t, err)
	spec, err := pot.SpecFromJSON(sampleSpecJSON)
	check(t, err)
	defer spec.Close()
	specDigest, err := spec.Digest()
	check(t, err)
	wantTensor, err := pot.TensorDigest("w", pot.DTypeF32, []uint64{2, 2}, f32bytes(1, 2, 3, 4), 1)
	check(t, err)

	workers := 2 * runtime.GOMAXPROCS(0)
	if workers < 6 {
		workers = 6
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	stop := make(chan struct{})

	// A writer keeps appending: roots and proofs of size base never change.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := tree.Append([]byte(fmt.Sprint("more ", i))); err != nil {
				errs <- err
				return
			}
			if i%16 == 0 {
				runtime.Gosched()
			}
		}
	}()

	var readers sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		readers.Add(1)
		go func(w int) {
			defer wg.Done()
			defer readers.Done()
			err := func() error {
				st, err := pot.NewState()
				if err != nil {
					return err
				}
				defer st.Close()
				log, err := pot.NewLog()
				if err != nil {
					return err
				}
				defer log.Close()
				for i := 0; i < 200; i++ {
					idx := uint64((w*31 + i*7) % base)
					lh, err := tree.LeafHash(idx)
					if err != nil {
						return err
					}
					proof, err := tree.InclusionProof(idx, base)
					if err != nil {
						return err
					}
					if err := pot.VerifyInclusion(idx, base, lh, proof, root); err != nil {
						return fmt.Errorf("leaf %d: %w", idx, err)
					}
					r, err := tree.Root(base)
					if err != nil || r != root {
						return fmt.Errorf("root changed: %v %v", r, err)
					}
					if size := tree.Size(); size < base {
						return fmt.Errorf("size %d", size)
					}
					if d, err := spec.Digest(); err != nil || d != specDigest {
						return fmt.Errorf("spec digest %v %v", d, err)
					}
					if err := log.Append(lh[:]); err != nil {
						return err
					}
					td, err := pot.TensorDigest("w", pot.DTypeF32, []uint64{2, 2}, f32bytes(1, 2, 3, 4), 1)
					if err != nil || td != wantTensor {
						return fmt.Errorf("tensor digest %v %v", td, err)
					}
					if err := st.AddTensorDigest(fmt.Sprint("t", i), td); err != nil {
						return err
					}
				}
				if log.Size() != 200 || st.Count() != 200 {
					return fmt.Errorf("log %d, state %d", log.Size(), st.Count())
				}
				_, err = st.Digest()
				return err
			}()
			if err != nil {
				errs <- fmt.Errorf("worker %d: %w", w, err)
			}
		}(w)
	}
	readers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if tree.Size() <= base {
		t.Fatalf("the writer appended nothing")
	}
	// Consistency from the base tree to whatever the writer reached.
	size := tree.Size()
	newRoot, err := tree.Root(size)
	check(t, err)
	proof, err := tree.ConsistencyProof(base, size)
	check(t, err)
	check(t, pot.VerifyConsistency(base, size, root, newRoot, proof))
}

// TestConcurrentClose closes handles while other goroutines use them: the
// calls either succeed or report StatusState, never touch freed memory.
func TestConcurrentClose(t *testing.T) {
	for round := 0; round < 20; round++ {
		tree, err := pot.NewMemoryTree()
		check(t, err)
		_, err = tree.Append([]byte("x"))
		check(t, err)
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					if _, err := tree.Root(1); err != nil && !isCode(err, pot.StatusState) {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() { defer wg.Done(); tree.Close() }()
		wg.Wait()
	}
}

func isCode(err error, code pot.Status) bool {
	pe, ok := err.(*pot.Error)
	return ok && pe.Code == code
}
