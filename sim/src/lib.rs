//! # partmap-sim: the harness
//!
//! Runs the `partmap` control plane inside madsim's seeded network and clock, injects faults,
//! and checks named properties. A run is a pure function of (scenario, seed, build).
//!
//! | module | what |
//! |---|---|
//! | [`scenario`] | the scenario file format (JSON) and its validation |
//! | [`world`] | the world builder: named nodes, addresses, disks; kill, restart, cut links |
//! | [`nemesis`] | fault schedules: explicit, or drawn from the seed with per-seed rates (swarm) |
//! | [`workload`] | clients and their history; the heal-phase probe and final reads |
//! | [`events`] | the tracing layer that collects the event stream; the trace hash |
//! | [`coverage`] | which fault met which step of a flow, per run and per sweep |
//! | [`handoff`] | the write pause and bytes copied of every planned move |
//! | [`check`] | the properties: `single_writer`, `no_lost_append`, `map_tiles`, `liveness` |
//! | [`run`] | one seed, end to end |
//! | [`schedule`] | a run's faults written out as an explicit schedule that replays it |
//! | [`shrink`] | from a failing seed to a smallest schedule that still fails the same way |
//! | [`timeline`] | a run drawn as one self-contained HTML page |
//! | [`sweep`] | many seeds, in parallel, with a summary |
//! | [`mutants`] | every named mutation on its scenario: each must be caught |

pub mod check;
pub mod coverage;
pub mod events;
pub mod handoff;
pub mod mutants;
pub mod nemesis;
pub mod run;
pub mod scenario;
pub mod schedule;
pub mod shrink;
pub mod sweep;
pub mod timeline;
pub mod workload;
pub mod world;
