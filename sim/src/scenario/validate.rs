//! The rules a parsed scenario must meet: every value within its accepted range, and the
//! cross-field rules (a timeout above the round trip, a known node, a key of the workload).

use super::*;
use std::fmt::Display;

/// Longest fault or outage a scenario may ask for: one hour, in ms.
const FAULT_MS_MAX: u64 = 3_600_000;

impl Scenario {
    /// Check every value against its accepted range and the cross-field rules. Errors: the
    /// first problem found, as `<field path>: <problem>`.
    pub fn validate(&self) -> Result<(), String> {
        if self.description.trim().is_empty() {
            return Err("description: missing or empty; a scenario opens with what it exercises \
                        and why"
                .to_string());
        }
        if let Some(sw) = &self.swarm {
            ordered_pair("swarm.servers", sw.servers, 1, 32)?;
            ordered_pair("swarm.frontends", sw.frontends, 1, 8)?;
            ordered_pair("swarm.initial_ranges", sw.initial_ranges, 1, 256)?;
        }
        // Before the topology, whose initial_ranges is checked against it: a bad key count is
        // reported as itself, not as too many initial ranges.
        in_range("workload.keys", self.workload.keys, 1, 1_000_000)?;
        self.validate_topology()?;
        self.validate_knobs()?;
        self.validate_workload()?;
        self.validate_moves()?;
        self.validate_splits()?;
        self.validate_faults()?;
        in_range("heal.liveness_deadline_s", self.heal.liveness_deadline_s, 1, 600)?;
        if let Some(sw) = &self.swarm {
            if sw.initial_ranges[1] > self.workload.keys {
                return Err(format!("swarm.initial_ranges: the maximum must be at most workload.keys ({}), got {}", self.workload.keys, sw.initial_ranges[1]));
            }
            if !self.faults.schedule.is_empty() {
                return Err("faults.schedule: a swarm scenario draws its topology per seed, so an explicit schedule could name nodes that do not exist; use random faults or drop `swarm`".to_string());
            }
        }
        Ok(())
    }

    fn validate_topology(&self) -> Result<(), String> {
        let t = &self.topology;
        in_range("topology.servers", t.servers, 1, 32)?;
        in_range("topology.managers", t.managers, 1, 3)?;
        in_range("topology.frontends", t.frontends, 1, 8)?;
        in_range("topology.clients", t.clients, 1, 64)?;
        in_range("topology.initial_ranges", t.initial_ranges, 1, 256)?;
        if t.initial_ranges > self.workload.keys {
            return Err(format!(
                "topology.initial_ranges: must be at most workload.keys ({}), got {}",
                self.workload.keys, t.initial_ranges
            ));
        }
        Ok(())
    }

    fn validate_knobs(&self) -> Result<(), String> {
        let k = &self.knobs;
        in_range("knobs.lease_ms", k.lease_ms, 100, 60_000)?;
        if k.lease_margin_ms >= k.lease_ms {
            return Err(format!(
                "knobs.lease_margin_ms: must be less than knobs.lease_ms ({}), got {}",
                k.lease_ms, k.lease_margin_ms
            ));
        }
        // A holder must get at least one renewal in before it stops trusting its lease.
        let trusted_ms = k.lease_ms - k.lease_margin_ms;
        if k.renew_interval_ms == 0 || k.renew_interval_ms >= trusted_ms {
            return Err(format!(
                "knobs.renew_interval_ms: must be above 0 and less than knobs.lease_ms - \
                 knobs.lease_margin_ms ({trusted_ms}), got {}",
                k.renew_interval_ms
            ));
        }
        in_range("knobs.rpc_timeout_ms", k.rpc_timeout_ms, 1, 60_000)?;
        in_range("knobs.store_timeout_ms", k.store_timeout_ms, 1, 60_000)?;
        in_range("knobs.manager_tick_ms", k.manager_tick_ms, 1, 60_000)?;
        in_range("knobs.frontend_attempts", k.frontend_attempts, 1, 100)?;
        in_range("knobs.frontend_backoff_ms", k.frontend_backoff_ms, 1, 10_000)?;
        in_range(
            "knobs.frontend_backoff_ms_max",
            k.frontend_backoff_ms_max,
            k.frontend_backoff_ms,
            60_000,
        )?;
        in_range("knobs.bandwidth_bytes_per_s", k.bandwidth_bytes_per_s, 1000, u64::MAX)?;
        in_range("knobs.disk_sync_ms", k.disk_sync_ms, 0, 1000)?;
        ordered_pair("knobs.latency_ms", k.latency_ms, 0, 10_000)?;
        // Settings that fail without any fault: a request and its answer each take up to
        // latency_ms[1], so a timeout below the round trip times out healthy requests, and a
        // renewal must come back before the holder stops trusting its lease.
        let round_trip_ms = 2 * k.latency_ms[1];
        if round_trip_ms >= k.rpc_timeout_ms {
            return Err(format!(
                "knobs.latency_ms: a round trip at the highest latency takes 2 * {} = {round_trip_ms} ms, not below knobs.rpc_timeout_ms ({}): healthy requests would time out; lower the latency or raise the timeout",
                k.latency_ms[1], k.rpc_timeout_ms
            ));
        }
        if round_trip_ms + k.disk_sync_ms >= k.store_timeout_ms {
            return Err(format!(
                "knobs.store_timeout_ms: must be above a store append's round trip at the highest latency plus one fsync (2 * {} + {} = {} ms), or healthy appends would time out; got {}",
                k.latency_ms[1], k.disk_sync_ms, round_trip_ms + k.disk_sync_ms, k.store_timeout_ms
            ));
        }
        if k.renew_interval_ms + round_trip_ms >= trusted_ms {
            return Err(format!(
                "knobs.renew_interval_ms: a renewal sent every {} ms and answered within a round trip at the highest latency ({round_trip_ms} ms) must land before the lease stops being trusted (knobs.lease_ms - knobs.lease_margin_ms = {trusted_ms} ms), or every lease lapses without a fault",
                k.renew_interval_ms
            ));
        }
        in_range("knobs.clock_drift_ppm", k.clock_drift_ppm, 0, 500_000)?;
        if k.clock_drift_worst_case && k.clock_drift_ppm == 0 {
            return Err("knobs.clock_drift_worst_case: the clocks do not drift (knobs.clock_drift_ppm is 0), so there is no bound to run them at; set a drift bound or drop it".to_string());
        }
        let names = self.node_names();
        for (node, ppm) in &k.clock_drift_pinned_ppm {
            let path = format!("knobs.clock_drift_pinned_ppm.{node}");
            if !names.contains(node) {
                return Err(format!("{path}: no node `{node}` in the topology (nodes: {})", names.join(", ")));
            }
            if ppm.unsigned_abs() > k.clock_drift_ppm {
                return Err(format!("{path}: {ppm} ppm is beyond the drift bound, knobs.clock_drift_ppm = {}: a pinned drift must lie within it", k.clock_drift_ppm));
            }
        }
        if k.map_staleness_ms != 0 {
            in_range("knobs.map_staleness_ms", k.map_staleness_ms, 100, 600_000).map_err(|e| format!("{e} (or 0: no bound)"))?;
            // Frontends re-read the map every renew_interval_ms, each read taking up to
            // rpc_timeout_ms: a smaller bound would call a healthy map stale.
            let refresh = k.renew_interval_ms + k.rpc_timeout_ms;
            if k.map_staleness_ms <= refresh {
                return Err(format!(
                    "knobs.map_staleness_ms: must be above knobs.renew_interval_ms + knobs.rpc_timeout_ms ({refresh}), how long a frontend's re-read of the map can take, or 0 (no bound); got {}",
                    k.map_staleness_ms
                ));
            }
        }
        Ok(())
    }

    fn validate_workload(&self) -> Result<(), String> {
        let w = &self.workload;
        in_range("workload.duration_s", w.duration_s, 1, 3600)?;
        if !(w.ops_per_s >= 0.0 && w.ops_per_s <= 100_000.0) || (w.ops_per_s == 0.0 && w.script.is_empty()) {
            return Err(format!(
                "workload.ops_per_s: must be above 0 (or 0 with a workload.script) and at most 100000, got {}",
                w.ops_per_s
            ));
        }
        // Each client draws exponential gaps with mean `clients / ops_per_s` seconds; a rate at
        // which the whole window expects less than one operation is a mistake (0 says "none").
        if w.ops_per_s > 0.0 && w.ops_per_s * (w.duration_s as f64) < 1.0 {
            return Err(format!(
                "workload.ops_per_s: {} ops/s expects less than one operation in workload.duration_s ({} s); \
                 use at least 1 / duration_s ({}), or 0 with a workload.script",
                w.ops_per_s,
                w.duration_s,
                1.0 / w.duration_s as f64
            ));
        }
        self.validate_script()?;
        in_range("workload.read_fraction", w.read_fraction, 0.0, 1.0)?;
        in_range("workload.bounded_read_fraction", w.bounded_read_fraction, 0.0, 1.0)?;
        in_range("workload.flux_fraction", w.flux_fraction, 0.0, 1.0)?;
        in_range("workload.read_bound_ms", w.read_bound_ms, 0, 600_000)?;
        in_range("workload.key_skew", w.key_skew, 0.0, 5.0)?;
        in_range("workload.record_bytes", w.record_bytes, 16, 1_048_576)?;
        in_range("workload.bulk_bytes", w.bulk_bytes, 0, 1 << 40)?;
        in_range("workload.preload_bytes", w.preload_bytes, 0, 1 << 46)?;
        let record = w.record_bytes as u64 + w.bulk_bytes;
        let max = self.max_record_bytes();
        if record > max {
            return Err(format!(
                "workload.bulk_bytes: an append of record_bytes + bulk_bytes = {record} bytes must fit the store's smallest chunk, {max} bytes (knobs.bandwidth_bytes_per_s for a twentieth of knobs.store_timeout_ms), or no timeout can hold for it"
            ));
        }
        in_range("workload.hot_shift_s", w.hot_shift_s, 0, 3600)?;
        in_range("workload.in_flight_per_client", w.in_flight_per_client, 1, 64)?;
        in_range("workload.shed_after_ms", w.shed_after_ms, 0, 600_000)?;
        self.validate_offered_memory()?;
        if w.start_s >= w.duration_s.max(1) {
            return Err(format!("workload.start_s: must be less than workload.duration_s ({}), got {}", w.duration_s, w.start_s));
        }
        Ok(())
    }

    /// `workload.script`: each append before the workload's end, its key and size in range, and
    /// its frontend one that every seed's topology has.
    fn validate_script(&self) -> Result<(), String> {
        let w = &self.workload;
        let end_ms = w.duration_s.saturating_mul(1000);
        for (i, a) in w.script.iter().enumerate() {
            let path = format!("workload.script[{i}]");
            if a.at_ms >= end_ms {
                return Err(format!("{path}.at_ms: must be less than the workload's end ({end_ms}), got {}", a.at_ms));
            }
            in_range(&format!("{path}.key"), a.key.len(), 1, 64).map_err(|e| format!("{e} (bytes)"))?;
            in_range(&format!("{path}.bytes"), a.bytes, 6, 1_048_576)?;
            // A swarm scenario draws its frontends per seed: the script may only name one that
            // every draw has.
            let (frontends, limit) = match &self.swarm {
                Some(sw) => (sw.frontends[0], "swarm.frontends[0], the fewest frontends a seed can draw"),
                None => (self.topology.frontends, "topology.frontends"),
            };
            if a.frontend == 0 || a.frontend > frontends {
                return Err(format!(
                    "{path}.frontend: must be in 1..={frontends} ({limit}), got {}",
                    a.frontend
                ));
            }
            if let Some(on) = &a.on {
                if self.swarm.is_some() {
                    return Err(format!("{path}.on: a swarm scenario draws its nodes per seed; a scripted append's trigger needs a fixed topology"));
                }
                self.validate_trigger(&format!("{path}.on"), on, &self.node_names())?;
            }
        }
        Ok(())
    }

    /// The offered load fits [`MEMORY_BUDGET_BYTES`] by the [`Scenario::offered_memory_bytes`]
    /// estimate; the error names the field whose term dominates it.
    fn validate_offered_memory(&self) -> Result<(), String> {
        let w = &self.workload;
        let need = self.offered_memory_bytes();
        if need > MEMORY_BUDGET_BYTES {
            let appends = self.offered_appends();
            let ops = appends / (1.0 - w.read_fraction).max(1e-9);
            // Name the field whose term dominates the estimate.
            let field = if appends * RECORD_COPIES * w.record_bytes as f64 > ops * HISTORY_BYTES_PER_OP { "workload.record_bytes" } else { "workload.ops_per_s" };
            return Err(format!(
                "{field}: the offered load cannot fit in memory: about {:.1} GiB (ops_per_s {} for {} s is {:.0} operations, {:.0} of them appends of record_bytes {} held about {} times, plus about {} bytes of history per operation), over the {} GiB a run may use; lower workload.ops_per_s, workload.duration_s or workload.record_bytes (bulk_bytes simulate size without memory)",
                need / (1u64 << 30) as f64,
                w.ops_per_s,
                w.duration_s - w.start_s,
                ops,
                appends,
                w.record_bytes,
                RECORD_COPIES,
                HISTORY_BYTES_PER_OP,
                MEMORY_BUDGET_BYTES / (1u64 << 30) as f64,
            ));
        }
        Ok(())
    }

    fn validate_moves(&self) -> Result<(), String> {
        let m = &self.moves;
        if m.strategy != "per-seed" {
            partmap::map::Strategy::parse(&m.strategy).map_err(|e| format!("moves.strategy: {e}, per-seed"))?;
        }
        in_range("moves.precopy_threshold_bytes", m.precopy_threshold_bytes, 0, 1 << 30)?;
        in_range("moves.precopy_max_rounds", m.precopy_max_rounds, 1, 100)?;
        if m.cutover_budget_ms != 0 {
            in_range("moves.cutover_budget_ms", m.cutover_budget_ms, 1, 3_600_000).map_err(|e| format!("{e} (or 0: no budget)"))?;
        }
        if m.cutover_timeout_ms != 0 {
            in_range("moves.cutover_timeout_ms", m.cutover_timeout_ms, 1000, 3_600_000).map_err(|e| format!("{e} (or 0: never)"))?;
        }
        in_range("moves.max_concurrent", m.max_concurrent, 0, 64)?;
        ordered_pair("moves.requests_per_min", m.requests_per_min, 0.0, 600.0)?;
        // The leader accepts a move request and queues it, but starts at most max_concurrent
        // moves: at 0 every request would be accepted and never run.
        if m.max_concurrent == 0 && m.requests_per_min[1] > 0.0 {
            return Err(format!(
                "moves.requests_per_min: asks for random move requests (up to {} a minute), but moves.max_concurrent is 0, so no move ever starts and every request would be accepted and never run; raise moves.max_concurrent or set requests_per_min to [0, 0]",
                m.requests_per_min[1]
            ));
        }
        ordered_pair("moves.drains_per_min", m.drains_per_min, 0.0, 600.0)?;
        ordered_pair("moves.drain_ms", m.drain_ms, 1, FAULT_MS_MAX)?;
        Ok(())
    }

    fn validate_splits(&self) -> Result<(), String> {
        let sp = &self.splits;
        in_range("splits.split_ops_per_s", sp.split_ops_per_s, 0.0, 100_000.0)?;
        in_range("splits.merge_ops_per_s", sp.merge_ops_per_s, 0.0, 100_000.0)?;
        if sp.split_ops_per_s > 0.0 && sp.merge_ops_per_s >= sp.split_ops_per_s {
            return Err(format!(
                "splits.merge_ops_per_s: must be below splits.split_ops_per_s ({}), or ranges would split and merge back at once; got {}",
                sp.split_ops_per_s, sp.merge_ops_per_s
            ));
        }
        in_range("splits.merge_hysteresis_ms", sp.merge_hysteresis_ms, 0, FAULT_MS_MAX)?;
        in_range("splits.max_ranges", sp.max_ranges, 1, 1024)?;
        in_range("splits.min_ranges", sp.min_ranges, 1, sp.max_ranges)?;
        Ok(())
    }

    fn validate_faults(&self) -> Result<(), String> {
        if let Some(r) = &self.faults.random {
            validate_random_faults(r)?;
        }
        let names = self.node_names();
        let end_ms = self.workload.duration_s.saturating_mul(1000);
        for (i, timed) in self.faults.schedule.iter().enumerate() {
            self.validate_timed_fault(&format!("faults.schedule[{i}]"), timed, &names, end_ms)?;
        }
        Ok(())
    }

    /// One entry of `faults.schedule` at `path`: its time before the workload's end `end_ms`,
    /// `duration_ms` present exactly when the fault is not an instant request, the fault itself,
    /// and its triggers (`on`, `until`) if any.
    fn validate_timed_fault(&self, path: &str, timed: &TimedFault, names: &[String], end_ms: u64) -> Result<(), String> {
        if timed.at_ms >= end_ms {
            return Err(format!(
                "{path}.at_ms: must be less than the workload's end, workload.duration_s * \
                 1000 ({end_ms}), got {}",
                timed.at_ms
            ));
        }
        match (timed.fault.instant_request(), timed.duration_ms) {
            (Some(kind), Some(_)) => {
                return Err(format!("{path}.duration_ms: a `{kind}` request is instantaneous; leave duration_ms out"));
            }
            (Some(_), None) => {}
            (None, Some(ms)) => in_range(&format!("{path}.duration_ms"), ms, 1, FAULT_MS_MAX)?,
            (None, None) => {
                return Err(format!(
                    "{path}.duration_ms: missing; a `{}` fault lasts duration_ms (1..={FAULT_MS_MAX}); only move, split_range, merge_ranges and leader_transfer requests leave it out",
                    fault_kind_name(&timed.fault)
                ));
            }
        }
        self.validate_fault(&format!("{path}.fault"), &timed.fault, names)?;
        if timed.on.is_none() && crate::fault::Fault::from_spec(&timed.fault).nodes().iter().any(|n| crate::fault::aim::Aim::decode(n).is_some_and(|a| a.role == crate::fault::aim::Role::TriggerNode)) {
            return Err(format!("{path}.fault: role `trigger-node` needs a trigger (`on`) whose event names the node"));
        }
        if matches!(timed.fault, FaultSpec::Move { .. }) && self.moves.max_concurrent == 0 {
            return Err(format!("{path}.fault: a `move` request, but moves.max_concurrent is 0, so no move ever starts and it would be accepted and never run; raise moves.max_concurrent or drop the request"));
        }
        if let Some(on) = &timed.on {
            if matches!(timed.fault, FaultSpec::Drain { .. }) {
                return Err(format!("{path}.on: a drain runs from at_ms for duration_ms; a trigger applies to faults and to the move, split_range, merge_ranges and leader_transfer requests"));
            }
            self.validate_trigger(&format!("{path}.on"), on, names)?;
        }
        if let Some(until) = &timed.until {
            if timed.fault.is_operator_request() {
                return Err(format!("{path}.until: operator requests are not healed; `until` ends a fault only"));
            }
            self.validate_trigger(&format!("{path}.until"), until, names)?;
        }
        Ok(())
    }

    /// A fault's trigger at `path`: a known event, a node or role other than `trigger-node`,
    /// `range` and `epoch` filters only on events that carry them, and `count` and `delay_ms`
    /// within their ranges.
    fn validate_trigger(&self, path: &str, on: &Trigger, names: &[String]) -> Result<(), String> {
        if !partmap::event::Event::NAMES.contains(&on.event.as_str()) {
            return Err(format!(
                "{path}.event: unknown event `{}`; accepted: {}",
                on.event,
                partmap::event::Event::NAMES.join(", ")
            ));
        }
        self.known_node(&format!("{path}.node"), &on.node, names)?;
        if crate::fault::aim::Aim::decode(&on.node).is_some_and(|a| a.role == crate::fault::aim::Role::TriggerNode) {
            return Err(format!("{path}.node: role `trigger-node` names the emitter of this very trigger; name a node or another role"));
        }
        let (has_range, has_epoch) = Self::trigger_fields(&on.event);
        if on.range.is_some() && !has_range {
            return Err(format!("{path}.range: event `{}` has no range field; events with one: {}", on.event, crate::fault::trigger::range_events().join(", ")));
        }
        if on.epoch.is_some() && !has_epoch {
            return Err(format!("{path}.epoch: event `{}` has no range epoch field; events with one: {}", on.event, crate::fault::trigger::RANGE_EPOCH_EVENTS.join(", ")));
        }
        in_range(&format!("{path}.count"), on.count, 1, 1_000_000)?;
        in_range(&format!("{path}.delay_ms"), on.delay_ms, 0, FAULT_MS_MAX)
    }

    /// One fault (or operator request) at `path`: the nodes it names exist in this topology
    /// (`names`, or a valid role where a role may stand), and its own fields are in range.
    fn validate_fault(
        &self,
        path: &str,
        fault: &FaultSpec,
        names: &[String],
    ) -> Result<(), String> {
        match fault {
            FaultSpec::SlowDisk { node, extra_ms } => {
                named_only(&format!("{path}.node"), node, "slow_disk", "only lock-1 and store-1 have disks")?;
                if node != "lock-1" && node != "store-1" {
                    return Err(format!("{path}.node: `{node}` has no disk; slow_disk applies to lock-1 or store-1"));
                }
                in_range(&format!("{path}.extra_ms"), *extra_ms, 1, 60_000)
            }
            FaultSpec::Crash { node } | FaultSpec::Isolate { node } | FaultSpec::Pause { node } => {
                self.known_node(&format!("{path}.node"), node, names)
            }
            FaultSpec::Drain { node } | FaultSpec::Move { to: node, .. } => {
                let field = if matches!(fault, FaultSpec::Drain { .. }) { "node" } else { "to" };
                self.validate_request_server(&format!("{path}.{field}"), fault, node, names)
            }
            FaultSpec::SplitRange { at } => self.validate_split_point(&format!("{path}.at"), at),
            FaultSpec::LeaderTransfer {} => Ok(()),
            FaultSpec::MergeRanges { left, right } => {
                let l = self.workload_key(&format!("{path}.left"), left)?;
                let r = self.workload_key(&format!("{path}.right"), right)?;
                if l >= r {
                    return Err(format!("{path}.right: must be a key after left (`{left}`), got `{right}`"));
                }
                Ok(())
            }
            FaultSpec::Split { side } => self.validate_split_side(path, side, names),
            FaultSpec::DelayNext { from, to, message } => {
                if !partmap::msg::Msg::KIND_NAMES.contains(&message.as_str()) {
                    return Err(format!("{path}.message: unknown message kind `{message}`; accepted: {}", partmap::msg::Msg::KIND_NAMES.join(", ")));
                }
                self.validate_link(path, from, to, names)
            }
            FaultSpec::OneWay { from, to } | FaultSpec::Delay { from, to } | FaultSpec::Duplicate { from, to } | FaultSpec::Corrupt { from, to } | FaultSpec::Reorder { from, to } => {
                if let (FaultSpec::Corrupt { .. }, Some(aim)) = (fault, crate::fault::aim::Aim::decode(to)) {
                    if !aim.role.is_server() {
                        return Err(format!("{path}.to: role `{}` cannot receive a corrupted copy; corrupt applies to pre-copy chunks a server reads (e.g. role move-target)", aim.role.name()));
                    }
                }
                self.validate_link(path, from, to, names)
            }
        }
    }

    /// The server a drain or move request names at `path`: a node name (not a role), known,
    /// and a partition server.
    fn validate_request_server(&self, path: &str, fault: &FaultSpec, node: &str, names: &[String]) -> Result<(), String> {
        named_only(path, node, &fault_kind_name(fault), "operator requests are planned before the run and name their server")?;
        self.known_node(path, node, names)?;
        if !node.starts_with("server-") {
            return Err(format!("{path}: `{node}` is not a partition server"));
        }
        Ok(())
    }

    /// A `split_range` request's key at `path`: a workload key strictly inside a range (neither
    /// the first key nor an initial split point), so the split divides something.
    fn validate_split_point(&self, path: &str, at: &str) -> Result<(), String> {
        let i = self.workload_key(path, at)?;
        if let Some(j) = self.initial_split_points().iter().position(|p| p == at.as_bytes()) {
            return Err(format!(
                "{path}: `{at}` is where initial range {} starts (split points are keys number keys * j / initial_ranges), so it splits nothing; pick a key inside a range",
                j + 2
            ));
        }
        if i == 0 {
            return Err(format!("{path}: `{at}` is the first key, where the first range starts, so it splits nothing; pick a key inside a range"));
        }
        Ok(())
    }

    /// A partition's side (`{path}.side`): known node names, each once, not every node.
    fn validate_split_side(&self, path: &str, side: &[String], names: &[String]) -> Result<(), String> {
        if side.is_empty() {
            return Err(format!("{path}.side: must name at least one node"));
        }
        for (j, node) in side.iter().enumerate() {
            let node_path = format!("{path}.side[{j}]");
            named_only(&node_path, node, "split", "a side lists node names")?;
            self.known_node(&node_path, node, names)?;
            if side[..j].contains(node) {
                return Err(format!("{node_path}: `{node}` is listed twice"));
            }
        }
        if side.len() == names.len() {
            return Err(format!(
                "{path}.side: names every node, so nothing is cut; leave at least one \
                 node on the other side"
            ));
        }
        Ok(())
    }

    /// A link fault's ends (`{path}.from`, `{path}.to`): both known, and different.
    fn validate_link(&self, path: &str, from: &str, to: &str, names: &[String]) -> Result<(), String> {
        self.known_node(&format!("{path}.from"), from, names)?;
        self.known_node(&format!("{path}.to"), to, names)?;
        if from == to {
            return Err(format!("{path}.to: must differ from {path}.from (`{from}`)"));
        }
        Ok(())
    }

    /// The fields an `on` filter may name for `event`: `(range, epoch)`.
    fn trigger_fields(event: &str) -> (bool, bool) {
        let with_both = crate::fault::trigger::RANGE_EPOCH_EVENTS.contains(&event);
        let range_only = crate::fault::trigger::RANGE_ONLY_EVENTS.contains(&event);
        (with_both || range_only, with_both)
    }

    /// The index of `key`, a key of the workload (`k` and six digits, below `workload.keys`).
    fn workload_key(&self, path: &str, key: &str) -> Result<u32, String> {
        let digits = key.strip_prefix('k').filter(|d| d.len() == 6 && d.bytes().all(|b| b.is_ascii_digit()));
        let Some(i) = digits.and_then(|d| d.parse::<u32>().ok()) else {
            return Err(format!("{path}: `{key}` is not a workload key (`k` and six digits, such as k000042)"));
        };
        if i >= self.workload.keys {
            return Err(format!("{path}: `{key}` is past the key space (workload.keys = {}: k000000 to {})", self.workload.keys, String::from_utf8_lossy(&key_name(self.workload.keys - 1))));
        }
        Ok(i)
    }

    fn known_node(&self, path: &str, node: &str, names: &[String]) -> Result<(), String> {
        if let Some(aim) = crate::fault::aim::Aim::decode(node) {
            return aim.validate(path);
        }
        if names.iter().any(|n| n == node) {
            return Ok(());
        }
        let t = &self.topology;
        Err(format!(
            "{path}: no node `{node}` (topology has lock-1, store-1, {}, {}, {})",
            numbered("manager", t.managers),
            numbered("server", t.servers),
            numbered("frontend", t.frontends),
        ))
    }
}

/// `faults.random`: every rate and duration a `[min, max]` pair within its bounds, and the
/// crash targets distinct and present whenever crashes can be drawn.
fn validate_random_faults(r: &RandomFaults) -> Result<(), String> {
    ordered_pair("faults.random.crash_per_min", r.crash_per_min, 0.0, 600.0)?;
    ordered_pair("faults.random.partition_per_min", r.partition_per_min, 0.0, 600.0)?;
    ordered_pair("faults.random.down_ms", r.down_ms, 1, FAULT_MS_MAX)?;
    ordered_pair("faults.random.partition_ms", r.partition_ms, 1, FAULT_MS_MAX)?;
    ordered_pair("faults.random.pause_per_min", r.pause_per_min, 0.0, 600.0)?;
    ordered_pair("faults.random.pause_ms", r.pause_ms, 1, FAULT_MS_MAX)?;
    ordered_pair("faults.random.slow_disk_per_min", r.slow_disk_per_min, 0.0, 600.0)?;
    ordered_pair("faults.random.slow_disk_extra_ms", r.slow_disk_extra_ms, 1, 60_000)?;
    ordered_pair("faults.random.message_faults_per_min", r.message_faults_per_min, 0.0, 600.0)?;
    ordered_pair("faults.random.hold_ms", r.hold_ms, 1, FAULT_MS_MAX)?;
    ordered_pair("faults.random.aimed_per_min", r.aimed_per_min, 0.0, 600.0)?;
    for (i, kind) in r.crash_targets.iter().enumerate() {
        if r.crash_targets[..i].contains(kind) {
            return Err(format!(
                "faults.random.crash_targets[{i}]: `{}` is listed twice",
                node_kind_name(*kind)
            ));
        }
    }
    if r.crash_targets.is_empty() && r.crash_per_min[1] > 0.0 {
        return Err("faults.random.crash_targets: empty, but faults.random.crash_per_min \
                    allows crashes; list the kinds to crash or set crash_per_min to \
                    [0, 0]"
            .to_string());
    }
    Ok(())
}

/// `Err` naming `path` when `node` is a role where `kind` needs a node name (`why`).
fn named_only(path: &str, node: &str, kind: &str, why: &str) -> Result<(), String> {
    if crate::fault::aim::is_aimed(node) {
        return Err(format!("{path}: a `{kind}` cannot be aimed at a role ({why}); name a node"));
    }
    Ok(())
}

/// `<path>: must be in lo..=hi, got v` unless `lo <= v <= hi`.
fn in_range<T: PartialOrd + Display>(path: &str, value: T, lo: T, hi: T) -> Result<(), String> {
    if lo <= value && value <= hi {
        Ok(())
    } else {
        Err(format!("{path}: must be in {lo}..={hi}, got {value}"))
    }
}

/// A `[min, max]` range: both ends within `lo..=hi` and `min <= max`.
fn ordered_pair<T: PartialOrd + Display + Copy>(
    path: &str,
    pair: [T; 2],
    lo: T,
    hi: T,
) -> Result<(), String> {
    in_range(&format!("{path}[0]"), pair[0], lo, hi)?;
    in_range(&format!("{path}[1]"), pair[1], lo, hi)?;
    if pair[0] > pair[1] {
        return Err(format!(
            "{path}: must be [min, max] with min <= max, got [{}, {}]",
            pair[0], pair[1]
        ));
    }
    Ok(())
}

/// `kind-1` or `kind-1..kind-N`.
fn numbered(kind: &str, count: u32) -> String {
    if count == 1 {
        format!("{kind}-1")
    } else {
        format!("{kind}-1..{kind}-{count}")
    }
}

/// The `kind` a fault has in the file (`crash`, `one_way`, ...).
fn fault_kind_name(fault: &FaultSpec) -> String {
    serde_json::to_value(fault).ok().and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string)).unwrap_or_default()
}

fn node_kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Server => "server",
        NodeKind::Manager => "manager",
        NodeKind::Store => "store",
        NodeKind::Lock => "lock",
    }
}
