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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::at;
    use crate::events::Sys;
    use partmap::ids::{Epoch, RangeId, ServerId};

    const ID: OpId = OpId { client: 1, seq: 7 };

    fn recovered(t_us: u64, records: usize) -> Event {
        at(t_us, Sys::Recovered { node: STORE, records })
    }

    fn synced(t_us: u64, records: usize) -> Event {
        at(t_us, Sys::Synced { node: STORE, records })
    }

    fn effect(t_us: u64, seq: u64, offset: u64) -> Event {
        at(t_us, Sys::Effect { stream: RangeId(1), server: ServerId(1), epoch: Epoch(1), key: b"k1".to_vec(), id: OpId { client: 1, seq }, offset, bytes: 16 })
    }

    fn acked(t_us: u64, seq: u64) -> Event {
        Event { t_us, what: What::Complete { op: ClientOp::Append, id: OpId { client: 1, seq }, key: b"k1".to_vec(), outcome: Outcome::Ok, reason: String::new(), value_len: 0, value_hash: 0 } }
    }

    /// A correct store: each effect follows the sync of its record.
    #[test]
    fn acked_durable_accepts_acknowledgements_after_the_sync() {
        check(&[recovered(0, 2), synced(5, 1), effect(5, 7, 0), acked(9, 7)]).unwrap();
        // One sync covering two records, reported before both effects.
        check(&[recovered(0, 0), synced(5, 2), effect(5, 1, 0), effect(6, 2, 1), acked(9, 1), acked(9, 2)]).unwrap();
        // Syncs of another node do not count, but nothing is wrong here either.
        check(&[recovered(0, 0), at(1, Sys::Synced { node: "lock-1", records: 1 }), synced(4, 1), effect(5, 7, 0), acked(9, 7)]).unwrap();
    }

    /// The store reported the effect before any sync covered it, and the client was told ok
    /// before a later sync did: flagged at the acknowledgement, however the run ends.
    #[test]
    fn acked_durable_flags_an_acknowledgement_before_the_sync() {
        let evs = [recovered(0, 11), effect(5, 7, 3), acked(9, 7), synced(20, 1)];
        let err = check(&evs).unwrap_err();
        assert!(err.contains("c1.7 on key k1 was acknowledged at 0.000009s while store-1 had 11 durable records (now) of at least 12 written"), "{err}");
        assert_eq!(err.evidence.times_us, vec![9, 5]);
        assert_eq!(err.evidence.ops, vec![ID]);
        // The same with the sync before the acknowledgement: durable by then.
        check(&[recovered(0, 11), effect(5, 7, 3), synced(8, 1), acked(9, 7)]).unwrap();
    }

    /// A crash between the effect and the acknowledgement: what survived to the restart
    /// decides, not what the new incarnation syncs later.
    #[test]
    fn acked_durable_judges_by_what_survived_a_restart() {
        let lost = [recovered(0, 4), effect(5, 7, 0), recovered(8, 4), synced(9, 3), acked(10, 7)];
        let err = check(&lost).unwrap_err();
        assert!(err.contains("4 durable records (what survived to its restart at 0.000008s) of at least 5 written"), "{err}");
        // Torn write: the record reached the platter and the restart found it.
        check(&[recovered(0, 4), effect(5, 7, 0), recovered(8, 5), acked(10, 7)]).unwrap();
        // A retry in the new incarnation wrote it again and it was synced there.
        check(&[recovered(0, 4), effect(5, 7, 0), recovered(8, 4), synced(9, 1), effect(9, 7, 0), acked(10, 7)]).unwrap();
    }

    /// A record acknowledged before it was durable, lost in a store restart, and a newer owner
    /// that fenced the shorter stream later: the lost acknowledged append is reported under
    /// `no_lost_append` (this view first, and the final contents), and no other property blames
    /// the fence for it (`single_writer` judges the stream the store holds, without the record
    /// the restart lost).
    #[test]
    fn a_record_lost_in_a_store_restart_is_blamed_on_no_lost_append_only() {
        use crate::check::testkit::{commit, map_of};
        let row = |epoch: u64, owner: u32| commit(1, 0, map_of(epoch, &[(1, "", None, owner, epoch, "active")]));
        let activated = |t_us: u64, server: u32, epoch: u64| at(t_us, Sys::Activated { server: ServerId(server), range: RangeId(1), epoch: Epoch(epoch), records: 0, stream: 0 });
        let invoke = Event { t_us: 2, what: What::Invoke { op: ClientOp::Append, id: ID, key: b"k1".to_vec(), bound_ms: None } };
        let admit = at(3, Sys::Admit { server: ServerId(1), session: 1, range: RangeId(1), epoch: Epoch(1), key: b"k1".to_vec(), id: ID });
        let fence = at(40, Sys::Fence { stream: RangeId(1), epoch: Epoch(2), length: 0 });
        // server-1 fenced at epoch 1 before it served; its session ended before r1 went on.
        let first_fence = at(1, Sys::Fence { stream: RangeId(1), epoch: Epoch(1), length: 0 });
        let expired = at(30, Sys::LeaseExpired { server: ServerId(1), session: 1 });
        let evs = vec![recovered(0, 0), row(1, 1), first_fence, activated(1, 1, 1), invoke, admit, effect(5, 7, 0), acked(9, 7), recovered(20, 0), expired, row(2, 2), fence, activated(41, 2, 2)];
        // The final reads found k1 empty, and so do the streams.
        let served = crate::check::no_lost_append::Content::from([(b"k1".to_vec(), Vec::new())]);
        let views = crate::check::judge(&evs, &served, &Default::default(), &[], &Default::default());
        // The map checkers need the authority's log, which this history leaves out.
        let judged = views.iter().filter(|v| !matches!(v.property, "map_tiles" | "manager_exclusive"));
        let violated: Vec<(&str, &str)> = judged.filter(|v| v.violation.is_some()).map(|v| (v.property, v.view)).collect();
        assert_eq!(violated, vec![("no_lost_append", "synced"), ("no_lost_append", "served"), ("no_lost_append", "stored")], "{views:?}");
        // Without the restart the record is in the stream, at offset 0, past the fence's
        // sealed length 0: that would be an effect below a fence (single_writer's clause 4).
        let mut kept = evs.clone();
        kept.remove(8);
        assert!(crate::check::single_writer::check(&kept).unwrap_err().contains("past the fence"));
    }

    /// An acknowledgement with no effect of its id (a deduplicated retry of a record recovered
    /// from disk) is durable by construction: nothing to judge.
    #[test]
    fn acked_durable_skips_an_acknowledgement_without_an_effect() {
        check(&[recovered(0, 4), acked(10, 7)]).unwrap();
    }
}
