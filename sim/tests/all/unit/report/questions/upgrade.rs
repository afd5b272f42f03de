//! The unit tests of `partmap_sim::report::questions::upgrade` (formerly in `sim/src/report/questions/upgrade.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::report::questions::upgrade::*;
    use partmap_sim::events::{Event, Sys};
    use partmap_sim::events::What;

    #[test]
    fn questions_upgrade_takeover_is_release_to_next_grant() {
        let at = |ms: u64, e: Sys| Event { t_us: ms * 1000, what: What::Sys(e) };
        let h = vec![
            at(0, Sys::Leader { manager: 1, leader_epoch: 1 }),
            at(8000, Sys::LeaderReleased { manager: 1, leader_epoch: 1 }),
            at(8120, Sys::Leader { manager: 2, leader_epoch: 2 }),
            at(9000, Sys::Leader { manager: 1, leader_epoch: 3 }),
            at(16000, Sys::LeaderReleased { manager: 1, leader_epoch: 3 }),
            at(18000, Sys::Leader { manager: 1, leader_epoch: 4 }),
        ];
        assert_eq!(takeovers(&h), vec![Takeover { gap_ms: 120.0, standby: true }, Takeover { gap_ms: 2000.0, standby: false }]);
    }
}
