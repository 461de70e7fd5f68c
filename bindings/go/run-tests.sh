#!/bin/sh
# Tests of the Go binding and of samples/go-verifier against an installed libpot.
#
# Usage: bindings/go/run-tests.sh PREFIX
#   PREFIX             where libpot is installed (PREFIX/include/pot.h,
#                      PREFIX/lib/libpot.so, PREFIX/lib/pkgconfig/pot.pc)
#   POT_PROTOCOL_FLOW  (environment) the built samples/protocol_flow binary
#   POT_REPLAY_FIXTURE (environment, optional) a directory made by
#                      tests/replay/make_fixture.sh (needs a libpot with LibTorch)
#
# Runs `go vet` and `go test -race` in bindings/go, builds samples/go-verifier,
# runs it on a run directory made by protocol_flow (expects PASS, exit 0) and
# on tampered copies of it (expects FAIL, exit 1). With POT_REPLAY_FIXTURE it
# also runs go-verifier -replay on step 5 of the fixture's recorded run, the
# opening served by PREFIX/bin/pot (`pot open make`): bitwise and bucket mode
# pass, another step's pre-state fails at pre_state_digest (and is
# witnessed as invalid_opening), and the witness commitment opens with
# `pot witness reveal` on the printed statement. Without it those cases are
# skipped. Nothing is downloaded: GOTOOLCHAIN=local and the binding is the
# only (replaced, local) dependency.
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 PREFIX   (with POT_PROTOCOL_FLOW=path/to/protocol_flow)" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
sample="$here/../../samples/go-verifier"
flow=${POT_PROTOCOL_FLOW:-}
if [ -z "$flow" ] || [ ! -x "$flow" ]; then
  echo "run-tests.sh: set POT_PROTOCOL_FLOW to the built samples/protocol_flow binary" >&2
  exit 2
fi

libdir=
for d in lib lib64 lib/x86_64-linux-gnu lib/aarch64-linux-gnu; do
  if [ -f "$prefix/$d/pkgconfig/pot.pc" ]; then libdir="$prefix/$d"; break; fi
done
if [ -z "$libdir" ]; then
  echo "run-tests.sh: no pot.pc under $prefix/lib*/pkgconfig" >&2
  exit 2
fi

GO=${GO:-go}
if ! command -v "$GO" >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; fi

export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GOTOOLCHAIN=local
# -mod=mod: no go.sum is needed for the replaced local module; -buildvcs=false:
# do not stamp (or fail on) the repository's VCS state; -p=2: modest builds.
export GOFLAGS="-mod=mod -buildvcs=false -p=2"
export CGO_ENABLED=1

work=$(mktemp -d "${TMPDIR:-/tmp}/pot-go-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
if [ -z "${GOCACHE:-}" ] && [ -z "${HOME:-}" ] && [ -z "${XDG_CACHE_HOME:-}" ]; then
  export GOCACHE="$work/gocache"
fi

echo "== go vet (bindings/go)"
(cd "$here" && "$GO" vet ./...)
echo "== go test -race (bindings/go)"
(cd "$here" && "$GO" test -race -count=1 ./...)

echo "== go-verifier"
(cd "$sample" && "$GO" vet ./... && "$GO" build -o "$work/go-verifier" .)
run="$work/run"
mkdir "$run"
"$flow" "$run" >"$work/flow.out"
beacon=626561636f6e # the bytes "beacon", as protocol_flow uses
set -- $(cat "$run/challenges.txt")
first=$1
second=$2

failures=0
# expect NAME STATUS PATTERN DIR [BEACON]: go-verifier on DIR exits STATUS
# and prints a line matching PATTERN.
expect() {
  name=$1 want=$2 pattern=$3 dir=$4 b=${5:-$beacon}
  status=0
  "$work/go-verifier" -dir "$dir" -beacon "$b" >"$work/out" 2>&1 || status=$?
  if [ "$status" -eq "$want" ] && grep -q "$pattern" "$work/out"; then
    echo "ok   $name (exit $status: $(tail -n 1 "$work/out"))"
  else
    echo "FAIL $name: exit $status, want $want and a line matching '$pattern'; output:"
    sed 's/^/     /' "$work/out"
    failures=$((failures + 1))
  fi
}
# tampered NAME: a fresh copy of the run directory to tamper with.
tampered() {
  rm -rf "$work/$1"
  cp -R "$run" "$work/$1"
  echo "$work/$1"
}

expect "honest run" 0 "^verdict: PASS" "$run"
expect "wrong beacon" 1 "^verdict: FAIL" "$run" 626561636f6f

d=$(tampered rewritten-state)
cp "$run/state-0.safetensors" "$d/state-$first.safetensors"
expect "rewritten post-state of step $first" 1 "^verdict: FAIL (step $first: post_state_digest)" "$d"

d=$(tampered deleted-state)
rm "$d/state-$((second - 1)).safetensors"
expect "deleted pre-state of step $second" 1 "^step $second: FAIL at pre_state_digest" "$d"

d=$(tampered corrupt-manifest)
printf 'x' >>"$d/opening-$second.bin"
expect "corrupt manifest of step $second" 1 "^step $second: FAIL at manifest" "$d"

# Serving step A's opening (and matching states) for challenged step B
# passes every check of pot_opening_verify; the verifier must bind the step.
d=$(tampered swapped-opening)
cp "$run/opening-$second.bin" "$d/opening-$first.bin"
cp "$run/state-$((second - 1)).safetensors" "$d/state-$((first - 1)).safetensors"
cp "$run/state-$second.safetensors" "$d/state-$first.safetensors"
expect "opening of step $second served for step $first" 1 "^step $first: FAIL at step" "$d"

# Replay mode, on the recorded PyTorch run of tests/replay/make_fixture.sh.
fixture=${POT_REPLAY_FIXTURE:-}
if [ -z "$fixture" ]; then
  echo "skip go-verifier -replay: POT_REPLAY_FIXTURE is not set" \
    "(make one with tests/replay/make_fixture.sh BUILD_DIR OUT_DIR)"
else
  echo "== go-verifier -replay (fixture $fixture)"
  step=5
  identity=676f2d7665726966696572 # "go-verifier"
  # shellcheck source=../../tests/replay/serve_fixture.sh
  . "$here/../../tests/replay/serve_fixture.sh"

  # expect_replay NAME STATUS PATTERN ARGS...: go-verifier -replay on step 5
  # with ARGS exits STATUS and prints a line matching PATTERN.
  expect_replay() {
    name=$1 want=$2 pattern=$3
    shift 3
    status=0
    "$work/go-verifier" -replay -commitment "$work/ck/commitment.bin" -spec "$fixture/run/spec.json" \
      -program "$fixture/run/program.pt" -root "$root" -size "$size" -step $step -identity $identity "$@" \
      >"$work/out" 2>&1 || status=$?
    if [ "$status" -eq "$want" ] && grep -q -- "$pattern" "$work/out"; then
      echo "ok   $name (exit $status: $(tail -n 1 "$work/out"))"
    else
      echo "FAIL $name: exit $status, want $want and a line matching '$pattern'; output:"
      sed 's/^/     /' "$work/out"
      failures=$((failures + 1))
    fi
  }

  expect_replay "replay of step $step (bitwise, JSON)" 0 '"check": *"ok"' -manifest "$work/m5.bin" \
    -pre-state "$pre" -json
  # The witness commitment opens with the statement and salt printed next to
  # it (the statement object holds one nested object, its environment).
  cp "$work/out" "$work/witness.json"
  tr -d '\n' <"$work/witness.json" | grep -o '"statement": *{[^{}]*{[^{}]*}[^{}]*}' |
    sed 's/^"statement": *//' >"$work/statement.json"
  if grep -q '"run_id": *"'"$run_id"'"' "$work/statement.json" &&
    "$potcli" witness reveal "$work/statement.json" --commitment "$(json_field witness_commitment "$work/witness.json")" \
      --identity $identity --salt "$(json_field salt "$work/witness.json")" >"$work/reveal.out" 2>&1; then
    echo "ok   the witness commitment opens with pot witness reveal"
  else
    echo "FAIL the witness commitment does not open with pot witness reveal:"
    sed 's/^/     /' "$work/reveal.out"
    failures=$((failures + 1))
  fi
  expect_replay "replay of step $step (bitwise, text)" 0 "^witness commitment: [0-9a-f]\{64\}$" \
    -manifest "$work/m5.bin" -pre-state "$pre"
  expect_replay "step $step served with S_3 (the pre-state of step 4)" 1 \
    '"kind":"invalid_opening"' -manifest "$work/m5.bin" -pre-state "$other" -json
  expect_replay "replay of step $step, bucket mode on 2 threads" 0 '"check": *"ok"' -manifest "$work/m5-post.bin" \
    -pre-state "$pre" -post-state "$post" -mode bucket -threads 2 -json
  expect_replay "bucket mode without the post-state is bad usage" 2 "needs -post-state" \
    -manifest "$work/m5-post.bin" -pre-state "$pre" -mode bucket
fi

if [ "$failures" -ne 0 ]; then
  echo "run-tests.sh: $failures go-verifier case(s) failed" >&2
  exit 1
fi
echo "run-tests.sh: all Go binding tests passed"
