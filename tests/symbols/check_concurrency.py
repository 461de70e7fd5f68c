#!/usr/bin/env python3
"""Checks docs/concurrency.md against include/pot.h: every function of the
header has exactly one row, with a known contract that agrees with its
handle parameters (exclusive: changes a non-const handle; shared: only const
handles; free: a *_free function; any: no existing handle changed).

Usage: check_concurrency.py POT_H CONCURRENCY_MD
"""
import re
import sys

CONTRACTS = {"any", "shared", "exclusive", "free"}


def functions(header):
    text = re.sub(r"/\*.*?\*/", "", open(header).read(), flags=re.S)
    handles = set(re.findall(r"typedef struct (pot_[a-z_]+) pot_[a-z_]+;", text))
    out = {}
    for name, params in re.findall(r"POT_API\s+[^;(]*?\b(pot_[a-z0-9_]+)\s*\(([^;]*?)\)\s*;", text, flags=re.S):
        kinds = []
        for p in " ".join(params.split()).split(","):
            m = re.match(r"\s*(const\s+)?(pot_[a-z_]+)\s*(\*+)", p)
            if m and m.group(2) in handles and not (m.group(2) == "pot_error" and m.group(3) == "**"):
                kinds.append(("const" if m.group(1) else "mut", len(m.group(3))))
        out[name] = kinds
    return out


def rows(doc):
    out = {}
    for line in open(doc):
        m = re.match(r"\|\s*`(pot_[a-z0-9_]+)`\s*\|\s*([a-z]+)\s*\|", line)
        if m:
            if m.group(1) in out:
                sys.exit(f"{doc}: {m.group(1)} is listed twice")
            out[m.group(1)] = m.group(2)
    return out


def main():
    fns, table = functions(sys.argv[1]), rows(sys.argv[2])
    problems = []
    for name in sorted(set(fns) - set(table)):
        problems.append(f"{name}: in pot.h, missing from the table")
    for name in sorted(set(table) - set(fns)):
        problems.append(f"{name}: in the table, not in pot.h")
    for name, contract in table.items():
        if name not in fns:
            continue
        if contract not in CONTRACTS:
            problems.append(f"{name}: unknown contract '{contract}'")
            continue
        kinds = fns[name]
        mut = [k for k in kinds if k == ("mut", 1)]
        const = [k for k in kinds if k[0] == "const"]
        if contract == "free" and not name.endswith("_free"):
            problems.append(f"{name}: 'free' but not a *_free function")
        if contract == "exclusive" and not mut:
            problems.append(f"{name}: 'exclusive' but changes no handle")
        if contract == "shared" and (mut or not const):
            problems.append(f"{name}: 'shared' needs const handles only")
        if contract == "any" and mut:
            problems.append(f"{name}: 'any' but changes a handle")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"{len(table)} functions, each with its contract")
    return 0


if __name__ == "__main__":
    sys.exit(main())
