#!/usr/bin/env python3
"""Trace hashes of every scenario, seeds 0..N, from one partmap-sim binary: one line per
(scenario, seed), `scenario seed hash outcome`, sorted. Two builds behave the same on these seeds
when their outputs are identical:

    python3 scripts/trace-hashes.py OLD_BINARY > /tmp/old.txt
    python3 scripts/trace-hashes.py NEW_BINARY > /tmp/new.txt
    diff /tmp/old.txt /tmp/new.txt && echo identical

Usage: trace-hashes.py BINARY [--seeds N] [--jobs J] [--scenarios GLOB]
"""
import argparse, glob, json, os, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("binary")
ap.add_argument("--seeds", type=int, default=20)
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--scenarios", default="scenarios/*.json")
args = ap.parse_args()

lines = []
for path in sorted(glob.glob(args.scenarios)):
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([args.binary, "sweep", "--seeds", f"0..{args.seeds}", "--jobs", str(args.jobs),
                        "--scenario", path, "--report-dir", out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        summaries = glob.glob(os.path.join(out, "sweep-*.json"))
        if not summaries:
            sys.exit(f"{path}: the sweep wrote no summary")
        with open(summaries[0]) as f:
            s = json.load(f)
        for r in s["records"]:
            lines.append(f"{os.path.basename(path)} {r['seed']} {r['trace_hash']} {r.get('outcome', '')}")
print("\n".join(sorted(lines)))
