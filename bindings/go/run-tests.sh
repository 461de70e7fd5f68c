#!/bin/sh
# Tests of the Go binding and of samples/go-verifier against an installed libpot.
#
# Usage: bindings/go/run-tests.sh PREFIX
#   PREFIX             where libpot is installed (PREFIX/include/pot.h,
#                      PREFIX/lib/libpot.so, PREFIX/lib/pkgconfig/pot.pc)
#   POT_PROTOCOL_FLOW  (environment) the built samples/protocol_flow binary
#
# Runs `go vet` and `go test -race` in bindings/go, builds samples/go-verifier,
# runs it on a run directory made by protocol_flow (expects PASS, exit 0) and
# on tampered copies of it (expects FAIL, exit 1). Nothing is downloaded:
# GOTOOLCHAIN=local and the binding is the only (replaced, local) dependency.
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

if [ "$failures" -ne 0 ]; then
  echo "run-tests.sh: $failures go-verifier case(s) failed" >&2
  exit 1
fi
echo "run-tests.sh: all Go binding tests passed"
