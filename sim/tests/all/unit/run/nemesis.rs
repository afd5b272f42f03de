//! The unit tests of `partmap_sim::run::nemesis` (formerly in `sim/src/run/nemesis.rs`).
//! Kept out of the library so that it is compiled once (sim/Cargo.toml: `[lib] test = false`).

mod tests {

    /// The default scenario's aimed draws include the three compound shapes: a stale owner
    /// (its renewals cut and its store link held on one trigger, an admission of its own, for a
    /// lease up to a round and a request timeout more; every server's next fence held), a
    /// frontend's map answers held for a refresh up to the staleness limit, the leader's
    /// messages to a role's holder held, and a pause to a move's source held past the move's
    /// abort (its target crashed on the same trigger).
    #[test]
    fn nemesis_aimed_draws_include_stale_owners_frontends_and_late_commands() {
        use partmap_sim::fault::Fault;
        use madsim::rand::SeedableRng;
        let mut scenario = partmap_sim::scenario::Scenario::parse(include_str!("../../../../../scenarios/swarm.json"), "swarm.json").expect("parses");
        scenario.topology.servers = 4;
        scenario.topology.frontends = 2;
        let knobs = scenario.node_knobs();
        let random = scenario.faults.random.clone().expect("random faults");
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        let (mut owners, mut frontends, mut late, mut held_pause) = (0, 0, 0, 0);
        for _ in 0..400 {
            let drawn = partmap_sim::run::nemesis::draw_aimed(&mut rng, 1000, &scenario, &knobs, &random);
            match &drawn[0].fault {
                Fault::OneWay(o, lock) if drawn.len() == 6 => {
                    owners += 1;
                    assert!(o.starts_with("@owner?key=") && lock == "lock-1");
                    let on = drawn[0].on.clone().expect("on the owner's admission");
                    assert_eq!((on.event.as_str(), on.node.as_str()), ("admit", o.as_str()));
                    assert!(matches!(&drawn[1].fault, Fault::Delay(a, b) if a == o && b == "store-1"));
                    assert_eq!(drawn[0].duration_ms, drawn[1].duration_ms);
                    assert!((knobs.lease_ms..=knobs.lease_ms + knobs.manager_tick_ms + knobs.rpc_timeout_ms).contains(&drawn[0].duration_ms));
                    for (i, p) in drawn[2..].iter().enumerate() {
                        assert_eq!(p.fault, Fault::DelayNext(format!("server-{}", i + 1), "store-1".into(), "fence"));
                        assert_eq!(p.on, Some(on.clone()), "every part waits for the same admission");
                    }
                }
                Fault::Delay(lock, f) if lock == "lock-1" => {
                    frontends += 1;
                    assert!(f == "frontend-1" || f == "frontend-2", "{f}");
                    assert!((knobs.renew_interval_ms..=knobs.map_staleness_ms).contains(&drawn[0].duration_ms));
                }
                Fault::Delay(leader, role) if leader == "@leader" && role.starts_with('@') => {
                    late += 1;
                    assert!(["@move-source", "@move-target", "@reshape-parent-owner", "@failover-target"].contains(&role.as_str()), "{role}");
                }
                Fault::DelayNext(leader, role, kind) if leader == "@leader" && drawn.len() == 2 => {
                    held_pause += 1;
                    assert_eq!((role.as_str(), *kind), ("@move-source", "pause"));
                    assert!(drawn[0].duration_ms >= 5000, "held past the leader's call and its retry: {} ms", drawn[0].duration_ms);
                    assert_eq!(drawn[1].fault, Fault::Crash("@move-target".into()), "the move's target fails, so the move aborts");
                    let on = drawn[1].on.as_ref().expect("the crash waits for the source's pause");
                    assert_eq!((on.event.as_str(), on.node.as_str()), ("paused", "@move-source"), "the target fails once the source paused");
                }
                _ => assert_eq!(drawn.len(), 1, "{drawn:?}"),
            }
        }
        assert!(owners > 20 && frontends > 20 && late > 10 && held_pause > 3, "stale owners {owners}, stale frontends {frontends}, late commands {late} and held pauses {held_pause} of 400");
    }
}
