//! The unit tests of `partmap_sim::report::questions::staleness` (formerly in `sim/src/report/questions/staleness.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

pub mod tests {
    use partmap_sim::report::questions::staleness::*;
    use partmap_sim::events::{Event, Sys, What};
    use partmap::event::{ClientOp, Retry};
    use partmap::ids::{Epoch, RangeId, ServerId};
    use partmap::map::PartitionMap;

    /// A `map_commit` of `version` at `ms`.
    pub fn commit(ms: u64, version: u64) -> Event {
        let map = PartitionMap { version, ..PartitionMap::default() };
        Event { t_us: ms * 1000, what: What::Sys(Sys::MapCommit { leader_epoch: 1, manager: 1, map: map.into() }) }
    }

    /// Frontend `f` cached `version` at `ms`.
    pub fn cached(ms: u64, f: u32, version: u64) -> Event {
        Event { t_us: ms * 1000, what: What::Sys(Sys::MapCached { frontend: f, version }) }
    }

    /// Frontend `f` sent attempt `attempt` of an append (`seq`, client 1) to `range` on a cache
    /// of `version`, after `after`.
    pub fn routed(ms: u64, f: u32, version: u64, seq: u64, range: u64, attempt: u32, after: Retry) -> Event {
        let id = Some(partmap::ids::OpId { client: 1, seq });
        Event { t_us: ms * 1000, what: What::Sys(Sys::Routed { frontend: f, op: ClientOp::Append, id, range: RangeId(range), epoch: Epoch(1), to: ServerId(1), version, attempt, after }) }
    }

    #[test]
    fn questions_staleness_counts_versions_and_ms_behind_at_each_route() {
        let h = vec![
            commit(0, 1),
            cached(5, 1, 1),
            cached(6, 2, 1),
            routed(10, 1, 1, 1, 1, 0, Retry::First),
            commit(100, 2),
            commit(150, 3),
            routed(180, 1, 1, 2, 1, 0, Retry::First),
            cached(300, 1, 3),
            routed(310, 1, 3, 3, 1, 0, Retry::First),
            cached(520, 2, 2),
            cached(900, 2, 3),
        ];
        let s = measure(&h);
        assert_eq!(s.behind_versions, [0.0, 2.0, 0.0]);
        assert_eq!(s.behind_ms, [0.0, 80.0, 0.0], "80 ms since version 2 (the first newer than 1) committed");
        // v1: both had it by 6 ms; v2: frontend 2 at 520; v3: frontend 2 at 900.
        assert_eq!(s.propagation_ms, [6.0, 420.0, 750.0]);
        assert_eq!(s.never_reached, 0);
        let mut h = h;
        h.push(commit(1000, 4));
        assert_eq!(measure(&h).never_reached, 1, "version 4 reached no frontend");
    }

    #[test]
    fn questions_staleness_running_max_finds_the_first_newer_version() {
        let mut c = Commits::default();
        c.push(10, 5);
        c.push(20, 4);
        c.push(30, 7);
        assert_eq!(c.first_above(4), Some(10));
        assert_eq!(c.first_above(5), Some(30), "version 4 is not newer than 5");
        assert_eq!(c.first_above(7), None);
        assert_eq!(c.current(), 7);
    }
}
