//! The unit tests of `partmap_sim::check::acked_durable` (formerly in `sim/src/check/acked_durable.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::acked_durable::*;
    use partmap_sim::events::{Event, Outcome, What};
    use partmap::event::ClientOp;
    use partmap::ids::OpId;
    use crate::unit::check::testkit::at;
    use partmap_sim::events::Sys;
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
        use crate::unit::check::testkit::{commit, map_of};
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
        let served = partmap_sim::check::no_lost_append::Content::from([(b"k1".to_vec(), Vec::new())]);
        let views = partmap_sim::check::judge(&evs, &served, &Default::default(), &[], &Default::default());
        // The map checkers need the authority's log, which this history leaves out.
        let judged = views.iter().filter(|v| !matches!(v.property, "map_tiles" | "manager_exclusive"));
        let violated: Vec<(&str, &str)> = judged.filter(|v| v.violation.is_some()).map(|v| (v.property, v.view)).collect();
        assert_eq!(violated, vec![("no_lost_append", "synced"), ("no_lost_append", "served"), ("no_lost_append", "stored")], "{views:?}");
        // Without the restart the record is in the stream, at offset 0, past the fence's
        // sealed length 0: that would be an effect below a fence (single_writer's clause 4).
        let mut kept = evs.clone();
        kept.remove(8);
        assert!(partmap_sim::check::single_writer::check(&kept).unwrap_err().contains("past the fence"));
    }

    /// An acknowledgement with no effect of its id (a deduplicated retry of a record recovered
    /// from disk) is durable by construction: nothing to judge.
    #[test]
    fn acked_durable_skips_an_acknowledgement_without_an_effect() {
        check(&[recovered(0, 4), acked(10, 7)]).unwrap();
    }
}
