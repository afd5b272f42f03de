//! Partition servers (`server-N`): serve their ranges, and enforce the epoch where it matters.
//!
//! | file | what |
//! |---|---|
//! | [`core`] | core (pure): the protocol state ([`ServerCore`], [`Held`]) and its steps: authority check and admission, reads, opens, the store's answers, pause, drain and release, pre-copy and the move's cutover |
//! | [`flow`] | core (pure): the requests as flows of steps, [`ServerCore::handle`]`(input, now) -> `[`Step`] |
//! | [`step`] | core (pure): the steps' types, [`Input`], [`Step`], [`Then`], shared by `core` and `flow` |
//! | `content` | core (pure): a range's content from its records |
//! | `node` | driver: the node task that performs the steps ([`run`]) |

pub mod core;
pub mod flow;
pub mod step;
mod content;
mod node;
#[cfg(test)]
mod flow_tests;
#[cfg(test)]
mod node_tests;
#[cfg(test)]
mod tests;

pub use self::core::{CopyState, Effect, Held, HeldState, Notifier, ServerCore};
pub use content::Object;
pub use flow::{Input, Next, Peer, Step, Then, Wait};
pub use node::run;
