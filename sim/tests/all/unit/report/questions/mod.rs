//! The unit tests of `partmap_sim::report::questions`'s submodules.

pub mod atomicity;
pub mod managers;
pub mod refresh;
pub mod staleness;
pub mod upgrade;
