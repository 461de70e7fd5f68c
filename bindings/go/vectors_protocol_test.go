package pot_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	pot "github.com/pot-sdk/pot/bindings/go"
)

type protocolVectors struct {
	BisectionPoints []struct {
		Lo     json.Number   `json:"lo"`
		Hi     json.Number   `json:"hi"`
		Arity  uint32        `json:"arity"`
		Points []json.Number `json:"points"`
		Rounds uint32        `json:"rounds"`
	} `json:"bisection_points"`
	BisectionDisputes []struct {
		Lo     uint64 `json:"lo"`
		Hi     uint64 `json:"hi"`
		Arity  uint32 `json:"arity"`
		Agreed string `json:"agreed"`
		AHi    string `json:"a_hi"`
		BHi    string `json:"b_hi"`
		Rounds []struct {
			Lo     uint64   `json:"lo"`
			Hi     uint64   `json:"hi"`
			Points []uint64 `json:"points"`
			A      []string `json:"a"`
			B      []string `json:"b"`
		} `json:"rounds"`
		End struct {
			Lo           uint64 `json:"lo"`
			Hi           uint64 `json:"hi"`
			Agreed       string `json:"agreed"`
			AHi          string `json:"a_hi"`
			BHi          string `json:"b_hi"`
			RoundsPlayed uint32 `json:"rounds_played"`
		} `json:"end"`
	} `json:"bisection_disputes"`
	OpNodes []struct {
		Comment  string          `json:"comment"`
		Node     json.RawMessage `json:"node"`
		LeafData string          `json:"leaf_data"`
		LeafHash string          `json:"leaf_hash"`
	} `json:"op_nodes"`
	OpTraceRoot struct {
		Size uint64 `json:"size"`
		Root string `json:"root"`
	} `json:"op_trace_root"`
	Seeds []struct {
		BaseSeed json.Number `json:"base_seed"`
		RunID    string      `json:"run_id"`
		Step     json.Number `json:"step"`
		Seed     json.Number `json:"seed"`
	} `json:"seeds"`
	StepLeaves []struct {
		Step        uint64 `json:"step"`
		StateDigest string `json:"state_digest"`
		StatsDigest string `json:"stats_digest"`
		LossBits    string `json:"loss_bits"`
		RunID       string `json:"run_id"`
		NormBits    string `json:"update_norm_bits"`
		Leaf        string `json:"leaf"`
		LeafHash    string `json:"leaf_hash"`
	} `json:"step_leaves"`
	Challenges []struct {
		Beacon   string        `json:"beacon"`
		RunID    string        `json:"run_id"`
		NumSteps json.Number   `json:"num_steps"`
		Rounds   int           `json:"rounds"`
		Steps    []json.Number `json:"steps"`
	} `json:"challenges"`
	Detection []struct {
		Steps       uint64      `json:"steps"`
		Forged      uint64      `json:"forged"`
		Challenges  uint64      `json:"challenges"`
		Probability json.Number `json:"probability"`
	} `json:"detection"`
	NormBuckets []struct {
		Norm       json.Number `json:"norm"`
		Resolution uint32      `json:"resolution"`
		Bucket     json.Number `json:"bucket"`
	} `json:"norm_buckets"`
	LearningRates []struct {
		Spec    int      `json:"spec"`
		Group   uint32   `json:"group"`
		First   uint64   `json:"first"`
		RatesLE []string `json:"rates_le"`
	} `json:"learning_rates"`
	Specs []struct {
		JSON      json.RawMessage `json:"json"`
		Canonical string          `json:"canonical"`
		Digest    string          `json:"digest"`
	} `json:"specs"`
	Tasks []struct {
		JSON      json.RawMessage `json:"json"`
		Canonical string          `json:"canonical"`
		TaskID    string          `json:"task_id"`
	} `json:"tasks"`
	Commitments []struct {
		JSON      json.RawMessage `json:"json"`
		Canonical string          `json:"canonical"`
		RunID     string          `json:"run_id"`
	} `json:"commitments"`
	ScheduleEntries []struct {
		Step         uint64     `json:"step"`
		Microbatches [][]uint64 `json:"microbatches"`
		Entry        string     `json:"entry"`
	} `json:"schedule_entries"`
	RunScheduleSeeds []struct {
		TaskID        string `json:"task_id"`
		MinerIdentity string `json:"miner_identity"`
		DeclaredSteps uint64 `json:"declared_steps"`
		Seed          uint64 `json:"seed"`
	} `json:"run_schedule_seeds"`
	SeededSchedules []struct {
		Seed         uint64   `json:"seed"`
		DatasetSize  uint64   `json:"dataset_size"`
		BatchSize    uint32   `json:"batch_size"`
		Microbatches uint32   `json:"microbatches"`
		Steps        uint64   `json:"steps"`
		Entries      []string `json:"entries"`
		Root         string   `json:"root"`
	} `json:"seeded_schedules"`
	WitnessCommitments []struct {
		Comment    string          `json:"comment"`
		Statement  json.RawMessage `json:"statement"`
		Salt       string          `json:"salt"`
		Identity   string          `json:"identity"`
		Commitment string          `json:"commitment"`
	} `json:"witness_commitments"`
}

func TestProtocolVectors(t *testing.T) {
	var v protocolVectors
	loadVectors(t, "protocol.json", &v)

	t.Run("bisection_points", func(t *testing.T) {
		if len(v.BisectionPoints) == 0 {
			t.Fatal("no bisection_points vectors")
		}
		for _, c := range v.BisectionPoints {
			lo, hi := mustU64(t, c.Lo), mustU64(t, c.Hi)
			got, err := pot.BisectionPoints(lo, hi, c.Arity)
			check(t, err)
			if len(got) != len(c.Points) {
				t.Fatalf("(%d, %d] k=%d: %d points, want %d", lo, hi, c.Arity, len(got), len(c.Points))
			}
			for i, p := range c.Points {
				if got[i] != mustU64(t, p) {
					t.Errorf("(%d, %d] k=%d: point %d is %d, want %s", lo, hi, c.Arity, i, got[i], p)
				}
			}
			r, err := pot.BisectionRounds(lo, hi, c.Arity)
			check(t, err)
			if r != c.Rounds {
				t.Errorf("(%d, %d] k=%d: %d rounds, want %d", lo, hi, c.Arity, r, c.Rounds)
			}
		}
	})

	t.Run("bisection_disputes", func(t *testing.T) {
		for _, d := range v.BisectionDisputes {
			b, err := pot.NewStepBisection(d.Lo, d.Hi, d.Arity, mustDigest(t, d.Agreed), mustDigest(t, d.AHi),
				mustDigest(t, d.BHi))
			check(t, err)
			for _, r := range d.Rounds {
				p, err := b.Points()
				check(t, err)
				if !reflect.DeepEqual(p, r.Points) {
					t.Fatalf("round over (%d, %d]: points %v, want %v", r.Lo, r.Hi, p, r.Points)
				}
				var ca, cb []pot.Digest
				for i := range r.A {
					ca, cb = append(ca, mustDigest(t, r.A[i])), append(cb, mustDigest(t, r.B[i]))
				}
				check(t, b.PlayRound(ca, cb))
			}
			s, err := b.State()
			check(t, err)
			if !s.Done || s.Lo != d.End.Lo || s.Hi != d.End.Hi || s.RoundsPlayed != d.End.RoundsPlayed ||
				s.Agreed != mustDigest(t, d.End.Agreed) || s.AHi != mustDigest(t, d.End.AHi) ||
				s.BHi != mustDigest(t, d.End.BHi) {
				t.Errorf("the dispute ended at %+v, want %+v", s, d.End)
			}
			check(t, b.Close())
		}
	})

	t.Run("op_nodes", func(t *testing.T) {
		if len(v.OpNodes) < 7 {
			t.Fatalf("%d op_nodes vectors", len(v.OpNodes))
		}
		log, err := pot.NewLog()
		check(t, err)
		defer log.Close()
		for _, n := range v.OpNodes {
			data := mustHex(t, n.LeafData)
			got, err := pot.OpNodeFromJSON(string(n.Node))
			check(t, err)
			if !bytes.Equal(got, data) {
				t.Errorf("%s: leaf data %x, want %s", n.Comment, got, n.LeafData)
			}
			text, err := pot.OpNodeJSON(data)
			check(t, err)
			var a, b any
			check(t, json.Unmarshal([]byte(text), &a))
			check(t, json.Unmarshal(n.Node, &b))
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: decoded %s, want %s", n.Comment, text, n.Node)
			}
			if h, err := pot.LeafHash(data); err != nil || h != mustDigest(t, n.LeafHash) {
				t.Errorf("%s: leaf hash %s, want %s", n.Comment, h, n.LeafHash)
			}
			check(t, log.Append(data))
		}
		if root, _ := log.Root(); root != mustDigest(t, v.OpTraceRoot.Root) || log.Size() != v.OpTraceRoot.Size {
			t.Errorf("trace root %s of %d nodes, want %s", root, log.Size(), v.OpTraceRoot.Root)
		}
		_, err = pot.OpNodeFromJSON(`{"name": "aten::mm"}`)
		wantCode(t, err, pot.StatusMalformed)
		_, err = pot.OpNodeJSON([]byte("not a node"))
		wantCode(t, err, pot.StatusMalformed)
	})

	t.Run("seeds", func(t *testing.T) {
		for _, s := range v.Seeds {
			got, err := pot.SeedDerive(mustU64(t, s.BaseSeed), mustDigest(t, s.RunID), mustU64(t, s.Step))
			check(t, err)
			if got != mustU64(t, s.Seed) {
				t.Errorf("seed(%s, %s) = %d, want %s", s.BaseSeed, s.Step, got, s.Seed)
			}
		}
	})

	t.Run("step_leaves", func(t *testing.T) {
		for _, l := range v.StepLeaves {
			bits := binary.LittleEndian.Uint64(mustHex(t, l.LossBits))
			normBits := binary.LittleEndian.Uint64(mustHex(t, l.NormBits))
			leaf := pot.StepLeaf{RunID: mustDigest(t, l.RunID), Step: l.Step, StateDigest: mustDigest(t, l.StateDigest),
				StatsDigest: mustDigest(t, l.StatsDigest), Loss: math.Float64frombits(bits),
				UpdateNorm: math.Float64frombits(normBits)}
			enc, err := leaf.Encode()
			check(t, err)
			if len(enc) != pot.StepLeafSize || !bytes.Equal(enc, mustHex(t, l.Leaf)) {
				t.Errorf("leaf of step %d = %x, want %s", l.Step, enc, l.Leaf)
			}
			lh, err := pot.LeafHash(enc)
			check(t, err)
			if lh.String() != l.LeafHash {
				t.Errorf("leaf hash of step %d = %v, want %s", l.Step, lh, l.LeafHash)
			}
			dec, err := pot.DecodeStepLeaf(enc)
			check(t, err)
			if dec.RunID != leaf.RunID || dec.Step != leaf.Step || dec.StateDigest != leaf.StateDigest ||
				math.Float64bits(dec.Loss) != bits || math.Float64bits(dec.UpdateNorm) != normBits {
				t.Errorf("decoded %+v, want %+v", dec, leaf)
			}
			_, err = pot.DecodeStepLeaf(enc[:len(enc)-1])
			wantCode(t, err, pot.StatusMalformed)
		}
	})

	t.Run("challenges", func(t *testing.T) {
		for _, c := range v.Challenges {
			got, err := pot.ChallengeDerive(mustHex(t, c.Beacon), mustDigest(t, c.RunID), mustU64(t, c.NumSteps), c.Rounds)
			check(t, err)
			want := make([]uint64, len(c.Steps))
			for i, s := range c.Steps {
				want[i] = mustU64(t, s)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("challenges(%s) = %v, want %v", c.Beacon, got, want)
			}
		}
	})

	t.Run("detection", func(t *testing.T) {
		for _, d := range v.Detection {
			got, err := pot.DetectionProbability(d.Steps, d.Forged, d.Challenges)
			check(t, err)
			if want := mustF64(t, d.Probability); got != want {
				t.Errorf("P(%d, %d, %d) = %v, want %v", d.Steps, d.Forged, d.Challenges, got, want)
			}
		}
		// PROTOCOL.md section 12: n = 10000, m = 100, p = 0.99 needs 448.
		k, err := pot.ChallengesNeeded(10000, 100, 0.99)
		check(t, err)
		if k != 448 {
			t.Errorf("ChallengesNeeded = %d, want 448", k)
		}
	})

	t.Run("norm_buckets", func(t *testing.T) {
		for _, b := range v.NormBuckets {
			got, err := pot.NormBucket(mustF64(t, b.Norm), b.Resolution)
			check(t, err)
			if want := mustI64(t, b.Bucket); got != want {
				t.Errorf("bucket(%s, %d) = %d, want %d", b.Norm, b.Resolution, got, want)
			}
		}
	})

	t.Run("learning_rates", func(t *testing.T) {
		// Each schedule's rates, every kind and both tables, bit for bit (PROTOCOL.md 14.3).
		if len(v.LearningRates) < 4 {
			t.Fatalf("%d learning_rates vectors", len(v.LearningRates))
		}
		for _, lr := range v.LearningRates {
			spec, err := pot.SpecFromJSON(string(v.Specs[lr.Spec].JSON))
			check(t, err)
			got, err := spec.GroupLearningRates(lr.Group, lr.First, len(lr.RatesLE))
			check(t, err)
			for i, r := range got {
				var le [8]byte
				binary.LittleEndian.PutUint64(le[:], math.Float64bits(r))
				if fmt.Sprintf("%x", le) != lr.RatesLE[i] {
					t.Errorf("spec %d group %d step %d: %x, want %s", lr.Spec, lr.Group, lr.First+uint64(i), le, lr.RatesLE[i])
				}
			}
			spec.Close()
		}
	})

	t.Run("specs", func(t *testing.T) {
		for i, s := range v.Specs {
			spec, err := pot.SpecFromJSON(string(s.JSON))
			check(t, err)
			enc, err := spec.Encode()
			check(t, err)
			if !bytes.Equal(enc, mustHex(t, s.Canonical)) {
				t.Errorf("spec %d: canonical %x, want %s", i, enc, s.Canonical)
			}
			d, err := spec.Digest()
			check(t, err)
			if d.String() != s.Digest {
				t.Errorf("spec %d: digest %v, want %s", i, d, s.Digest)
			}
			// The canonical bytes decode to the same spec, and its JSON
			// form parses back to it.
			dec, err := pot.DecodeSpec(enc)
			check(t, err)
			js, err := dec.ToJSON()
			check(t, err)
			again, err := pot.SpecFromJSON(js)
			check(t, err)
			if d2, _ := again.Digest(); d2 != d {
				t.Errorf("spec %d: JSON round trip changed the digest", i)
			}
			// Extra bytes are not canonical.
			_, err = pot.DecodeSpec(append(enc, 0))
			wantCode(t, err, pot.StatusMalformed)

			var j struct {
				IntraOpThreads uint32 `json:"intra_op_threads"`
				Resolution     uint32 `json:"norm_bucket_resolution"`
				Schedule       any    `json:"lr_schedule"`
				Groups         []struct {
					Optimizer struct {
						LR float64 `json:"lr"`
					} `json:"optimizer"`
				} `json:"param_groups"`
				SeedPolicy struct {
					Kind     string `json:"kind"`
					BaseSeed uint64 `json:"base_seed"`
					Seed     uint64 `json:"seed"`
				} `json:"seed_policy"`
			}
			check(t, json.Unmarshal(s.JSON, &j))
			policy, seed, err := spec.SeedPolicy()
			check(t, err)
			if policy.String() != j.SeedPolicy.Kind || seed != j.SeedPolicy.BaseSeed+j.SeedPolicy.Seed {
				t.Errorf("spec %d: seed policy %v %d, want %s", i, policy, seed, j.SeedPolicy.Kind)
			}
			if spec.IntraOpThreads() != j.IntraOpThreads || spec.NormBucketResolution() != j.Resolution {
				t.Errorf("spec %d: threads %d resolution %d", i, spec.IntraOpThreads(), spec.NormBucketResolution())
			}
			// Parameter groups (PROTOCOL.md 14.5): without a schedule each
			// group's rate is its optimizer's lr.
			if spec.GroupCount() != uint32(1+len(j.Groups)) {
				t.Errorf("spec %d: %d groups, want %d", i, spec.GroupCount(), 1+len(j.Groups))
			}
			for g, grp := range j.Groups {
				rates, err := spec.GroupLearningRates(uint32(g+1), 1, 2)
				check(t, err)
				if j.Schedule == nil && (rates[0] != grp.Optimizer.LR || rates[1] != grp.Optimizer.LR) {
					t.Errorf("spec %d group %d: rates %v, want %v", i, g+1, rates, grp.Optimizer.LR)
				}
			}
			_, err = spec.GroupLearningRates(spec.GroupCount(), 1, 1)
			wantCode(t, err, pot.StatusOutOfRange)
			spec.Close()
			dec.Close()
			again.Close()
		}
		if len(v.Specs) != 6 {
			t.Fatalf("%d specs, want 6", len(v.Specs))
		}
		_, err := pot.SpecFromJSON(`{"framework": "pytorch"}`)
		wantCode(t, err, pot.StatusInvalidArgument)
		_, err = pot.SpecFromJSON(`not json`)
		wantCode(t, err, pot.StatusMalformed)
	})

	t.Run("tasks", func(t *testing.T) {
		if len(v.Tasks) == 0 {
			t.Fatal("no task vectors")
		}
		for i, tv := range v.Tasks {
			task, err := pot.TaskFromJSON(string(tv.JSON))
			check(t, err)
			enc, err := task.Encode()
			check(t, err)
			if !bytes.Equal(enc, mustHex(t, tv.Canonical)) {
				t.Errorf("task %d: canonical %x, want %s", i, enc, tv.Canonical)
			}
			id, err := task.ID()
			check(t, err)
			if id.String() != tv.TaskID {
				t.Errorf("task %d: id %v, want %s", i, id, tv.TaskID)
			}
			dec, err := pot.DecodeTask(enc)
			check(t, err)
			if id2, _ := dec.ID(); id2 != id {
				t.Errorf("task %d: decoding changed the id", i)
			}
			spec, err := dec.Spec()
			check(t, err)
			if spec.IntraOpThreads() == 0 {
				t.Errorf("task %d: spec without threads", i)
			}
			// The vectors' commitments of this task answer to it.
			var first json.RawMessage
			for _, c := range v.Commitments {
				cm, err := pot.CommitmentFromJSON(string(c.JSON))
				check(t, err)
				if tid, _ := cm.TaskID(); tid == id {
					check(t, task.CheckCommitment(cm))
					if first == nil {
						first = c.JSON
					}
				}
				cm.Close()
			}
			if first == nil {
				t.Fatalf("task %d: no commitment of it in the vectors", i)
			}
			seeded, err := task.RunSeeded()
			check(t, err)
			uniform, err := task.RunSeededUniform()
			check(t, err)
			if uniform {
				// Each miner's run draws its own samples (PROTOCOL.md 16.3):
				// its schedule, read in one pass, hashes to its commitment's root.
				for _, c := range v.Commitments {
					var cj struct {
						TaskID        string `json:"task_id"`
						MinerIdentity string `json:"miner_identity"`
						DeclaredSteps uint64 `json:"declared_steps"`
						ScheduleRoot  string `json:"schedule_root"`
						DatasetSize   uint64 `json:"dataset_size"`
					}
					check(t, json.Unmarshal(c.JSON, &cj))
					if cj.TaskID != id.String() {
						continue
					}
					sched, err := task.RunSchedule(mustHex(t, cj.MinerIdentity), cj.DeclaredSteps)
					check(t, err)
					tree, err := pot.NewMemoryTree()
					check(t, err)
					for s, mbs := range sched {
						for _, mb := range mbs {
							for _, x := range mb {
								if x >= cj.DatasetSize {
									t.Fatalf("task %d: index %d of %d samples", i, x, cj.DatasetSize)
								}
							}
						}
						e, err := pot.ScheduleEntry{Step: uint64(s + 1), Microbatches: mbs}.Encode(cj.DatasetSize)
						check(t, err)
						_, err = tree.Append(e)
						check(t, err)
					}
					root, err := tree.Root(cj.DeclaredSteps)
					check(t, err)
					if root.String() != cj.ScheduleRoot {
						t.Errorf("task %d: RunSchedule hashes to %s, the commitment's root is %s", i, root, cj.ScheduleRoot)
					}
					tree.Close()
				}
			} else if seeded {
				// Each run's schedule seed, and the commitment the task gives each miner.
				n := 0
				for _, r := range v.RunScheduleSeeds {
					if r.TaskID != id.String() {
						continue
					}
					n++
					miner := mustHex(t, r.MinerIdentity)
					seed, err := task.RunScheduleSeed(miner, r.DeclaredSteps)
					check(t, err)
					if seed != r.Seed {
						t.Errorf("task %d: run schedule seed %d, want %d", i, seed, r.Seed)
					}
					cm, err := task.Commitment(miner, r.DeclaredSteps)
					check(t, err)
					check(t, task.CheckCommitment(cm))
					// The run's schedule, read in one pass, hashes to the
					// root the task gives the run.
					sched, err := task.RunSchedule(miner, r.DeclaredSteps)
					check(t, err)
					if uint64(len(sched)) != r.DeclaredSteps {
						t.Fatalf("task %d: RunSchedule gave %d steps, want %d", i, len(sched), r.DeclaredSteps)
					}
					tree, err := pot.NewMemoryTree()
					check(t, err)
					for s, mbs := range sched {
						e, err := pot.ScheduleEntry{Step: uint64(s + 1), Microbatches: mbs}.Encode(cm.DatasetSize())
						check(t, err)
						_, err = tree.Append(e)
						check(t, err)
					}
					root, err := tree.Root(r.DeclaredSteps)
					check(t, err)
					ds, err := cm.Digests()
					check(t, err)
					if root != ds.ScheduleRoot {
						t.Errorf("task %d: RunSchedule hashes to %s, the commitment's schedule root is %s", i, root,
							ds.ScheduleRoot)
					}
					tree.Close()
					cm.Close()
				}
				if n == 0 {
					t.Errorf("task %d: run-seeded without run_schedule_seeds vectors", i)
				}
			} else if _, err := task.RunScheduleSeed([]byte("m"), 1); err == nil {
				t.Errorf("task %d: a listed task gave a run schedule seed", i)
			}
			// Another S_0 than the task's is refused, naming the field.
			var j map[string]any
			check(t, json.Unmarshal(first, &j))
			j["initial_state_digest"] = strings.Repeat("00", 32)
			other, _ := json.Marshal(j)
			cm, err := pot.CommitmentFromJSON(string(other))
			check(t, err)
			err = task.CheckCommitment(cm)
			wantCode(t, err, pot.StatusInvalidArgument)
			if !strings.Contains(err.Error(), "initial_state_digest") {
				t.Errorf("task %d: %v does not name the field", i, err)
			}
			old := append([]byte(nil), enc...)
			old[1] = 1 // protocol_version 1
			_, err = pot.DecodeTask(old)
			wantCode(t, err, pot.StatusUnsupported)
			cm.Close()
			spec.Close()
			dec.Close()
			task.Close()
		}
	})

	t.Run("commitments", func(t *testing.T) {
		for i, c := range v.Commitments {
			cm, err := pot.CommitmentFromJSON(string(c.JSON))
			check(t, err)
			enc, err := cm.Encode()
			check(t, err)
			if !bytes.Equal(enc, mustHex(t, c.Canonical)) {
				t.Errorf("commitment %d: canonical %x, want %s", i, enc, c.Canonical)
			}
			id, err := cm.RunID()
			check(t, err)
			if id.String() != c.RunID {
				t.Errorf("commitment %d: run id %v, want %s", i, id, c.RunID)
			}
			var j struct {
				InitialState  pot.Digest `json:"initial_state_digest"`
				ScheduleRoot  pot.Digest `json:"schedule_root"`
				DatasetRoot   pot.Digest `json:"dataset_root"`
				Spec          pot.Digest `json:"spec_digest"`
				DeclaredSteps uint64     `json:"declared_steps"`
				DatasetSize   uint64     `json:"dataset_size"`
			}
			check(t, json.Unmarshal(c.JSON, &j))
			ds, err := cm.Digests()
			check(t, err)
			want := pot.CommitmentDigests{InitialState: j.InitialState, ScheduleRoot: j.ScheduleRoot,
				DatasetRoot: j.DatasetRoot, Spec: j.Spec}
			if ds != want {
				t.Errorf("commitment %d: digests %+v, want %+v", i, ds, want)
			}
			if cm.DeclaredSteps() != j.DeclaredSteps || cm.DatasetSize() != j.DatasetSize {
				t.Errorf("commitment %d: steps %d size %d", i, cm.DeclaredSteps(), cm.DatasetSize())
			}
			dec, err := pot.DecodeCommitment(enc)
			check(t, err)
			js, err := dec.ToJSON()
			check(t, err)
			again, err := pot.CommitmentFromJSON(js)
			check(t, err)
			if id2, _ := again.RunID(); id2 != id {
				t.Errorf("commitment %d: JSON round trip changed the run id", i)
			}
			cm.Close()
			dec.Close()
			again.Close()
		}
	})

	t.Run("schedule_entries", func(t *testing.T) {
		for _, e := range v.ScheduleEntries {
			entry := pot.ScheduleEntry{Step: e.Step, Microbatches: e.Microbatches}
			enc, err := entry.Encode(0)
			check(t, err)
			if !bytes.Equal(enc, mustHex(t, e.Entry)) {
				t.Errorf("entry of step %d = %x, want %s", e.Step, enc, e.Entry)
			}
			dec, err := pot.DecodeScheduleEntry(enc)
			check(t, err)
			if !reflect.DeepEqual(dec, entry) {
				t.Errorf("decoded %+v, want %+v", dec, entry)
			}
			// Index 9 is outside a dataset of 5 samples.
			_, err = entry.Encode(5)
			wantCode(t, err, pot.StatusOutOfRange)
		}
	})

	t.Run("seeded_schedules", func(t *testing.T) {
		for _, s := range v.SeededSchedules {
			tree, err := pot.NewMemoryTree()
			check(t, err)
			for i, want := range s.Entries {
				e, err := pot.SeededScheduleEntry(s.Seed, s.DatasetSize, s.BatchSize, s.Microbatches, uint64(i+1))
				check(t, err)
				if !bytes.Equal(e, mustHex(t, want)) {
					t.Errorf("seed %d step %d: %x, want %s", s.Seed, i+1, e, want)
				}
				_, err = tree.Append(e)
				check(t, err)
			}
			root, err := pot.SeededScheduleRoot(s.Seed, s.DatasetSize, s.BatchSize, s.Microbatches, s.Steps)
			check(t, err)
			troot, err := tree.Root(s.Steps)
			check(t, err)
			if root.String() != s.Root || troot != root {
				t.Errorf("seed %d: root %v (tree %v), want %s", s.Seed, root, troot, s.Root)
			}
			tree.Close()
			// The index stream is the entries' indices back to back, and a
			// window of it is the same slice whatever its first position.
			var want []uint64
			for _, h := range s.Entries {
				e, err := pot.DecodeScheduleEntry(mustHex(t, h))
				check(t, err)
				for _, mb := range e.Microbatches {
					want = append(want, mb...)
				}
			}
			all, err := pot.SeededScheduleStream(s.Seed, s.DatasetSize, 0, len(want))
			check(t, err)
			if fmt.Sprint(all) != fmt.Sprint(want) {
				t.Errorf("seed %d: stream %v, the entries hold %v", s.Seed, all, want)
			}
			mid := len(want) / 3
			part, err := pot.SeededScheduleStream(s.Seed, s.DatasetSize, uint64(mid), len(want)-mid)
			check(t, err)
			if fmt.Sprint(part) != fmt.Sprint(want[mid:]) {
				t.Errorf("seed %d: stream from %d is %v, want %v", s.Seed, mid, part, want[mid:])
			}
		}
		_, err := pot.SeededScheduleStream(1, 10, 0, pot.MaxStreamPositions+1)
		wantCode(t, err, pot.StatusLimit)
		_, err = pot.SeededScheduleStream(1, 10, 0, -1)
		wantCode(t, err, pot.StatusInvalidArgument)
		_, err = pot.SeededScheduleStream(1, 0, 0, 4) // an empty dataset has no permutation
		wantCode(t, err, pot.StatusInvalidArgument)
		empty, err := pot.SeededScheduleStream(1, 10, 0, 0)
		check(t, err)
		if len(empty) != 0 {
			t.Errorf("a count of 0 gave %v", empty)
		}
	})

	t.Run("witness_commitments", func(t *testing.T) {
		for _, w := range v.WitnessCommitments {
			st := string(w.Statement)
			salt, id := mustHex(t, w.Salt), mustHex(t, w.Identity)
			c, err := pot.WitnessCommitment(st, salt, id)
			check(t, err)
			if c.String() != w.Commitment {
				t.Errorf("%s: commitment %v, want %s", w.Comment, c, w.Commitment)
			}
			check(t, pot.VerifyWitnessReveal(c, st, salt, id))
			// The same statement on another challenge does not open it.
			dec := json.NewDecoder(bytes.NewReader(w.Statement))
			dec.UseNumber() // the lowest int64 bucket survives
			var m map[string]any
			check(t, dec.Decode(&m))
			cid, err := m["challenge_id"].(json.Number).Int64()
			check(t, err)
			m["challenge_id"] = cid + 1
			other, err := json.Marshal(m)
			check(t, err)
			wantCode(t, pot.VerifyWitnessReveal(c, string(other), salt, id), pot.StatusProofMismatch)
			wantCode(t, pot.VerifyWitnessReveal(c, st, salt, []byte("someone else")), pot.StatusProofMismatch)
		}
	})
}
