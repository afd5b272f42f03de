//! The unit tests of `partmap_sim::measure::coverage` (formerly in `sim/src/measure/coverage.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::measure::coverage::*;
    use partmap_sim::events::{Event, Sys, What};
    use partmap_sim::fault::Fault;
    use partmap::ids::{RangeId, ServerId};

    fn fault(t_us: u64, fault: Fault) -> Event {
        Event { t_us, what: What::Fault { fault: Box::new(fault), duration_ms: 1000, crash: None } }
    }

    /// Issue 12: a one-way cut from an owner to the authority is a partition of the owner.
    #[test]
    fn coverage_counts_a_directed_fault_sent_by_an_owner() {
        let act = Event { t_us: 1, what: What::Sys(Sys::Activated { server: ServerId(1), range: RangeId(1), epoch: partmap::ids::Epoch(1), records: 0, stream: 0 }) };
        let cut = fault(2, Fault::OneWay("server-1".into(), "lock-1".into()));
        assert_eq!(situations(&[act.clone(), cut]).get("partition_owner"), Some(&1));
        let other = fault(2, Fault::OneWay("server-2".into(), "lock-1".into()));
        assert_eq!(situations(&[act, other]).get("partition_owner"), None);
    }
}
