package main

// Replay mode: verify one challenged step completely, replay included
// (docs/PROTOCOL.md section 21.5), and commit to the witness value
// (section 19).

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	pot "github.com/pot-sdk/pot/bindings/go"
)

// replayArgs are the flags of replay mode.
type replayArgs struct {
	commitment, spec, program string
	root                      string
	size, step, challengeID   uint64
	manifest, pre, post       string
	mode                      string
	threads                   uint32
	identity                  string
	sealedFlags               string
	json                      bool
}

// parseSealedFlags reads -sealed-flags: comma-separated steps, or "none".
func parseSealedFlags(s string) ([]uint64, error) {
	if s == "none" {
		return []uint64{}, nil
	}
	var steps []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a step (comma-separated steps, or none)", f)
		}
		steps = append(steps, v)
	}
	return steps, nil
}

// replayOK is the -json output of a verified step: the witness statement
// (PROTOCOL.md section 19), its salt and commitment.
type replayOK struct {
	Valid             bool            `json:"valid"`
	Step              uint64          `json:"step"`
	Check             string          `json:"check"`
	ReplayedState     pot.Digest      `json:"replayed_state"`
	NormBucket        int64           `json:"norm_bucket"`
	Loss              *float64        `json:"loss"` // null when not finite (a committed NaN loss verifies)
	Statement         json.RawMessage `json:"statement"`
	Salt              string          `json:"salt"`
	WitnessCommitment pot.Digest      `json:"witness_commitment"`
	Seconds           float64         `json:"seconds"`
}

// replayRejected is the -json output of a failed check. The verifier still
// witnesses what it found (the value it replayed, or the check that
// failed), so a FAIL is committed and revealed like a PASS.
type replayRejected struct {
	Valid             bool            `json:"valid"`
	Check             string          `json:"check"`
	Message           string          `json:"message"`
	ReplayedState     *pot.Digest     `json:"replayed_state,omitempty"`
	NormBucket        *int64          `json:"norm_bucket,omitempty"`
	Statement         json.RawMessage `json:"statement"`
	Salt              string          `json:"salt"`
	WitnessCommitment pot.Digest      `json:"witness_commitment"`
}

// witness returns the statement on what the verification found, a fresh
// salt and the commitment to post before revealing them.
func witness(a replayArgs, res pot.VerifyResult, spec *pot.Spec, runID pot.Digest, mode pot.VerifyMode,
	identity []byte) (string, []byte, pot.Digest, error) {
	st, err := pot.WitnessStatement(res, spec, runID, a.step, a.challengeID, mode, a.threads)
	if err != nil {
		return "", nil, pot.Digest{}, err
	}
	salt, err := pot.WitnessSalt()
	if err != nil {
		return "", nil, pot.Digest{}, err
	}
	wc, err := pot.WitnessCommitment(st, salt, identity)
	return st, salt, wc, err
}

// loadCommitment reads a training commitment, JSON or canonical bytes (as
// `pot verify` does: JSON when the first non-blank byte is '{').
func loadCommitment(path string) (*pot.Commitment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if looksLikeJSON(b) {
		return pot.CommitmentFromJSON(string(b))
	}
	return pot.DecodeCommitment(b)
}

// loadSpec reads an execution spec, JSON or canonical bytes.
func loadSpec(path string) (*pot.Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if looksLikeJSON(b) {
		return pot.SpecFromJSON(string(b))
	}
	return pot.DecodeSpec(b)
}

func looksLikeJSON(b []byte) bool {
	for _, c := range b {
		if !unicode.IsSpace(rune(c)) {
			return c == '{'
		}
	}
	return false
}

// runReplay verifies step a.step by replay and, on success, draws a salt
// and prints the witness values with their commitment. Exit status: 0 the
// step verified, 1 a check failed, 2 bad usage or unreadable inputs.
func runReplay(a replayArgs) int {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"-commitment", a.commitment}, {"-spec", a.spec}, {"-program", a.program}, {"-root", a.root},
		{"-manifest", a.manifest}, {"-pre-state", a.pre}, {"-identity", a.identity},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if a.size == 0 {
		missing = append(missing, "-size")
	}
	if a.step == 0 {
		missing = append(missing, "-step")
	}
	if len(missing) != 0 {
		fmt.Fprintf(os.Stderr, "go-verifier: -replay needs %v\n%s\n", missing, usage)
		return exitUsage
	}
	var mode pot.VerifyMode
	switch a.mode {
	case "bitwise":
		mode = pot.VerifyBitwise
	case "bucket":
		mode = pot.VerifyNormBucket
		if a.post == "" {
			return usageError("-mode bucket", errors.New("needs -post-state (the served S_t)"))
		}
	default:
		return usageError("-mode", fmt.Errorf("%q is not bitwise or bucket", a.mode))
	}
	identity, err := hex.DecodeString(a.identity)
	if err == nil && (len(identity) < 1 || len(identity) > 256) {
		err = fmt.Errorf("%d bytes, want 1..256", len(identity))
	}
	if err != nil {
		return usageError("-identity", err)
	}
	if err := pot.ABIError(); err != nil {
		return usageError("libpot", err)
	}
	if !pot.ReplayAvailable() {
		return usageError("libpot", errors.New("built without LibTorch: no replay"))
	}
	root, err := pot.ParseDigest(a.root)
	if err != nil {
		return usageError("-root", err)
	}

	commitment, err := loadCommitment(a.commitment)
	if err != nil {
		return usageError(a.commitment, err)
	}
	defer commitment.Close()
	// The flagged steps the run sealed with on the ledger (run_info): an
	// opening listing others fails check 32.
	if a.sealedFlags != "" {
		steps, err := parseSealedFlags(a.sealedFlags)
		if err != nil {
			return usageError("-sealed-flags", err)
		}
		if err := commitment.SetSealedFlags(steps); err != nil {
			return usageError("-sealed-flags", err)
		}
	}
	runID, err := commitment.RunID()
	if err != nil {
		return usageError("run id", err)
	}
	spec, err := loadSpec(a.spec)
	if err != nil {
		return usageError(a.spec, err)
	}
	defer spec.Close()
	manifest, err := os.ReadFile(a.manifest)
	if err != nil {
		return usageError("manifest", err)
	}
	if !a.json {
		fmt.Printf("run %s: step %d under log root %s of %d leaves, %s replay\n", runID, a.step, root, a.size, a.mode)
	}

	start := time.Now()
	res, err := pot.VerifyStep(commitment, spec, a.program, a.step, a.size, root, manifest, a.pre, a.post, mode,
		a.threads)
	seconds := time.Since(start).Seconds()
	if err != nil {
		if res.Check == pot.CheckOK { // no check ran: the call itself was wrong
			return usageError("verify", err)
		}
		msg := err.Error()
		var perr *pot.Error
		if errors.As(err, &perr) {
			msg = perr.Message
		}
		if a.json {
			st, salt, wc, werr := witness(a, res, spec, runID, mode, identity)
			if werr != nil {
				return usageError("witness", werr)
			}
			out := replayRejected{Valid: false, Check: res.Check.String(), Message: msg,
				Statement: json.RawMessage(st), Salt: hex.EncodeToString(salt), WitnessCommitment: wc}
			if res.Replayed {
				out.ReplayedState, out.NormBucket = &res.Replay.PostStateDigest, &res.Replay.NormBucket
			}
			printJSON(out)
		} else {
			fmt.Printf("step %d: FAIL at %s: %s\n", a.step, res.Check, msg)
		}
		return exitFail
	}

	// The witness: its statement (the challenge, this process's environment
	// and the replayed value), a fresh salt, and the commitment to post
	// before revealing them.
	st, salt, wc, err := witness(a, res, spec, runID, mode, identity)
	if err != nil {
		return usageError("witness", err)
	}
	if a.json {
		out := replayOK{Valid: true, Step: a.step, Check: pot.CheckOK.String(),
			ReplayedState: res.Replay.PostStateDigest, NormBucket: res.Replay.NormBucket,
			Statement: json.RawMessage(st), Salt: hex.EncodeToString(salt), WitnessCommitment: wc,
			Seconds: math.Round(seconds*1e6) / 1e6}
		if loss := res.Replay.Loss; !math.IsNaN(loss) && !math.IsInf(loss, 0) {
			out.Loss = &loss
		}
		printJSON(out)
		return exitPass
	}
	fmt.Printf("step %d: OK (replayed in %.3f s, loss %v)\n", a.step, seconds, res.Replay.Loss)
	fmt.Printf("replayed state:     %s\n", res.Replay.PostStateDigest)
	fmt.Printf("norm bucket:        %d\n", res.Replay.NormBucket)
	fmt.Printf("statement:          %s\n", st)
	fmt.Printf("salt:               %x\n", salt)
	fmt.Printf("witness commitment: %s\n", wc)
	return exitPass
}

func printJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil { // not reached: the types above always marshal
		panic(err)
	}
	fmt.Println(string(b))
}
