//! The unit tests of `partmap_sim::search`'s submodules.

pub mod explore;
pub mod shrink;
pub mod workers;
