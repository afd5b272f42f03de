//! The unit tests of `partmap_sim::fault`'s submodules.

pub mod aim;
pub mod trigger;
