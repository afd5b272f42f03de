//! The unit tests of `partmap_sim::measure`'s submodules.

pub mod coverage;
pub mod goals;
pub mod handoff;
