#!/usr/bin/env python3
"""The sweep oracle (sim/tests/all/mutation_oracle.rs) on named mutants of one file, one at a time
(issue 19). cargo-mutants 27.1.0's --re and --exclude-re let struct-field deletions through
(`cargo mutants --list --re ...` lists them), so to test exactly the survivors of the library's
tests this applies each mutant's own diff (from `cargo mutants --list --json --diff`), runs the
oracle in the release profile, and restores the file.

Usage: scripts/mutation-sweep-each.py FILE NAMES [SEEDS]
  FILE   the file mutated, e.g. src/frontend.rs
  NAMES  a text file of mutant names as cargo-mutants lists them, one per line
  SEEDS  seeds per scenario (default 20)
Run it in a private copy of the tree (it edits FILE in place). It first runs the oracle on the
unmutated tree, then prints CAUGHT or MISSED per mutant; each run's tail goes to
mutation-sweep-each.log.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

file, names_file = sys.argv[1], sys.argv[2]
seeds = sys.argv[3] if len(sys.argv) > 3 else "20"
names = [l.strip() for l in open(names_file) if l.strip()]
listed = json.loads(subprocess.run(["cargo", "mutants", "--list", "--json", "--diff", "-f", file], capture_output=True, text=True, check=True).stdout)
by_name = {m["name"]: m for m in listed}
missing = [n for n in names if n not in by_name]
if missing:
    sys.exit(f"not mutants of {file} now: {missing}")
env = dict(os.environ, CARGO_INCREMENTAL="1", PARTMAP_ORACLE_FILE=file, PARTMAP_ORACLE_SEEDS=seeds)
cmd = ["cargo", "test", "--release", "-p", "partmap-sim", "--test", "all", "--", "--ignored", "mutation_oracle::"]
log = open("mutation-sweep-each.log", "a")
original = tempfile.NamedTemporaryFile(delete=False).name
shutil.copy(file, original)


def oracle(label):
    start = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    log.write(f"=== {label}\nexit {p.returncode} after {time.time() - start:.0f} s wall\n{(p.stdout + p.stderr)[-1500:]}\n")
    log.flush()
    return p.returncode


if oracle("baseline (unmutated)") != 0:
    sys.exit("the oracle fails on the unmutated tree: see mutation-sweep-each.log")
for name in names:
    with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as d:
        d.write(by_name[name]["diff"])
    subprocess.run(["patch", "--quiet", file, d.name], check=True)
    try:
        rc = oracle(name)
    finally:
        shutil.copy(original, file)
        os.unlink(d.name)
    print("CAUGHT" if rc else "MISSED", name, flush=True)
