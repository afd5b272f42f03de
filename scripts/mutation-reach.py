#!/usr/bin/env python3
"""Does a named mutation change anything a run does? (issue 19: reachability of a survivor.)

For each scenario, sweeps seeds 0..SEEDS unmutated and with each mutation (release build of
partmap-sim, one job), and compares the trace hash of every seed: a seed whose trace differs
from the unmutated run's is one where the mutated code path changed behaviour (it was reached
and acted differently); a mutation whose traces never differ is never reached in a way that
matters on those seeds. Prints a markdown table: scenario, mutation, seeds whose trace
differs, seeds with a violated property, the properties.

Usage: scripts/mutation-reach.py SEEDS SCENARIO[,SCENARIO...] MUTATION[,MUTATION...]
  e.g. scripts/mutation-reach.py 20 scenarios/dueling-managers.json server-obeys-deposed-leader
Summaries go to reports/reach/ (ignored by git). Run from the repository's root.
"""
import json
import os
import subprocess
import sys

BIN = "target/release/partmap-sim"
OUT = "reports/reach"


def sweep(seeds, scenario, mutation):
    """Sweep seeds 0..seeds of scenario (with mutation, or none): {seed: (trace hash, failed properties)}."""
    cmd = [BIN, "sweep", "--seeds", f"0..{seeds}", "--jobs", "1", "--scenario", scenario, "--report-dir", OUT]
    if mutation:
        cmd += ["--mutation", mutation]
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stem = os.path.basename(scenario).removesuffix(".json")
    path = f"{OUT}/sweep-{stem}{'-' + mutation if mutation else ''}.json"
    records = json.load(open(path))["records"]
    return {r["seed"]: (r["trace_hash"], [p["property"] for p in r["properties"] if p["verdict"] != "pass"]) for r in records}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    seeds = int(sys.argv[1])
    scenarios = sys.argv[2].split(",")
    mutations = sys.argv[3].split(",")
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} missing: cargo build --release -p partmap-sim first")
    os.makedirs(OUT, exist_ok=True)
    print("| scenario | mutation | seeds whose trace differs | seeds violated | properties |")
    print("|---|---|---|---|---|")
    for scenario in scenarios:
        base = sweep(seeds, scenario, None)
        bad = [s for s, (_, failed) in base.items() if failed]
        if bad:
            print(f"| {scenario} | (none) | - | {len(bad)} of {seeds} | unmutated fails seeds {bad} |")
        for m in mutations:
            got = sweep(seeds, scenario, m)
            differ = [s for s in base if got[s][0] != base[s][0]]
            violated = {s: got[s][1] for s in got if got[s][1]}
            props = sorted({p for ps in violated.values() for p in ps})
            print(f"| {scenario} | {m} | {len(differ)} of {seeds} {differ[:8]} | {len(violated)} of {seeds} | {', '.join(props) or '-'} |", flush=True)


if __name__ == "__main__":
    main()
