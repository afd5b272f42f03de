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
    let opts = RunOptions { seed: 1, scenario, scenario_label: "aimed.json".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
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
    let opts = RunOptions { seed: 2, scenario, scenario_label: "in-flight.json".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    let crashed_at = report.events.iter().find(|e| matches!(&e.what, What::Fault { fault, .. } if fault.kind() == "crash_server")).map(|e| e.t_us).expect("the owner crashed");
    let delivered = report.events.iter().any(|e| e.t_us > crashed_at && matches!(&e.what, What::Sys(Event::HeldDelivered { msg: "store_append", .. })));
    assert!(delivered, "the held store append was delivered after its sender crashed");
    assert_eq!(report.outcome(), RunOutcome::Pass, "{:?}", report.verdicts);
}

/// `aimed_fault_injected` counts only aimed faults that took effect: not one whose trigger
/// never fired, nor one skipped because its role was empty; and its first time is the first
/// injection's.
#[test]
fn aim_goal_counts_only_aimed_faults_that_took_effect() {
    let run = |schedule: &str| {
        let text = format!(
            r#"{{"description": "aimed", "topology": {{"servers": 3, "managers": 2, "frontends": 1, "initial_ranges": 2}},
            "workload": {{"duration_s": 8, "ops_per_s": 20}}, "faults": {{"random": null, "schedule": [{schedule}]}}}}"#
        );
        let scenario = Scenario::parse(&text, "aimed.json").expect("parses");
        let opts = RunOptions { seed: 3, scenario, scenario_label: "aimed.json".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
        run_seed(&opts).goals.get("aimed_fault_injected").copied()
    };
    let never = r#"{"at_ms": 1000, "on": {"event": "diverged", "node": "server-1"}, "duration_ms": 100, "fault": {"kind": "crash", "node": {"role": "leader"}}},
        {"at_ms": 2000, "duration_ms": 100, "fault": {"kind": "pause", "node": {"role": "move-source"}}}"#;
    assert_eq!(run(never), None, "an unfired trigger and a skipped fault are not injections");
    let once = r#"{"at_ms": 1000, "on": {"event": "diverged", "node": "server-1"}, "duration_ms": 100, "fault": {"kind": "crash", "node": {"role": "leader"}}},
        {"at_ms": 3000, "duration_ms": 500, "fault": {"kind": "crash", "node": {"role": "leader"}}}"#;
    let reached = run(once).expect("the timed crash of the leader was injected");
    assert_eq!(reached.count, 1);
    assert!((3_000_000..3_100_000).contains(&reached.first_us), "first injected at {} us", reached.first_us);
}

/// A stale owner's writes, held while it loses its lease, land just after the new owner read
/// the stream, while the new owner's fence is held: the correct system refuses them (the
/// new owner serves only once its fence is raised), and with `publish-before-fence` the new
/// owner serves a stream the late writes then extend (a violation).
#[test]
fn nemesis_stale_owner_writes_land_in_the_takeover() {
    let on = r#""on": {"event": "admit", "node": {"role": "owner", "key": "k000001"}}"#;
    let fence = |n: u32| format!(r#"{{"at_ms": 4000, {on}, "duration_ms": 3000, "fault": {{"kind": "delay_next", "from": "server-{n}", "to": "store-1", "message": "fence"}}}}"#);
    let text = format!(
        r#"{{"description": "stale owner", "topology": {{"servers": 3, "managers": 2, "frontends": 1, "initial_ranges": 2}},
        "workload": {{"duration_s": 15, "ops_per_s": 60}},
        "faults": {{"random": null, "schedule": [
            {{"at_ms": 4000, {on}, "duration_ms": 2200, "fault": {{"kind": "one_way", "from": {{"role": "owner", "key": "k000001"}}, "to": "lock-1"}}}},
            {{"at_ms": 4000, {on}, "duration_ms": 2200, "fault": {{"kind": "delay", "from": {{"role": "owner", "key": "k000001"}}, "to": "store-1"}}}},
            {}, {}, {}]}}}}"#,
        fence(1), fence(2), fence(3)
    );
    let scenario = Scenario::parse(&text, "stale-owner.json").expect("parses");
    let run = |mutation| run_seed(&RunOptions { seed: 1, scenario: scenario.clone(), scenario_label: "stale-owner.json".into(), mutation, also_mutation: None, trace: false, echo_header: false });
    assert_eq!(run(None).outcome(), RunOutcome::Pass);
    let mutated = run(Some(partmap::config::Mutation::PublishBeforeFence));
    assert_eq!(mutated.outcome(), RunOutcome::SafetyViolation, "{:?}", mutated.verdicts);
}

/// A pause held past its move: the leader's first pause to the source is held while the
/// target crashes, so the move aborts and the range is reopened at the source at a newer
/// epoch; the old pause then arrives. The correct source refuses it (it names the old
/// epoch); with `server-skips-epoch-check` it pauses the range at the new epoch, which no
/// flow journaled (`handoff_in_order` fails at the pause), and no flow resumes it
/// (`no_stuck_range` and liveness fail too).
#[test]
fn nemesis_late_pause_outlives_its_aborted_move() {
    let on = |delay: u64| format!(r#""on": {{"event": "precopied", "node": {{"role": "move-target"}}, "delay_ms": {delay}}}"#);
    // The target crashes when the source pauses: the leader's second pause, the first held.
    let text = format!(
        r#"{{"description": "late pause", "topology": {{"servers": 3, "managers": 2, "frontends": 1, "initial_ranges": 2}},
        "workload": {{"duration_s": 20, "ops_per_s": 60}}, "moves": {{"strategy": "pre-copy"}},
        "faults": {{"random": null, "schedule": [
            {{"at_ms": 3000, "fault": {{"kind": "move", "key": "k000001", "to": "server-3"}}}},
            {{"at_ms": 2900, {}, "duration_ms": 6500, "fault": {{"kind": "delay_next", "from": {{"role": "leader"}}, "to": {{"role": "move-source"}}, "message": "pause"}}}},
            {{"at_ms": 2900, "on": {{"event": "paused", "node": {{"role": "move-source"}}}}, "duration_ms": 3000, "fault": {{"kind": "crash", "node": {{"role": "move-target"}}}}}}]}}}}"#,
        on(0)
    );
    let scenario = Scenario::parse(&text, "late-pause.json").expect("parses");
    let run = |mutation| run_seed(&RunOptions { seed: 1, scenario: scenario.clone(), scenario_label: "late-pause.json".into(), mutation, also_mutation: None, trace: false, echo_header: false });
    assert_eq!(run(None).outcome(), RunOutcome::Pass);
    let mutated = run(Some(partmap::config::Mutation::ServerSkipsEpochCheck));
    assert_eq!(mutated.outcome(), RunOutcome::SafetyViolation, "{:?}", mutated.verdicts);
    let failed: Vec<&str> = mutated.verdicts.iter().filter(|v| v.violation.is_some()).map(|v| v.property).collect();
    assert_eq!(failed, ["handoff_in_order", "no_stuck_range", "liveness"], "{:?}", mutated.verdicts);
    let pause = mutated.verdicts.iter().find(|v| v.property == "handoff_in_order").and_then(|v| v.violation.clone()).unwrap_or_default();
    assert!(pause.contains("server-1 paused r1 at epoch 4") && pause.contains("no map version up to then journaled"), "{pause}");
}

/// A scripted append waiting on a trigger that never fires ends the script at the workload's
/// end: the run finishes (it used to wait for the script client for ever), the append is never
/// sent, and the trigger is listed as never fired. Found replaying the model's
/// `split-seals-one-short` counterexample, whose fourth map commit never comes.
#[test]
fn aim_scripted_append_on_a_trigger_that_never_fires_ends_with_the_workload() {
    let text = r#"{"description": "unfired script", "topology": {"servers": 2, "managers": 1, "frontends": 1, "clients": 1, "initial_ranges": 1},
        "workload": {"duration_s": 6, "ops_per_s": 0, "script": [
            {"at_ms": 1000, "key": "k000001", "bytes": 16},
            {"at_ms": 1000, "key": "k000002", "bytes": 16, "on": {"event": "diverged", "node": "server-1"}},
            {"at_ms": 2000, "key": "k000003", "bytes": 16}
        ]},
        "faults": {"random": null, "schedule": []}}"#;
    let scenario = Scenario::parse(text, "unfired-script.json").expect("parses");
    let opts = RunOptions { seed: 4, scenario, scenario_label: "unfired-script.json".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    assert_eq!(report.unfired_triggers.len(), 1, "{:?}", report.unfired_triggers);
    assert!(report.unfired_triggers[0].starts_with("append k000002 on diverged by server-1 #1"), "{:?}", report.unfired_triggers);
    let appended: Vec<&[u8]> = report.events.iter().filter_map(|e| match &e.what { What::Invoke { id, key, .. } if id.client != 0 => Some(key.as_slice()), _ => None }).collect();
    assert!(appended.contains(&b"k000001".as_slice()) && !appended.contains(&b"k000002".as_slice()) && !appended.contains(&b"k000003".as_slice()), "only the first append is sent");
    assert_eq!(report.outcome(), RunOutcome::Pass, "{:?}", report.verdicts);
}

/// With `workload.script_open_loop` each scripted append waits for its own time and trigger
/// only: the same script as above sends `k000003` at 2 s although `k000002`'s trigger never
/// fires (one at a time, it is never sent), and `k000002` is still listed as never fired.
#[test]
fn aim_open_loop_script_sends_each_append_on_its_own() {
    let text = r#"{"description": "open-loop script", "topology": {"servers": 2, "managers": 1, "frontends": 1, "clients": 1, "initial_ranges": 1},
        "workload": {"duration_s": 6, "ops_per_s": 0, "script_open_loop": true, "script": [
            {"at_ms": 1000, "key": "k000001", "bytes": 16},
            {"at_ms": 1000, "key": "k000002", "bytes": 16, "on": {"event": "diverged", "node": "server-1"}},
            {"at_ms": 2000, "key": "k000003", "bytes": 16}
        ]},
        "faults": {"random": null, "schedule": []}}"#;
    let scenario = Scenario::parse(text, "open-loop-script.json").expect("parses");
    let opts = RunOptions { seed: 4, scenario, scenario_label: "open-loop-script.json".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    assert_eq!(report.unfired_triggers.len(), 1, "{:?}", report.unfired_triggers);
    assert!(report.unfired_triggers[0].starts_with("append k000002 on diverged by server-1 #1"), "{:?}", report.unfired_triggers);
    let invoked: Vec<(&[u8], u64)> = report.events.iter().filter_map(|e| match &e.what { What::Invoke { id, key, .. } if id.client != 0 => Some((key.as_slice(), e.t_us)), _ => None }).collect();
    let keys: Vec<&[u8]> = invoked.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, vec![b"k000001".as_slice(), b"k000003".as_slice()], "k000003 does not wait for k000002's trigger");
    assert!(invoked[1].1 >= 2_000_000, "k000003 at its own time: {} µs", invoked[1].1);
    assert_eq!(report.outcome(), RunOutcome::Pass, "{:?}", report.verdicts);
}

/// A fault with `until` ends on the event, not after its `duration_ms`: the owner's next store
/// append, held at 3 s for at most 9 s until the standby is elected (`leader` at `lock-1`,
/// after the crashed leader's lease ran out), reaches the store within a few ms of the
/// election; and a cut of server-3 from lock-1 with the same `until` heals at the election.
#[test]
fn nemesis_until_ends_a_hold_and_a_cut_on_the_event() {
    let text = r#"{"description": "until", "topology": {"servers": 3, "managers": 2, "frontends": 1, "initial_ranges": 1},
        "workload": {"duration_s": 14, "ops_per_s": 40, "read_fraction": 0.0},
        "faults": {"random": null, "schedule": [
            {"at_ms": 3000, "duration_ms": 8000, "fault": {"kind": "crash", "node": {"role": "leader"}}},
            {"at_ms": 3000, "duration_ms": 9000, "until": {"event": "leader", "node": "lock-1"}, "fault": {"kind": "delay_next", "from": {"role": "owner", "key": "k000001"}, "to": "store-1", "message": "store_append"}},
            {"at_ms": 3000, "duration_ms": 9000, "until": {"event": "leader", "node": "lock-1"}, "fault": {"kind": "one_way", "from": "server-3", "to": "lock-1"}}
        ]}}"#;
    let scenario = Scenario::parse(text, "until.json").expect("parses");
    let opts = RunOptions { seed: 4, scenario, scenario_label: "until.json".into(), mutation: None, also_mutation: None, trace: false, echo_header: false };
    let report = run_seed(&opts);
    let elected = report.events.iter().find(|e| e.t_us > 3_000_000 && matches!(&e.what, What::Sys(Event::Leader { .. }))).map(|e| e.t_us).expect("the standby was elected");
    assert!(elected < 11_000_000, "elected at {elected} us, before the holds' 9 s cap");
    let delivered = report.events.iter().find(|e| matches!(&e.what, What::Sys(Event::HeldDelivered { msg: "store_append", .. }))).map(|e| e.t_us).expect("the held append was delivered");
    assert!(delivered >= elected && delivered < elected + 20_000, "held append delivered at {delivered} us, the election at {elected} us");
    let healed = report.events.iter().find(|e| matches!(&e.what, What::FaultEnd { fault } if fault.kind() == "one_way")).map(|e| e.t_us).expect("the cut healed");
    assert!(healed >= elected && healed < elected + 20_000, "cut healed at {healed} us, the election at {elected} us");
    assert!(report.unfired_triggers.is_empty(), "{:?}", report.unfired_triggers);
}
