//! What a run measured beyond its verdicts: which fault met which step of a flow
//! ([`coverage`]), the goals it reached ([`goals`]), and every planned move's write pause and
//! bytes copied ([`handoff`]).

pub mod coverage;
pub mod goals;
pub mod handoff;
