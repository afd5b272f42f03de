//! Every named mutation must be caught within its seed budget on its scenario, and the
//! unmutated system must pass the same seeds (so the catch is the mutation's doing). The same
//! hunt `partmap-sim mutants` runs.

use partmap::config::Mutation;
use partmap_sim::search::mutants::{builtin_scenario, hunt_all, render, DEFENCE_IN_DEPTH, TARGETS};
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};

#[test]
fn mutants_every_mutation_is_caught_and_the_unmutated_system_passes_the_same_seeds() {
    assert_eq!(TARGETS.len() + DEFENCE_IN_DEPTH.len(), Mutation::ALL.len(), "every mutation has a target or is defence in depth");
    let listed = TARGETS.iter().map(|t| t.mutation).chain(DEFENCE_IN_DEPTH.iter().map(|d| d.mutation));
    for (m, (all, _)) in listed.zip(Mutation::ALL) {
        assert_eq!(m, all, "targets, then the defence-in-depth ones, follow Mutation::ALL");
    }
    let hunts = hunt_all(&TARGETS, None, false, true, 2, &|_, _, _| {}).expect("built-in scenarios");
    let table = render(&hunts);
    for h in &hunts {
        assert!(h.caught_at.is_some(), "{} survived {} seeds of {}\n{table}", h.mutation, h.seeds_run, h.scenario);
        assert_eq!(h.unmutated_pass, Some(true), "{}: the unmutated system failed one of seeds 0..{} of {}\n{table}", h.mutation, h.seeds_run, h.scenario);
    }
}

/// Issue 19: the defence-in-depth mutations change no verdict on their scenarios, and change
/// the runs' traces exactly when they are measured as reached (see `Shadowed`).
#[test]
fn mutants_defence_in_depth_changes_no_verdict_and_is_reached_as_measured() {
    for d in &DEFENCE_IN_DEPTH {
        let scenario = builtin_scenario(d.scenario).expect("built in");
        let mut differ = Vec::new();
        for seed in 0..d.seeds {
            let opts = |mutation| RunOptions { seed, scenario: scenario.clone(), scenario_label: format!("scenarios/{}", d.scenario), mutation, also_mutation: None, trace: false, echo_header: false };
            let plain = run_seed(&opts(None));
            let mutated = run_seed(&opts(Some(d.mutation)));
            assert_eq!(plain.outcome(), RunOutcome::Pass, "{} seed {seed}: the unmutated system fails", d.scenario);
            assert_eq!(mutated.outcome(), RunOutcome::Pass, "{} on {} seed {seed}: a property caught it; give it a target: {:?}", d.mutation.name(), d.scenario, mutated.verdicts);
            if plain.trace_hash != mutated.trace_hash {
                differ.push(seed);
            }
        }
        assert_eq!(!differ.is_empty(), d.reached, "{} on {}: traces differ on seeds {differ:?} of 0..{}", d.mutation.name(), d.scenario, d.seeds);
    }
}
