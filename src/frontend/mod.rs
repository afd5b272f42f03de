//! Frontends (`frontend-N`): cache the map, route each request straight to the owning server,
//! refresh and retry on stale routes (or follow the new owner a refusal names).
//!
//! [`core`] holds every rule as a pure state machine ([`FrontendCore`]: inputs and time in,
//! outputs out, no runtime); [`node`] is the task that performs its outputs on the seam.

pub mod core;
pub mod node;

pub use self::core::{next_step, route, settled_by_bar, FrontendCore, Input, Output, Route, Step, Ticket};
pub use self::node::run;
