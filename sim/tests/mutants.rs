//! Every named mutation must be caught within its seed budget on its scenario, and the
//! unmutated system must pass the same seeds (so the catch is the mutation's doing). The same
//! hunt `partmap-sim mutants` runs.

use partmap::config::Mutation;
use partmap_sim::mutants::{hunt_all, render, TARGETS};

#[test]
fn mutants_every_mutation_is_caught_and_the_unmutated_system_passes_the_same_seeds() {
    assert_eq!(TARGETS.len(), Mutation::ALL.len(), "every mutation has a target");
    for (t, (m, _)) in TARGETS.iter().zip(Mutation::ALL) {
        assert_eq!(t.mutation, m, "targets follow Mutation::ALL");
    }
    let hunts = hunt_all(&TARGETS, None, false, true, 2, &|_, _, _| {}).expect("built-in scenarios");
    let table = render(&hunts);
    for h in &hunts {
        assert!(h.caught_at.is_some(), "{} survived {} seeds of {}\n{table}", h.mutation, h.seeds_run, h.scenario);
        assert_eq!(h.unmutated_pass, Some(true), "{}: the unmutated system failed one of seeds 0..{} of {}\n{table}", h.mutation, h.seeds_run, h.scenario);
    }
}
