//! The operator's leader transfer (`{"kind": "leader_transfer"}`), end to end on
//! scenarios/leader-transfer.json: the leader steps down between rounds and releases its lease,
//! and the standby is granted the next term within one manager tick (200 ms) plus a round trip
//! and the authority's write of the term: the bound checked here is 500 ms from the release,
//! against a lease (2 s) and more when a leader dies instead.

use partmap::event::Event;
use partmap_sim::events::What;
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;

/// The longest the standby may take to lead after a release, ms.
const TAKEOVER_BOUND_MS: u64 = 500;

#[test]
fn leader_transfer_standby_leads_within_the_bound_and_every_property_holds() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/leader-transfer.json");
    let scenario = Scenario::load(std::path::Path::new(path)).expect("the scenario parses");
    let mut worst_ms = 0;
    for seed in 0..6 {
        let opts = RunOptions { seed, scenario: scenario.clone(), scenario_label: path.into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
        let report = run_seed(&opts);
        assert_eq!(report.outcome(), RunOutcome::Pass, "seed {seed}: {:?}", report.verdicts);
        let mut released: Option<(u64, u32, u64)> = None;
        let mut handovers = 0;
        for e in &report.events {
            match &e.what {
                What::Sys(Event::LeaderReleased { manager, leader_epoch }) => released = Some((e.t_us, *manager, *leader_epoch)),
                What::Sys(Event::Leader { manager, leader_epoch }) => {
                    if let Some((t, old, old_epoch)) = released.take() {
                        let gap_ms = (e.t_us - t) / 1000;
                        assert_ne!(*manager, old, "seed {seed}: the standby, not the manager that stepped down, leads next");
                        assert_eq!(*leader_epoch, old_epoch + 1, "seed {seed}: the next term");
                        assert!(gap_ms <= TAKEOVER_BOUND_MS, "seed {seed}: the standby led {gap_ms} ms after the release");
                        worst_ms = worst_ms.max(gap_ms);
                        handovers += 1;
                    }
                }
                // Nothing the old term writes lands once it is released.
                What::Sys(Event::MapCommit { leader_epoch, .. }) => {
                    if let Some((_, _, old_epoch)) = released {
                        assert_ne!(*leader_epoch, old_epoch, "seed {seed}: a map commit of the released term");
                    }
                }
                _ => {}
            }
        }
        assert_eq!(handovers, 2, "seed {seed}: both transfers handed over");
        assert_eq!(report.availability.leader_terms_without_manager_fault, 0, "seed {seed}: a release provokes its term");
    }
    assert!(worst_ms > 0, "the takeover takes some time");
}

/// With one manager there is nobody to hand over to: it releases, stands aside a lease, and
/// leads again; the run still passes.
#[test]
fn leader_transfer_with_one_manager_leads_again_after_a_lease() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/leader-transfer.json");
    let mut scenario = Scenario::load(std::path::Path::new(path)).expect("the scenario parses");
    scenario.topology.managers = 1;
    let opts = RunOptions { seed: 0, scenario, scenario_label: "leader-transfer, one manager".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    assert_eq!(report.outcome(), RunOutcome::Pass, "{:?}", report.verdicts);
    let terms: Vec<u32> = report.events.iter().filter_map(|e| match &e.what { What::Sys(Event::Leader { manager, .. }) => Some(*manager), _ => None }).collect();
    assert_eq!(terms, [1, 1, 1], "manager-1 leads three terms");
}
