#!/usr/bin/env python3
"""Shrink again every kept schedule of scenarios/shrunk/ (issue 14's table): for each row of the
table in scenarios/shrunk/README.md, `partmap-sim shrink --seed N --scenario scenarios/SCENARIO
--mutation MUTATION --report-dir scenarios`, which rewrites scenarios/shrunk/<file> in place, then
rewrite the row from what the shrink printed. Run it (`just reshrink`) whenever a change of timing
makes `sim/tests/all/shrunk_kept.rs` fail: a kept schedule is a minimal interleaving, so it stops
failing when message times move. Needs a release build (`cargo build --release -p partmap-sim`).

Usage: scripts/reshrink.py [MUTATION ...]   (default: every row)
"""
import re
import subprocess
import sys
import time

README = "scenarios/shrunk/README.md"
BIN = "target/release/partmap-sim"


def rows(text):
    for line in text.splitlines():
        m = re.match(r"\| `([a-z-]+)` \| ([^|]+) \| ([a-z-]+\.json), (\d+) \| ([a-z_]+) \|", line)
        if m:
            yield line, m.group(1), m.group(2).strip(), m.group(3), int(m.group(4))


def main():
    text = open(README).read()
    only = set(sys.argv[1:])
    failed = []
    for line, mutation, kind, scenario, seed in list(rows(text)):
        if only and mutation not in only:
            continue
        t0 = time.time()
        cmd = [BIN, "shrink", "--seed", str(seed), "--scenario", f"scenarios/{scenario}", "--mutation", mutation, "--report-dir", "scenarios"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - t0
        out = p.stdout + p.stderr
        m = re.search(r"shrunk: faults (\d+) -> (\d+), operator requests (\d+) -> (\d+), in (\d+) runs, [\d.]+ s; (\w+) still violated", out)
        if p.returncode != 0 or not m:
            print(f"{mutation}: shrink failed (exit {p.returncode}):\n{out[-2000:]}", file=sys.stderr)
            failed.append(mutation)
            continue
        fb, fa, rb, ra, runs, prop = m.groups()
        path = f"scenarios/shrunk/{scenario[:-5]}-{mutation}-seed-{seed}.json"
        desc = open(path).read()
        left = re.search(r"are left \((.*?)\), in a", desc)
        left = left.group(1) if left else "none"
        new = f"| `{mutation}` | {kind} | {scenario}, {seed} | {prop} | {fb} + {rb} | {fa} + {ra} | {runs} | {wall:.1f} | {left} |"
        text = text.replace(line, new)
        open(README, "w").write(text)
        print(new, flush=True)
    if failed:
        print("not shrunk: " + ", ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
