//! Splits and merges: the golden schedules of a split whose parent's owner crashes and of a
//! merge whose manager crashes after pausing both parents, and a short sweep of
//! `split-merge.json`.

mod common;
use common::*;

use partmap_sim::run::{run_seed, RunOptions, RunOutcome, RunReport};



/// When the first split or merge was journaled as paused, and when (and how) it ended.
fn first_reshape(report: &RunReport) -> Option<(u64, u64, String)> {
    let paused = of(report, "map_child").find(|e| e.s("phase") == "paused")?;
    let first = paused.u("first");
    let ended = of(report, "reshaped").find(|e| e.s("parents").split(',').next() == Some(&format!("r{first}")))?;
    Some((paused.t_us, ended.t_us, ended.s("outcome").to_string()))
}

#[test]
fn golden_split_survives_a_crash_of_the_parents_owner() {
    let crash_us = 2_600_000;
    let mut hit = 0;
    for seed in 1..=8 {
        let report = run_seed(&RunOptions { seed, ..scenario("split-owner-crash.json") });
        assert_eq!(report.outcome(), RunOutcome::Pass, "seed {seed}: {:?}", report.verdicts);
        assert_eq!(report.faults.get("crash_server"), Some(&1));
        assert!(report.reshapes.get("split_committed").is_some_and(|n| *n >= 1), "seed {seed}: no split committed: {:?}", report.reshapes);
        let (paused, ended, outcome) = first_reshape(&report).expect("a split was paused and ended");
        if paused < crash_us && crash_us < ended {
            hit += 1;
            // The owner of the parent died mid-split. Either the split was dropped by the
            // parent's failover (or aborted), and the parent went to another server at a newer
            // epoch; or server-1 had already opened its child and the split could commit while
            // its session was still valid at the authority (seed 7), and then the child failed
            // over to another server.
            assert!(outcome == "aborted" || outcome == "committed", "seed {seed}: {outcome}");
            let must_move: Vec<u64> = if outcome == "aborted" {
                vec![1]
            } else {
                of(&report, "map_child").filter(|e| e.u("first") == 1 && e.u("owner") == 1).map(|e| e.u("range")).collect()
            };
            for range in must_move {
                let moved = of(&report, "activated").any(|e| e.u("range") == range && e.u("server") != 1 && e.t_us > crash_us);
                assert!(moved, "seed {seed}: r{range} ({outcome} split) was not failed over");
            }
        }
    }
    assert!(hit >= 4, "the crash landed inside a paused split on only {hit} of 8 seeds");
}

#[test]
fn golden_merge_paused_when_the_manager_crashes_is_finished_by_the_next_leader() {
    let crash_us = 4_000_000;
    let mut hit = 0;
    for seed in 1..=8 {
        let report = run_seed(&RunOptions { seed, ..scenario("merge-manager-crash.json") });
        assert_eq!(report.outcome(), RunOutcome::Pass, "seed {seed}: {:?}", report.verdicts);
        let Some((paused, ended, outcome)) = first_reshape(&report) else { panic!("seed {seed}: no merge") };
        if paused < crash_us && crash_us < ended {
            hit += 1;
            let new_leader = of(&report, "leader").find(|e| e.t_us > crash_us).expect("a leader after the crash");
            assert!(ended > new_leader.t_us, "seed {seed}: the merge ended before a new leader took over");
            assert_eq!(outcome, "committed", "seed {seed}: the next leader should finish the merge");
            assert_eq!(report.reshapes.get("merge_committed"), Some(&1), "seed {seed}: {:?}", report.reshapes);
        }
    }
    assert!(hit >= 4, "the managers crashed inside a paused merge on only {hit} of 8 seeds");
}

/// Splits and merges under the random fault mix: every property holds on a short sweep, and
/// most seeds both split and merge.
#[test]
fn split_merge_sweep_holds_and_reshapes() {
    let base = scenario("split-merge.json");
    let dir = std::env::temp_dir().join(format!("partmap-split-merge-{}", std::process::id()));
    let summary = partmap_sim::sweep::sweep(&base, 0, 12, 2, &dir, false);
    assert!(summary.failing.is_empty() && summary.crashed.is_empty(), "{}", partmap_sim::sweep::render(&summary, &base));
    assert!(summary.seeds_with_split_and_merge >= 9, "{}", partmap_sim::sweep::render(&summary, &base));
}
