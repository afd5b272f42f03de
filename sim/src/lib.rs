//! # partmap-sim: the harness
//!
//! Runs the `partmap` control plane inside madsim's seeded network and clock, injects faults,
//! and checks named properties. A run is a pure function of (scenario, seed, build).
//!
//! | module | what |
//! |---|---|
//! | [`scenario`] | the scenario file format (JSON) and its validation |
//! | [`world`] | the world builder: named nodes, addresses, disks; kill, restart, cut links |
//! | [`fault`] | one fault as a value, named by the schedule, the history, coverage and the timeline |
//! | [`nemesis`] | fault schedules: explicit, or drawn from the seed with per-seed rates (swarm) |
//! | [`trigger`] | faults on protocol events: wait for the n-th event of a name at a node |
//! | [`aim`] | faults aimed at protocol roles (leader, move source, key owner), resolved when due |
//! | [`workload`] | clients and their history; the heal-phase probe and final reads |
//! | [`events`] | the typed history of a run (control-plane and harness events); the trace hash |
//! | [`goals`] | the goals registry: named situations a run can reach, per run and per sweep |
//! | [`coverage`] | which fault met which step of a flow, per run and per sweep |
//! | [`handoff`] | the write pause and bytes copied of every planned move |
//! | [`check`] | the properties and their views: `single_writer`, `no_lost_append`, `reads_consistent`, `map_tiles`, `manager_exclusive` |
//! | [`availability`] | availability figures (write pause, per-range stalls, leader churn) and `expect` bounds |
//! | [`run`] | one seed, end to end |
//! | [`seeds`] | which seeds a sweep runs: a range or a seeds file, one shard of it |
//! | [`sweep`] | many seeds, in parallel, stopped by a time budget or a signal |
//! | [`summary`] | the versioned JSON summary: a record per seed, totals, merge, the table |
//! | [`junit`] | a summary as a JUnit report |
//! | [`schedule`] | a run's faults written out as an explicit schedule that replays it |
//! | [`shrink`] | from a failing seed to a smallest schedule that still fails the same way |
//! | [`timeline`] | a run drawn as one self-contained HTML page |
//! | [`explore`] | feedback-guided search: a corpus of runs that reached something new, branched and mutated |
//! | [`hunt`] | the search's benchmark: random sweep against explore per mutation, CPU to first catch |
//! | [`workers`] | whole items on worker threads, results in item order |
//! | [`mutants`] | every named mutation on its scenario: each must be caught |
//! | [`mod@bench`] | what a seed costs against madsim alone (CPU per message, the checkers' share) |
//! | [`bench_raw`] | madsim alone: the raw request/response loop, shared with `bench/raw-madsim` |

#![deny(missing_docs)]
pub mod aim;
pub mod availability;
pub mod bench;
pub mod bench_raw;
pub mod check;
pub mod coverage;
pub mod events;
pub mod explore;
pub mod fault;
pub mod goals;
pub mod handoff;
pub mod history_edn;
pub mod hunt;
pub mod junit;
pub mod mutants;
pub mod nemesis;
pub mod pause_report;
pub mod questions;
pub mod run;
pub mod scenario;
pub mod seeds;
pub mod summary;
pub mod schedule;
pub mod shrink;
pub mod sweep;
pub mod timeline;
pub mod trigger;
pub mod workload;
pub mod workers;
pub mod world;
