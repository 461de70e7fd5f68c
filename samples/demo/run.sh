#!/usr/bin/env bash
# Runs the demo against an installed pot: a venv over Debian's python3 (which
# has torch) with the Python binding, the Go verifier, then demo.py.
# Usage: samples/demo/run.sh PREFIX OUT_DIR   (PREFIX from cmake --install, built with LibTorch)
# Environment: POT_PYTHON (below).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 PREFIX OUT_DIR" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
out=$2
here=$(cd "$(dirname "$0")" && pwd)
root="$here/../.."
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# TorchScript writes a module's constants in an order that follows Python's
# string hashing: a fixed hash seed makes the program file, hence the spec,
# the run ids and the challenged steps, the same on every run of the demo.

# POT_PYTHON: the Python whose torch the installed libpot replays (default
# Debian's /usr/bin/python3 with python3-torch; a venv's for torch 2.x,
# scripts/torch-env).
python=${POT_PYTHON:-/usr/bin/python3}
venv="$prefix/demo-venv"
[ -x "$venv/bin/python" ] || "$root/scripts/venv-over" "$python" "$venv"
echo "== installing the Python binding into $venv"
work=$(mktemp -d "${TMPDIR:-/tmp}/pot-demo-build.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
(cd "$root/bindings/python" && tar cf - --exclude=./build --exclude='*.egg-info' --exclude=__pycache__ .) |
  (cd "$work" && tar xf -)
POT_PREFIX="$prefix" "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  "$work"

echo "== building the Go verifier"
for d in /usr/local/go/bin "$HOME/.cargo/bin"; do [ -d "$d" ] && PATH="$d:$PATH"; done
command -v go >/dev/null || { echo "$0: Go (>= 1.22) is needed for the Go verifier" >&2; exit 1; }
(cd "$root/samples/go-verifier" && PKG_CONFIG_PATH="$prefix/lib/pkgconfig" GOTOOLCHAIN=local \
  GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=1 go build -o "$prefix/bin/go-verifier" .)
echo

echo "== samples/python-trainer: the three-line hook, 30 steps, one step verified"
"$venv/bin/python" "$root/samples/python-trainer/trainer.py" --out "$work/python-trainer" --steps 30 --every 10 2>/dev/null
echo

echo "== samples/python-trainer under pot-repro/1: trained on 1 thread with this CPU's kernels, one step"
echo "   verified by the CLI on 2 threads and with ATen's default kernels (docs/PROTOCOL.md 14.6)"
"$venv/bin/python" "$root/samples/python-trainer/trainer.py" --out "$work/repro-trainer" --steps 12 --every 4 \
  --arithmetic pot-repro/1 --export "$work/repro-verify" 2>/dev/null
# shellcheck disable=SC2046  # args holds options, split on purpose
set -- $(cat "$work/repro-verify/args") --commitment "$work/repro-verify/commitment.bin" \
  --spec "$work/repro-verify/spec.json" "$work/repro-verify/manifest.bin"
"$prefix/bin/pot" verify "$@" --threads 2
ATEN_CPU_CAPABILITY=default "$prefix/bin/pot" verify "$@"
echo

"$venv/bin/python" "$here/demo.py" --pot "$prefix/bin/pot" --go-verifier "$prefix/bin/go-verifier" --out "$out"
