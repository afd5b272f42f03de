//! Faults aimed at protocol roles and messages in flight, end to end: whole runs whose history
//! shows whom each fault hit.

use partmap::event::Event;
use partmap_sim::events::What;
use partmap_sim::fault::Fault;
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;

/// A crash aimed at the leader hits whichever manager leads when it starts: the first
/// one the one granted last before it, the second (while the first is still down) the
/// standby that took over.
#[test]
fn aim_crash_of_the_leader_hits_whoever_leads_at_that_moment() {
    let text = r#"{"description": "aimed", "topology": {"servers": 3, "managers": 2, "frontends": 1, "initial_ranges": 2},
        "workload": {"duration_s": 15, "ops_per_s": 20},
        "faults": {"random": null, "schedule": [
            {"at_ms": 4000, "duration_ms": 8000, "fault": {"kind": "crash", "node": {"role": "leader"}}},
            {"at_ms": 9000, "duration_ms": 1000, "fault": {"kind": "crash", "node": {"role": "leader"}}},
            {"at_ms": 9500, "duration_ms": 100, "fault": {"kind": "pause", "node": {"role": "move-source"}}},
            {"at_ms": 1000, "on": {"event": "diverged", "node": "server-1"}, "duration_ms": 100, "fault": {"kind": "crash", "node": "server-2"}}
        ]}}"#;
    let scenario = Scenario::parse(text, "aimed.json").expect("parses");
    let opts = RunOptions { seed: 1, scenario, scenario_label: "aimed.json".into(), mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    let mut leader = None;
    let mut hit = Vec::new();
    for e in &report.events {
        match &e.what {
            What::Sys(Event::Leader { manager, .. }) => leader = Some(format!("manager-{manager}")),
            What::Fault { fault, .. } => {
                if let Fault::Crash(n) = &**fault {
                    assert_eq!(Some(n), leader.as_ref(), "a crash at {} us hit {n}, not the leader", e.t_us);
                    hit.push(n.clone());
                }
            }
            _ => {}
        }
    }
    assert_eq!(hit.len(), 2, "both aimed crashes were injected: {hit:?}");
    assert_ne!(hit[0], hit[1], "the second crash hit the standby that took over");
    let skipped = report.events.iter().any(|e| matches!(&e.what, What::FaultSkipped { reason, .. } if reason == "no move in flight"));
    assert!(skipped, "a pause of the move source with no move in flight is skipped, and the history says so");
    assert_eq!(report.unfired_triggers, ["crash server-2 on diverged by server-1 #1, armed at 1000 ms"], "the trigger that never fired is listed");
}



/// A message held in the network outlives its sender: the owner's store append held for
/// 2 s still reaches the store after the owner crashed 300 ms into the hold, and the run
/// (its next incarnation, the new owner, the fence) copes with it.
#[test]
fn nemesis_held_message_is_delivered_after_its_sender_crashed() {
    let text = r#"{"description": "in flight", "topology": {"servers": 3, "managers": 1, "frontends": 1, "initial_ranges": 1},
        "workload": {"duration_s": 12, "ops_per_s": 40, "read_fraction": 0.0},
        "faults": {"random": null, "schedule": [
            {"at_ms": 5000, "duration_ms": 2000, "fault": {"kind": "delay_next", "from": {"role": "owner", "key": "k000001"}, "to": "store-1", "message": "store_append"}},
            {"at_ms": 5300, "duration_ms": 3000, "fault": {"kind": "crash", "node": {"role": "owner", "key": "k000001"}}}
        ]}}"#;
    let scenario = Scenario::parse(text, "in-flight.json").expect("parses");
    let opts = RunOptions { seed: 2, scenario, scenario_label: "in-flight.json".into(), mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    let crashed_at = report.events.iter().find(|e| matches!(&e.what, What::Fault { fault, .. } if fault.kind() == "crash_server")).map(|e| e.t_us).expect("the owner crashed");
    let delivered = report.events.iter().any(|e| e.t_us > crashed_at && matches!(&e.what, What::Sys(Event::HeldDelivered { msg: "store_append", .. })));
    assert!(delivered, "the held store append was delivered after its sender crashed");
    assert_eq!(report.outcome(), RunOutcome::Pass, "{:?}", report.verdicts);
}
