#!/usr/bin/env python3
"""The three defence-in-depth mutations with their masking layer also broken (issue 30's target:
"caught with the layer that masks them also switched off, or shown to be masked").

A defence-in-depth mutation D switches off a check that another layer X backs up, so no run
catches D alone. For each pair (D, X) of PAIRS this sweeps seeds 0..SEEDS of the default scenario
with X alone and with both (`--mutation D,X`), and compares seed by seed:
- reached: the seeds whose trace hash with D,X differs from X alone's (D's rule decided
  something differently on that seed; every one of the three rules traces what it refuses, so a
  different decision changes the trace);
- verdicts changed: the seeds whose set of failed properties differs from X alone's. A seed
  that fails with D,X and passes with X alone is D caught with X broken;
- other evidence: reached seeds that fail the same properties both ways but whose first
  violation (each property's evidence) differs: D changed the course of the run before it.
The rows with no X compare D alone with the unmutated run.

Usage: scripts/defence-in-depth.py [SEEDS] [--bin PATH] [--jobs N] [--write] [--reuse]
  SEEDS defaults to 300, the binary to target/release/partmap-sim (any profile gives the same
  traces), jobs to 2. --write rewrites reports/defence-in-depth.md (with the commit and the
  command in its header); otherwise the table goes to standard output. --reuse reads the
  summaries an earlier run left instead of sweeping (the sweeps are deterministic). Summaries go to
  reports/did/ (ignored by git). Run from the repository's root.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import time

OUT = "reports/did"
REPORT = "reports/defence-in-depth.md"

# D, then the layers that back it up (from each mutation's doc in src/mutation.rs).
PAIRS = [
    ("server-obeys-deposed-leader", [None, "authority-skips-leader-epoch", "authority-shares-leader-term", "new-leader-ignores-journal", "store-ignores-fence"]),
    ("server-admits-newer-epoch", [None, "publish-before-fence", "server-keeps-fenced-range", "new-leader-ignores-journal", "map-forgets-reshapes"]),
    ("server-keeps-fenced-range", [None, "zero-lease-margin", "server-ignores-lease-expiry", "source-ignores-pause", "pause-skips-drain"]),
]


def sweep(binary, seeds, jobs, mutation, reuse=False):
    """Sweep seeds 0..seeds of the default scenario (with mutation `A` or `A,B`, or none):
    {seed: (trace hash, sorted failed properties, their evidence)} and the CPU seconds it took."""
    tag = mutation.replace(",", "+") if mutation else "none"
    out = f"{OUT}/{tag}"
    if reuse:
        return read(out, seeds), 0.0
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cmd = [binary, "sweep", "--seeds", f"0..{seeds}", "--jobs", str(jobs), "--report-dir", out]
    if mutation:
        cmd += ["--mutation", mutation]
    before = os.times()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return read(out, seeds), cpu


def read(out, seeds):
    """The summary a sweep wrote in `out`: {seed: (trace hash, failed properties, evidence)}."""
    [path] = glob.glob(f"{out}/sweep-*.json")
    records = json.load(open(path))["records"]
    if len(records) != seeds:
        raise SystemExit(f"{path}: {len(records)} records, expected {seeds}")
    failed = lambda r: sorted((p["property"], json.dumps(p["evidence"], sort_keys=True)) for p in r["properties"] if p["verdict"] != "pass")
    return {r["seed"]: (r["trace_hash"], tuple(p for p, _ in failed(r)), tuple(e for _, e in failed(r))) for r in records}


def seeds_text(seeds, most=6):
    if not seeds:
        return "-"
    head = ", ".join(str(s) for s in seeds[:most])
    return head + (f", ... ({len(seeds)})" if len(seeds) > most else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seeds", nargs="?", type=int, default=300)
    ap.add_argument("--bin", default="target/release/partmap-sim")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="read the summaries reports/did/ holds instead of sweeping again")
    a = ap.parse_args()
    if not os.path.exists(a.bin):
        raise SystemExit(f"{a.bin} missing: cargo build --release -p partmap-sim first (or --bin)")
    os.makedirs(OUT, exist_ok=True)
    cache = {}
    cpu_total = 0.0

    def get(m):
        nonlocal cpu_total
        if m not in cache:
            cache[m], cpu = sweep(a.bin, a.seeds, a.jobs, m, a.reuse)
            cpu_total += cpu
        return cache[m]

    rows = []
    started = time.time()
    for d, layers in PAIRS:
        for x in layers:
            base = get(x)
            both = get(f"{d},{x}" if x else d)
            reached = [s for s in range(a.seeds) if both[s][0] != base[s][0]]
            changed = [s for s in range(a.seeds) if both[s][1] != base[s][1]]
            caught = [s for s in changed if both[s][1] and not base[s][1]]
            open_to_d = [s for s in reached if not base[s][1]]
            evidence = [s for s in reached if base[s][1] and both[s][1] == base[s][1] and both[s][2] != base[s][2]]
            props = sorted({p for s in changed for p in both[s][1]})
            base_fail = sum(1 for s in range(a.seeds) if base[s][1])
            both_fail = sum(1 for s in range(a.seeds) if both[s][1])
            rows.append(f"| `{d}` | {f'`{x}`' if x else '(none)'} | {base_fail} | {both_fail} | {len(reached)} ({seeds_text(reached)}) | {len(open_to_d)} ({seeds_text(open_to_d)}) | {len(changed)} ({seeds_text(changed)}) | {len(caught)} | {len(evidence)} | {', '.join(props) or '-'} |")
            print(rows[-1], flush=True)
    table = [
        "| mutation D | masking layer X | seeds failing with X alone | seeds failing with D,X | D reached: seeds whose trace differs | of them passing with X alone | verdicts changed: seeds | of them failing only with D | same verdict, other evidence | properties on changed seeds |",
        "|---|---|---:|---:|---|---|---|---:|---:|---|",
    ] + rows
    if not a.write:
        print("\n".join(table))
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "src", "sim/src"], capture_output=True, text=True).stdout.strip()
    cmd = f"scripts/defence-in-depth.py {a.seeds} --bin {a.bin} --jobs {a.jobs} --write"
    cost = f"{len(cache)} sweeps, {cpu_total:.0f} s of CPU, {time.time() - started:.0f} s wall" if not a.reuse else f"{len(cache)} sweeps, the table computed again with `--reuse` from the summaries that command wrote at this commit"
    text = [
        "# Defence in depth: each survivor with its masking layer also broken",
        "",
        f"Produced by `{cmd}` at commit {commit}{' (with uncommitted changes to the code)' if dirty else ''}: "
        f"seeds 0..{a.seeds} of the default scenario (the built-in `scenarios/swarm.json`) per row, "
        f"{cost}.",
        "",
        "The three defence-in-depth mutations (`src/mutation.rs`) each switch off a check that another",
        "layer backs up. Each row sweeps the same seeds with the layer X broken alone and with D broken",
        "too (`sweep --mutation D,X`) and compares them seed by seed. *Reached*: the trace differs, so",
        "D's rule decided something differently (each of the three rules traces what it refuses, so a",
        "different decision always shows in the trace). *Verdicts changed*: the set of failed",
        "properties differs. *Of them passing with X alone*: the seeds where only D could make a",
        "verdict change, the ones that tell something (a seed X fails already cannot show D);",
        "*failing only with D*: the seed passes with X alone and fails with both,",
        "which is D caught with its masking layer off. *Same verdict, other evidence*: reached seeds",
        "failing the same properties both ways whose evidence (the first violation each property",
        "reports) differs: D changed the run's course before that violation (another record or map",
        "version, of the same kind), not its verdict. A row with no X compares D alone against the",
        "unmutated run. The model checker's exhaustive answer for the same pairs, within its bounds, is",
        "in `reports/model.md` (Defence in depth).",
        "",
    ] + table + [""]
    open(REPORT, "w").write("\n".join(text))
    print(f"wrote {REPORT}")


if __name__ == "__main__":
    main()
