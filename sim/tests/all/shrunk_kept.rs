//! The kept shrunk schedules (`scenarios/shrunk/`, issue 14) stay what their README promises:
//! each file, run with the seed and mutation its description names, violates the property it
//! names, and passes without the mutation. A shrunk schedule is a minimal interleaving, so a
//! change of message timing can make it pass silently (found by a newcomer's pass over the
//! README: 13 of the 18 had stopped failing); this test fails instead, and
//! `just reshrink` (scripts/reshrink.py) shrinks them again.

use partmap::config::Mutation;
use partmap_sim::run::{run_seed, RunOptions, RunOutcome};
use partmap_sim::scenario::Scenario;

#[test]
fn every_kept_shrunk_schedule_fails_with_its_mutation_and_property_and_passes_without() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/shrunk");
    let table = std::fs::read_to_string(dir.join("README.md")).expect("scenarios/shrunk/README.md");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("scenarios/shrunk").map(|e| e.expect("entry").path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    assert!(files.len() >= 18, "{} kept files", files.len());
    let said = table_rows(&table);
    let mut problems = Vec::new();
    for path in &files {
        let scenario = Scenario::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (seed, mutation, property) = named(&scenario.description).unwrap_or_else(|| panic!("{}: the description names no seed, mutation and property", path.display()));
        assert!(said.iter().any(|(m, p)| *m == mutation && *p == property), "{}: {mutation} violating {property} is not a row of the table in scenarios/shrunk/README.md", path.display());
        let m = Mutation::parse(&mutation).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let label = path.display().to_string();
        let opts = RunOptions { seed, scenario: scenario.clone(), scenario_label: label.clone(), mutation: Some(m), also_mutation: None, trace: false, echo_header: false };
        let broken = run_seed(&opts);
        let violated: Vec<&str> = broken.verdicts.iter().filter(|v| v.violation.is_some()).map(|v| v.property).collect();
        if !violated.contains(&property.as_str()) {
            problems.push(format!("{label}: seed {seed} with {mutation} violates {violated:?}, not {property}: shrink it again (`just reshrink {mutation}`)"));
        }
        let sound = run_seed(&RunOptions { mutation: None, ..opts });
        if sound.outcome() != RunOutcome::Pass {
            problems.push(format!("{label}: seed {seed} without the mutation ends {:?}", sound.outcome()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `(seed, mutation, property)` from a shrunk file's description: "Run with seed N with
/// --mutation M, it violates P".
fn named(description: &str) -> Option<(u64, String, String)> {
    let rest = &description[description.find("Run with seed ")? + "Run with seed ".len()..];
    let (seed, rest) = rest.split_once(" with --mutation ")?;
    let (mutation, rest) = rest.split_once(", it violates ")?;
    let property: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
    Some((seed.parse().ok()?, mutation.to_string(), property))
}

/// `(mutation, property)` of each row of the README's table.
fn table_rows(table: &str) -> Vec<(String, String)> {
    table
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let mutation = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((mutation.to_string(), cells.get(4)?.to_string()))
        })
        .collect()
}
