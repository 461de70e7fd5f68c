package pot_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// trajectory is a deterministic stand-in for training, S_t = H(t, S_{t-1});
// a run forged at step f holds another S_f and goes on from it.
func trajectory(n, forgedAt uint64) []pot.Digest {
	s := []pot.Digest{sha256.Sum256([]byte("S_0"))}
	for t := uint64(1); t <= n; t++ {
		if t == forgedAt {
			s = append(s, sha256.Sum256([]byte(fmt.Sprintf("forged %d", t))))
		} else {
			s = append(s, sha256.Sum256([]byte(fmt.Sprintf("%d %x", t, s[t-1]))))
		}
	}
	return s
}

func TestBisectionPointsAndRounds(t *testing.T) {
	p, err := pot.BisectionPoints(0, 200, 4)
	check(t, err)
	if !reflect.DeepEqual(p, []uint64{50, 100, 150}) {
		t.Fatalf("points %v", p)
	}
	r, err := pot.BisectionRounds(0, 200, 2)
	check(t, err)
	if r != 8 {
		t.Fatalf("rounds %d, want 8", r)
	}
	var e *pot.Error
	if _, err := pot.BisectionPoints(5, 5, 2); !errors.As(err, &e) || e.Code != pot.StatusInvalidArgument {
		t.Fatalf("an empty interval: %v", err)
	}
	if _, err := pot.BisectionRounds(0, 5, 257); !errors.As(err, &e) || e.Code != pot.StatusInvalidArgument {
		t.Fatalf("arity 257: %v", err)
	}
}

// Every forged position of a 50-step run, the forger as A or B: the
// bisection ends at exactly that step within the bound, and the
// recomputed step sides with the honest party.
func TestStepBisectionFindsTheForgedStep(t *testing.T) {
	const n = 50
	honest := trajectory(n, 0)
	bound, err := pot.BisectionRounds(0, n, 3)
	check(t, err)
	for f := uint64(1); f <= n; f++ {
		forged := trajectory(n, f)
		forgerIsA := f%2 == 0
		a, b := honest, forged
		if forgerIsA {
			a, b = forged, honest
		}
		bis, err := pot.NewStepBisection(0, n, 3, honest[0], a[n], b[n])
		check(t, err)
		for {
			s, err := bis.State()
			check(t, err)
			if s.Done {
				if s.Lo != f-1 || s.Hi != f || s.Agreed != honest[f-1] || s.RoundsPlayed > bound {
					t.Fatalf("forged at %d: ended at (%d, %d] after %d rounds", f, s.Lo, s.Hi, s.RoundsPlayed)
				}
				truth := sha256.Sum256([]byte(fmt.Sprintf("%d %x", f, s.Agreed)))
				liar, honestClaim := s.BHi, s.AHi
				if forgerIsA {
					liar, honestClaim = s.AHi, s.BHi
				}
				if honestClaim != truth || liar == truth {
					t.Fatalf("forged at %d: the referee's step does not name the forger", f)
				}
				break
			}
			points, err := bis.Points()
			check(t, err)
			var ca, cb []pot.Digest
			for _, p := range points {
				ca, cb = append(ca, a[p]), append(cb, b[p])
			}
			check(t, bis.PlayRound(ca, cb))
		}
		check(t, bis.Close())
	}
}

func TestStepBisectionRefusals(t *testing.T) {
	s0, x, y := sha256.Sum256([]byte("S_0")), sha256.Sum256([]byte("x")), sha256.Sum256([]byte("y"))
	var e *pot.Error
	if _, err := pot.NewStepBisection(0, 10, 2, s0, x, x); !errors.As(err, &e) || e.Code != pot.StatusInvalidArgument {
		t.Fatalf("nothing disputed: %v", err)
	}
	b, err := pot.NewStepBisection(0, 10, 4, s0, x, y)
	check(t, err)
	before, err := b.State()
	check(t, err)
	if err := b.PlayRound([]pot.Digest{x, x}, []pot.Digest{x, x}); !errors.As(err, &e) || e.Code != pot.StatusInvalidArgument {
		t.Fatalf("two claims for three points: %v", err)
	}
	if err := b.PlayRound([]pot.Digest{x, x, x}, []pot.Digest{x}); !errors.As(err, &e) || e.Code != pot.StatusInvalidArgument {
		t.Fatalf("lists of different lengths: %v", err)
	}
	after, err := b.State()
	check(t, err)
	if after != before {
		t.Fatalf("a refused round changed the state")
	}
	for {
		p, err := b.Points()
		if err != nil {
			if !errors.As(err, &e) || e.Code != pot.StatusState {
				t.Fatalf("points once done: %v", err)
			}
			break
		}
		claims := make([]pot.Digest, len(p))
		for i := range claims {
			claims[i] = x
		}
		check(t, b.PlayRound(claims, claims))
	}
	if err := b.PlayRound(nil, nil); !errors.As(err, &e) || e.Code != pot.StatusState {
		t.Fatalf("a round once done: %v", err)
	}
	check(t, b.Close())
	if _, err := b.State(); !errors.As(err, &e) || e.Code != pot.StatusState {
		t.Fatalf("a closed bisection: %v", err)
	}
}
