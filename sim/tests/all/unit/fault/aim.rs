//! The unit tests of `partmap_sim::fault::aim` (formerly in `sim/src/fault/aim.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {
    use partmap_sim::fault::aim::*;
    use partmap::event::Event;

    #[test]
    fn aim_encoding_round_trips_and_plain_names_are_not_roles() {
        for s in ["@leader", "@owner?key=k000042", "@owner?range=2", "@move-source?range=7", "@trigger-node"] {
            assert_eq!(Aim::decode(s).expect("a role").encode(), s);
        }
        assert_eq!(Aim::decode("server-1"), None);
        assert_eq!(Aim::decode("@nobody"), None);
    }

    #[test]
    fn aim_validation_names_the_selector_problem() {
        let owner = Aim { role: Role::Owner, key: None, range: None };
        assert!(owner.validate("x.node").unwrap_err().contains("exactly one of `key` or `range`"));
        let leader = Aim { role: Role::Leader, key: Some("k000001".into()), range: None };
        assert!(leader.validate("x.node").unwrap_err().contains("takes no"));
        let src = Aim { role: Role::MoveSource, key: None, range: Some(3) };
        assert_eq!(src.validate("x.node"), Ok(()));
    }

    /// Bad role input is refused with an error that names the field and the problem.
    #[test]
    fn aim_bad_input_is_an_error_naming_the_field() {
        let with = |fault: &str| {
            let text = format!(r#"{{"description": "d", "faults": {{"random": null, "schedule": [{fault}]}}}}"#);
            partmap_sim::scenario::Scenario::parse(&text, "bad.json").expect_err("refused")
        };
        let cases = [
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "crash", "node": {"role": "chief"}}}"#, "unknown role `chief`"),
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "crash", "node": {"role": "owner"}}}"#, "exactly one of `key` or `range`"),
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "crash", "node": {"role": "leader", "range": 2}}}"#, "takes no"),
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "crash", "node": {"role": "leader", "who": 2}}}"#, "unknown field `who`"),
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "slow_disk", "node": {"role": "leader"}, "extra_ms": 5}}"#, "faults.schedule[0].fault.node: a `slow_disk` cannot be aimed at a role"),
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "drain", "node": {"role": "move-source"}}}"#, "cannot be aimed at a role"),
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "corrupt", "from": "store-1", "to": {"role": "leader"}}}"#, "faults.schedule[0].fault.to: role `leader` cannot receive"),
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "crash", "node": {"role": "trigger-node"}}}"#, "needs a trigger"),
            (r#"{"on": {"event": "leader", "node": "lock-1", "range": 2}, "duration_ms": 5, "fault": {"kind": "crash", "node": "server-1"}}"#, "faults.schedule[0].on.range: event `leader` has no range field"),
            (r#"{"on": {"event": "fence", "node": "store-1", "epoch": 2}, "duration_ms": 5, "fault": {"kind": "crash", "node": "server-1"}}"#, "faults.schedule[0].on.epoch: event `fence` has no range epoch"),
            (r#"{"at_ms": 1, "duration_ms": 5, "fault": {"kind": "crash", "node": "@leader"}}"#, "node names do not start with `@`"),
        ];
        for (fault, expected) in cases {
            let e = with(fault);
            assert!(e.contains(expected), "{fault}: got `{e}`, expected it to contain `{expected}`");
        }
    }

    /// A role survives a round trip through the file format: written as its object.
    #[test]
    fn aim_roles_are_written_back_as_objects() {
        let text = r#"{"description": "d", "faults": {"random": null, "schedule": [
            {"on": {"event": "paused", "node": {"role": "move-source", "range": 3}, "range": 3}, "duration_ms": 5,
             "fault": {"kind": "delay_next", "from": "lock-1", "to": {"role": "owner", "key": "k000001"}, "message": "session_renewed"}}]}}"#;
        let s = partmap_sim::scenario::Scenario::parse(text, "rt.json").expect("parses");
        let json = partmap_sim::search::schedule::to_json(&s);
        assert!(json.contains(r#""role": "owner""#) && json.contains(r#""key": "k000001""#), "{json}");
        assert_eq!(partmap_sim::scenario::Scenario::parse(&json, "again.json").expect("parses again"), s);
    }

    #[test]
    fn resolve_follows_the_last_leader_and_says_when_empty() {
        reset(3);
        assert_eq!(resolve("@leader", None), Err("no leader yet".into()));
        assert_eq!(resolve("@standby-manager", None), Ok("manager-1".into()));
        observe(&Event::Leader { manager: 2, leader_epoch: 5 });
        assert_eq!(resolve("@leader", None), Ok("manager-2".into()));
        assert_eq!(resolve("@standby-manager", None), Ok("manager-1".into()));
        observe(&Event::Leader { manager: 1, leader_epoch: 6 });
        assert_eq!(resolve("@standby-manager", None), Ok("manager-2".into()));
        assert_eq!(resolve("@move-source", None), Err("no map yet".into()));
        assert_eq!(resolve("@trigger-node", Some("store-1")), Ok("store-1".into()));
        assert_eq!(resolve("lock-1", None), Ok("lock-1".into()));
    }
}
