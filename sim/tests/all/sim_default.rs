//! Simulation tests of the failover scenario (`scenarios/failover.json`): a sweep of seeds that
//! must all pass, determinism of the trace hash, and the mutation the sweep must catch; and a
//! short sweep of the built-in default, `scenarios/swarm.json`.

use partmap::config::Mutation;
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;
use partmap_sim::sweep::{render, sweep};

fn opts(seed: u64) -> RunOptions {
    RunOptions {
        seed,
        scenario: Scenario::default_failover(),
        scenario_label: "scenarios/failover.json (built-in)".into(),
        mutation: None,
        also_mutation: None,
        trace: false,
        echo_header: false,
    }
}

/// Seed `seed` of the built-in default scenario (`scenarios/swarm.json`) passes every property;
/// on failure, the seed and the violated verdicts.
fn assert_default_seed_passes(seed: u64) {
    let report = run_seed(&RunOptions { seed, scenario: Scenario::default_swarm(), scenario_label: "scenarios/swarm.json (built-in)".into(), ..opts(seed) });
    assert_eq!(report.outcome(), RunOutcome::Pass, "seed {seed}: {:?}", report.verdicts.iter().filter(|v| v.violation.is_some()).collect::<Vec<_>>());
}

fn report_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("partmap-test-reports-{}", std::process::id()))
}

#[test]
fn sweep_default_200_seeds_all_properties_hold() {
    let base = opts(0);
    let summary = sweep(&base, 0, 200, 2, &report_dir(), false);
    assert!(summary.totals.crashed == 0, "{}", render(&summary));
    assert!(summary.totals.failing == 0, "{}", render(&summary));
    // The nemesis really did something: most seeds crash a server and cut the network.
    let with = |k: &str| summary.totals.seeds_with_fault.get(k).copied().unwrap_or(0);
    assert!(with("crash_server") > 100, "{}", render(&summary));
    assert!(with("isolate") + with("split") + with("one_way") > 150, "{}", render(&summary));
    assert!(summary.totals.ops.appends_ok > 200 * 3000, "{}", render(&summary));
}

#[test]
fn determinism_same_seed_same_trace_hash() {
    let a = run_seed(&opts(7));
    let b = run_seed(&opts(7));
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.events.len(), b.events.len());
    let c = run_seed(&opts(8));
    assert_ne!(a.trace_hash, c.trace_hash, "different seeds should not give the same trace");
}

#[test]
fn mutation_server_skips_authority_check_is_caught_by_single_writer() {
    let base = RunOptions { mutation: Some(Mutation::ServerSkipsAuthorityCheck), ..opts(0) };
    let summary = sweep(&base, 0, 60, 2, &report_dir(), false);
    let caught: Vec<_> = summary.failing().filter(|f| f.outcome == RunOutcome::SafetyViolation).collect();
    assert!(!caught.is_empty(), "mutation survived 60 seeds:\n{}", render(&summary));
    assert!(caught.iter().any(|f| f.violations().any(|(p, _)| p == "single_writer")));
    assert_eq!(summary.exit_code(), 1);
}

/// The built-in default, `scenarios/swarm.json`: every flow (failover, moves, splits, merges)
/// under every fault kind, topology drawn per seed. A short sweep holds every property, and
/// faults meet the failover and move flows.
#[test]
fn sweep_swarm_default_holds_and_faults_meet_every_flow() {
    let base = RunOptions { scenario: Scenario::default_swarm(), scenario_label: "scenarios/swarm.json (built-in)".into(), ..opts(0) };
    let summary = sweep(&base, 0, 40, 2, &report_dir(), false);
    assert!(summary.totals.crashed == 0 && summary.totals.failing == 0, "{}", render(&summary));
    for flow in ["failover", "move", "split", "merge"] {
        let kinds = summary.totals.fault_flow_seeds.values().filter(|m| m.contains_key(flow)).count();
        assert!(kinds >= 5, "only {kinds} fault kinds met the {flow} flow:\n{}", render(&summary));
    }
}

/// Found by the 5000-seed sweep of the default scenario (seed 741 before the nemesis drew from
/// its own stream, later seed 151, until a change of wake order lost it): lock-1 crashed while
/// it synced the record of a leader term it was granting, a torn write kept the record, and the
/// restarted authority recovered a term nobody had been told of; `manager_exclusive` then took
/// its holder's commits for a deposed leader's. The same chain as an explicit schedule, on
/// several runtime seeds so no wake order decides it: the record is durable, the answer never
/// left, the restarted authority announces the term (`leader_recovered`), its holder learns it
/// by asking again and commits at it, and both views of `manager_exclusive` pass; without the
/// announcement the same history fails.
#[test]
fn a_leader_term_durable_but_never_announced_is_recovered_and_its_commits_pass() {
    use partmap::config::{lock_addr, manager_addr, Knobs};
    use partmap::lock::{self, LockRecord};
    use partmap::map::MapOp;
    use partmap::msg::Msg;
    use partmap::seam::{sleep_ms, Disk, Net, Rpc};
    use partmap_sim::check::manager_exclusive;
    use partmap_sim::events::{self, Sys, What};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    for seed in 0..4 {
        let net = || Net { bandwidth_bytes_per_s: 1 << 30, faults: Default::default() };
        let disk: Disk<LockRecord> = Disk::new(50);
        let answered = Arc::new(AtomicBool::new(false));
        let committed = Arc::new(AtomicBool::new(false));
        events::start(false, |_| {});
        let mut rt = madsim::runtime::Runtime::with_seed_and_config(seed, Default::default());
        rt.set_time_limit(std::time::Duration::from_secs(60));
        let (d, first, done) = (disk.clone(), answered.clone(), committed.clone());
        rt.block_on(async move {
            let h = madsim::runtime::Handle::current();
            let d2 = d.clone();
            let lock_node = h.create_node().name("lock-1").ip(lock_addr().ip()).init(move || lock::run(Knobs::default(), d2.clone(), net())).build();
            h.create_node().name("manager-1").ip(manager_addr(1).ip()).init(move || {
                let (first, done) = (first.clone(), done.clone());
                async move {
                    let rpc = Rpc::bind(manager_addr(1), &net()).await;
                    // lock-1 is up first, as in a run's bring-up (`World::build`): a request
                    // sent before it has bound its socket is lost.
                    sleep_ms(1).await;
                    // The first request: lock-1 crashes while it syncs the term's record.
                    let lost = rpc.call(lock_addr(), Msg::AcquireLeader { candidate: 1 }, 300).await;
                    first.store(lost.is_ok(), Ordering::SeqCst);
                    // Ask again until the restarted authority answers: it recovered the term.
                    let term = loop {
                        if let Ok(Msg::LeaderLease { epoch: Some(term), .. }) = rpc.call(lock_addr(), Msg::AcquireLeader { candidate: 1 }, 300).await {
                            break term;
                        }
                        sleep_ms(100).await;
                    };
                    let cas = Msg::CasMap { expected_version: 0, leader_epoch: term, candidate: 1, ops: vec![MapOp::Bootstrap { split_points: vec![] }] };
                    let Ok(Msg::CasResult { error: None, .. }) = rpc.call(lock_addr(), cas, 1_000).await else { panic!("the holder of the recovered term commits") };
                    done.store(true, Ordering::SeqCst);
                }
            }).build();
            // 20 ms into the first request's 50 ms sync: the record reached the platter (a torn
            // write keeps it), the answer never leaves.
            sleep_ms(20).await;
            h.kill(lock_node.id());
            let report = d.crash_torn(1);
            assert_eq!(report.survived, 1, "the term's record was pending and survives");
            sleep_ms(500).await;
            h.restart(lock_node.id());
            while !committed.load(Ordering::SeqCst) {
                sleep_ms(100).await;
            }
        });
        let history = events::finish();
        assert!(!answered.load(Ordering::SeqCst), "seed {seed}: the first request must not be answered");
        let durable = disk.read_durable();
        assert!(matches!(durable[..], [LockRecord::LeaderTerm { candidate: 1, epoch: 1 }, LockRecord::Map { .. }]), "seed {seed}: {durable:?}");
        let sys: Vec<&Sys> = history.iter().filter_map(|e| e.sys()).collect();
        assert!(!sys.iter().any(|s| matches!(s, Sys::Leader { .. })), "seed {seed}: the term was never announced as granted");
        assert!(sys.iter().any(|s| matches!(s, Sys::LeaderRecovered { manager: 1, leader_epoch: 1 })), "seed {seed}: the restarted authority announces the term it recovered");
        assert!(sys.iter().any(|s| matches!(s, Sys::MapCommit { leader_epoch: 1, manager: 1, .. })), "seed {seed}");
        manager_exclusive::check(&history).unwrap_or_else(|v| panic!("seed {seed}: announced view: {v:?}"));
        manager_exclusive::check_durable(&durable).unwrap_or_else(|v| panic!("seed {seed}: durable view: {v:?}"));
        // The announcement is what the verdict rests on: without it the same commits fail.
        let unannounced: Vec<_> = history.into_iter().filter(|e| !matches!(&e.what, What::Sys(Sys::LeaderRecovered { .. }))).collect();
        assert!(manager_exclusive::check(&unannounced).is_err(), "seed {seed}");
    }
}

/// Kept from the 10,000-seed sweep of the default scenario (issue 13): on these seeds a move's
/// target answered its finish `InProgress` and the leader published it only in its next round,
/// after a merge: the range had no active owner for about 1.5 s and the final strong reads of
/// a key in it failed all their attempts. A round now asks the target again before leaving the
/// move (`handoff::FINISH_POLLS_PER_ROUND`; the mechanism itself is `handoff`'s transcript
/// test). Seed 5398 of the same sweep failed liveness for another cause: see below.
/// Since runs became prefix-stable these seeds' interleavings changed and may no longer
/// contain the situation; they stay as passing seeds, and the transcript test guards it.
#[test]
fn swarm_seeds_whose_final_reads_waited_for_the_next_round_are_live() {
    for seed in [415, 1464, 2001, 8990] {
        assert_default_seed_passes(seed);
    }
}

/// Kept from a sweep of seeds 1000..4000 of the default scenario (issue 13): server-3's first
/// registration after a restart was answered only after lock-1's slow disk, its retry got the
/// same session without the lease being granted anew, and server-3 admitted appends after the
/// authority had expired the session (`single_writer`). The mechanism is the authority's unit
/// test `authority_registration_retry_of_the_live_incarnation_grants_the_lease_anew`.
/// Since runs became prefix-stable (`run::nemesis::spawn`, one driver task for the
/// schedule) every seed's interleaving changed, so this seed may no longer contain the
/// situation above; it stays as a passing seed, and the named unit test guards the mechanism.
#[test]
fn swarm_seed_whose_registration_retry_outlived_its_session_is_safe() {
    assert_default_seed_passes(2272);
}

/// Kept from the 10,000-seed sweep of the default scenario (issue 13): lock-1, cut off from the
/// rest past the servers' leases, refused their renewals at 24.2 s from expiries only in its
/// memory (its slow disk held the write); the servers dropped their ranges, lock-1 crashed at
/// 24.4 s before anything wrote the expiries, recovered the sessions live and gave them back to
/// the servers' next registrations. The map kept seven ranges on owners that no longer held
/// them: appends refused `NotOwner` to the end of the run (`liveness`). The mechanism is the
/// authority's unit test `authority_refuses_a_renewal_only_once_its_expiry_is_durable` and the
/// golden schedule `scenarios/renewal-refused-then-crash.json`.
/// Since runs became prefix-stable (`run::nemesis::spawn`, one driver task for the
/// schedule) every seed's interleaving changed, so this seed may no longer contain the
/// situation above; it stays as a passing seed, and the named unit test guards the mechanism.
#[test]
fn swarm_seed_whose_servers_were_told_of_an_expiry_a_crash_lost_is_live() {
    assert_default_seed_passes(5398);
}

/// Kept from the 10,000-seed sweep of the default scenario on main ab9ec14 (issue 13): the
/// leader paused r62 for a stop-and-copy move (server-1 to server-2) at 115.67 s; the target's
/// first finish answered `InProgress` after its 250 ms patience, and the round's repeated asks
/// (`handoff::FINISH_POLLS_PER_ROUND`) were each answered `InProgress` at once while the first
/// finish still copied, so the round left the move about 5 ms before the target served
/// (115.99 s). A merge and another move went first; the move was published at 117.53 s, and
/// the final strong read of k000730 (in r62) failed all 8 attempts. A repeated finish now
/// waits for the running one (the mechanism is the server's unit test
/// `server_repeated_finish_waits_for_the_running_one`).
/// Since runs became prefix-stable (`run::nemesis::spawn`, one driver task for the
/// schedule) every seed's interleaving changed, so this seed may no longer contain the
/// situation above; it stays as a passing seed, and the named unit test guards the mechanism.
#[test]
fn swarm_seed_whose_repeated_finishes_were_answered_at_once_is_live() {
    assert_default_seed_passes(4189);
}

/// Seed 5954 (10,000-seed sweep): an owner's append timed out at the store (its message held by
/// `delay_next` for 7.9 s), the owner reloaded at the same epoch, and the held copy landed after
/// the heal behind the reload: the owner served 6 records of k000126 while its stream held 7
/// (`no_lost_append` agreement view). The reload's fence now bars the appends in doubt.
#[test]
fn swarm_seed_whose_append_in_doubt_landed_behind_a_reload_is_safe() {
    assert_default_seed_passes(5954);
}

/// Kept from the 2,000-seed sweep of the default scenario after the nemesis's driver change
/// (seeds 611 and 1642): lock-1 logged a server's session expiry, crashed before it announced
/// the expiry, restored it from its log, and the leader failed the server's ranges over. The
/// authority was right; `handoff_in_order` read expiries only from `lease_expired` and
/// `session_expired` events and blamed the failover. It now reads the restored records too
/// (unit test `handoff_order_a_failover_waits_for_the_session`). Each seed must still hold
/// such a restored expiry, or it no longer tests this.
#[test]
fn swarm_seeds_whose_authority_restored_an_expiry_before_a_failover_pass() {
    for seed in [611, 1642] {
        let report = run_seed(&RunOptions { seed, scenario: Scenario::default_swarm(), scenario_label: "scenarios/swarm.json (built-in)".into(), ..opts(seed) });
        let restored = report.events.iter().any(|e| matches!(e.sys(), Some(partmap_sim::events::Sys::Restored { record: partmap::event::Restored::SessionExpired { .. }, .. })));
        assert!(restored, "seed {seed}: lock-1 restored a session expiry from its log");
        assert_eq!(report.outcome(), RunOutcome::Pass, "seed {seed}: {:?}", report.verdicts.iter().filter(|v| v.violation.is_some()).collect::<Vec<_>>());
    }
}
