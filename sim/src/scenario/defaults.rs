//! The value of every field a scenario file leaves out, and the two scenarios compiled in.

use super::*;

impl Default for Scenario {
    /// Every section at its default and an empty description (which validation rejects, so a
    /// file must supply one).
    fn default() -> Self {
        Scenario {
            description: String::new(),
            topology: Topology::default(),
            knobs: KnobsSpec::default(),
            workload: Workload::default(),
            moves: Moves::default(),
            splits: Splits::default(),
            faults: Faults::default(),
            heal: Heal::default(),
            expect: Expect::default(),
            swarm: None,
        }
    }
}

impl Default for Topology {
    fn default() -> Self {
        Topology { servers: 3, managers: 2, frontends: 2, clients: 4, initial_ranges: 8 }
    }
}

impl Default for KnobsSpec {
    fn default() -> Self {
        KnobsSpec {
            lease_ms: 2000,
            lease_margin_ms: 200,
            renew_interval_ms: 400,
            rpc_timeout_ms: 500,
            store_timeout_ms: 1000,
            manager_tick_ms: 200,
            frontend_attempts: 8,
            frontend_backoff_ms: 20,
            frontend_backoff_ms_max: 640,
            bandwidth_bytes_per_s: 100 * 1024 * 1024,
            disk_sync_ms: 1,
            latency_ms: [1, 5],
            clock_drift_ppm: 0,
            clock_drift_pinned_ppm: std::collections::BTreeMap::new(),
            clock_drift_worst_case: false,
            torn_writes: false,
            map_staleness_ms: 5000,
        }
    }
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            duration_s: 60,
            ops_per_s: 100.0,
            read_fraction: 0.3,
            bounded_read_fraction: 0.0,
            flux_fraction: 0.0,
            read_bound_ms: 1000,
            keys: 1000,
            key_skew: 1.0,
            record_bytes: 16,
            bulk_bytes: 0,
            preload_bytes: 0,
            start_s: 0,
            hot_shift_s: 0,
            in_flight_per_client: 1,
            shed_after_ms: 1000,
            script: Vec::new(),
            script_open_loop: false,
        }
    }
}

impl Default for Faults {
    fn default() -> Self {
        Faults { random: Some(RandomFaults::default()), schedule: Vec::new() }
    }
}

impl Default for RandomFaults {
    fn default() -> Self {
        RandomFaults {
            crash_per_min: [1.0, 6.0],
            partition_per_min: [1.0, 6.0],
            down_ms: [200, 6000],
            partition_ms: [200, 6000],
            pause_per_min: [0.5, 3.0],
            pause_ms: [200, 5000],
            slow_disk_per_min: [0.5, 2.0],
            slow_disk_extra_ms: [20, 1500],
            message_faults_per_min: [0.0, 0.0],
            hold_ms: [1000, 8000],
            aimed_per_min: [0.0, 0.0],
            crash_targets: vec![
                NodeKind::Server,
                NodeKind::Manager,
                NodeKind::Store,
                NodeKind::Lock,
            ],
        }
    }
}

impl Default for Heal {
    fn default() -> Self {
        Heal { liveness_deadline_s: 30 }
    }
}

impl Default for Expect {
    fn default() -> Self {
        Expect {
            outcome: ExpectedOutcome::Pass,
            max_write_pause_ms: None,
            max_unavailable_ms: None,
            max_range_unavailable_ms: None,
            max_recovery_after_fault_ms: None,
            max_leader_terms_without_manager_fault: None,
        }
    }
}

impl Scenario {
    /// The built-in default scenario, `scenarios/swarm.json` compiled in: every flow under every
    /// fault kind, topology and rates drawn per seed. Panics only if the shipped file is broken,
    /// which `sim/tests/all/scenario_errors.rs` guards against.
    pub fn default_swarm() -> Scenario {
        Scenario::parse(include_str!("../../../scenarios/swarm.json"), "scenarios/swarm.json")
            .unwrap_or_else(|e| panic!("the built-in scenario is broken: {e}"))
    }

    /// `scenarios/failover.json` compiled in (the failover flow alone, every field written out). Panics only if the
    /// shipped file is broken, which `sim/tests/all/scenario_errors.rs` guards against.
    pub fn default_failover() -> Scenario {
        Scenario::parse(include_str!("../../../scenarios/failover.json"), "scenarios/failover.json")
            .unwrap_or_else(|e| panic!("the built-in scenario is broken: {e}"))
    }
}
