#!/usr/bin/env bash
# Runs one case of the cpp-verifier sample on the fixture of
# tests/replay/make_fixture.sh (a 6-step mlp run, a checkpoint every 3 steps).
#
# Usage: run-tests.sh CPP_VERIFIER FIXTURE_DIR CASE
#   bitwise                step 5 verifies bit for bit (S_4 re-derived from checkpoint 3)
#   bucket                 step 5 verifies by norm bucket on 2 threads
#   substituted_pre_state  S_3 served as S_4: rejected at pre_state_digest,
#                          witnessed as invalid_opening
#   corrupted_checkpoint   a byte of checkpoint 3 flipped: neither step 5
#                          (re-derived from it) nor step 4 (S_3 is that file)
#                          can be served
#   usage                  missing arguments: exit 2
# Each case works on its own copy of the checkpoint directory.
set -euo pipefail

verifier=$1 fixture=$2 case=$3
work="$fixture/case-$case"
rm -rf "$work"
mkdir -p "$work"
cp -r "$fixture/ck" "$work/ck"
rm -rf "$work/ck/derived"  # states re-derived by an earlier case

root=$(sed -n 's/.*"root":"\([0-9a-f]*\)".*/\1/p' "$fixture/record.json")
size=$(sed -n 's/.*"size":\([0-9]*\).*/\1/p' "$fixture/record.json")
run() {
  "$verifier" --checkpoints "$work/ck" --dataset "$fixture/run/samples" --spec "$fixture/run/spec.json" \
    --program "$fixture/run/program.pt" --root "$root" --size "$size" "$@"
}
# Runs the verifier, requires exit status $1 and every later pattern in its output.
expect() {
  local want=$1 rc=0
  shift
  local args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  run "${args[@]}" >"$work/out" 2>&1 || rc=$?
  cat "$work/out"
  if [ "$rc" -ne "$want" ]; then
    echo "FAILED: exit status $rc, expected $want" >&2
    exit 1
  fi
  for pattern in "$@"; do
    if ! grep -qF -- "$pattern" "$work/out"; then
      echo "FAILED: no '$pattern' in the output" >&2
      exit 1
    fi
  done
}
# The state digest leaf t records (line t of the recorder's steps.jsonl);
# an empty result would match any output, so it stops the test.
logged_state() {
  local d
  d=$(sed -n "${1}p" "$fixture/ck/steps.jsonl" | sed -n 's/.*"state_digest":"\([0-9a-f]\{64\}\)".*/\1/p')
  if [ -z "$d" ]; then
    echo "FAILED: no state digest for step $1 in $fixture/ck/steps.jsonl" >&2
    exit 1
  fi
  echo "$d"
}

case "$case" in
  bitwise)
    s5=$(logged_state 5) || exit 1
    expect 0 --step 5 -- "derived/000000000004.safetensors (re-derived, 1 step(s) replayed)" "replayed state  $s5" \
      "committed state $s5" "\"kind\":\"replayed\",\"mode\":\"bitwise\"" "          commitment " \
      "verifier: step 5 OK (bitwise, 1 thread)"
    ;;
  bucket)
    expect 0 --step 5 --mode bucket --threads 2 --identity 7631 -- "(committed " "identity 7631" \
      "verifier: step 5 OK (norm bucket, 2 threads)"
    ;;
  substituted_pre_state)
    expect 1 --step 5 --pre-state "$fixture/run/states/000003.safetensors" -- "serves" \
      "\"check\":\"pre_state_digest\"" "\"kind\":\"invalid_opening\"" "verifier: step 5 REJECTED at pre_state_digest"
    ;;
  corrupted_checkpoint)
    ck3="$work/ck/checkpoints/000000000003.safetensors"
    offset=$(($(stat -c %s "$ck3") - 100))  # inside the tensor data, past the header
    byte=$(od -An -tu1 -j "$offset" -N1 "$ck3" | tr -d ' ')
    printf "\\$(printf %03o $((byte ^ 1)))" | dd of="$ck3" bs=1 seek="$offset" conv=notrunc status=none
    expect 1 --step 5 -- "miner could not serve the step" "does not digest to the state the log records"
    # S_3 itself is the damaged checkpoint: the store checks a state against
    # the log before serving it, so the miner cannot serve step 4 either.
    expect 1 --step 4 -- "miner could not serve the step" "000000000003.safetensors' does not digest"
    ;;
  usage)
    rc=0
    "$verifier" --step 5 >"$work/out" 2>&1 || rc=$?
    cat "$work/out"
    [ "$rc" -eq 2 ] && grep -qF "usage: cpp_verifier" "$work/out"
    expect 2 --step 5 --mode fast -- "--mode is bitwise or bucket"
    ;;
  *)
    echo "run-tests.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
echo "case $case: passed"
