//! The library's unit tests (formerly `#[cfg(test)] mod tests` in `sim/src`), one file per
//! source file, mirroring its path: `unit::check::index` tests `partmap_sim::check::index`.
//! Here the library is compiled once, not a second time as its own test harness.

pub mod bench;
pub mod check;
pub mod fault;
pub mod measure;
pub mod report;
pub mod run;
pub mod search;
pub mod sweep;
pub mod workload;
