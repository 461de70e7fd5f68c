#!/usr/bin/env bash
# Builds and tests the Rust binding against an installed libpot, then runs
# samples/rust-verifier on a run directory made by samples/protocol_flow.
#
# Usage: bindings/rust/run-tests.sh PREFIX
#   PREFIX             the libpot install prefix (PREFIX/lib/pkgconfig/pot.pc)
#   POT_PROTOCOL_FLOW  (environment) the protocol_flow sample binary
#   CARGO_BUILD_JOBS   (environment) parallel jobs, default 2
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 PREFIX   (with POT_PROTOCOL_FLOW=path/to/protocol_flow)" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${POT_PROTOCOL_FLOW:?set POT_PROTOCOL_FLOW to the protocol_flow sample binary}"
protocol_flow=$(cd "$(dirname "$POT_PROTOCOL_FLOW")" && pwd)/$(basename "$POT_PROTOCOL_FLOW")

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

echo "== bindings/rust: format, clippy, tests (unit, integration, doc)"
cd "$here"
if cargo fmt --version >/dev/null 2>&1; then cargo fmt --check; fi
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked

echo "== samples/rust-verifier: format, clippy, unit tests, build"
cd "$repo/samples/rust-verifier"
if cargo fmt --version >/dev/null 2>&1; then cargo fmt --check; fi
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked
cargo build --locked
verifier="${CARGO_TARGET_DIR:-$PWD/target}/debug/rust-verifier"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/run"
"$protocol_flow" "$work/run"

passed=0
failed=0
# expect EXIT PATTERN ARGS...: runs the verifier, wants that exit code and a
# line of output matching PATTERN.
expect() {
  local want=$1 pattern=$2 out got
  shift 2
  set +e
  out=$("$verifier" "$@" 2>&1)
  got=$?
  set -e
  printf '%s\n' "$out" | sed 's/^/    /'
  if [ "$got" -eq "$want" ] && printf '%s\n' "$out" | grep -q -- "$pattern"; then
    echo "ok: exit $got, output has '$pattern'"
    passed=$((passed + 1))
  else
    echo "FAILED: exit $got (want $want), want output matching '$pattern'"
    failed=$((failed + 1))
  fi
}

echo "== rust-verifier: the beacon protocol_flow used (\"beacon\")"
expect 0 '^PASS' --dir "$work/run" --beacon 626561636f6e

# For this run id, "beacoo" draws steps 4 and 3, which protocol_flow did not open.
echo "== rust-verifier: a wrong beacon challenges steps that were not opened"
expect 1 '^FAIL' --dir "$work/run" --beacon 626561636f6f

echo "== rust-verifier: a rewritten post-state file"
cp -r "$work/run" "$work/tampered"
t=$(head -n 1 "$work/run/challenges.txt")
cp "$work/tampered/state-$((t - 1)).safetensors" "$work/tampered/state-$t.safetensors"
expect 1 '^FAIL: step .*post_state_digest' --dir "$work/tampered" --beacon 626561636f6e

echo "== rust-verifier: a missing run directory is bad input"
expect 2 'commitment.json' --dir "$work/nonexistent" --beacon 626561636f6e

echo "rust-verifier: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
