#!/usr/bin/env bash
# Prepares the replay fixture the Go and Rust binding tests read when
# POT_REPLAY_FIXTURE names it: a 6-step training run (tests/replay/train.py,
# mlp + AdamW), recorded through the C API recorder into a checkpoint
# directory with a checkpoint every 3 steps (so S_1, S_2, S_4 and S_5 must be
# re-derived by replay when an opening needs them).
#
# Usage: tests/replay/make_fixture.sh BUILD_DIR OUT_DIR
#   BUILD_DIR  a build tree configured with LibTorch (POT_WITH_TORCH=ON) that
#              holds tests/pot_record_run
#   OUT_DIR    created if needed; its run/, ck/ and record.json are replaced
#
# OUT_DIR then holds:
#   run/          the run directory of train.py (tests/replay/README.md):
#                 program.pt, spec.json, schedule.json, samples/, states/
#   ck/           the recorder's checkpoint directory (docs/PROTOCOL.md 21.4),
#                 with commitment.bin
#   record.json   pot_record_run's output: {"run_id", "root", "size", ...}
#
# Trains with the Python whose torch is the build's LibTorch (Debian's
# /usr/bin/python3 with python3-torch, or the POT_TORCH wheel's). Takes a
# few seconds on one core.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
record="$build/tests/pot_record_run"
if [ ! -x "$record" ]; then
  echo "make_fixture.sh: $record is missing (a build with POT_WITH_TORCH=ON builds it)" >&2
  exit 2
fi
mkdir -p "$2"
out=$(cd "$2" && pwd)
rm -rf "$out/run" "$out/ck" "$out/record.json"

# The Python whose torch is the build's LibTorch (cmake/PotTorch.cmake).
python=$(sed -n 's/^POT_TORCH_PYTHON:[A-Z]*=//p' "$build/CMakeCache.txt")
python=${python:-/usr/bin/python3}
"$python" "$here/train.py" --out "$out/run" --model mlp --optim adamw --steps 6 >"$out/train.log"
# pot_record_run refuses a directory that already holds a run (removed above).
if ! "$record" "$out/run" "$out/ck" --every 3 >"$out/record.json.tmp"; then
  echo "make_fixture.sh: pot_record_run failed:" >&2
  cat "$out/record.json.tmp" >&2
  exit 1
fi
mv "$out/record.json.tmp" "$out/record.json"
echo "make_fixture.sh: fixture in $out ($(cat "$out/record.json"))"
