#!/usr/bin/env python3
"""Start-up time of the pot tool: wall time of whole commands, each run
N times (the first run is discarded: it warms the page cache).

    python3 bench/cli_startup.py PREFIX/bin/pot [--runs 20] [--json]

Measures `pot --version`, a protocol command that needs no replay
(`pot challenge`) and one that loads the replay module and LibTorch
(`pot spec hardware-class`), and prints the median and the fastest run of
each (docs/performance.md "Start-up"). Exit 0 when every command ran,
3 when one failed.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

COMMANDS = [
    ("pot --version", ["--version"]),
    ("pot challenge (no replay)", ["challenge", "--beacon", "0123456789abcdef", "--run-id", "ab" * 32,
                                   "--steps", "100000", "--rounds", "8"]),
    ("pot spec hardware-class (loads LibTorch)", ["spec", "hardware-class"]),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pot", help="the pot tool to time (an installed bin/pot)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="print one JSON object (the report goes to stderr)")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    results = []
    for label, args in COMMANDS:
        times = []
        for i in range(a.runs + 1):
            start = time.perf_counter()
            p = subprocess.run([a.pot, *args], capture_output=True)
            elapsed = time.perf_counter() - start
            if p.returncode != 0:
                print(f"{label}: exit {p.returncode}: {p.stderr.decode(errors='replace').strip()}", file=sys.stderr)
                return 3
            if i:
                times.append(elapsed)
        results.append({"command": label, "runs": a.runs, "median_ms": statistics.median(times) * 1e3,
                        "min_ms": min(times) * 1e3})
    out = sys.stderr if a.json else sys.stdout
    print(f"{'command':45} {'median':>10} {'fastest':>10}", file=out)
    for r in results:
        print(f"{r['command']:45} {r['median_ms']:8.1f} ms {r['min_ms']:7.1f} ms", file=out)
    if a.json:
        print(json.dumps({"benchmark": "cli_startup", "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
