//! The unit tests of `partmap_sim::search`'s submodules.

pub mod explore;
pub mod hunt;
pub mod shrink;
pub mod workers;
