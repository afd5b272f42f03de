//! Searching for failing runs and making them small: the schedule a run replays
//! ([`schedule`]), shrinking a failing seed ([`shrink`]), feedback-guided exploration
//! ([`explore`]) and its benchmark against random sweeps ([`hunt`]), every named mutation on its
//! scenario ([`mutants`]), and the worker pool they share ([`workers`]).

pub mod explore;
pub mod hunt;
pub mod mutants;
pub mod schedule;
pub mod shrink;
pub mod workers;
