//! The unit tests of `partmap_sim::check::single_writer` (formerly in `sim/src/check/single_writer.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::single_writer::*;
    use partmap_sim::events::{Event, Sys};
    use crate::unit::check::testkit::{at, commit, map_of};
    use partmap::ids::{Epoch, OpId, RangeId, ServerId};

    fn row(range: u64, epoch: u64, owner: u32) -> Event {
        commit(1, 0, map_of(epoch, &[(range, "", None, owner, epoch, "active")]))
    }

    fn effect(offset: u64, epoch: u64, server: u32) -> Event {
        at(offset, Sys::Effect { stream: RangeId(1), server: ServerId(server), epoch: Epoch(epoch), key: b"k1".to_vec(), id: OpId { client: 1, seq: 7 }, offset, bytes: 16 })
    }

    fn op(kind: &str, t_us: u64, server: u32, epoch: u64) -> Event {
        let (server, epoch, key, id) = (ServerId(server), Epoch(epoch), b"k1".to_vec(), OpId { client: 1, seq: 7 });
        let sys = match kind {
            "admit" => Sys::Admit { server, session: 1, range: RangeId(1), epoch, key, id },
            "deduplicated" => Sys::Deduplicated { stream: RangeId(1), server, epoch, key, id, offset: 0 },
            _ => Sys::Effect { stream: RangeId(1), server, epoch, key, id, offset: 0, bytes: 16 },
        };
        at(t_us, sys)
    }

    fn activated(t_us: u64, server: u32, epoch: u64, stream: usize) -> Event {
        at(t_us, Sys::Activated { server: ServerId(server), range: RangeId(1), epoch: Epoch(epoch), records: stream, stream })
    }

    fn drained(t_us: u64, server: u32, epoch: u64) -> Event {
        at(t_us, Sys::Drained { server: ServerId(server), range: RangeId(1), epoch: Epoch(epoch), digest: Default::default() })
    }

    #[test]
    fn single_writer_flags_a_stale_epoch_after_a_newer_one() {
        let evs = vec![row(1, 1, 1), row(1, 2, 2), effect(0, 1, 1), effect(1, 2, 2), effect(2, 1, 1)];
        let err = check(&evs).unwrap_err();
        assert!(err.contains("epochs go down"), "{err}");
        check(&evs[..4]).unwrap();
    }

    #[test]
    fn single_writer_flags_an_effect_below_the_fence_even_without_a_later_write() {
        let fence = at(5, Sys::Fence { stream: RangeId(1), epoch: Epoch(2), length: 1 });
        let evs = vec![row(1, 1, 1), row(1, 2, 2), effect(0, 1, 1), fence, effect(1, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("past the fence"));
    }

    #[test]
    fn single_writer_flags_a_writer_the_map_did_not_choose() {
        let evs = vec![row(1, 1, 1), effect(0, 1, 2)];
        assert!(check(&evs).unwrap_err().contains("gave to server-1"));
    }

    /// Issue 12: an epoch given out only by a map version the authority restored (never
    /// announced by a commit) still counts as given out.
    #[test]
    fn single_writer_takes_grants_from_a_restored_map() {
        let restored = at(0, Sys::MapRestored { leader_epoch: 1, map: map_of(1, &[(1, "", None, 1, 1, "active")]).into() });
        check(&[restored, effect(1, 1, 1)]).unwrap();
        assert!(check(&[effect(1, 1, 1)]).unwrap_err().contains("never gave out"));
    }

    #[test]
    fn single_writer_flags_an_old_effect_landing_after_a_newer_activation() {
        let evs = vec![row(1, 1, 1), row(1, 2, 2), activated(1, 1, 1, 0), op("admit", 2, 1, 1), activated(3, 2, 2, 0), op("effect", 4, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("past the 0 records server-2 loaded"));
        let mut before = evs.clone();
        before.swap(4, 5);
        check(&before).unwrap();
        // Inside the prefix the new owner loaded: it was in the stream before the fence, and
        // only its event (after the store's fsync) comes late.
        let mut inside = evs.clone();
        inside[4] = activated(3, 2, 2, 1);
        check(&inside).unwrap();
    }

    /// The violation carries what its message cites as values, for the timeline.
    #[test]
    fn single_writer_cites_its_evidence_as_values() {
        let evs = vec![row(1, 1, 1), row(1, 2, 2), activated(1, 1, 1, 0), op("admit", 2, 1, 1), activated(3, 2, 2, 0), op("effect", 4, 1, 1)];
        let err = check(&evs).unwrap_err();
        assert_eq!(err.evidence.times_us, vec![4, 3], "the effect, then the activation it landed after");
        assert_eq!(err.evidence.servers, vec![1, 2]);
        assert_eq!(err.evidence.ranges, vec![1]);
        assert_eq!(err.evidence.keys, vec![b"k1".to_vec()]);
        assert_eq!(err.evidence.ops, vec![OpId { client: 1, seq: 7 }]);
    }

    #[test]
    fn single_writer_flags_a_drain_reported_with_an_append_still_on_its_way() {
        let evs = vec![row(1, 1, 1), activated(1, 1, 1, 0), op("admit", 2, 1, 1), drained(3, 1, 1), op("effect", 4, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("had neither landed nor been refused"));
        // Landed first, or the outcome was unknown and the range reloaded: fine.
        check(&[evs[0].clone(), evs[1].clone(), evs[2].clone(), evs[4].clone(), evs[3].clone()]).unwrap();
        check(&[evs[0].clone(), evs[1].clone(), evs[2].clone(), activated(3, 1, 1, 0), drained(4, 1, 1), op("effect", 5, 1, 1)]).unwrap();
        // A duplicate's deduplicated answer can come before the original's effect event.
        check(&[evs[0].clone(), evs[1].clone(), evs[2].clone(), op("deduplicated", 3, 1, 1), drained(4, 1, 1), op("effect", 5, 1, 1)]).unwrap();
    }

    /// Clause 8: an admission at the epoch a drain report closed, by the server that reported
    /// it; not after it dropped the range, and not at a newer epoch.
    #[test]
    fn single_writer_flags_an_admission_after_the_range_was_reported_drained() {
        let late = vec![row(1, 1, 1), activated(1, 1, 1, 0), drained(3, 1, 1), op("admit", 4, 1, 1)];
        let err = check(&late).unwrap_err();
        assert!(err.contains("server-1 admitted c1.7 on key k1 (r1 at epoch 1) at 0.000004s, after it reported r1 drained at epoch 1 at 0.000003s"), "{err}");
        assert_eq!(err.evidence.times_us, vec![4, 3]);
        check(&late[..3]).unwrap();
        let dropped = at(3, Sys::Dropped { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), reason: "moved".into() });
        check(&[late[0].clone(), late[1].clone(), late[2].clone(), dropped, late[3].clone()]).unwrap();
        check(&[row(1, 1, 1), row(1, 2, 1), activated(1, 1, 1, 0), drained(3, 1, 1), activated(4, 1, 2, 0), op("admit", 5, 1, 2)]).unwrap();
    }

    #[test]
    fn single_writer_flags_serving_after_the_authority_expired_the_session() {
        let expired = at(5, Sys::LeaseExpired { server: ServerId(1), session: 3 });
        let renewed = at(7, Sys::Renewed { server: ServerId(1), session: 4, ok: true, valid_until_ms: 0 });
        let evs = vec![row(1, 1, 1), op("admit", 2, 1, 1), expired.clone(), op("admit", 6, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("after the authority expired its session 3"));
        // Registered anew (a newer session): serving again is fine, and so is an expiry of the
        // old session recorded after that.
        check(&[row(1, 1, 1), expired.clone(), renewed.clone(), op("admit", 8, 1, 1)]).unwrap();
        check(&[row(1, 1, 1), renewed, expired, op("admit", 8, 1, 1)]).unwrap();
    }

    /// An epoch given to a second server in a later version (only the changed row is read:
    /// it must still be caught), and a move target's epoch that a row gave to another server.
    #[test]
    fn single_writer_flags_an_epoch_given_twice_across_versions() {
        let v2 = commit(1, 7, map_of(2, &[(1, "", None, 2, 1, "active")]));
        let err = check(&[row(1, 1, 1), v2]).unwrap_err();
        assert!(err.contains("epoch 1 of r1 was given to server-1 and later to server-2 (map version 2"), "{err}");
        let mut m = map_of(3, &[(1, "", None, 1, 1, "active")]);
        m.transfers.insert(RangeId(1), partmap::map::Transfer { range: RangeId(1), from: (ServerId(1), 1), from_epoch: Epoch(1), to: (ServerId(3), 1), epoch: Epoch(2), strategy: partmap::map::Strategy::PreCopy, phase: partmap::map::TransferPhase::Copying });
        let err = check(&[row(1, 1, 1), row(1, 2, 2), commit(1, 9, m)]).unwrap_err();
        assert!(err.contains("later to move target server-3"), "{err}");
    }

    /// Issue 13: a key's covering ranges follow the maps. k7 is first admitted when only r1
    /// covers it; a split then gives [k5, unbounded) to r3 on server-3, which activates it: a
    /// later admission of k7 by server-1 at r1's epoch is two writers, k1's is not (r2, which
    /// covers k1, was never activated).
    #[test]
    fn single_writer_follows_the_ranges_covering_a_key_across_splits() {
        let admit = |t_us: u64, key: &[u8], seq: u64| at(t_us, Sys::Admit { server: ServerId(1), session: 1, range: RangeId(1), epoch: Epoch(1), key: key.to_vec(), id: OpId { client: 1, seq } });
        let act = |t_us: u64, server: u32, range: u64, epoch: u64| at(t_us, Sys::Activated { server: ServerId(server), range: RangeId(range), epoch: Epoch(epoch), records: 0, stream: 0 });
        let one = commit(1, 0, map_of(1, &[(1, "", None, 1, 1, "active")]));
        let split = commit(1, 3, map_of(2, &[(1, "", None, 1, 1, "retired"), (2, "", Some("k5"), 2, 2, "active"), (3, "k5", None, 3, 3, "active")]));
        let before = vec![one, act(1, 1, 1, 1), admit(2, b"k7", 1), admit(2, b"k1", 2), split, act(4, 3, 3, 3)];
        let mut k7 = before.clone();
        k7.push(admit(5, b"k7", 3));
        let err = check(&k7).unwrap_err();
        assert!(err.contains("two servers with authority over key k7") && err.contains("server-3 activated r3"), "{err}");
        let mut k1 = before.clone();
        k1.push(admit(5, b"k1", 3));
        check(&k1).unwrap();
        // r2 activated by server-2: now k1 too.
        k1.insert(6, act(4, 2, 2, 2));
        assert!(check(&k1).unwrap_err().contains("over key k1"));
    }

    /// A later effect at an offset stands for that offset (the stream as the store last wrote
    /// it): here it is the newer epoch, and the next offset's older one goes down from it.
    #[test]
    fn single_writer_judges_the_last_effect_at_an_offset() {
        let evs = vec![row(1, 1, 1), row(1, 2, 2), effect(0, 1, 1), effect(0, 2, 2), effect(1, 1, 1)];
        let err = check(&evs).unwrap_err();
        assert!(err.contains("epochs go down: offset 0 = c1.7 on key k1 by server-2 at epoch 2"), "{err}");
        check(&[row(1, 1, 1), row(1, 2, 2), effect(0, 2, 2), effect(0, 1, 1), effect(1, 1, 1)]).unwrap();
    }

    /// Of several appends still on their way when a drain is reported, the one cited is the
    /// least by (client, seq), whatever order they were admitted in.
    #[test]
    fn single_writer_cites_the_least_pending_append_of_a_drain() {
        let admit = |t_us: u64, client: u32, seq: u64| at(t_us, Sys::Admit { server: ServerId(1), session: 1, range: RangeId(1), epoch: Epoch(1), key: b"k1".to_vec(), id: OpId { client, seq } });
        let evs = vec![row(1, 1, 1), activated(1, 1, 1, 0), admit(2, 2, 1), admit(3, 1, 9), admit(4, 1, 8), drained(5, 1, 1)];
        let err = check(&evs).unwrap_err();
        assert!(err.contains("while c1.8, admitted at 0.000004s"), "{err}");
    }

    #[test]
    fn single_writer_flags_an_admission_after_a_newer_activation() {
        let evs = vec![row(1, 1, 1), row(1, 2, 2), activated(5, 2, 2, 0), op("admit", 6, 1, 1)];
        assert!(check(&evs).unwrap_err().contains("two servers with authority"));
    }
}
