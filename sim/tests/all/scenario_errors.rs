//! The scenario format: the shipped scenarios load, the README's examples parse, and every kind
//! of malformed file gives a one-line error naming the field, never a panic.

use partmap_sim::scenario::{ExpectedOutcome, FaultSpec, NodeKind, Scenario};
use std::path::PathBuf;

fn repo_file(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(relative)
}

/// The shipped failover scenario with one top-level section replaced by `section_json`.
fn failover_with(section: &str, section_json: &str) -> String {
    let mut value: serde_json::Value =
        serde_json::from_str(include_str!("../../../scenarios/failover.json")).unwrap();
    value[section] = serde_json::from_str(section_json).unwrap();
    serde_json::to_string_pretty(&value).unwrap()
}

/// Parse text that must be rejected; returns the error and checks its shape.
fn rejected(text: &str) -> String {
    let err = Scenario::parse(text, "test.json").expect_err("must be rejected");
    assert!(err.starts_with("test.json: "), "error lacks the origin: {err}");
    assert!(!err.contains('\n'), "error is not one line: {err}");
    err
}

fn assert_mentions(err: &str, parts: &[&str]) {
    for part in parts {
        assert!(err.contains(part), "error should mention `{part}`: {err}");
    }
}

#[test]
fn scenario_failover_shipped_loads_and_validates() {
    let loaded = Scenario::load(&repo_file("scenarios/failover.json")).unwrap();
    loaded.validate().unwrap();
    assert_eq!(loaded, Scenario::default_failover());
    assert_eq!(loaded.topology.servers, 3);
    assert_eq!(loaded.topology.managers, 2);
    assert_eq!(loaded.topology.frontends, 2);
    assert_eq!(loaded.topology.clients, 4);
    assert_eq!(loaded.topology.initial_ranges, 8);
    assert_eq!(loaded.workload.duration_s, 60);
    assert_eq!(loaded.workload.ops_per_s, 100.0);
    assert!(loaded.faults.schedule.is_empty());
    let random = loaded.faults.random.as_ref().expect("random faults on");
    assert_eq!(
        random.crash_targets,
        [NodeKind::Server, NodeKind::Manager, NodeKind::Store, NodeKind::Lock]
    );
    assert_eq!(loaded.heal.liveness_deadline_s, 30);
    assert_eq!(loaded.expect.outcome, ExpectedOutcome::Pass);
}

#[test]
fn scenario_failover_writes_out_every_default() {
    // The shipped file documents the defaults, so it must equal a file giving only a description.
    let shipped = Scenario::default_failover();
    let minimal = Scenario::parse(r#"{"description": "defaults"}"#, "minimal.json").unwrap();
    assert_eq!(Scenario { description: shipped.description.clone(), ..minimal }, shipped);
}

#[test]
fn scenario_failover_node_knobs_and_names() {
    let s = Scenario::default_failover();
    let knobs = s.node_knobs();
    let split_points: Vec<String> =
        knobs.initial_split_points.iter().map(|p| String::from_utf8(p.clone()).unwrap()).collect();
    assert_eq!(
        split_points,
        ["k000125", "k000250", "k000375", "k000500", "k000625", "k000750", "k000875"]
    );
    let without_splits =
        partmap::config::Knobs { initial_split_points: Vec::new(), ..knobs.clone() };
    assert_eq!(without_splits, partmap::config::Knobs::default());
    assert_eq!(knobs.mutation, None);
    assert_eq!(
        s.node_names(),
        [
            "lock-1",
            "store-1",
            "manager-1",
            "manager-2",
            "server-1",
            "server-2",
            "server-3",
            "frontend-1",
            "frontend-2"
        ]
    );
}

#[test]
fn scenario_split_points_strictly_increase_when_ranges_equal_keys() {
    let text =
        r#"{"description": "d", "topology": {"initial_ranges": 5}, "workload": {"keys": 5}}"#;
    let s = Scenario::parse(text, "test.json").unwrap();
    let points = s.node_knobs().initial_split_points;
    assert_eq!(points, [b"k000001", b"k000002", b"k000003", b"k000004"]);
}

#[test]
fn scenario_readme_examples_parse() {
    let readme = std::fs::read_to_string(repo_file("scenarios/README.md")).unwrap();
    let blocks: Vec<&str> =
        readme.split("```json").skip(1).map(|rest| rest.split("```").next().unwrap()).collect();
    assert!(blocks.len() >= 2, "README should show a random mix and a timed schedule");
    for (i, block) in blocks.iter().enumerate() {
        Scenario::parse(block, &format!("README.md json block {i}")).unwrap();
    }
}

#[test]
fn scenario_accepts_explicit_schedule_of_every_kind() {
    let text = failover_with(
        "faults",
        r#"{"random": null, "schedule": [
            {"at_ms": 1000, "duration_ms": 3000, "fault": {"kind": "crash", "node": "server-1"}},
            {"at_ms": 2000, "duration_ms": 3000, "fault": {"kind": "isolate", "node": "manager-1"}},
            {"at_ms": 3000, "duration_ms": 3000,
             "fault": {"kind": "split", "side": ["server-2", "lock-1"]}},
            {"at_ms": 4000, "duration_ms": 3000,
             "fault": {"kind": "one_way", "from": "server-3", "to": "store-1"}}
        ]}"#,
    );
    let s = Scenario::parse(&text, "test.json").unwrap();
    assert_eq!(s.faults.random, None);
    assert_eq!(s.faults.schedule.len(), 4);
    assert_eq!(
        s.faults.schedule[3].fault,
        FaultSpec::OneWay { from: "server-3".into(), to: "store-1".into() }
    );
}

#[test]
fn scenario_rejects_json_syntax_error() {
    let err = rejected("{\n  \"description\": \"d\",\n  \"topology\": {\"servers\": 3,}\n}");
    assert_mentions(&err, &["topology: ", "invalid JSON", "line 3", "column 29", "trailing comma"]);
}

#[test]
fn scenario_rejects_empty_file() {
    let err = rejected("");
    assert_mentions(&err, &["invalid JSON", "line 1"]);
}

#[test]
fn scenario_rejects_trailing_text() {
    let err = rejected(r#"{"description": "d"} {"description": "e"}"#);
    assert_mentions(&err, &["trailing characters", "line 1"]);
}

#[test]
fn scenario_rejects_unknown_field() {
    let err = rejected(&failover_with("knobs", r#"{"lease_msx": 2000}"#));
    assert_mentions(&err, &["knobs", "lease_msx", "lease_margin_ms"]);
}

#[test]
fn scenario_rejects_unknown_section() {
    let err = rejected(r#"{"description": "d", "topolgy": {}}"#);
    assert_mentions(&err, &["topolgy", "topology"]);
}

#[test]
fn scenario_rejects_unknown_field_in_fault() {
    let text = failover_with(
        "faults",
        r#"{"schedule": [{"at_ms": 1, "duration_ms": 1,
            "fault": {"kind": "crash", "node": "server-1", "nodes": ["server-2"]}}]}"#,
    );
    let err = rejected(&text);
    assert_mentions(&err, &["faults.schedule[0].fault", "nodes"]);
}

#[test]
fn scenario_rejects_unknown_fault_kind() {
    let text = failover_with(
        "faults",
        r#"{"schedule": [{"at_ms": 1, "duration_ms": 1,
            "fault": {"kind": "reboot", "node": "server-1"}}]}"#,
    );
    let err = rejected(&text);
    assert_mentions(&err, &["faults.schedule[0].fault", "reboot", "crash", "one_way"]);
}

#[test]
fn scenario_rejects_wrong_type() {
    let err = rejected(&failover_with("topology", r#"{"servers": "three"}"#));
    assert_mentions(&err, &["topology.servers", "string", "line"]);
}

#[test]
fn scenario_rejects_negative_count() {
    let err = rejected(&failover_with("topology", r#"{"clients": -1}"#));
    assert_mentions(&err, &["topology.clients", "-1"]);
}

#[test]
fn scenario_rejects_latency_of_wrong_length() {
    let err = rejected(&failover_with("knobs", r#"{"latency_ms": [1, 2, 3]}"#));
    assert_mentions(&err, &["knobs.latency_ms", "more elements"]);
    let err = rejected(&failover_with("knobs", r#"{"latency_ms": [1]}"#));
    assert_mentions(&err, &["knobs.latency_ms", "invalid length 1"]);
}

#[test]
fn scenario_rejects_unknown_outcome() {
    let err = rejected(&failover_with("expect", r#"{"outcome": "fail"}"#));
    assert_mentions(&err, &["expect.outcome", "fail", "safety_violation"]);
}

#[test]
fn scenario_rejects_zero_servers() {
    let err = rejected(&failover_with("topology", r#"{"servers": 0}"#));
    assert_mentions(&err, &["topology.servers", "1..=32", "got 0"]);
}

#[test]
fn scenario_rejects_initial_ranges_above_keys() {
    let text =
        r#"{"description": "d", "topology": {"initial_ranges": 20}, "workload": {"keys": 10}}"#;
    let err = rejected(text);
    assert_mentions(&err, &["topology.initial_ranges", "workload.keys (10)", "got 20"]);
}

#[test]
fn scenario_rejects_lease_margin_not_below_lease() {
    let err = rejected(&failover_with("knobs", r#"{"lease_ms": 2000, "lease_margin_ms": 2000}"#));
    assert_mentions(&err, &["knobs.lease_margin_ms", "knobs.lease_ms (2000)", "got 2000"]);
}

#[test]
fn scenario_rejects_renew_interval_not_below_trusted_lease() {
    let err = rejected(&failover_with("knobs", r#"{"renew_interval_ms": 1800}"#));
    assert_mentions(&err, &["knobs.renew_interval_ms", "(1800)", "got 1800"]);
}

#[test]
fn scenario_rejects_a_map_staleness_bound_a_healthy_refresh_cannot_meet() {
    let err = rejected(&failover_with("knobs", r#"{"map_staleness_ms": 800}"#));
    assert_mentions(&err, &["knobs.map_staleness_ms", "renew_interval_ms + knobs.rpc_timeout_ms (900)", "got 800"]);
    let err = rejected(&failover_with("knobs", r#"{"map_staleness_ms": 50}"#));
    assert_mentions(&err, &["knobs.map_staleness_ms", "100..=600000", "got 50", "0: no bound"]);
    let err = rejected(&failover_with("workload", r#"{"bounded_read_fraction": 2}"#));
    assert_mentions(&err, &["workload.bounded_read_fraction", "got 2"]);
}

#[test]
fn scenario_rejects_backoff_max_below_backoff() {
    let err = rejected(&failover_with(
        "knobs",
        r#"{"frontend_backoff_ms": 100, "frontend_backoff_ms_max": 50}"#,
    ));
    assert_mentions(&err, &["knobs.frontend_backoff_ms_max", "got 50"]);
}

#[test]
fn scenario_rejects_latency_min_above_max() {
    let err = rejected(&failover_with("knobs", r#"{"latency_ms": [10, 5]}"#));
    assert_mentions(&err, &["knobs.latency_ms", "min <= max", "[10, 5]"]);
}

#[test]
fn scenario_rejects_read_fraction_above_one() {
    let err = rejected(&failover_with("workload", r#"{"read_fraction": 1.5}"#));
    assert_mentions(&err, &["workload.read_fraction", "got 1.5"]);
}

#[test]
fn scenario_rejects_zero_ops_per_s() {
    let err = rejected(&failover_with("workload", r#"{"ops_per_s": 0}"#));
    assert_mentions(&err, &["workload.ops_per_s", "got 0"]);
}

#[test]
fn scenario_rejects_crash_rate_range_reversed() {
    let err = rejected(&failover_with("faults", r#"{"random": {"crash_per_min": [6.0, 1.0]}}"#));
    assert_mentions(&err, &["faults.random.crash_per_min", "min <= max"]);
}

#[test]
fn scenario_rejects_duplicate_crash_target() {
    let err = rejected(&failover_with(
        "faults",
        r#"{"random": {"crash_targets": ["server", "lock", "server"]}}"#,
    ));
    assert_mentions(&err, &["faults.random.crash_targets[2]", "server"]);
}

#[test]
fn scenario_rejects_fault_naming_missing_server() {
    let text = failover_with(
        "faults",
        r#"{"schedule": [
            {"at_ms": 1000, "duration_ms": 500, "fault": {"kind": "crash", "node": "server-1"}},
            {"at_ms": 2000, "duration_ms": 500, "fault": {"kind": "isolate", "node": "server-9"}}
        ]}"#,
    );
    let err = rejected(&text);
    assert_mentions(&err, &["faults.schedule[1].fault.node", "`server-9`", "server-1..server-3"]);
}

#[test]
fn scenario_rejects_split_naming_missing_node() {
    let text = failover_with(
        "faults",
        r#"{"schedule": [{"at_ms": 0, "duration_ms": 500,
            "fault": {"kind": "split", "side": ["server-1", "manager-3"]}}]}"#,
    );
    let err = rejected(&text);
    assert_mentions(&err, &["faults.schedule[0].fault.side[1]", "`manager-3`"]);
}

#[test]
fn scenario_rejects_empty_split() {
    let text = failover_with(
        "faults",
        r#"{"schedule": [{"at_ms": 0, "duration_ms": 500,
            "fault": {"kind": "split", "side": []}}]}"#,
    );
    assert_mentions(&rejected(&text), &["faults.schedule[0].fault.side", "at least one"]);
}

#[test]
fn scenario_rejects_one_way_to_itself() {
    let text = failover_with(
        "faults",
        r#"{"schedule": [{"at_ms": 0, "duration_ms": 500,
            "fault": {"kind": "one_way", "from": "store-1", "to": "store-1"}}]}"#,
    );
    assert_mentions(&rejected(&text), &["faults.schedule[0].fault.to", "must differ"]);
}

#[test]
fn scenario_rejects_fault_at_workload_end() {
    let text = failover_with(
        "faults",
        r#"{"schedule": [{"at_ms": 60000, "duration_ms": 500,
            "fault": {"kind": "crash", "node": "lock-1"}}]}"#,
    );
    assert_mentions(&rejected(&text), &["faults.schedule[0].at_ms", "(60000)", "got 60000"]);
}

#[test]
fn scenario_rejects_zero_fault_duration() {
    let text = failover_with(
        "faults",
        r#"{"schedule": [{"at_ms": 0, "duration_ms": 0,
            "fault": {"kind": "crash", "node": "lock-1"}}]}"#,
    );
    assert_mentions(&rejected(&text), &["faults.schedule[0].duration_ms", "got 0"]);
}

#[test]
fn scenario_rejects_missing_description() {
    let err = rejected(r#"{"topology": {"servers": 3}}"#);
    assert_mentions(&err, &["description", "missing"]);
}

#[test]
fn scenario_rejects_blank_description() {
    let err = rejected(r#"{"description": "   "}"#);
    assert_mentions(&err, &["description", "empty"]);
}

#[test]
fn scenario_rejects_top_level_non_object() {
    let err = rejected(r#""just a string""#);
    assert_mentions(&err, &["invalid type", "line 1"]);
    // serde would read a struct from an array of its fields; the format refuses that.
    assert_mentions(&rejected("[]"), &["the scenario: expected an object, got an array"]);
}

#[test]
fn scenario_rejects_array_where_an_object_belongs() {
    // `[5, 3]` used to run with 5 servers and 3 managers (serde reads structs from arrays).
    let topology = failover_with("topology", "[5, 3]");
    let err = rejected(&topology);
    assert_eq!(
        err,
        "test.json: topology: expected an object, got an array of 2 element(s) (write the fields by name: clients, frontends, initial_ranges, managers, servers)"
    );
    let knobs = failover_with("knobs", "[2000, 200]");
    assert_mentions(&rejected(&knobs), &["test.json: knobs: expected an object, got an array"]);
    let entry = failover_with("faults", r#"{ "random": null, "schedule": [ [1000, 500, { "kind": "crash", "node": "server-1" }] ] }"#);
    assert_mentions(&rejected(&entry), &["faults.schedule[0]: expected an object, got an array"]);
    let fault = failover_with("faults", r#"{ "random": null, "schedule": [ { "at_ms": 1000, "duration_ms": 500, "fault": ["crash", "server-1"] } ] }"#);
    assert_mentions(&rejected(&fault), &["faults.schedule[0].fault: expected an object, got an array"]);
    let random = failover_with("faults", r#"{ "random": [[1, 2]] }"#);
    assert_mentions(&rejected(&random), &["faults.random: expected an object, got an array"]);
    let script = failover_with("workload", r#"{ "script": [ [1, "k1", 6] ] }"#);
    assert_mentions(&rejected(&script), &["workload.script[0]: expected an object, got an array"]);
    let swarm = r#"{ "description": "x", "swarm": [[3, 5], [1, 2], [4, 8]] }"#;
    assert_mentions(&rejected(swarm), &["swarm: expected an object, got an array"]);
    // `[min, max]` pairs are arrays and stay accepted.
    Scenario::parse(&failover_with("knobs", r#"{ "latency_ms": [2, 4] }"#), "ok.json").unwrap();
}

#[test]
fn scenario_rejects_swarm_script_naming_a_frontend_a_draw_may_lack() {
    let text = r#"{ "description": "x", "swarm": { "servers": [3, 5], "frontends": [1, 3], "initial_ranges": [4, 8] },
        "workload": { "script": [ { "at_ms": 1000, "key": "r1", "bytes": 6, "frontend": 2 } ] } }"#;
    let err = rejected(text);
    assert_eq!(err, "test.json: workload.script[0].frontend: must be in 1..=1 (swarm.frontends[0], the fewest frontends a seed can draw), got 2");
    // Without swarm the fixed topology decides.
    let fixed = failover_with("workload", r#"{ "script": [ { "at_ms": 1000, "key": "r1", "bytes": 6, "frontend": 3 } ] }"#);
    assert_mentions(&rejected(&fixed), &["workload.script[0].frontend: must be in 1..=2 (topology.frontends), got 3"]);
    let every_draw_has_it = text.replace("[1, 3]", "[2, 3]");
    Scenario::parse(&every_draw_has_it, "ok.json").unwrap();
}

#[test]
fn scenario_rejects_tiny_positive_ops_per_s() {
    // 1e-14 ops/s used to wrap the client's next-operation time and flood the cluster.
    let err = rejected(&failover_with("workload", r#"{ "ops_per_s": 1e-14 }"#));
    assert_eq!(
        err,
        "test.json: workload.ops_per_s: 0.00000000000001 ops/s expects less than one operation in workload.duration_s (60 s); use at least 1 / duration_s (0.016666666666666666), or 0 with a workload.script"
    );
    assert_mentions(&rejected(&failover_with("workload", r#"{ "duration_s": 10, "ops_per_s": 0.05 }"#)), &["workload.ops_per_s", "10 s"]);
    Scenario::parse(&failover_with("workload", r#"{ "duration_s": 10, "ops_per_s": 0.1 }"#), "ok.json").unwrap();
}

#[test]
fn scenario_rejects_settings_that_fail_without_faults() {
    let latency = rejected(&failover_with("knobs", r#"{ "latency_ms": [100, 300] }"#));
    assert_eq!(
        latency,
        "test.json: knobs.latency_ms: a round trip at the highest latency takes 2 * 300 = 600 ms, not below knobs.rpc_timeout_ms (500): healthy requests would time out; lower the latency or raise the timeout"
    );
    let store = rejected(&failover_with("knobs", r#"{ "latency_ms": [1, 200], "store_timeout_ms": 400 }"#));
    assert_mentions(&store, &["knobs.store_timeout_ms", "2 * 200 + 1 = 401 ms", "got 400"]);
    let renew = rejected(&failover_with("knobs", r#"{ "lease_ms": 1000, "lease_margin_ms": 100, "renew_interval_ms": 800, "latency_ms": [1, 60] }"#));
    assert_mentions(&renew, &["knobs.renew_interval_ms", "every 800 ms", "120 ms", "900 ms"]);
    Scenario::parse(&failover_with("knobs", r#"{ "latency_ms": [100, 240] }"#), "ok.json").unwrap();
}

#[test]
fn scenario_load_reports_unreadable_file() {
    let path = repo_file("scenarios/no-such-scenario.json");
    let err = Scenario::load(&path).expect_err("missing file");
    assert_mentions(&err, &["no-such-scenario.json", "cannot read"]);
}

#[test]
fn scenario_rejects_every_truncation_without_panic() {
    // Every prefix of the shipped file is malformed; each must come back as an error.
    let text = include_str!("../../../scenarios/failover.json").trim_end();
    let cuts = text.char_indices().map(|(i, _)| i);
    for cut in cuts {
        let err = Scenario::parse(&text[..cut], "cut.json").expect_err("a prefix is not a file");
        assert!(err.starts_with("cut.json: "), "{err}");
    }
}

#[test]
fn scenario_rejects_extreme_numbers_without_panic() {
    for (section, json) in [
        ("knobs", r#"{"lease_ms": 18446744073709551615}"#),
        ("knobs", r#"{"lease_margin_ms": 18446744073709551615}"#),
        ("knobs", r#"{"latency_ms": [18446744073709551615, 18446744073709551615]}"#),
        ("workload", r#"{"duration_s": 18446744073709551615}"#),
        ("workload", r#"{"ops_per_s": 1e308}"#),
        ("workload", r#"{"key_skew": -1e308}"#),
        ("topology", r#"{"servers": 4294967295}"#),
        ("heal", r#"{"liveness_deadline_s": 0}"#),
    ] {
        rejected(&failover_with(section, json));
    }
    // A number beyond f64 is a JSON-level error, still reported, not a panic.
    rejected(r#"{"description": "d", "workload": {"ops_per_s": 1e999}}"#);
}

#[test]
fn scenario_rejects_swarm_range_reversed_and_swarm_with_schedule() {
    let reversed = r#"{ "description": "x", "swarm": { "servers": [5, 3], "frontends": [1, 2], "initial_ranges": [4, 8] } }"#;
    assert_mentions(&rejected(reversed), &["swarm.servers"]);
    let with_schedule = r#"{ "description": "x", "swarm": { "servers": [3, 5], "frontends": [1, 2], "initial_ranges": [4, 8] },
        "faults": { "schedule": [ { "at_ms": 1000, "duration_ms": 10, "fault": { "kind": "crash", "node": "server-1" } } ] } }"#;
    assert_mentions(&rejected(with_schedule), &["faults.schedule", "swarm"]);
}

#[test]
fn scenario_shipped_files_all_load() {
    let mut loaded = 0;
    for dir in ["scenarios", "scenarios/shrunk"] {
        for entry in std::fs::read_dir(repo_file(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
                loaded += 1;
            }
        }
    }
    assert!(loaded >= 40, "{loaded} scenario files");
}

#[test]
fn scenario_rejects_bad_moves_section_naming_the_field() {
    let bad_strategy = failover_with("moves", r#"{ "strategy": "copy-on-write" }"#);
    assert_mentions(&rejected(&bad_strategy), &["moves.strategy", "copy-on-write", "stop-and-copy", "pre-copy", "per-seed"]);
    let zero_rounds = failover_with("moves", r#"{ "precopy_max_rounds": 0 }"#);
    assert_mentions(&rejected(&zero_rounds), &["moves.precopy_max_rounds", "1..=100"]);
    let reversed = failover_with("moves", r#"{ "requests_per_min": [5, 1] }"#);
    assert_mentions(&rejected(&reversed), &["moves.requests_per_min", "min <= max"]);
    let unknown = failover_with("moves", r#"{ "stratgy": "pre-copy" }"#);
    assert_mentions(&rejected(&unknown), &["moves", "stratgy"]);
}

#[test]
fn scenario_rejects_bad_operator_requests_and_script() {
    let with_duration = failover_with("faults", r#"{ "random": null, "schedule": [ { "at_ms": 1000, "duration_ms": 5, "fault": { "kind": "move", "key": "k1", "to": "server-2" } } ] }"#);
    assert_mentions(&rejected(&with_duration), &["faults.schedule[0].duration_ms", "move"]);
    let to_store = failover_with("faults", r#"{ "random": null, "schedule": [ { "at_ms": 1000, "fault": { "kind": "move", "key": "k1", "to": "store-1" } } ] }"#);
    assert_mentions(&rejected(&to_store), &["faults.schedule[0].fault.to", "not a partition server"]);
    let drain_unknown = failover_with("faults", r#"{ "random": null, "schedule": [ { "at_ms": 1000, "duration_ms": 5, "fault": { "kind": "drain", "node": "server-9" } } ] }"#);
    assert_mentions(&rejected(&drain_unknown), &["faults.schedule[0].fault.node", "server-9"]);
    let corrupt_self = failover_with("faults", r#"{ "random": null, "schedule": [ { "at_ms": 1000, "duration_ms": 5, "fault": { "kind": "corrupt", "from": "store-1", "to": "store-1" } } ] }"#);
    assert_mentions(&rejected(&corrupt_self), &["faults.schedule[0].fault.to"]);
    let late = failover_with("workload", r#"{ "duration_s": 10, "script": [ { "at_ms": 10000, "key": "r1", "bytes": 6 } ] }"#);
    assert_mentions(&rejected(&late), &["workload.script[0].at_ms", "10000"]);
    let tiny = failover_with("workload", r#"{ "script": [ { "at_ms": 1, "key": "r1", "bytes": 2 } ] }"#);
    assert_mentions(&rejected(&tiny), &["workload.script[0].bytes", "6..="]);
    let idle = failover_with("workload", r#"{ "ops_per_s": 0 }"#);
    assert_mentions(&rejected(&idle), &["workload.ops_per_s", "script"]);
}

#[test]
fn scenario_rejects_bad_targeted_delay_naming_the_field() {
    let unknown = failover_with("faults", r#"{ "random": null, "schedule": [ { "at_ms": 1000, "duration_ms": 8000, "fault": { "kind": "delay_next", "from": "server-1", "to": "store-1", "message": "store_apend" } } ] }"#);
    assert_mentions(&rejected(&unknown), &["faults.schedule[0].fault.message", "store_apend", "store_append"]);
    let reorder_self = failover_with("faults", r#"{ "random": null, "schedule": [ { "at_ms": 1000, "duration_ms": 8000, "fault": { "kind": "reorder", "from": "server-1", "to": "server-1" } } ] }"#);
    assert_mentions(&rejected(&reorder_self), &["faults.schedule[0].fault.to"]);
    let holds = failover_with("faults", r#"{ "random": { "message_faults_per_min": [1, 2], "hold_ms": [0, 10] } }"#);
    assert_mentions(&rejected(&holds), &["faults.random.hold_ms[0]"]);
}

#[test]
fn scenario_swarm_is_the_built_in_default() {
    let shipped = Scenario::load(&repo_file("scenarios/swarm.json")).unwrap();
    assert_eq!(shipped, Scenario::default_swarm());
    assert!(shipped.swarm.is_some() && shipped.knobs.torn_writes);
}

/// Issue 15: simulated bulk must fit the store's smallest chunk, and the clients must start
/// inside the workload window.
#[test]
fn scenario_rejects_a_record_over_the_chunk_and_a_start_past_the_window() {
    let err = rejected(&failover_with("workload", r#"{ "bulk_bytes": 104857600 }"#));
    assert_mentions(&err, &["workload.bulk_bytes", "record_bytes + bulk_bytes = 104857616", "5242880"]);
    let err = rejected(&failover_with("workload", r#"{ "duration_s": 10, "start_s": 10 }"#));
    assert_mentions(&err, &["workload.start_s", "less than workload.duration_s (10)", "got 10"]);
}

/// A scenario whose offered load cannot fit in memory is refused before it runs, naming the
/// field whose term dominates and giving the estimate (issue 13: 1 MiB records at the default
/// rate reached 6.8 GB in 18 s; 64 clients at 10,000 ops/s for 600 s grow by ~2.8 KB an op).
#[test]
fn scenario_offered_load_over_the_memory_budget_is_refused_naming_the_field() {
    let err = rejected(&failover_with("workload", r#"{"record_bytes": 1048576}"#));
    assert_mentions(&err, &["workload.record_bytes", "cannot fit in memory", "16.4 GiB", "4 GiB"]);
    let topology = r#"{"servers": 3, "managers": 2, "frontends": 2, "clients": 64, "initial_ranges": 8}"#;
    let mut value: serde_json::Value = serde_json::from_str(&failover_with("topology", topology)).unwrap();
    value["workload"] = serde_json::from_str(r#"{"ops_per_s": 10000, "duration_s": 600}"#).unwrap();
    let err = rejected(&serde_json::to_string(&value).unwrap());
    assert_mentions(&err, &["workload.ops_per_s", "cannot fit in memory", "6000000 operations"]);
    // Just under the budget still loads: 1 MiB records at 10 ops/s for 60 s (1.6 GiB).
    let ok = failover_with("workload", r#"{"record_bytes": 1048576, "ops_per_s": 10}"#);
    Scenario::parse(&ok, "test.json").unwrap();
    let err = rejected(&failover_with("workload", r#"{"in_flight_per_client": 0}"#));
    assert_mentions(&err, &["workload.in_flight_per_client", "0"]);
    let err = rejected(&failover_with("workload", r#"{"shed_after_ms": 700000}"#));
    assert_mentions(&err, &["workload.shed_after_ms"]);
}

/// Every shipped scenario fits the memory budget with room to spare (a quarter of it).
#[test]
fn scenario_shipped_offered_load_fits_in_memory() {
    for dir in ["scenarios", "scenarios/shrunk"] {
        for entry in std::fs::read_dir(repo_file(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
                assert!(s.offered_memory_bytes() < partmap_sim::scenario::MEMORY_BUDGET_BYTES / 4.0, "{}: {} bytes", path.display(), s.offered_memory_bytes());
            }
        }
    }
}

/// Operator split and merge requests: keys of the workload, a split key inside an initial
/// range, a merge's right key after its left, no duration, no trigger. (`failover.json`: 1000
/// keys in 8 initial ranges, split at k000125, k000250, ...)
#[test]
fn scenario_operator_split_and_merge_requests_are_checked() {
    let with = |entry: &str| failover_with("faults", &format!(r#"{{"random": null, "schedule": [{entry}]}}"#));
    let ok = Scenario::parse(&with(r#"{"at_ms": 1000, "fault": {"kind": "split_range", "at": "k000300"}}, {"at_ms": 2000, "fault": {"kind": "merge_ranges", "left": "k000100", "right": "k000130"}}"#), "test.json").unwrap();
    assert_eq!(ok.faults.schedule[0].fault, FaultSpec::SplitRange { at: "k000300".into() });
    assert_eq!(ok.faults.schedule[1].fault, FaultSpec::MergeRanges { left: "k000100".into(), right: "k000130".into() });
    let err = rejected(&with(r#"{"at_ms": 1000, "fault": {"kind": "split_range", "at": "key-3"}}"#));
    assert_mentions(&err, &["faults.schedule[0].fault.at", "`key-3` is not a workload key", "six digits"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "fault": {"kind": "split_range", "at": "k1000000"}}"#));
    assert_mentions(&err, &["faults.schedule[0].fault.at", "not a workload key"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "fault": {"kind": "split_range", "at": "k001000"}}"#));
    assert_mentions(&err, &["faults.schedule[0].fault.at", "past the key space", "workload.keys = 1000", "k000999"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "fault": {"kind": "split_range", "at": "k000250"}}"#));
    assert_mentions(&err, &["faults.schedule[0].fault.at", "`k000250` is where initial range 3 starts", "splits nothing"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "fault": {"kind": "split_range", "at": "k000000"}}"#));
    assert_mentions(&err, &["faults.schedule[0].fault.at", "the first key"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "fault": {"kind": "merge_ranges", "left": "k000300", "right": "k000300"}}"#));
    assert_mentions(&err, &["faults.schedule[0].fault.right", "must be a key after left (`k000300`)"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "fault": {"kind": "merge_ranges", "left": "k3", "right": "k000300"}}"#));
    assert_mentions(&err, &["faults.schedule[0].fault.left", "not a workload key"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "fault": {"kind": "merge_ranges", "left": "k000100"}}"#));
    assert_mentions(&err, &["right"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "duration_ms": 500, "fault": {"kind": "split_range", "at": "k000300"}}"#));
    assert_mentions(&err, &["faults.schedule[0].duration_ms", "a `split_range` request is instantaneous"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "duration_ms": 2000, "on": {"event": "drained", "node": "server-1"}, "fault": {"kind": "drain", "node": "server-1"}}"#));
    assert_mentions(&err, &["faults.schedule[0].on", "a drain runs from at_ms for duration_ms"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "duration_ms": 2000, "until": {"event": "drained", "node": "server-1"}, "fault": {"kind": "drain", "node": "server-1"}}"#));
    assert_mentions(&err, &["faults.schedule[0].until", "operator requests are not healed"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "duration_ms": 2000, "until": {"event": "drained", "node": "server-1", "count": 0}, "fault": {"kind": "crash", "node": "server-1"}}"#));
    assert_mentions(&err, &["faults.schedule[0].until.count"]);
    let err = rejected(&with(r#"{"at_ms": 1000, "duration_ms": 2000, "until": {"event": "no_such_event", "node": "server-1"}, "fault": {"kind": "crash", "node": "server-1"}}"#));
    assert_mentions(&err, &["faults.schedule[0].until.event"]);
}

/// `workload.keys: 0` is reported as itself, not as too many `topology.initial_ranges` (the
/// topology was checked against the key count before the key count was checked).
#[test]
fn scenario_rejects_zero_keys_naming_workload_keys() {
    let err = rejected(&failover_with("workload", r#"{"keys": 0}"#));
    assert_mentions(&err, &["workload.keys", "1..=1000000", "got 0"]);
    assert!(!err.contains("initial_ranges"), "{err}");
}

/// `splits.split_ops_per_s: 0` turns splits off, not merges: a merge threshold with splits off
/// is a merges-only scenario (`move-during-merge.json`) and is accepted; with splits on, a merge
/// threshold at or over the split one is refused naming both fields.
#[test]
fn scenario_merges_without_splits_are_accepted_and_a_merge_over_split_is_refused() {
    let merges_only = Scenario::parse(&failover_with("splits", r#"{"split_ops_per_s": 0, "merge_ops_per_s": 5}"#), "test.json").unwrap();
    assert_eq!((merges_only.splits.split_ops_per_s, merges_only.splits.merge_ops_per_s), (0.0, 5.0));
    let err = rejected(&failover_with("splits", r#"{"split_ops_per_s": 5, "merge_ops_per_s": 5}"#));
    assert_mentions(&err, &["splits.merge_ops_per_s", "splits.split_ops_per_s (5)", "got 5"]);
}

/// `moves.max_concurrent: 0` starts no move, so asking for moves (random requests or a scheduled
/// `move`) is refused naming both fields instead of accepting requests that never run.
#[test]
fn scenario_rejects_move_requests_when_no_move_can_start() {
    let err = rejected(&failover_with("moves", r#"{"max_concurrent": 0, "requests_per_min": [5, 10]}"#));
    assert_mentions(&err, &["moves.requests_per_min", "moves.max_concurrent is 0", "never run"]);
    let mut value: serde_json::Value = serde_json::from_str(include_str!("../../../scenarios/failover.json")).unwrap();
    value["moves"] = serde_json::json!({"max_concurrent": 0});
    value["faults"] = serde_json::json!({"random": null, "schedule": [{"at_ms": 1000, "fault": {"kind": "move", "key": "k000001", "to": "server-2"}}]});
    let err = rejected(&value.to_string());
    assert_mentions(&err, &["faults.schedule[0].fault", "moves.max_concurrent is 0", "never run"]);
    // No moves asked for: max_concurrent 0 stays a valid way to switch moves off.
    Scenario::parse(&failover_with("moves", r#"{"max_concurrent": 0}"#), "test.json").unwrap();
}

/// A swarm scenario draws servers, frontends and initial ranges per seed: writing one of them in
/// `topology` too is refused naming both fields (it used to be ignored silently); the topology
/// fields swarm does not draw still apply.
#[test]
fn scenario_rejects_topology_fields_a_swarm_draws() {
    let swarm = r#""swarm": {"servers": [3, 7], "frontends": [1, 3], "initial_ranges": [4, 16]}"#;
    for (field, value) in [("servers", "9"), ("frontends", "2"), ("initial_ranges", "8")] {
        let err = rejected(&format!(r#"{{"description": "d", "topology": {{"{field}": {value}}}, {swarm}}}"#));
        assert_mentions(&err, &[&format!("topology.{field}: {value} would be ignored"), &format!("swarm.{field}")]);
    }
    let kept = Scenario::parse(&format!(r#"{{"description": "d", "topology": {{"managers": 3, "clients": 8}}, {swarm}}}"#), "test.json").unwrap();
    assert_eq!((kept.topology.managers, kept.topology.clients), (3, 8));
    // `"swarm": null` is no swarm: the topology is used as written.
    let no_swarm = Scenario::parse(r#"{"description": "d", "topology": {"servers": 9}, "swarm": null}"#, "test.json").unwrap();
    assert_eq!(no_swarm.topology.servers, 9);
}

/// A fault entry without `duration_ms` says the field is missing (it used to read as 0 through
/// a serde default and say `got 0`); an instantaneous request still leaves it out.
#[test]
fn scenario_rejects_missing_fault_duration_as_missing() {
    let text = failover_with("faults", r#"{"schedule": [{"at_ms": 1000, "fault": {"kind": "crash", "node": "server-1"}}]}"#);
    let err = rejected(&text);
    assert_mentions(&err, &["faults.schedule[0].duration_ms: missing", "`crash` fault", "1..=3600000"]);
    assert!(!err.contains("got 0"), "{err}");
    let text = failover_with("faults", r#"{"random": null, "schedule": [{"at_ms": 1000, "fault": {"kind": "one_way", "from": "server-1", "to": "store-1"}}]}"#);
    assert_mentions(&rejected(&text), &["faults.schedule[0].duration_ms: missing", "`one_way` fault"]);
    let ok = Scenario::parse(&failover_with("faults", r#"{"random": null, "schedule": [{"at_ms": 1000, "fault": {"kind": "move", "key": "k000001", "to": "server-2"}}]}"#), "test.json").unwrap();
    assert_eq!((ok.faults.schedule[0].duration_ms, ok.faults.schedule[0].lasts_ms()), (None, 0));
}

/// serde's wrong-type messages are reworded in the format's terms, after the field's path:
/// `expected struct RandomFaults` and `expected u64` meant nothing to a scenario author.
#[test]
fn scenario_type_errors_name_the_field_and_the_expected_kind() {
    let err = rejected(&failover_with("faults", r#"{"random": "none"}"#));
    assert_mentions(&err, &["faults.random: must be an object (or null: no random faults), got the string \"none\"", "line"]);
    assert!(!err.contains("struct RandomFaults"), "{err}");
    let err = rejected(&failover_with("workload", r#"{"duration_s": -5}"#));
    assert_mentions(&err, &["workload.duration_s: must be a non-negative integer, got -5", "line"]);
    assert!(!err.contains("u64"), "{err}");
    let err = rejected(&failover_with("topology", r#"{"servers": 1.5}"#));
    assert_mentions(&err, &["topology.servers: must be a non-negative integer, got 1.5"]);
    let err = rejected(&failover_with("topology", r#"{"servers": 4294967296}"#));
    assert_mentions(&err, &["topology.servers: must be at most 4294967295, got 4294967296"]);
    let err = rejected(&failover_with("workload", r#"{"ops_per_s": "fast"}"#));
    assert_mentions(&err, &["workload.ops_per_s: must be a number, got the string \"fast\""]);
    let err = rejected(&failover_with("knobs", r#"{"torn_writes": 1}"#));
    assert_mentions(&err, &["knobs.torn_writes: must be a boolean, got 1"]);
    let err = rejected(&failover_with("knobs", r#"{"latency_ms": 5}"#));
    assert_mentions(&err, &["knobs.latency_ms: must be an array of length 2, got 5"]);
    let err = rejected(&failover_with("faults", r#"{"random": {"crash_targets": "server"}}"#));
    assert_mentions(&err, &["faults.random.crash_targets: must be an array, got the string \"server\""]);
    let err = rejected(&failover_with("heal", r#"{"liveness_deadline_s": null}"#));
    assert_mentions(&err, &["heal.liveness_deadline_s: must be a non-negative integer, got null"]);
}
