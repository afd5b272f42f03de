//! Reports drawn from runs: one run's timeline as an HTML page ([`timeline`]), the pause review
//! ([`pause`]), the design review's questions ([`questions`]), and a history as a Jepsen/Knossos
//! EDN file for an external linearizability checker ([`history_edn`]).

pub mod history_edn;
pub mod pause;
pub mod questions;
pub mod timeline;
