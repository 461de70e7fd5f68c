#!/usr/bin/env bash
# Runs the libFuzzer targets of a fuzz build (docs/security.md section 0):
# each from a corpus seeded from tests/vectors, for SECONDS, as many at once
# as there are cores, and prints executions, coverage and corpus size per
# target. Any finding (crash, sanitizer report, leak, timeout, out-of-memory)
# fails the run; its input is kept under BUILD/tests/fuzz/findings/.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
#   e.g. CC=clang-14 CXX=clang++-14 cmake --preset fuzz && cmake --build build-fuzz --target fuzz_seeds
#        tests/fuzz/run.sh build-fuzz 30
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]" >&2; exit 2; }
dir="$1/tests/fuzz"
seconds="$2"
shift 2
[ -d "$dir/seeds" ] || { echo "tests/fuzz/run.sh: no $dir/seeds: build the fuzz_seeds target first" >&2; exit 2; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for s in "$dir"/seeds/*; do targets+=("$(basename "$s")"); done
fi
mkdir -p "$dir/logs" "$dir/findings"
export dir seconds
run_one() {
  t="$1"
  mkdir -p "$dir/corpus/$t"
  # The working corpus grows across runs; the seeds are read as a second
  # corpus directory (libFuzzer writes new inputs only into the first).
  if "$dir/$t" "$dir/corpus/$t" "$dir/seeds/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/findings/$t-" >"$dir/logs/$t.log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/logs/$t.log")
    line=$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)' "$dir/logs/$t.log" | tail -1)
    cov=$(sed -E 's/.* cov: ([0-9]+).*/\1/' <<<"$line")
    ft=$(sed -E 's/.* ft: ([0-9]+).*/\1/' <<<"$line")
    corp=$(sed -E 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/' <<<"$line")
    printf '%-20s ok       %4ss  execs %10s  cov %5s  ft %6s  corpus %s\n' "$t" "$seconds" "$execs" "$cov" "$ft" "$corp"
  else
    printf '%-20s FINDING  see %s\n' "$t" "$dir/logs/$t.log"
    grep -E 'ERROR|SUMMARY|Test unit written' "$dir/logs/$t.log" | head -5 | sed 's/^/    /'
    return 1
  fi
}
export -f run_one
printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_one {}'
