//! The unit tests of `partmap_sim::report::questions::atomicity` (formerly in `sim/src/report/questions/atomicity.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::report::questions::atomicity::*;
    use partmap_sim::events::{Event, Outcome, Sys, What};
    use partmap::event::{ClientOp, Retry};
    use partmap::ids::{Epoch, RangeId, ServerId};
    use std::collections::BTreeMap;
    use crate::unit::report::questions::staleness::tests::{cached, routed};
    use partmap_sim::report::questions::staleness::timelines;
    use partmap::ids::{Key, OpId};
    use partmap::map::{MapOp, PartitionMap, Strategy};
    use partmap::msg::Refusal;

    fn at(ms: u64, e: Sys) -> Event {
        Event { t_us: ms * 1000, what: What::Sys(e) }
    }

    fn append(ms: u64, seq: u64, done: bool) -> Event {
        let (id, key): (OpId, Key) = (OpId { client: 1, seq }, b"k".to_vec());
        let what = if done { What::Complete { op: ClientOp::Append, id, key, outcome: Outcome::Ok, reason: String::new(), value_len: 0, value_hash: 0 } } else { What::Invoke { op: ClientOp::Append, id, key, bound_ms: None } };
        Event { t_us: ms * 1000, what }
    }

    /// r1 on server-1 at epoch 1 with its move to server-2 journaled, the map that publishes
    /// the move, and the move's epoch.
    fn maps() -> (PartitionMap, PartitionMap, Epoch) {
        let mut m = PartitionMap::default();
        m.apply_batch(&[MapOp::Bootstrap { split_points: vec![] }]).unwrap();
        m.apply_batch(&[MapOp::Assign { range: RangeId(1), owner: ServerId(1), owner_session: 1 }]).unwrap();
        m.apply_batch(&[MapOp::Activate { range: RangeId(1), epoch: Epoch(1) }]).unwrap();
        m.apply_batch(&[MapOp::BeginMove { range: RangeId(1), to: (ServerId(2), 2), strategy: Strategy::PreCopy }]).unwrap();
        m.apply_batch(&[MapOp::PauseMove { range: RangeId(1) }]).unwrap();
        let journaled = m.clone();
        let epoch = m.transfers.values().next().expect("journaled").epoch;
        m.apply_batch(&[MapOp::CommitMove { range: RangeId(1) }]).unwrap();
        (journaled, m, epoch)
    }

    #[test]
    fn questions_atomicity_measures_serve_commit_and_the_last_frontend() {
        let (journaled, published, e2) = maps();
        let v = published.version;
        let h = vec![
            at(0, Sys::MapCommit { leader_epoch: 1, manager: 1, map: journaled.into() }),
            append(90, 1, false),
            routed(95, 1, v - 1, 1, 1, 0, Retry::First),
            at(100, Sys::Paused { server: ServerId(1), range: RangeId(1), epoch: Epoch(1) }),
            at(101, Sys::Refused { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), key: b"k".to_vec(), op: ClientOp::Append, reason: Refusal::NotReady }),
            at(120, Sys::Handoff { server: ServerId(2), range: RangeId(1), epoch: e2, strategy: Strategy::PreCopy, precopy_bytes: 0, tail_bytes: 0, bytes: 0 }),
            at(150, Sys::MapCommit { leader_epoch: 1, manager: 1, map: published.into() }),
            routed(160, 1, v - 1, 1, 1, 1, Retry::Refused(Refusal::NotReady)),
            at(161, Sys::Redirected { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), key: b"k".to_vec(), to: ServerId(2), new_epoch: e2 }),
            cached(170, 1, v),
            append(180, 1, true),
            cached(400, 2, v),
            at(500, Sys::Redirected { server: ServerId(1), range: RangeId(1), epoch: Epoch(1), key: b"k".to_vec(), to: ServerId(2), new_epoch: e2 }),
        ];
        let (_, caches) = timelines(&h);
        let (s, all) = measure(&h, &caches);
        assert_eq!(s, vec![Switch {
            range: 1,
            paused_us: 100_000,
            served_us: 120_000,
            version: v,
            committed_us: 150_000,
            all_cached_us: Some(400_000),
            refusals: BTreeMap::from([("moved", 1), ("not_ready", 1)]),
            latency_ms: vec![90.0],
        }], "the redirect at 500 ms is after every frontend had the map");
        assert_eq!(all, [90.0]);
    }
}
