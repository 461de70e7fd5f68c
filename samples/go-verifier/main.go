// go-verifier checks a miner's answers to a challenge as a chain client
// would, through the Go binding of libpot.
//
// Usage:
//
//	go-verifier -dir RUN_DIR -beacon HEX [-rounds 2] [-threads 0]
//	go-verifier -replay -commitment C.bin -spec SPEC.json -program MODEL.pt -root HEX -size N -step T
//	            -manifest M.bin -pre-state S.safetensors [-post-state S.safetensors] [-mode bitwise|bucket]
//	            [-threads N] -identity HEX [-json]
//
// RUN_DIR is what samples/protocol_flow writes: commitment.json (the
// training commitment), log.json ({"size", "root"}: the posted checkpoint
// root), and, for each challenged step t, the opening manifest
// opening-<t>.bin and the served states state-<t-1>.safetensors and
// state-<t>.safetensors. The program loads the commitment, derives the
// challenged steps from the beacon and the run id, verifies each opening
// against the commitment, the posted root and the served states, prints one
// line per step and a final verdict.
//
// Exit status: 0 PASS, 1 FAIL (a challenged step was not opened correctly),
// 2 bad usage or unreadable inputs (commitment, log root, beacon).
//
// With -replay it verifies one challenged step completely, replay included
// (docs/PROTOCOL.md section 21.5; see replay.go): the commitment (canonical
// bytes or JSON), the spec, the model program, the posted root and size, the
// opening manifest and the served S_{t-1} (and S_t, needed by -mode bucket,
// the cross-architecture path, which may replay on -threads N intra-op
// threads). Whatever it finds, it prints the witness statement
// (PROTOCOL.md section 19: the challenge -challenge-id, this process's
// environment, and the replayed value or the failed check) with a fresh
// salt and the commitment over (statement, salt, identity); -json prints
// one JSON object. Exit status: 0 verified, 1 a check failed, 2 bad usage or
// unreadable inputs.
package main

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	pot "github.com/pot-sdk/pot/bindings/go"
)

const (
	exitPass  = 0
	exitFail  = 1
	exitUsage = 2
)

const usage = "usage: go-verifier -dir RUN_DIR -beacon HEX [-rounds N] [-threads N]\n" + replayUsage

const replayUsage = "       go-verifier -replay -commitment C.bin -spec SPEC.json -program MODEL.pt -root HEX -size N\n" +
	"                   -step T -manifest M.bin -pre-state S.safetensors [-post-state S.safetensors]\n" +
	"                   [-mode bitwise|bucket] [-threads N] -identity HEX [-challenge-id N] [-json]"

// postedRoot is log.json: the checkpoint-log root the miner posted.
type postedRoot struct {
	Size uint64     `json:"size"`
	Root pot.Digest `json:"root"`
}

func main() { os.Exit(run()) }

func run() int {
	dir := flag.String("dir", "", "run directory written by samples/protocol_flow")
	beaconHex := flag.String("beacon", "", "beacon value, hex (protocol_flow uses 626561636f6e, \"beacon\")")
	rounds := flag.Int("rounds", 2, "number of challenged steps")
	threads := flag.Uint("threads", 0, "threads to digest the state files (0 = all cores);\n"+
		"with -replay: intra-op threads of the replay (0 = the spec's; others with -mode bucket)")
	replay := flag.Bool("replay", false, "verify one step by replay and commit to the witness (flags below)")
	var r replayArgs
	flag.StringVar(&r.commitment, "commitment", "", "-replay: training commitment (canonical bytes or JSON)")
	flag.StringVar(&r.spec, "spec", "", "-replay: execution spec (JSON or canonical bytes)")
	flag.StringVar(&r.program, "program", "", "-replay: TorchScript model program")
	flag.StringVar(&r.root, "root", "", "-replay: posted log root (hex)")
	flag.Uint64Var(&r.size, "size", 0, "-replay: leaves under the posted root")
	flag.Uint64Var(&r.step, "step", 0, "-replay: the challenged step")
	flag.StringVar(&r.manifest, "manifest", "", "-replay: opening manifest of the step (canonical bytes)")
	flag.StringVar(&r.pre, "pre-state", "", "-replay: served S_{t-1} (safetensors)")
	flag.StringVar(&r.post, "post-state", "", "-replay: served S_t (safetensors; needed by -mode bucket)")
	flag.StringVar(&r.mode, "mode", "bitwise", "-replay: bitwise or bucket (the cross-architecture path)")
	flag.StringVar(&r.identity, "identity", "", "-replay: this verifier's identity (hex, 1..256 bytes)")
	flag.Uint64Var(&r.challengeID, "challenge-id", 0, "-replay: the ledger's id of the challenge the witness answers")
	flag.StringVar(&r.sealedFlags, "sealed-flags", "",
		"-replay: the flagged steps the run sealed with on the ledger (run_info's flagged_steps), comma-separated, or none")
	flag.BoolVar(&r.json, "json", false, "-replay: print one JSON object")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "go-verifier: unexpected argument %q\n%s\n", flag.Arg(0), usage)
		return exitUsage
	}
	// Each mode refuses the other's flags rather than ignoring them.
	openingOnly := map[string]bool{"dir": true, "beacon": true, "rounds": true}
	var misplaced []string
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "replay" && f.Name != "threads" && openingOnly[f.Name] == *replay {
			misplaced = append(misplaced, "-"+f.Name)
		}
	})
	if len(misplaced) != 0 {
		what := "without -replay"
		if *replay {
			what = "with -replay"
		}
		fmt.Fprintf(os.Stderr, "go-verifier: %v not used %s\n%s\n", misplaced, what, usage)
		return exitUsage
	}
	if *replay {
		r.threads = uint32(*threads)
		return runReplay(r)
	}
	if *dir == "" || *beaconHex == "" {
		fmt.Fprintln(os.Stderr, usage)
		return exitUsage
	}
	beacon, err := hex.DecodeString(*beaconHex)
	if err != nil {
		return usageError("beacon", err)
	}
	if err := pot.ABIError(); err != nil {
		return usageError("libpot", err)
	}

	// What the chain holds: the commitment and the posted root.
	text, err := os.ReadFile(filepath.Join(*dir, "commitment.json"))
	if err != nil {
		return usageError("commitment", err)
	}
	commitment, err := pot.CommitmentFromJSON(string(text))
	if err != nil {
		return usageError("commitment.json", err)
	}
	defer commitment.Close()
	runID, err := commitment.RunID()
	if err != nil {
		return usageError("run id", err)
	}
	var posted postedRoot
	if text, err = os.ReadFile(filepath.Join(*dir, "log.json")); err == nil {
		err = json.Unmarshal(text, &posted)
	}
	if err != nil {
		return usageError("log.json", err)
	}
	steps := commitment.DeclaredSteps()
	if posted.Size != steps {
		return usageError("log.json", fmt.Errorf("the posted root covers %d of %d steps: the run is not sealed",
			posted.Size, steps))
	}

	// The challenge: steps drawn from the beacon and the run id.
	challenged, err := pot.ChallengeDerive(beacon, runID, steps, *rounds)
	if err != nil {
		return usageError("challenge", err)
	}
	fmt.Printf("run %s: %d steps, log root %s\n", runID, steps, posted.Root)
	fmt.Printf("beacon %s challenges steps %v\n", *beaconHex, challenged)

	failed := ""
	for _, t := range challenged {
		what, err := verifyStep(commitment, posted, *dir, t, uint32(*threads))
		if err != nil {
			fmt.Printf("step %d: FAIL at %s: %v\n", t, what, err)
			if failed == "" {
				failed = fmt.Sprintf("step %d: %s", t, what)
			}
			continue
		}
		fmt.Printf("step %d: OK (every check but the replay)\n", t)
	}
	if failed != "" {
		fmt.Printf("verdict: FAIL (%s)\n", failed)
		return exitFail
	}
	fmt.Printf("verdict: PASS (%d of %d challenged steps opened correctly)\n", len(challenged), len(challenged))
	return exitPass
}

// verifyStep checks the opening of step t; on failure it returns the name
// of the failed check and the error.
func verifyStep(c *pot.Commitment, posted postedRoot, dir string, t uint64, threads uint32) (string, error) {
	manifest, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("opening-%d.bin", t)))
	if err != nil {
		return "manifest", fmt.Errorf("no opening served: %w", err)
	}
	pre := filepath.Join(dir, fmt.Sprintf("state-%d.safetensors", t-1))
	post := filepath.Join(dir, fmt.Sprintf("state-%d.safetensors", t))
	// The challenged step is an input: a valid opening of another step fails.
	check, err := pot.VerifyOpening(c, t, posted.Size, posted.Root, manifest, pre, post, threads)
	if err != nil {
		return check.String(), err
	}
	return "", nil
}

// usageError reports input the verifier cannot work with (exit 2), as
// opposed to an opening that fails a check (exit 1).
func usageError(what string, err error) int {
	fmt.Fprintf(os.Stderr, "go-verifier: %s: %v\n", what, err)
	return exitUsage
}
