//! The unit tests of `partmap_sim::check::reads_consistent` (formerly in `sim/src/check/reads_consistent.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::check::reads_consistent::*;
    use partmap_sim::check::no_lost_append::Content;
    use partmap_sim::events::Event;
    use partmap_sim::events::{Outcome, What};
    use partmap_sim::workload::{content_hash, payload};
    use partmap::ids::OpId;
    use partmap::event::ClientOp;

    fn id(seq: u64) -> OpId {
        OpId { client: 1, seq }
    }

    fn invoke(t_us: u64, op: ClientOp, seq: u64, bound_ms: Option<u64>) -> Event {
        Event { t_us, what: What::Invoke { op, id: id(seq), key: b"k1".to_vec(), bound_ms } }
    }

    fn acked(t_us: u64, seq: u64) -> Event {
        Event { t_us, what: What::Complete { op: ClientOp::Append, id: id(seq), key: b"k1".to_vec(), outcome: Outcome::Ok, reason: String::new(), value_len: 0, value_hash: 0 } }
    }

    fn read_done(t_us: u64, seq: u64, value: &[u8]) -> Event {
        let what = What::Complete { op: ClientOp::Read, id: id(seq), key: b"k1".to_vec(), outcome: Outcome::Ok, reason: String::new(), value_len: value.len() as u64, value_hash: content_hash(value) };
        Event { t_us, what }
    }

    #[test]
    fn reads_consistent_flags_a_stale_and_a_foreign_read() {
        let a = payload(id(1), 16);
        let b = payload(id(2), 16);
        let fin = Content::from([(b"k1".to_vec(), [a.clone(), b.clone()].concat())]);
        let mut evs = vec![invoke(1, ClientOp::Append, 1, None), acked(2, 1), invoke(3, ClientOp::Read, 3, None), read_done(4, 3, &a)];
        check(&evs, &fin, None).unwrap();
        // A read that began after the ack must see it.
        evs.push(invoke(5, ClientOp::Read, 4, None));
        evs.push(read_done(6, 4, &[]));
        assert!(check(&evs, &fin, None).unwrap_err().contains("missing c1.1"));
        evs.pop();
        evs.push(read_done(6, 4, &b));
        assert!(check(&evs, &fin, None).unwrap_err().contains("not a prefix"));
    }

    #[test]
    fn reads_consistent_lets_a_bounded_read_miss_only_what_is_newer_than_its_bound() {
        let a = payload(id(1), 16);
        let fin = Content::from([(b"k1".to_vec(), a.clone())]);
        // Acknowledged at 2 ms; a bounded(1 ms) read invoked at 2.5 ms may miss it ...
        let mut evs = vec![invoke(1_000, ClientOp::Append, 1, None), acked(2_000, 1), invoke(2_500, ClientOp::Read, 3, Some(1)), read_done(2_600, 3, &[])];
        check(&evs, &fin, None).unwrap();
        // ... one invoked at 3.5 ms may not.
        evs.push(invoke(3_500, ClientOp::Read, 4, Some(1)));
        evs.push(read_done(3_600, 4, &[]));
        assert!(check(&evs, &fin, None).unwrap_err().contains("bounded(1 ms) read c1.4"));
    }

    /// Issue 13: a stale read shows in both views when they hold the same bytes (the stored
    /// view skips a key only when the served view passed on it), and in the view whose bytes
    /// it contradicts when they differ.
    #[test]
    fn reads_consistent_stored_view_skips_only_keys_the_served_view_passed() {
        let (a, b) = (payload(id(1), 16), payload(id(2), 16));
        let both = Content::from([(b"k1".to_vec(), [a.clone(), b.clone()].concat())]);
        let evs = vec![invoke(1, ClientOp::Append, 1, None), acked(2, 1), invoke(3, ClientOp::Read, 3, None), read_done(4, 3, &[])];
        let of = |views: &[partmap_sim::check::View], view: &str| views.iter().find(|v| v.property == "reads_consistent" && v.view == view).and_then(|v| v.violation.clone());
        let views = partmap_sim::check::judge(&evs, &both, &both, &[], &Default::default());
        assert!(of(&views, "served").is_some_and(|v| v.contains("missing c1.1")));
        assert!(of(&views, "stored").is_some_and(|v| v.contains("missing c1.1")), "{views:?}");
        // A read of a: served holds a, the streams b then a: the stored view alone finds that
        // the read is not a prefix of what it holds.
        let evs = vec![invoke(1, ClientOp::Append, 1, None), acked(2, 1), invoke(3, ClientOp::Read, 3, None), read_done(4, 3, &a)];
        let views = partmap_sim::check::judge(&evs, &Content::from([(b"k1".to_vec(), a.clone())]), &Content::from([(b"k1".to_vec(), [b, a].concat())]), &[], &Default::default());
        assert!(of(&views, "served").is_none(), "{views:?}");
        assert!(of(&views, "stored").is_some_and(|v| v.contains("not a prefix")), "{views:?}");
    }
}
