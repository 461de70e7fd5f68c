#!/usr/bin/env bash
# Builds and tests the Rust binding against an installed libpot, then runs
# samples/rust-verifier on a run directory made by samples/protocol_flow.
#
# Usage: bindings/rust/run-tests.sh PREFIX
#   PREFIX             the libpot install prefix (PREFIX/lib/pkgconfig/pot.pc)
#   POT_PROTOCOL_FLOW  (environment) the protocol_flow sample binary
#   POT_REPLAY_FIXTURE (environment, optional) a directory made by
#                      tests/replay/make_fixture.sh (needs a libpot with
#                      LibTorch): the binding's replay test runs on it, and so
#                      does rust-verifier --replay on step 5, the opening
#                      served by PREFIX/bin/pot (`pot open make`): bitwise and
#                      bucket mode pass, another step's pre-state fails at
#                      pre_state_digest (witnessed as invalid_opening), the
#                      witness commitment opens with `pot witness reveal` on
#                      the printed statement. Skipped when unset.
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
# line of output matching PATTERN. The output is left in $last_output.
last_output=
expect() {
  local want=$1 pattern=$2 out got
  shift 2
  set +e
  out=$("$verifier" "$@" 2>&1)
  got=$?
  set -e
  last_output=$out
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

# Replay mode, on the recorded PyTorch run of tests/replay/make_fixture.sh.
if [ -z "${POT_REPLAY_FIXTURE:-}" ]; then
  echo "== rust-verifier --replay: skipped, POT_REPLAY_FIXTURE is not set" \
    "(make one with tests/replay/make_fixture.sh BUILD_DIR OUT_DIR)"
else
  fixture=$POT_REPLAY_FIXTURE
  step=5
  identity=727573742d7665726966696572 # "rust-verifier"
  # shellcheck source=../../tests/replay/serve_fixture.sh
  . "$repo/tests/replay/serve_fixture.sh"
  replay=(--replay --commitment "$work/ck/commitment.bin" --spec "$fixture/run/spec.json"
    --program "$fixture/run/program.pt" --root "$root"
    --size "$size" --step $step --identity $identity)

  echo "== rust-verifier --replay: step $step, bitwise (JSON)"
  expect 0 '"check": *"ok"' "${replay[@]}" --manifest "$work/m5.bin" --pre-state "$pre" --json
  printf '%s\n' "$last_output" >"$work/witness.json"
  echo "== pot witness reveal: the witness commitment opens with the statement printed next to it"
  tr -d '\n' <"$work/witness.json" | grep -o '"statement": *{[^{}]*{[^{}]*}[^{}]*}' |
    sed 's/^"statement": *//' >"$work/statement.json"
  if grep -q '"run_id": *"'"$run_id"'"' "$work/statement.json" &&
    "$potcli" witness reveal "$work/statement.json" --commitment "$(json_field witness_commitment "$work/witness.json")" \
      --identity $identity --salt "$(json_field salt "$work/witness.json")"; then
    echo "ok: the reveal opens the commitment"
    passed=$((passed + 1))
  else
    echo "FAILED: the witness commitment does not open"
    failed=$((failed + 1))
  fi

  echo "== rust-verifier --replay: step $step, bitwise (text)"
  expect 0 '^witness commitment: [0-9a-f]\{64\}$' "${replay[@]}" --manifest "$work/m5.bin" --pre-state "$pre"

  echo "== rust-verifier --replay: step $step served with S_3 (the pre-state of step 4)"
  expect 1 '"kind":"invalid_opening","mode"' "${replay[@]}" --manifest "$work/m5.bin" --pre-state "$other" --json

  echo "== rust-verifier --replay: step $step, bucket mode on 2 threads with the served post-state"
  expect 0 '"check": *"ok"' "${replay[@]}" --manifest "$work/m5-post.bin" --pre-state "$pre" \
    --post-state "$post" --mode bucket --threads 2 --json

  echo "== rust-verifier --replay: bucket mode without the post-state is bad usage"
  expect 2 'needs --post-state' "${replay[@]}" --manifest "$work/m5-post.bin" --pre-state "$pre" --mode bucket
fi

echo "rust-verifier: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
