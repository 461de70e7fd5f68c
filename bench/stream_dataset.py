#!/usr/bin/env python3
"""Cost of a token-stream dataset (docs/PROTOCOL.md 15.1) against one file
per sample, on a generated token file.

    python3 bench/stream_dataset.py PREFIX/bin/pot [--tokens 10000000] [--window 257]
                                    [--samples 2000] [--runs 5] [--dir DIR] [--json]

Writes a train.bin of `--tokens` uint16 ids, then times (median of
`--runs`, the first run discarded) `pot commit stream --out stream.json`
(one pass over the tokens: the shard root and the stream file) and `pot
commit stream --prove I` (the same pass plus one window's proof), and
reports the bytes on disk beside the token file and the size of a window
proof (what an opening carries per sample). With pot.torch importable it
also times pot.torch.write_dataset of `--samples` windows as one file
each, the layout a stream replaces, and extrapolates to every window of
the token file (docs/performance.md "Token streams"). Exit 0 when every
command ran, 3 when one failed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from array import array


def timed(cmd, runs):
    times, out = [], None
    for i in range(runs + 1):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
        if i:
            times.append(dt)
        out = p.stdout
    return statistics.median(times), out


def per_sample_files(directory, tokens, window, samples):
    """Seconds and bytes of write_dataset for `samples` windows."""
    import torch
    import pot.torch as pt
    data = torch.tensor(tokens[:samples + window], dtype=torch.int64)
    gen = ({"x": data[i:i + window - 1].clone(), "y": data[i + 1:i + window].clone()} for i in range(samples))
    t0 = time.perf_counter()
    pt.write_dataset(gen, directory)
    dt = time.perf_counter() - t0
    size = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))
    return dt, size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pot", help="the pot tool (an installed bin/pot)")
    ap.add_argument("--tokens", type=int, default=10_000_000)
    ap.add_argument("--window", type=int, default=257)
    ap.add_argument("--samples", type=int, default=2000, help="windows written as files by write_dataset")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", help="where to write (default: a temporary directory)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.runs < 1 or a.tokens <= a.window:
        ap.error("--runs must be at least 1 and --tokens above --window")
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        tokens = array("H", (((j * 2654435761) >> 7 & 0xFFFF) % 50257 for j in range(a.tokens)))
        train = os.path.join(d, "train.bin")
        with open(train, "wb") as f:
            tokens.tofile(f)
        stream_file = os.path.join(d, "stream.json")
        try:
            commit_s, out = timed([a.pot, "commit", "stream", "--window", str(a.window), train, "--out", stream_file,
                                   "--json"], a.runs)
            committed = json.loads(out)
            prove_s, out = timed([a.pot, "commit", "stream", "--window", str(a.window), train, "--prove",
                                  str(committed["dataset_size"] // 2), "--json"], a.runs)
        except RuntimeError as e:
            print(f"stream_dataset: {e}", file=sys.stderr)
            return 3
        proof_bytes = len(json.loads(out)["window"]["proof"]) // 2
        r = {
            "tokens": a.tokens, "window": a.window, "token_file_bytes": os.path.getsize(train),
            "windows": committed["dataset_size"],
            "commit_seconds": commit_s, "commit_mb_per_s": os.path.getsize(train) / commit_s / 1e6,
            "stream_file_bytes": os.path.getsize(stream_file),
            "prove_seconds": prove_s, "window_proof_bytes": proof_bytes,
        }
        try:
            import pot.torch  # noqa: F401
            have_torch = True
        except ImportError:
            have_torch = False
        if have_torch and a.samples > 0:
            secs, size = per_sample_files(os.path.join(d, "samples"), tokens, a.window, a.samples)
            r.update({"files_written": a.samples, "files_seconds": secs, "files_bytes": size,
                      "files_ms_per_sample": secs / a.samples * 1e3,
                      "files_all_windows_seconds": secs / a.samples * committed["dataset_size"],
                      "files_all_windows_bytes": size / a.samples * committed["dataset_size"]})
    lines = [
        f"token file: {r['tokens']:,} uint16 tokens, {r['token_file_bytes'] / 1e6:.1f} MB; windows of {a.window}: "
        f"{r['windows']:,}",
        f"pot commit stream --out: {r['commit_seconds'] * 1e3:.0f} ms ({r['commit_mb_per_s']:.0f} MB/s), "
        f"stream.json {r['stream_file_bytes']} bytes",
        f"pot commit stream --prove: {r['prove_seconds'] * 1e3:.0f} ms; a window proof is {r['window_proof_bytes']} "
        "bytes",
    ]
    if "files_seconds" in r:
        lines.append(f"write_dataset, one file per window: {r['files_ms_per_sample']:.2f} ms and "
                     f"{r['files_bytes'] / r['files_written']:.0f} bytes per sample; all {r['windows']:,} windows: "
                     f"{r['files_all_windows_seconds']:.0f} s, {r['files_all_windows_bytes'] / 1e9:.1f} GB")
    print("\n".join(lines), file=sys.stderr if a.json else sys.stdout)
    if a.json:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
