# partmap: the everyday commands. `just --list` shows them; each is one cargo command you can
# also type yourself.

# Sweep a scenario (the main job). Example: just sweep 0..2000 2
sweep seeds="0..2000" jobs="2" scenario="scenarios/swarm.json":
    cargo run --release -p partmap-sim -- sweep --seeds {{seeds}} --jobs {{jobs}} --scenario {{scenario}}

# Planned moves under faults, with the write-pause table per strategy (about 110 s here).
moves seeds="0..2000" jobs="2":
    cargo run --release -p partmap-sim -- sweep --seeds {{seeds}} --jobs {{jobs}} --scenario scenarios/moves.json

# The pause review: strategy x range size x write rate x bandwidth, model against measured,
# SVG plots; written to reports/pause/. Example: just pause 10
pause seeds="10":
    cargo run --release -p partmap-sim -- report pause --seeds {{seeds}}

# The worked move of DESIGN.md, step by step.
transfer:
    cargo run --release -p partmap-sim -- run --seed 1 --scenario scenarios/seed-transfer.json --trace

# Re-run one seed with the readable trace. Example: just repro 17
repro seed scenario="scenarios/swarm.json" *args="":
    cargo run --release -p partmap-sim -- run --seed {{seed}} --scenario {{scenario}} --trace {{args}}

# Shrink a failing seed to a smallest schedule that still fails the same way (written to
# reports/shrunk/). Example: just shrink 0 scenarios/cut-off-owner.json --mutation server-ignores-lease-expiry
shrink seed scenario="scenarios/swarm.json" *args="":
    cargo run --release -p partmap-sim -- shrink --seed {{seed}} --scenario {{scenario}} {{args}}

# Shrink every kept schedule of scenarios/shrunk/ again and rewrite its table (when
# sim/tests/all/shrunk_kept.rs says one stopped failing). Example: just reshrink store-ignores-fence
reshrink *mutations="":
    cargo build --release -p partmap-sim
    python3 scripts/reshrink.py {{mutations}}

# Draw one run as a self-contained HTML timeline (written to reports/timelines/).
# Example: just timeline 0 scenarios/paused-owner.json --mutation server-skips-authority-check
timeline seed scenario="scenarios/swarm.json" *args="":
    cargo run --release -p partmap-sim -- timeline --seed {{seed}} --scenario {{scenario}} {{args}}

# Unit, property, golden and simulation tests (the README's test command).
test:
    cargo test --workspace --profile tests

# What CI runs.
ci:
    bash .ci/run

# Speed benchmark: madsim's raw CPU per message (the patched build we run on, and
# 0.2.34 as published, built from bench/raw-madsim and run as a child), then seeds 0..40 of the
# default scenario one after the other (CPU per seed and per message, the checkers' share, the
# same with a 4x longer workload) and the ratio of CPU per message, scenario / raw madsim.
bench seeds="0..40" scenario="scenarios/swarm.json":
    cargo build --release --manifest-path bench/raw-madsim/Cargo.toml --target-dir target/raw-madsim
    cargo run --release -p partmap-sim -- bench --seeds {{seeds}} --scenario {{scenario}}

# Prove the checkers: every named mutation on its scenario must be caught. Add --write-table to
# rewrite the kept table, reports/mutants.md (with --seeds 20 --rate, as kept).
mutants *args="":
    cargo run --release -p partmap-sim -- mutants {{args}}

# Show that the checkers catch a broken build: the store ignoring the fence, on the golden scenario.
mutant:
    cargo run --release -p partmap-sim -- sweep --seeds 0..20 --jobs 2 --scenario scenarios/stale-write-after-failover.json --mutation store-ignores-fence

# Mutation testing, oracle 1 (reports/mutation-testing.md, "How it is run"): every cargo-mutants mutant of FILE
# tested by the library's tests; results in reports/mutation/FILE/mutants.out/.
# Example: just mutation src/store.rs (extra args go to cargo-mutants, e.g. --shard 1/3).
mutation file *args="":
    cargo mutants --jobs 1 -f {{file}} --test-package partmap --timeout 60 -C=--config=profile.dev.package.partmap.opt-level=0 -C=--config=profile.dev.package.partmap.debug=0 -o reports/mutation/{{file}} {{args}} -- --lib

# Mutation testing, oracle 2: the survivors of `just mutation FILE` against a bounded sweep of
# the scenarios that exercise FILE (sim/tests/all/mutation_oracle.rs), seeds 0..SEEDS each.
mutation-sweep file seeds="20" *args="":
    PARTMAP_ORACLE_FILE={{file}} PARTMAP_ORACLE_SEEDS={{seeds}} cargo mutants --iterate --jobs 1 -f {{file}} --test-package partmap-sim --profile release --timeout 1800 -o reports/mutation/{{file}} {{args}} -- --test all -- --ignored mutation_oracle::

# Reachability of named mutations: seeds 0..SEEDS of each scenario, unmutated and
# with each mutation, compared by trace hash (scripts/mutation-reach.py; commas separate).
# Example: just mutation-reach 20 scenarios/dueling-managers.json server-obeys-deposed-leader
mutation-reach seeds scenarios mutations:
    cargo build --release -p partmap-sim
    scripts/mutation-reach.py {{seeds}} {{scenarios}} {{mutations}}

# The guided search of the default scenario (stops at the first violation). Example:
# just explore 1000 --mutation target-skips-verify
explore runs="1000" *args="":
    cargo run --release -p partmap-sim -- explore --runs {{runs}} --jobs 2 {{args}}

# The search's benchmark: random sweep against explore per named mutation; writes reports/hunt.md.
hunt runs="200":
    cargo run --release -p partmap-sim -- hunt --runs {{runs}} --write-table
