//! The unit tests of `partmap_sim::report`'s submodules.

pub mod history_edn;
pub mod pause;
pub mod questions;
pub mod timeline;
