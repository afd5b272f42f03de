//! The unit tests of `partmap_sim::check::handoff_order`.
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::handoff_order::*;
    use partmap_sim::events::{Event, Sys};
    use partmap::map::PartitionMap;
    use crate::unit::check::testkit::{at, commit, map_of};
    use partmap::ids::{Epoch, RangeId, ServerId};
    use partmap::map::{ChildPlan, Reshape, ReshapeKind, Strategy, Transfer, TransferPhase};
    use partmap::msg::StreamDigest;

    fn paused(t_us: u64, server: u32, range: u64, epoch: u64) -> Event {
        at(t_us, Sys::Paused { server: ServerId(server), range: RangeId(range), epoch: Epoch(epoch) })
    }

    fn drained(t_us: u64, server: u32, range: u64, epoch: u64) -> Event {
        at(t_us, Sys::Drained { server: ServerId(server), range: RangeId(range), epoch: Epoch(epoch), digest: StreamDigest::default() })
    }

    fn dropped(t_us: u64, server: u32, range: u64, epoch: u64, reason: &str) -> Event {
        at(t_us, Sys::Dropped { server: ServerId(server), range: RangeId(range), epoch: Epoch(epoch), reason: reason.into() })
    }

    /// r1 at server-1, epoch 1, in a move to server-2 at epoch 2 (journaled, paused).
    fn moving(version: u64) -> PartitionMap {
        let mut m = map_of(version, &[(1, "", None, 1, 1, "paused")]);
        let t = Transfer { range: RangeId(1), from: (ServerId(1), 1), from_epoch: Epoch(1), to: (ServerId(2), 1), epoch: Epoch(2), strategy: Strategy::StopAndCopy, phase: TransferPhase::Paused };
        m.transfers.insert(RangeId(1), t);
        m
    }

    /// The move's commit: r1 at server-2, epoch 2.
    fn moved(version: u64) -> PartitionMap {
        map_of(version, &[(1, "", None, 2, 2, "active")])
    }

    /// A move in order (journal, pause, drain, commit, release) holds; a pause at an epoch no
    /// flow journaled (the rolled-back range's newer epoch) is caught at once.
    #[test]
    fn handoff_order_a_pause_needs_a_journaled_flow() {
        let in_order = vec![commit(1, 1_000, map_of(1, &[(1, "", None, 1, 1, "active")])), commit(1, 2_000, moving(2)), paused(3_000, 1, 1, 1), drained(3_100, 1, 1, 1), commit(1, 4_000, moved(3)), dropped(5_000, 1, 1, 1, "moved")];
        check(&in_order).expect("a move in order");
        let stale = vec![commit(1, 1_000, map_of(1, &[(1, "", None, 1, 3, "active")])), paused(3_000, 1, 1, 3)];
        let err = check(&stale).expect_err("a pause with no flow");
        assert!(err.contains("server-1 paused r1 at epoch 3 at 0.003000s") && err.contains("no map version up to then journaled"), "{err}");
        assert_eq!((err.evidence.servers.clone(), err.evidence.ranges.clone()), (vec![1], vec![1]));
        // The late pause of an aborted flow, at the epoch it names, is one of the journaled.
        let late = vec![commit(1, 2_000, moving(2)), commit(1, 2_500, map_of(3, &[(1, "", None, 1, 1, "active")])), paused(3_000, 1, 1, 1)];
        check(&late).expect("journaled once");
    }

    /// A move that commits without its source's drain report, or with a drain from before the
    /// move was journaled, is caught at the commit.
    #[test]
    fn handoff_order_a_commit_needs_the_sources_drain() {
        let undrained = vec![commit(1, 2_000, moving(2)), paused(3_000, 1, 1, 1), commit(1, 4_000, moved(3))];
        let err = check(&undrained).expect_err("committed undrained");
        assert!(err.contains("the move of r1 from server-1 at epoch 1 committed at 0.004000s (map version 3) but server-1 never reported r1 drained"), "{err}");
        let too_early = vec![drained(1_000, 1, 1, 1), commit(1, 2_000, moving(2)), commit(1, 4_000, moved(3))];
        check(&too_early).expect_err("a drain from before the journal counts for nothing");
        // An abort (the row stays at the source) is no commit.
        let aborted = vec![commit(1, 2_000, moving(2)), commit(1, 4_000, map_of(3, &[(1, "", None, 1, 1, "paused")]))];
        check(&aborted).expect("no commit");
    }

    /// A split whose parent never drained is caught when the parent retires; with the drain it
    /// holds.
    #[test]
    fn handoff_order_a_split_needs_every_parent_drained() {
        let mut splitting = map_of(2, &[(1, "", None, 1, 1, "paused")]);
        let child = |id: u64, start: &str, end: Option<&str>| ChildPlan { id: RangeId(id), start: start.into(), end: end.map(Into::into), owner: (ServerId(2), 1), epoch: Epoch(id) };
        let r = Reshape { kind: ReshapeKind::Split, parents: vec![(RangeId(1), Epoch(1))], children: vec![child(2, "", Some("k5")), child(3, "k5", None)], phase: TransferPhase::Paused };
        splitting.reshapes.insert(RangeId(1), r);
        let split = map_of(3, &[(1, "", None, 1, 1, "retired"), (2, "", Some("k5"), 2, 2, "active"), (3, "k5", None, 2, 3, "active")]);
        let history = |drain: bool| {
            let mut h = vec![commit(1, 2_000, splitting.clone()), paused(3_000, 1, 1, 1)];
            if drain {
                h.push(drained(3_100, 1, 1, 1));
            }
            h.push(commit(1, 4_000, split.clone()));
            h
        };
        let err = check(&history(false)).expect_err("parent undrained");
        assert!(err.contains("the split of r1 from server-1 at epoch 1 committed"), "{err}");
        check(&history(true)).expect("drained first");
    }

    /// A release that drops a range the map still gives its server at that epoch is caught;
    /// drops for other reasons are not this clause's.
    #[test]
    fn handoff_order_a_release_needs_the_commit() {
        let early = vec![commit(1, 2_000, moving(2)), paused(3_000, 1, 1, 1), dropped(3_500, 1, 1, 1, "moved")];
        let err = check(&early).expect_err("released before the commit");
        assert!(err.contains("server-1 dropped r1 at epoch 1 as moved at 0.003500s, but the map current at the authority (version 2) still names it"), "{err}");
        let fenced = vec![commit(1, 2_000, moving(2)), dropped(3_500, 1, 1, 1, "fenced")];
        check(&fenced).expect("a fence is not a release");
    }

    /// A failover that gives r1 away while its owner's session is live is caught; after the
    /// authority expired it, or once the owner registered anew, it holds.
    #[test]
    fn handoff_order_a_failover_waits_for_the_session() {
        let owned = map_of(1, &[(1, "", None, 1, 1, "active")]);
        let mut failed_over = map_of(2, &[(1, "", None, 2, 2, "preparing")]);
        failed_over.rows.get_mut(&RangeId(1)).expect("row").owner_session = 7;
        let early = vec![commit(1, 1_000, owned.clone()), commit(1, 2_000, failed_over.clone())];
        let err = check(&early).expect_err("session 1 still live");
        assert!(err.contains("map version 2 gave r1 to server-2 (session 7) at 0.002000s, but the authority had not ended server-1's session 1"), "{err}");
        assert_eq!(err.evidence.servers, vec![1, 2]);
        let expired = vec![commit(1, 1_000, owned.clone()), at(1_500, Sys::LeaseExpired { server: ServerId(1), session: 1 }), commit(1, 2_000, failed_over.clone())];
        check(&expired).expect("expired first");
        let renewed = vec![commit(1, 1_000, owned.clone()), at(1_500, Sys::Renewed { server: ServerId(1), session: 3, ok: true, valid_until_ms: 9 }), commit(1, 2_000, failed_over.clone())];
        check(&renewed).expect("server-1 registered anew");
        // The authority logged the expiry (or a newer session), crashed before announcing it,
        // and restored it from its log: the session ended all the same (seeds 611 and 1642 of
        // the default sweep, before this was read).
        let restored = |record| at(1_500, Sys::Restored { node: "lock-1", index: 4, record });
        let logged = vec![commit(1, 1_000, owned.clone()), restored(partmap::event::Restored::SessionExpired { server: ServerId(1), session: 1 }), commit(1, 2_000, failed_over.clone())];
        check(&logged).expect("the expiry restored from the log");
        let newer = vec![commit(1, 1_000, owned.clone()), restored(partmap::event::Restored::Session { server: ServerId(1), session: 3 }), commit(1, 2_000, failed_over.clone())];
        check(&newer).expect("a newer session restored from the log");
        let same = vec![commit(1, 1_000, owned.clone()), restored(partmap::event::Restored::Session { server: ServerId(1), session: 1 }), commit(1, 2_000, failed_over.clone())];
        assert!(check(&same).is_err(), "the owner's own session restored is no end of it");
        // The move's commit is no failover.
        check(&[commit(1, 2_000, moving(2)), drained(3_000, 1, 1, 1), commit(1, 4_000, moved(3))]).expect("a committed move");
    }

    /// An activation with the stream's fence below its epoch is caught; behind the fence it
    /// holds.
    #[test]
    fn handoff_order_an_owner_serves_behind_its_fence() {
        let activated = at(2_000, Sys::Activated { server: ServerId(2), range: RangeId(1), epoch: Epoch(2), records: 0, stream: 0 });
        let fence = |epoch: u64| at(1_000, Sys::Fence { stream: RangeId(1), epoch: Epoch(epoch), length: 0 });
        let err = check(&[fence(1), activated.clone()]).expect_err("fence below the epoch");
        assert!(err.contains("server-2 activated r1 at epoch 2 at 0.002000s, but the store had raised r1's fence only to epoch 1"), "{err}");
        check(&[fence(2), activated.clone()]).expect("behind its fence");
        check(&[fence(3), activated]).expect("a higher fence keeps older writers out too");
    }
}
