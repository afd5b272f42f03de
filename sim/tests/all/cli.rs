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

/// `--mutation A,B` switches off two mechanisms at once: the second is on (a defence-in-depth
/// mutation with `server-skips-authority-check`, which the default scenario catches on every
/// seed, fails as that one does) and both are named in the header and the sweep's repro line; a name
/// twice, three names, or two of the store's, or `explore --shrink` with two: exit 64.
#[test]
fn cli_two_mutations_at_once_and_their_errors() {
    let (code, out, err) = sim(&["run", "--seed", "0", "--mutation", "server-keeps-fenced-range,server-skips-authority-check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("mutation=server-keeps-fenced-range,server-skips-authority-check"), "{out}");
    let reports = std::env::temp_dir().join(format!("partmap-cli-two-{}", std::process::id()));
    let (code, out, err) = sim(&["sweep", "--seeds", "0..1", "--mutation", "server-keeps-fenced-range,server-skips-authority-check", "--report-dir", reports.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("run --seed 0 --mutation server-keeps-fenced-range,server-skips-authority-check"), "the repro names both: {out}");
    let _ = std::fs::remove_dir_all(&reports);
    for (arg, why) in [
        ("source-ignores-pause,source-ignores-pause", "named twice"),
        ("source-ignores-pause,pause-skips-drain,target-skips-verify", "at most two"),
        ("store-ignores-fence,store-acks-before-sync", "store's core"),
        ("source-ignores-pause,nope", "unknown mutation `nope`"),
    ] {
        let (code, _, err) = sim(&["run", "--seed", "0", "--mutation", arg]);
        assert_eq!(code, 64, "{arg}: {err}");
        assert!(err.contains(why), "{arg}: {err}");
    }
    let (code, _, err) = sim(&["explore", "--runs", "1", "--shrink", "--mutation", "server-keeps-fenced-range,server-ignores-lease-expiry"]);
    assert_eq!(code, 64, "explore --shrink with two: {err}");
    assert!(err.contains("--shrink") && err.contains("one mutation"), "{err}");
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

/// A fresh folder for one test's reports.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("partmap-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// Issue 16: three machines each sweep a shard of 0..8; merging their summaries gives the
/// summary one sweep of 0..8 writes, seed by seed (trace hashes included) and in every total,
/// and the same table apart from the wall-clock line.
#[test]
fn cli_sweep_in_3_shards_merges_into_the_sweep_of_the_range() {
    let dir = scratch("shards");
    let d = |s: &str| dir.join(s).to_str().unwrap().to_string();
    let (code, full_out, err) = sim(&["sweep", "--seeds", "0..8", "--jobs", "2", "--report-dir", &d("full")]);
    assert_eq!(code, 0, "{full_out}{err}");
    for k in 1..=3 {
        let (code, out, err) = sim(&["sweep", "--seeds", "0..8", "--shard", &format!("{k}/3"), "--report-dir", &d("shards")]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains(&format!("shard={k}/3")), "{out}");
    }
    let shard = |k: u32| d(&format!("shards/sweep-swarm-shard-{k}-of-3.json"));
    let (code, merged_out, err) = sim(&["merge", &shard(1), &shard(2), &shard(3), "--out", &d("merged.json"), "--junit", &d("junit.xml")]);
    assert_eq!(code, 0, "{merged_out}{err}");

    let full = json(&dir.join("full/sweep-swarm.json"));
    let merged = json(&dir.join("merged.json"));
    let hashes = |v: &serde_json::Value| -> Vec<(u64, String)> {
        v["records"].as_array().unwrap().iter().map(|r| (r["seed"].as_u64().unwrap(), r["trace_hash"].as_str().unwrap().to_string())).collect()
    };
    assert_eq!(hashes(&full).iter().map(|(s, _)| *s).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    assert!(hashes(&full).iter().all(|(_, h)| h.len() == 16));
    assert_eq!(hashes(&merged), hashes(&full), "per-seed trace hashes");
    for part in ["records", "totals", "selection", "stopped", "build"] {
        assert_eq!(merged[part], full[part], "{part} differs between the merged shards and the sweep of the range");
    }
    assert_eq!(merged["measured"]["merged_from"].as_array().unwrap().len(), 3);
    // The table: the same lines but the wall-clock ones, the jobs and where reports went.
    let table = |s: &str| -> Vec<String> {
        s.lines().filter(|l| !l.starts_with("wall=") && !l.starts_with("summary:") && !l.starts_with("junit:")).map(|l| l.split(" jobs=").next().unwrap().to_string()).collect()
    };
    assert_eq!(table(&merged_out), table(&full_out));
    assert!(full_out.starts_with("scenario=scenarios/swarm.json (built-in) mutation=none seeds=0..8 (8 seeds) jobs=2\nbuild: partmap-sim "), "{full_out}");

    // JUnit: well-formed, one test case per seed.
    let xml = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut cases = 0;
    loop {
        match reader.read_event().unwrap_or_else(|e| panic!("junit.xml is not well-formed: {e}\n{xml}")) {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) if e.name().as_ref() == "testcase" => cases += 1,
            _ => {}
        }
    }
    assert_eq!(cases, 8, "{xml}");
    assert!(xml.contains(r#"tests="8" failures="0" errors="0""#), "{xml}");

    // Refused: a shard missing (the table not printed, nothing written), or given twice.
    let (code, out, err) = sim(&["merge", &shard(1), &shard(2), "--out", &d("partial.json")]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("missing shards: 3/3 (2 of 3 shards given)") && err.contains("--allow-partial"), "{err}");
    assert!(out.is_empty() && !dir.join("partial.json").exists(), "{out}");
    let (code, _, err) = sim(&["merge", &shard(2), "--out", &d("partial.json")]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("missing shards: 1/3, 3/3 (1 of 3 shards given)"), "{err}");
    let (code, _, err) = sim(&["merge", &shard(1), &shard(1), &shard(2), &shard(3), "--out", &d("twice.json"), "--allow-partial"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("duplicate shards: 1/3 (") && err.contains("give each shard's summary once"), "{err}");

    // --allow-partial merges what is there and says it is partial, in the table and the JSON.
    let (code, out, err) = sim(&["merge", &shard(1), &shard(2), "--out", &d("partial.json"), "--allow-partial"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.lines().next().unwrap().ends_with("; PARTIAL, missing shards: 3/3) jobs=2"), "{out}");
    assert!(out.contains("as expected (Pass) (PARTIAL: the seeds of shards 3/3 did not run here)"), "{out}");
    assert_eq!(json(&dir.join("partial.json"))["stopped"]["missing_shards"], serde_json::json!(["3/3"]));
    assert!(json(&dir.join("merged.json"))["stopped"].get("missing_shards").is_none(), "a whole merge says nothing of missing shards");

    // --out is checked before anything is read or printed.
    std::fs::write(dir.join("a-file"), "").unwrap();
    let (code, out, err) = sim(&["merge", &shard(1), &shard(2), &shard(3), "--out", &d("a-file/merged.json")]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("--out") && err.contains("cannot write there") && err.contains("nothing was merged") && out.is_empty(), "{out}{err}");
    let (code, out, err) = sim(&["merge", &shard(1), &shard(2), &shard(3), "--out", &d("shards")]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("is a folder") && out.is_empty(), "{out}{err}");

    // Refused: another scenario, another build, an old summary.
    let (code, out, err) = sim(&["sweep", "--seeds", "0..1", "--scenario", concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/failover.json"), "--report-dir", &d("other")]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = sim(&["merge", &shard(2), &d("other/sweep-failover.json"), "--out", &d("x.json")]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("different scenarios: scenario_hash"), "{err}");
    let mut rebuilt = json(&dir.join("shards/sweep-swarm-shard-1-of-3.json"));
    rebuilt["build"]["commit"] = serde_json::json!("0000000000000000000000000000000000000000");
    std::fs::write(dir.join("rebuilt.json"), rebuilt.to_string()).unwrap();
    let (code, _, err) = sim(&["merge", &shard(2), &d("rebuilt.json"), "--out", &d("x.json")]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("different builds: commit"), "{err}");
    let mut old = json(&dir.join("shards/sweep-swarm-shard-1-of-3.json"));
    old["format_version"] = serde_json::json!(1);
    std::fs::write(dir.join("old.json"), old.to_string()).unwrap();
    let (code, _, err) = sim(&["merge", &d("old.json")]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("format_version 1"), "{err}");
}

/// Issue 16: SIGINT in the middle of a sweep stops it starting seeds; the running one
/// finishes, and the summary of what completed is written, valid and marked interrupted.
#[test]
fn cli_sweep_interrupted_by_sigint_writes_a_summary_marked_interrupted() {
    use std::io::{BufRead, BufReader, Read};
    let dir = scratch("interrupt");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/failover.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_partmap-sim"))
        .args(["sweep", "--seeds", "0..50", "--scenario", scenario, "--report-dir", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    // Progress is a line per tenth of the seeds: interrupt once 5 have completed.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the sweep ended before 5 seeds: {seen}");
        seen.push_str(&line);
        if line.trim() == "5/50 seeds" {
            break;
        }
    }
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(out.contains("seeds run: interrupted by SIGINT"), "{out}");

    let path = dir.join("sweep-failover.json");
    let summary = partmap_sim::sweep::summary::Summary::read(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(summary.stopped.interrupted.as_deref(), Some("SIGINT"));
    assert!(summary.stopped.abandoned.is_empty(), "one signal abandons nothing");
    assert_eq!(summary.selection.planned, 50);
    let seeds: Vec<u64> = summary.records.iter().map(|r| r.seed).collect();
    let n = seeds.len() as u64;
    assert!((5..50).contains(&n), "{n} seeds completed");
    assert_eq!(seeds, (0..n).collect::<Vec<_>>(), "one job runs the seeds in order, so what completed is a prefix");
    assert!(summary.records.iter().all(|r| r.as_expected && r.trace_hash.len() == 16));
    assert_eq!(summary.totals.seeds, n);
}

/// A time budget runs the first seeds of the range until it is spent, and says so.
#[test]
fn cli_sweep_time_budget_runs_a_prefix_of_the_range() {
    let dir = scratch("budget");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/failover.json");
    let (code, out, err) = sim(&["sweep", "--seeds", "100..100000", "--time-budget", "1s", "--scenario", scenario, "--report-dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("time_budget=1s (") && out.contains("seeds run: time budget spent"), "{out}");
    let summary = partmap_sim::sweep::summary::Summary::read(&dir.join("sweep-failover.json")).unwrap_or_else(|e| panic!("{e}"));
    assert!(summary.stopped.time_budget_spent);
    let seeds: Vec<u64> = summary.records.iter().map(|r| r.seed).collect();
    assert!(!seeds.is_empty() && seeds.len() < 1000, "{} seeds", seeds.len());
    assert_eq!(seeds, (100..100 + seeds.len() as u64).collect::<Vec<_>>());
}

/// Bad selections are refused before anything runs, naming the flag and the problem.
#[test]
fn cli_sweep_bad_seeds_file_shard_and_budget_exit_64() {
    let dir = scratch("bad-input");
    let file = dir.join("seeds.txt");
    std::fs::write(&file, "3\n# yesterday's failures\nseven\n").unwrap();
    let (code, _, err) = sim(&["sweep", "--seeds-file", file.to_str().unwrap()]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--seeds-file") && err.contains("seeds.txt:3: `seven` is not a seed"), "{err}");
    let (code, _, err) = sim(&["sweep", "--seeds", "0..9", "--shard", "0/3"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--shard") && err.contains("count from 1"), "{err}");
    let (code, _, err) = sim(&["sweep", "--seeds", "0..9", "--time-budget", "ten minutes"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--time-budget") && err.contains("write e.g. 90s, 10m or 1h30m"), "{err}");
    let (code, _, err) = sim(&["sweep", "--seeds", "0..9", "--seeds-file", file.to_str().unwrap()]);
    assert_eq!(code, 64, "{err}");
    let (code, _, err) = sim(&["sweep"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--seeds-file"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// An unwritable report folder is reported before any seed runs, naming the flag.
#[test]
fn cli_sweep_unwritable_report_dir_fails_before_any_seed() {
    let dir = scratch("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let target = file.join("reports");
    let (code, out, err) = sim(&["sweep", "--seeds", "0..1000", "--report-dir", target.to_str().unwrap()]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("--report-dir") && err.contains("cannot write there") && err.contains("no seed was run"), "{err}");
    assert!(out.is_empty() && !err.contains("sweeping"), "{out}{err}");
}

/// `--report-dir` naming an existing file is bad usage (exit 64), said before anything runs in
/// the flag's words (it was `File exists (os error 17)`, exit 3, and `timeline` ran its seed
/// first).
#[test]
fn cli_report_dir_that_is_a_file_is_bad_usage() {
    let dir = scratch("report-dir-file");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let shown = format!("--report-dir {}: is a file, not a folder", file.display());
    for args in [&["sweep", "--seeds", "0..1000"][..], &["timeline", "--seed", "0"], &["shrink", "--seed", "0"]] {
        let mut args = args.to_vec();
        args.extend(["--report-dir", file.to_str().unwrap()]);
        let (code, out, err) = sim(&args);
        assert_eq!(code, 64, "{args:?}: {out}{err}");
        assert!(err.contains(&shown) && out.is_empty(), "{args:?}: {out}{err}");
    }
}

/// A scenario path with a space: report names stay plain, the repro command is quoted and,
/// pasted into a shell, reproduces the failing seed with its trace hash; the log says what
/// failed before its events.
#[test]
fn cli_sweep_quotes_a_scenario_path_with_spaces_in_the_repro_command() {
    let dir = scratch("space");
    let scenarios = dir.join("my scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let scenario = scenarios.join("stale write.json");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/stale-write-after-failover.json"), &scenario).unwrap();
    let reports = dir.join("reports");
    let (code, out, err) = sim(&["sweep", "--seeds", "0..1", "--scenario", scenario.to_str().unwrap(), "--mutation", "store-ignores-fence", "--report-dir", reports.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    let repro = out.lines().find_map(|l| l.trim().strip_prefix("repro: ")).unwrap_or_else(|| panic!("no repro line: {out}"));
    assert!(repro.contains(&format!("--scenario '{}'", scenario.display())), "{repro}");
    let summary = partmap_sim::sweep::summary::Summary::read(&reports.join("sweep-stale_write-store-ignores-fence.json")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(std::fs::read_to_string(reports.join("sweep-stale_write-store-ignores-fence.failing-seeds.txt")).unwrap(), "0\n");
    let bin = env!("CARGO_BIN_EXE_partmap-sim");
    let pasted = repro.replace("cargo run --release -p partmap-sim --", &shlex::try_quote(bin).unwrap());
    let run = Command::new("sh").arg("-c").arg(&pasted).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{pasted}\n{stdout}");
    assert!(stdout.contains(&format!("trace_hash={}", summary.records[0].trace_hash)), "{stdout}");
    let log = std::fs::read_to_string(reports.join("failing/stale_write-store-ignores-fence-seed-0.log")).unwrap();
    // The violation, the repro command and the timeline first, then the seed and knobs.
    let head: Vec<&str> = log.lines().take(20).collect();
    assert_eq!(head[0], "outcome=SafetyViolation expected=Pass");
    assert!(head[1].starts_with("VIOLATION single_writer:") && head[2].starts_with("repro: ") && head[3].starts_with("timeline: "), "{}", head.join("\n"));
    assert_eq!(head[4], "seed=0");
}

/// `mutants` prints a line as each hunt ends and leaves reports/mutants.md alone unless
/// `--write-table` is given (which needs every mutation).
#[test]
fn cli_mutants_shows_progress_and_writes_the_table_only_when_asked() {
    let dir = scratch("mutants");
    let (code, out, err) = sim(&["mutants", "--only", "store-ignores-fence", "--report-dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("[1/1] store-ignores-fence on stale-write-after-failover.json: caught at seed 0"), "{err}");
    assert!(out.contains("table not written"), "{out}");
    assert!(!dir.join("mutants.md").exists());
    let (code, _, err) = sim(&["mutants", "--only", "store-ignores-fence", "--write-table"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--write-table") && err.contains("--only"), "{err}");
    let (code, _, err) = sim(&["mutants", "--only", "server-admits-newer-epoch"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("defence-in-depth") && err.contains("sweep --mutation server-admits-newer-epoch"), "{err}");
}

/// The fuzzing workflow runs the README's commands: every partmap-sim command in
/// .github/workflows/fuzz.yml appears, as it is, in the README.
#[test]
fn ci_workflow_runs_the_readme_commands() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let workflow = std::fs::read_to_string(root.join(".github/workflows/fuzz.yml")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let commands: Vec<&str> = workflow
        .lines()
        .map(|l| l.trim().trim_start_matches("run: "))
        .filter(|l| l.starts_with("cargo run"))
        .collect();
    assert!(commands.iter().filter(|c| c.contains("partmap-sim -- sweep")).count() == 1, "{commands:?}");
    assert!(commands.iter().filter(|c| c.contains("partmap-sim -- merge")).count() == 1, "{commands:?}");
    for c in commands {
        assert!(readme.lines().any(|l| l.trim() == c), "the workflow runs `{c}`, which the README does not show");
    }
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

/// A pause-review cell prints as a scenario that runs like any other; a malformed cell names
/// the part that is wrong.
#[test]
fn cli_report_cell_prints_a_runnable_scenario_or_names_the_bad_part() {
    let (code, out, err) = sim(&["report", "pause", "--cell", "pre-copy,4MiB,0.05,100MiB"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(json["workload"]["preload_bytes"], 4 << 20);
    assert_eq!(json["moves"]["strategy"], "pre-copy");
    let dir = std::env::temp_dir().join(format!("partmap-cell-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cell.json");
    std::fs::write(&path, &out).unwrap();
    let (code, run, err) = sim(&["run", "--seed", "1", "--scenario", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{run}{err}");
    assert!(run.contains("outcome=Pass expected=Pass"), "{run}");
    for (cell, says) in [("pre-copy,4MB,0.05,100MiB", "size unit `MB`"), ("pre-copy,4MiB,1.5,100MiB", "ratio 1.5"), ("warp,4MiB,0.05,100MiB", "strategy `warp`"), ("pre-copy,4MiB,0.05", "expected STRATEGY,SIZE,RATIO,BANDWIDTH")] {
        let (code, _, err) = sim(&["report", "pause", "--cell", cell]);
        assert_eq!(code, 64, "{cell}: {err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{cell}: {err}");
    }
}

/// A negative or non-numeric seed says what a seed is (it said "invalid digit found in
/// string"); `--help` of every command with `--mutation` lists the mutations' names.
#[test]
fn cli_bad_seed_says_what_a_seed_is_and_help_lists_the_mutations() {
    let cases: [(&[&str], &str); 3] = [
        (&["run", "--seed", "-1"], "`-1` is negative: a seed is an integer from 0 to 18446744073709551615"),
        (&["shrink", "--seed", "x"], "`x` is not a number: a seed is an integer"),
        (&["timeline", "--seed", "-3"], "`-3` is negative"),
    ];
    for (args, says) in cases {
        let (code, out, err) = sim(args);
        assert_eq!(code, 64, "{args:?}: {out}{err}");
        assert!(err.contains("--seed") && err.contains(says) && out.is_empty(), "{args:?}: {err}");
    }
    for sub in ["run", "sweep", "shrink", "timeline"] {
        let (code, out, err) = sim(&[sub, "--help"]);
        assert_eq!(code, 0, "{err}");
        for (_, name) in partmap::config::Mutation::ALL {
            assert!(out.contains(name), "`{sub} --help` does not list {name}: {out}");
        }
    }
}

/// `report pause --predict` answers from the model alone: both strategies, the convergence
/// limit and a recommendation for the review's example; bad parts are named and exit 64; a
/// rate above the convergence limit is an answer.
#[test]
fn cli_report_pause_predict_answers_and_names_bad_parts() {
    let (code, out, err) = sim(&["report", "pause", "--predict", "1GiB,600MiB/s,1GiB/s"]);
    assert_eq!(code, 0, "{out}{err}");
    for want in ["stop-and-copy: pause ", "pre-copy:      pause ", "convergence limit: W_max = ", "is above it", "recommendation: "] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
    for (arg, named) in [
        ("1GiB,600MiB/s", "bandwidth is missing"),
        ("1GB,600MiB/s,1GiB/s", "size `1GB`: unit `GB`"),
        ("1GiB,-1MiB/s,1GiB/s", "write rate `-1MiB/s` must be above 0"),
        ("1GiB,600MiB/s,0/s", "bandwidth `0/s` must be above 0"),
        ("1GiB,1GiB/s,1GiB/s", "write rate `1GiB/s` is at or above the bandwidth"),
        ("1GiB,fast,1GiB/s", "write rate `fast`: unit `fast`"),
    ] {
        let (code, out, err) = sim(&["report", "pause", "--predict", arg]);
        assert_eq!(code, 64, "{arg}: {out}{err}");
        assert!(err.contains(named) && !err.contains("panicked"), "{arg}: {err}");
    }
    let (code, _, err) = sim(&["report", "pause", "--predict", "1GiB,6MiB/s,1GiB/s", "--threshold", "1GiB/s"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--threshold `1GiB/s` is a rate"), "{err}");
}
