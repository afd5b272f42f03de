#!/usr/bin/env python3
"""Per-file table of one or more cargo-mutants runs (issue 19): mutants, caught, missed,
timeout, unviable, and the share of viable mutants caught, from each run's outcomes.json.

Usage: scripts/mutation-table.py DIR... (each a cargo-mutants output dir holding
mutants.out/outcomes.json); prints a markdown table, then the missed mutants per file.
A later run of the same mutant (e.g. `--iterate` with the sweep oracle) overrides an earlier.
"""
import json
import sys
from collections import OrderedDict, defaultdict

by_name = OrderedDict()
for d in sys.argv[1:]:
    data = json.load(open(f"{d}/mutants.out/outcomes.json"))
    for o in data["outcomes"]:
        m = o["scenario"]
        if not isinstance(m, dict) or "Mutant" not in m:
            continue  # the baseline
        m = m["Mutant"]
        by_name[m["name"]] = (m["file"], o["summary"])

rows = defaultdict(lambda: defaultdict(int))
missed = defaultdict(list)
for name, (file, summary) in by_name.items():
    rows[file][summary] += 1
    if summary in ("MissedMutant", "Timeout"):
        missed[file].append(f"{name} ({'missed' if summary == 'MissedMutant' else 'timeout'})")

print("| file | mutants | caught | missed | timeout | unviable | caught of viable |")
print("|---|---|---|---|---|---|---|")
total = defaultdict(int)
for file in sorted(rows):
    r = rows[file]
    n = sum(r.values())
    caught, miss, to, unv = r["CaughtMutant"], r["MissedMutant"], r["Timeout"], r["Unviable"]
    viable = n - unv
    # A timeout is a mutant the oracle did not pass: cargo-mutants counts it apart; here it is
    # counted as caught in the share (the tests hang or exceed the limit on it).
    share = f"{100 * (caught + to) / viable:.0f}%" if viable else "-"
    print(f"| `{file}` | {n} | {caught} | {miss} | {to} | {unv} | {share} |")
    for k, v in (("n", n), ("c", caught), ("m", miss), ("t", to), ("u", unv)):
        total[k] += v
viable = total["n"] - total["u"]
share = f"{100 * (total['c'] + total['t']) / viable:.0f}%" if viable else "-"
print(f"| all | {total['n']} | {total['c']} | {total['m']} | {total['t']} | {total['u']} | {share} |")
for file in sorted(missed):
    print(f"\nMissed in `{file}`:\n")
    for m in missed[file]:
        print(f"- {m}")
