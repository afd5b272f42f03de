//! The harness's integration tests, as one test binary: each module is one former test file
//! (scenarios, golden runs, the command line, shrink, mutants, ...), sharing `common`.
//! One binary links once; run one module with `cargo test -p partmap-sim --test all MODULE::`.

#[path = "../common/mod.rs"]
mod common;

mod aimed_faults;
mod availability;
mod clock_corners;
mod cli;
mod competing;
mod golden;
mod leader_transfer;
mod load;
mod moves;
mod mutants;
mod model;
mod mutation_oracle;
mod pause_goldens;
mod reshape;
mod rolling_restart_managers;
mod scenario_errors;
mod sharper_verdicts;
mod shrink;
mod shrunk_kept;
mod sim_default;
mod timeline_browser;
mod verdicts;

// The library's own unit tests (sim/src has none: its [lib] is built without a test harness).
mod unit;
