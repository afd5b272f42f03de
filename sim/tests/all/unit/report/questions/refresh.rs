//! The unit tests of `partmap_sim::report::questions::refresh` (formerly in `sim/src/report/questions/refresh.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::report::questions::refresh::*;
    use partmap_sim::events::{Event, Outcome, What};
    use partmap::event::{ClientOp, Retry};
    use partmap::ids::{Epoch, ServerId};
    use partmap::msg::Refusal;
    use std::collections::BTreeMap;
    use crate::unit::report::questions::staleness::tests::routed;
    use partmap::ids::OpId;

    fn invoke(ms: u64, seq: u64) -> Event {
        Event { t_us: ms * 1000, what: What::Invoke { op: ClientOp::Append, id: OpId { client: 1, seq }, key: b"k".to_vec(), bound_ms: None } }
    }

    fn complete(ms: u64, seq: u64, outcome: Outcome) -> Event {
        Event { t_us: ms * 1000, what: What::Complete { op: ClientOp::Append, id: OpId { client: 1, seq }, key: b"k".to_vec(), outcome, reason: String::new(), value_len: 0, value_hash: 0 } }
    }

    #[test]
    fn questions_refresh_counts_retries_by_reason_and_charges_them_to_the_append() {
        let moved = Retry::Refused(Refusal::Moved { owner: ServerId(2), epoch: Epoch(2) });
        let h = vec![
            invoke(0, 1),
            routed(1, 1, 1, 1, 1, 0, Retry::First),
            invoke(2, 2),
            routed(2, 1, 1, 2, 1, 0, Retry::First),
            complete(5, 1, Outcome::Ok),
            routed(6, 1, 1, 2, 1, 1, Retry::Refused(Refusal::NotOwner)),
            routed(9, 1, 2, 2, 1, 2, moved.clone()),
            complete(12, 2, Outcome::Ok),
            invoke(20, 3),
            routed(21, 1, 2, 3, 1, 0, Retry::First),
            routed(40, 1, 2, 3, 1, 2, Retry::NoOwner),
            complete(60, 3, Outcome::Fail),
        ];
        let r = measure(&h);
        assert_eq!(r.sends, 6);
        assert_eq!(r.retries, BTreeMap::from([("moved", 1), ("not_owner", 1), ("no_owner", 1)]));
        assert_eq!(r.appends, vec![
            Append { latency_ms: 5.0, sends: 1, retries: vec![], ok: true },
            Append { latency_ms: 10.0, sends: 3, retries: vec!["not_owner", "moved"], ok: true },
            Append { latency_ms: 40.0, sends: 2, retries: vec!["no_owner"], ok: false },
        ]);
    }

    #[test]
    fn questions_refresh_follows_the_frontend_s_rule() {
        assert!(refreshes(&Retry::Refused(Refusal::NotOwner)));
        assert!(refreshes(&Retry::Refused(Refusal::Moved { owner: ServerId(2), epoch: Epoch(2) })), "a newer owner: follow, and read the map");
        assert!(refreshes(&Retry::Refused(Refusal::StaleEpoch { current: Epoch(3) })));
        assert!(refreshes(&Retry::Refused(Refusal::NotReady)), "after its backoff");
        assert!(!refreshes(&Retry::Refused(Refusal::InFlight)));
        assert!(!refreshes(&Retry::Unknown));
        assert!(refreshes(&Retry::NoAnswer));
    }
}
