//! # partmap-sim: the harness
//!
//! Runs the `partmap` control plane inside madsim's seeded network and clock, injects faults,
//! and checks named properties. A run is a pure function of (scenario, seed, build).
//!
//! The modules, bottom up: each imports only the ones above it in this table (and `partmap`).
//!
//! | module | what |
//! |---|---|
//! | [`cpu`] | the calling thread's CPU clock, which every cost figure is measured with |
//! | [`fault`] | one fault as a value; faults aimed at protocol roles ([`fault::aim`]) and started by protocol events ([`fault::trigger`]) |
//! | [`events`] | the typed history of a run (control-plane and harness events); the trace hash |
//! | [`scenario`] | the scenario file format (JSON) and its validation |
//! | [`workload`] | clients and their history; the heal-phase probe and final reads |
//! | [`check`] | the properties behind one registry ([`check::PROPERTIES`], [`check::judge()`]) and their views; availability figures and `expect` bounds |
//! | [`measure`] | coverage (fault × flow step), the goals registry, every planned move's write pause |
//! | [`run`] | one seed, end to end: the world ([`run::world`]), the nemesis ([`run::nemesis`]), the verdicts |
//! | [`report`] | one run's timeline, the pause review, the design review's questions, a history as EDN |
//! | [`sweep`] | many seeds in parallel: the seed selection and shards, the JSON summary, JUnit |
//! | [`search`] | schedules, shrinking, explore, hunt, every named mutation on its scenario |
//! | [`mod@bench`] | what a seed costs against madsim alone ([`bench::raw`], shared with `bench/raw-madsim`) |
//! | [`model`] | bounded model checking of the cores: every interleaving within bounds, judged by [`check`] (imports only `partmap`, [`events`], [`check`] and [`cpu`]) |

#![deny(missing_docs)]
pub mod cpu;
pub mod fault;
pub mod events;
pub mod scenario;
pub mod workload;
pub mod check;
pub mod measure;
pub mod run;
pub mod report;
pub mod sweep;
pub mod search;
pub mod bench;
pub mod model;
