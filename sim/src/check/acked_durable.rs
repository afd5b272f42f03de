//! `no_lost_append`, view `synced` (always): **acknowledged ⇒ durable**. An append may be
//! acknowledged to its client only once its record is durable at the store. Judged at the
//! moment of each client's acknowledgement, from the store's own events: what it recovered
//! with (`recovered node=store-1`), every sync that made records durable (`synced
//! node=store-1`), and every record it reported written (`effect`).
//!
//! The store's disk is one log. In one incarnation of the store (from a `recovered` event to the
//! next), the records known to be written up to an append's effect are at least the records it
//! recovered with plus one per `effect` event so far (each is a new record of that log); the
//! records durable are the recovered ones plus what every `synced` event since made durable. A
//! correct store reports an effect only after a sync that covers its record, so at every
//! effect the durable count is at least the written count; and what a later acknowledgement
//! sees is never less (a crash keeps what was durable; the next `recovered` event says how many
//! records survived). So when a client's append is acknowledged with the store's durable count
//! below the written count at that append's effect, the store acknowledged a record (that
//! append's, or one it reported before it) before it was durable: a crash in the gap loses an
//! acknowledged append. Issue 34: the final content alone misses this whenever a later sync
//! happens to cover every acknowledged record before the run ends.
//!
//! Idea: the durability half of Jepsen's "acknowledged writes are not lost" judged at the
//! acknowledgement instead of after the run, as ALICE (Pillai et al., OSDI 2014) checks an
//! application's acknowledgement against what a crash at that instant would keep.

use super::{secs, Violation};
use crate::events::{Event, Outcome, What};
use partmap::event::ClientOp;
use partmap::ids::{show_key, OpId};
use rustc_hash::FxHashMap;

/// The store node's name in `recovered` and `synced` events.
pub const STORE: &str = "store-1";

/// An append's newest effect at the store, as the clause keeps it.
#[derive(Clone, Copy)]
struct Written {
    /// The store's incarnation (0: the first start) it was written in.
    incarnation: usize,
    /// Records known written in that incarnation's log up to and including this one.
    need: u64,
    /// When the effect was reported, µs.
    t_us: u64,
    /// Stream and offset.
    stream: u64,
    offset: u64,
}

/// Check the clause on `events`. Errors: the first acknowledgement of an append whose record
/// the store had not made durable, with the counts, the effect and the acknowledgement.
pub fn check(events: &[Event]) -> Result<(), Violation> {
    // Per incarnation: (records recovered at its start, when it started).
    let mut starts: Vec<(u64, u64)> = Vec::new();
    // In the current incarnation: records durable, records known written.
    let (mut durable, mut written) = (0u64, 0u64);
    let mut newest: FxHashMap<OpId, Written> = FxHashMap::default();
    for ev in events {
        match &ev.what {
            What::Sys(crate::events::Sys::Recovered { node: STORE, records }) => {
                starts.push((*records as u64, ev.t_us));
                durable = *records as u64;
                written = durable;
            }
            What::Sys(crate::events::Sys::Synced { node: STORE, records }) => durable += *records as u64,
            What::Sys(crate::events::Sys::Effect { stream, id, offset, .. }) => {
                written += 1;
                let incarnation = starts.len().saturating_sub(1);
                newest.insert(*id, Written { incarnation, need: written, t_us: ev.t_us, stream: stream.0, offset: *offset });
            }
            What::Complete { op: ClientOp::Append, id, key, outcome: Outcome::Ok, .. } => {
                let Some(w) = newest.get(id) else { continue };
                // The records durable in the effect's incarnation as far as this moment: now,
                // or, if the store restarted since, what the restart found.
                let (had, when) = match starts.get(w.incarnation + 1) {
                    Some(&(survived, t_restart)) => (survived, format!("what survived to its restart at {}", secs(t_restart))),
                    None => (durable, "now".to_string()),
                };
                if had < w.need {
                    let (recovered, t_start) = starts.get(w.incarnation).copied().unwrap_or((0, 0));
                    return Err(Violation::new(format!(
                        "synced: {id} on key {} was acknowledged at {} while {STORE} had {had} durable records ({when}) of at least {} written up to its record (stream r{} offset {}, effect at {}; {recovered} recovered at {}, one per effect since): acknowledged before durable",
                        show_key(key), secs(ev.t_us), w.need, w.stream, w.offset, secs(w.t_us), secs(t_start)
                    ))
                    .at(ev.t_us)
                    .at(w.t_us)
                    .key(key)
                    .op(*id)
                    .range(w.stream));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
