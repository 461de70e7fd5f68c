#!/bin/sh
# Builds and tests the Python binding against an installed libpot.
#
# Usage: bindings/python/run-tests.sh PREFIX [PYTEST ARGS...]
#   PREFIX              where libpot is installed (PREFIX/include/pot.h,
#                       PREFIX/lib/libpot.so)
#   POT_PYTHON          (environment) the interpreter, default Debian's
#                       /usr/bin/python3 (the one with python3-torch); may be
#                       a virtual environment's (scripts/torch-env)
#   POT_REPLAY_FIXTURE  (environment, optional) a directory made by
#                       tests/replay/make_fixture.sh: its run is verified too
#
# Creates a virtual environment with the system site packages (torch, numpy,
# pytest from Debian) in a temporary directory, pip-installs the binding
# from a copy of bindings/python (so no build files land in the source
# tree) with Debian's setuptools (--no-build-isolation: nothing is
# downloaded), checks that `import pot` works from elsewhere without
# LD_LIBRARY_PATH (the extension has a run path), then runs pytest on
# bindings/python/tests.
set -eu

if [ $# -lt 1 ]; then
  echo "usage: $0 PREFIX [PYTEST ARGS...]" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
python=${POT_PYTHON:-/usr/bin/python3}

if [ ! -f "$prefix/include/pot.h" ]; then
  echo "run-tests.sh: no include/pot.h under $prefix (cmake --install BUILD --prefix PREFIX)" >&2
  exit 2
fi
command -v swig >/dev/null || { echo "run-tests.sh: swig is not installed (apt-get install swig)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pot-python-tests.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

echo "== venv ($("$python" --version 2>&1), system site packages) in $work"
"$here/../../scripts/venv-over" "$python" "$work/venv"
py="$work/venv/bin/python"
if ! "$py" -c "import pytest" 2>/dev/null; then
  "$py" -m pip install --quiet --disable-pip-version-check "pytest==8.3.5"
fi

echo "== pip install bindings/python (POT_PREFIX=$prefix)"
mkdir "$work/src"
(cd "$here" && tar cf - --exclude=./build --exclude='*.egg-info' --exclude=__pycache__ --exclude=.pytest_cache .) |
  (cd "$work/src" && tar xf -)
POT_PREFIX="$prefix" "$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  "$work/src"

echo "== import pot"
(cd "$work" && env -u LD_LIBRARY_PATH "$py" -c "import pot; print('pot', pot.version(), 'ABI', pot.abi_version(), 'replay', pot.replay_available())")

echo "== pytest bindings/python/tests"
cd "$here/tests"
export PYTHONDONTWRITEBYTECODE=1
export POT_PREFIX="$prefix"  # tests that run the installed bin/pot as a verifier would
# One worker per core (POT_TEST_JOBS overrides; 1 runs serially), a test
# file per worker at a time (--dist loadfile: a module's fixtures are built
# once). pytest-xdist comes from scripts/deps (Debian) or
# scripts/torch2-requirements.txt; without it the tests run serially, and
# this says so.
jobs=${POT_TEST_JOBS:-$(nproc)}
parallel=""
if [ "$jobs" -gt 1 ]; then
  if "$py" -c "import xdist" 2>/dev/null; then
    parallel="-n $jobs --dist loadfile"
  else
    echo "== pytest-xdist is not installed for $python: the tests run serially"
  fi
fi
# shellcheck disable=SC2086
exec "$py" -m pytest -p no:cacheprovider -q -rs --durations=8 $parallel "$@" .
