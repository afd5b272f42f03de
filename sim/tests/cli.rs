//! The command line as a user meets it: exit codes, error messages, determinism of `run`.

use std::process::Command;

fn sim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_partmap-sim")).args(args).output().expect("runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn cli_unknown_mutation_lists_the_accepted_ones_and_exits_64() {
    let (code, _, err) = sim(&["run", "--seed", "1", "--mutation", "nope"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("unknown mutation `nope`") && err.contains("store-ignores-fence"), "{err}");
}

#[test]
fn cli_bad_seed_range_and_zero_jobs_exit_64() {
    let (code, _, err) = sim(&["sweep", "--seeds", "5..2"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("empty seed range"), "{err}");
    let (code, _, err) = sim(&["sweep", "--seeds", "0..2", "--jobs", "0"]);
    assert_eq!(code, 64, "{err}");
}

#[test]
fn cli_malformed_scenario_names_the_field_and_exits_64() {
    let dir = std::env::temp_dir().join(format!("partmap-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(&path, r#"{ "description": "x", "knobs": { "lease_ms": 2000, "lease_margin_ms": 2500 } }"#).unwrap();
    let (code, out, err) = sim(&["run", "--seed", "1", "--scenario", path.to_str().unwrap()]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("knobs.lease_margin_ms") && !err.contains("panicked"), "{err}");
}

#[test]
fn cli_run_prints_seed_first_and_the_same_hash_twice() {
    let (code, a, err) = sim(&["run", "--seed", "11"]);
    assert_eq!(code, 0, "{a}{err}");
    assert!(a.starts_with("seed=11\n"), "{a}");
    let (_, b, _) = sim(&["run", "--seed", "11"]);
    let hash = |s: &str| s.lines().find(|l| l.starts_with("trace_hash=")).map(str::to_string);
    assert!(hash(&a).is_some());
    assert_eq!(hash(&a), hash(&b));
    assert!(a.trim_end().ends_with(hash(&a).unwrap().as_str()), "trace hash is the last line");
}

#[test]
fn cli_shrink_of_a_passing_seed_says_so_and_exits_1() {
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/paused-owner.json");
    let (code, out, err) = sim(&["shrink", "--seed", "1", "--scenario", scenario, "--max-runs", "5"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("passes every property: nothing to shrink") && !err.contains("panicked"), "{err}");
}

#[test]
fn cli_emit_schedule_to_an_unwritable_path_names_the_flag_and_exits_3() {
    let dir = std::env::temp_dir().join(format!("partmap-cli-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let target = file.join("schedule.json");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/paused-owner.json");
    let (code, out, err) = sim(&["run", "--seed", "1", "--scenario", scenario, "--emit-schedule", target.to_str().unwrap()]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("--emit-schedule: cannot write") && !err.contains("panicked"), "{err}");
}
