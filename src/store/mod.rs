//! The durable stream store (`store-1`): one append-only stream per range, and the fence that
//! makes a stale owner's write fail where it takes effect.
//!
//! `append(stream, epoch, record)` fails if the stream's fence is above `epoch`, and is
//! idempotent per stream: a record whose id is already there is not appended twice;
//! `fence(stream, epoch)` raises the fence (never lowers it) and returns the sealed content (from
//! an offset the caller names); `read(stream, from)` returns content without fencing (pre-copy).
//! Appends are synced to disk before they are acknowledged, and so is the fence. Idea: the
//! fencing token of Kleppmann's "How to do distributed locking" (2016) and Azure Storage's
//! stream layer sealing extents on partition reassignment (Calder et al., SOSP 2011).
//!
//! | file | what |
//! |---|---|
//! | [`core`] | core (pure): the streams ([`Streams`]) and the store's reply rules ([`StoreCore::handle`]`(input) -> `[`Step`]) |
//! | `node` | driver: the node task that performs the steps ([`run`]) |

pub mod core;
mod node;
#[cfg(test)]
mod node_tests;
#[cfg(test)]
mod tests;

pub use self::core::{chunk_budget, Input, Next, Step, Stream, StoreCore, StoreRecord, Streams, Then, CHUNK_TARGET_MS};
pub use node::run;
