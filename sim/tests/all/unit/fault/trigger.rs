//! The unit tests of `partmap_sim::fault::trigger` (formerly in `sim/src/fault/trigger.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::fault::trigger::*;
    use partmap::event::Event;
    use partmap::ids::{Epoch, RangeId, ServerId};

    /// The filter tables agree with what [`range_epoch`] reads off each kind of event.
    #[test]
    fn trigger_filter_tables_match_the_fields_events_carry() {
        let (r, e, s) = (RangeId(4), Epoch(9), ServerId(1));
        let samples = [
            Event::Paused { server: s, range: r, epoch: e },
            Event::Fence { stream: r, epoch: e, length: 3 },
            Event::Leader { manager: 1, leader_epoch: 2 },
            Event::Synced { node: "store-1", records: 2 },
            Event::LeaseExpired { server: s, session: 1 },
        ];
        for ev in &samples {
            let (range, epoch) = range_epoch(ev);
            assert_eq!(range.is_some(), range_events().contains(&ev.name()), "{}", ev.name());
            assert_eq!(epoch.is_some(), RANGE_EPOCH_EVENTS.contains(&ev.name()), "{}", ev.name());
        }
        for name in range_events() {
            assert!(Event::NAMES.contains(&name), "{name} is an event");
        }
    }
}
