//! The questions document, rendered from the measured seeds ([`super::Seed`]).

use super::{failed, of, Seed, DUELING, DUELING_MUTATION, MANAGER_CRASH, RESTART_MANAGERS, ROLLING, SCENARIOS, SWARM, TRANSFER};
use crate::measure::handoff::percentile;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// `p50 a / p99 b / max c UNIT (n = N)`: nearest-rank percentiles (p99 only at n >= 100; below
/// it the max of n is named), one decimal.
pub fn dist(values: &[f64], unit: &str) -> String {
    let n = values.len();
    if n == 0 {
        return "no values".into();
    }
    let p = |q: f64| percentile(values, q).unwrap_or(0.0);
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    if n >= 100 {
        format!("p50 {:.1} / p99 {:.1} / max {max:.1} {unit} (n = {n})", p(0.5), p(0.99))
    } else {
        format!("p50 {:.1} / max of {n} {max:.1} {unit}", p(0.5))
    }
}

/// The repro line of `seed` of `scenario`.
pub fn repro(seed: u64, scenario: &str, mutation: bool) -> String {
    let m = if mutation { format!(" --mutation {}", DUELING_MUTATION.name()) } else { String::new() };
    format!("`partmap-sim run --seed {seed} --scenario {scenario}{m} --trace`")
}

/// The `k` seeds with the largest `f` (ties: the lower seed first), as repro lines with the
/// value; seeds where `f` is `None` are left out.
fn worst(seeds: &[&Seed], k: usize, label: &str, f: impl Fn(&Seed) -> Option<f64>) -> String {
    let mut v: Vec<(f64, u64, &str)> = seeds.iter().filter_map(|s| f(s).map(|x| (x, s.seed, super::SCENARIOS[s.scenario]))).collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    v.iter().take(k).map(|(x, seed, sc)| format!("  - {label} {x:.1} ms: {}\n", repro(*seed, sc, false))).collect()
}

fn max_of(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
}

/// The whole document. `provenance` names the commit and command; `bounds_ms` are the
/// `expect.max_range_unavailable_ms` of the rolling-upgrade scenario and of the managers'
/// rolling restart.
pub fn document(seeds: &[Seed], n: u64, provenance: &str, bounds_ms: [Option<u64>; 2]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Measured answers to the senior questions\n\n{provenance}\n");
    let list: Vec<String> = SCENARIOS.iter().map(|s| format!("`{s}`")).collect();
    let _ = writeln!(out, "Seeds 0..{n} of each of {}, and of `{DUELING}` with the mutation `{}`: {} runs. Every figure below is computed from those runs' histories (`sim/src/report/questions/`); frontends record each attempt they send (`routed`: the cached map's version, the attempt, why the one before failed) and each newer map they cache (`map_cached`). Percentiles are nearest-rank.", list.join(", "), DUELING_MUTATION.name(), seeds.len());
    let f = failed(seeds);
    let _ = writeln!(out, "\nUnmutated seeds that did not pass their checkers: {}.\n", if f.is_empty() { "none".to_string() } else { f.iter().map(|(s, v)| format!("{s} {v:?}")).collect::<Vec<_>>().join("; ") });
    staleness(&mut out, seeds);
    refresh(&mut out, seeds);
    managers(&mut out, seeds, n);
    atomicity(&mut out, seeds);
    upgrade(&mut out, seeds, bounds_ms[0]);
    restart_managers(&mut out, seeds, bounds_ms[1]);
    out
}

fn staleness(out: &mut String, seeds: &[Seed]) {
    let _ = writeln!(out, "## 1. Cache staleness\n");
    let _ = writeln!(out, "The bound the design states (DESIGN.md, Decisions: frontends; `src/frontend/core.rs`): a frontend re-reads the map every `renew_interval_ms` and stops routing on its cache once its last successful read is older than `map_staleness_ms` (it fails the operation with `MapUnavailable`). A read's answer is at most `rpc_timeout_ms` old when it arrives, so a frontend never routes on a map that has been superseded for more than `map_staleness_ms + rpc_timeout_ms` (5500 ms with the defaults); with the authority reachable, a commit reaches every frontend within one period and one read, `renew_interval_ms + rpc_timeout_ms` (900 ms).\n");
    for sc in [SWARM, ROLLING, DUELING] {
        let s: Vec<&Seed> = of(seeds, sc).collect();
        let versions: Vec<f64> = s.iter().flat_map(|x| x.staleness.behind_versions.iter().copied()).collect();
        let ms: Vec<f64> = s.iter().flat_map(|x| x.staleness.behind_ms.iter().copied()).collect();
        let prop: Vec<f64> = s.iter().flat_map(|x| x.staleness.propagation_ms.iter().copied()).collect();
        let current = versions.iter().filter(|v| **v == 0.0).count();
        let over: usize = s.iter().map(|x| x.staleness.behind_ms.iter().filter(|m| **m > x.age_bound_ms as f64).count()).sum();
        let in_period: usize = s.iter().map(|x| x.staleness.propagation_ms.iter().filter(|m| **m <= x.refresh_period_ms as f64).count()).sum();
        let never: u64 = s.iter().map(|x| x.staleness.never_reached).sum();
        let bound = s.first().map_or(0, |x| x.age_bound_ms);
        let _ = writeln!(out, "`{sc}` ({} seeds):\n", s.len());
        let _ = writeln!(out, "- Cached map's age at each routed attempt, in versions behind the authority's current map: {}; {:.1}% of attempts routed on the current map.", dist(&versions, "versions"), pct(current, versions.len()));
        let _ = writeln!(out, "- The same, in ms since the first newer version committed (0 when current): {}.", dist(&ms, "ms"));
        let _ = writeln!(out, "- Bound `map_staleness_ms + rpc_timeout_ms` = {bound} ms: {} ({over} attempts over it).", if over == 0 { "held on every attempt" } else { "**exceeded**" });
        let _ = writeln!(out, "- From a commit until every frontend held it (or a newer version): {}; {:.1}% within `renew_interval_ms + rpc_timeout_ms`; {never} versions some frontend never held before the run ended.", dist(&prop, "ms"), pct(in_period, prop.len()));
        let _ = writeln!(out, "- Worst seeds, cache age at an attempt:\n{}- Worst seeds, commit to every frontend:\n{}", worst(&s, 3, "age", |x| max_of(&x.staleness.behind_ms)), worst(&s, 3, "propagation", |x| max_of(&x.staleness.propagation_ms)));
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// Per retry reason: (retries, appends that met it with (latency, sends, acknowledged, seed)).
type ByKind = BTreeMap<&'static str, (u64, Vec<(f64, u32, bool, u64)>)>;

fn refresh(out: &mut String, seeds: &[Seed]) {
    let _ = writeln!(out, "## 2. Refresh errors\n");
    let _ = writeln!(out, "Each further attempt of a client operation and why the one before it failed, from the frontends' `routed` events; an append's cost is its sends and its latency at the client (invoke to complete), against the acknowledged appends answered on their first attempt. \"Refreshes\" says whether the frontend reads the map again after it (`next_step`; `not_ready` after a backoff). An append that met two kinds counts under both.\n");
    for sc in [SWARM, ROLLING, DUELING] {
        let s: Vec<&Seed> = of(seeds, sc).collect();
        let sends: u64 = s.iter().map(|x| x.refresh.sends).sum();
        let mut by: ByKind = BTreeMap::new();
        let mut base = Vec::new();
        for x in &s {
            for (k, c) in &x.refresh.retries {
                by.entry(k).or_default().0 += c;
            }
            for a in &x.refresh.appends {
                if a.sends == 1 && a.retries.is_empty() && a.ok {
                    base.push(a.latency_ms);
                }
                let mut kinds = a.retries.clone();
                kinds.sort_unstable();
                kinds.dedup();
                for k in kinds {
                    by.entry(k).or_default().1.push((a.latency_ms, a.sends, a.ok, x.seed));
                }
            }
        }
        let b50 = percentile(&base, 0.5).unwrap_or(0.0);
        let b99 = percentile(&base, 0.99).unwrap_or(0.0);
        let _ = writeln!(out, "`{sc}` ({} seeds, {sends} attempts sent; baseline, acknowledged on the first attempt: {}):\n", s.len(), dist(&base, "ms"));
        let _ = writeln!(out, "| after | refreshes | retries | per 1000 attempts | appends | sends p50 / max | latency ms p50 / p99 / max (acked) | extra p50 / p99 ms | not acked | worst |");
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
        for (kind, (count, apps)) in &by {
            let lat: Vec<f64> = apps.iter().filter(|a| a.2).map(|a| a.0).collect();
            let snd: Vec<f64> = apps.iter().map(|a| a.1 as f64).collect();
            let p = |v: &[f64], q: f64| percentile(v, q).map_or("-".into(), |x| format!("{x:.1}"));
            let w = apps.iter().filter(|a| a.2).max_by(|a, b| a.0.total_cmp(&b.0).then(b.3.cmp(&a.3))).map_or("-".into(), |a| format!("seed {} ({:.0} ms)", a.3, a.0));
            let extra = |q: f64, b: f64| percentile(&lat, q).map_or("-".into(), |x| format!("{:+.1}", x - b));
            let _ = writeln!(out, "| {kind} | {} | {count} | {:.2} | {} | {} / {} | {} / {} / {} | {} / {} | {} | {w} |", if refreshes_name(kind) { "yes" } else { "no" }, 1000.0 * *count as f64 / sends.max(1) as f64, apps.len(), p(&snd, 0.5), p(&snd, 1.0), p(&lat, 0.5), p(&lat, 0.99), p(&lat, 1.0), extra(0.5, b50), extra(0.99, b99), apps.iter().filter(|a| !a.2).count());
        }
        let _ = writeln!(out, "\nRepro of a worst case: {} (the seed in the table's last column).\n", repro(0, sc, false).replace("--seed 0", "--seed N"));
    }
}

/// Whether a retry reason's name is one after which the frontend reads the map.
fn refreshes_name(kind: &str) -> bool {
    use partmap::event::Retry;
    use partmap::ids::{Epoch, ServerId};
    use partmap::msg::Refusal as R;
    let all = [Retry::NoAnswer, Retry::Unknown, Retry::NoOwner, Retry::Refused(R::NotOwner), Retry::Refused(R::StaleEpoch { current: Epoch(2) }), Retry::Refused(R::NotReady), Retry::Refused(R::LeaseExpired), Retry::Refused(R::KeyOutOfRange), Retry::Refused(R::InFlight), Retry::Refused(R::Fenced { fence: Epoch(2) }), Retry::Refused(R::Moved { owner: ServerId(2), epoch: Epoch(2) }), Retry::Refused(R::TooStale { age_ms: 1 })];
    all.iter().find(|r| r.kind() == kind).is_some_and(super::refresh::refreshes)
}

fn managers(out: &mut String, seeds: &[Seed], n: u64) {
    let _ = writeln!(out, "## 3. Two managers\n");
    let _ = writeln!(out, "The authority grants term T+1 only once term T's lease ran out or was released, so two terms overlap only through what the deposed leader still sends. Per handover: map writes of term T the authority accepted after T+1 was granted (an overlap of terms that acted), and the window in which term T's writes and commands were still arriving (refused: `cas_refused` at the authority, `stale_command` at a server that had seen a newer term), from T+1's grant to the last of them. Two managers committing under one term is the overlap of their commit spans.\n");
    for sc in [DUELING, MANAGER_CRASH, TRANSFER, SWARM] {
        let s: Vec<&Seed> = of(seeds, sc).collect();
        let hs: Vec<(&super::managers::Handover, u64)> = s.iter().flat_map(|x| x.managers.handovers.iter().map(move |h| (h, x.seed))).collect();
        let accepted: Vec<f64> = hs.iter().filter_map(|(h, _)| h.commit_overlap_ms).collect();
        let inflight: Vec<f64> = hs.iter().filter_map(|(h, _)| h.in_flight_ms).collect();
        let refused: u64 = hs.iter().map(|(h, _)| h.refused).sum();
        let shared = s.iter().map(|x| x.managers.shared_term_ms).fold(0.0, f64::max);
        let _ = writeln!(out, "`{sc}` ({} seeds, {} handovers):\n", s.len(), hs.len());
        let _ = writeln!(out, "- Map writes of a deposed term accepted after the next grant: {} handovers{}.", accepted.len(), max_of(&accepted).map_or(String::new(), |m| format!(", up to {m:.1} ms into the next term")));
        let _ = writeln!(out, "- Writes and commands of two terms in flight: on {} of {} handovers the old term's were still arriving after the next grant ({refused} refused in all); that window: {}.", inflight.len(), hs.len(), dist(&inflight, "ms"));
        let _ = writeln!(out, "- Longest overlap of two managers' commits under one term: {shared:.1} ms.");
        let _ = writeln!(out, "- Worst seeds, commands in flight from two terms:\n{}", worst(&s, 3, "window", |x| x.managers.handovers.iter().filter_map(|h| h.in_flight_ms).reduce(f64::max)));
    }
    mutation(out, seeds, n);
}

fn mutation(out: &mut String, seeds: &[Seed], n: u64) {
    let m: Vec<&Seed> = seeds.iter().filter(|s| s.mutated).collect();
    let caught: Vec<&Seed> = m.iter().copied().filter(|s| s.caught.is_some()).collect();
    let times: Vec<f64> = caught.iter().filter_map(|s| s.caught.and_then(|c| c.1)).collect();
    let mut props: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &caught {
        *props.entry(s.caught.expect("caught").0).or_default() += 1;
    }
    let shared: Vec<f64> = m.iter().map(|s| s.managers.shared_term_ms).collect();
    let _ = writeln!(out, "With the mutation `{}` (the authority tells any candidate it leads, at the incumbent's term), on `{DUELING}`:\n", DUELING_MUTATION.name());
    let _ = writeln!(out, "- Caught on {} of {n} seeds, by {}.", caught.len(), props.iter().map(|(p, c)| format!("`{p}` ({c})")).collect::<Vec<_>>().join(", "));
    let _ = writeln!(out, "- When: the earliest simulated time the violation's evidence cites, {}.", dist(&times, "ms into the run"));
    let _ = writeln!(out, "- Two managers committing under one term, overlap of their commit spans per seed: {}.", dist(&shared, "ms"));
    let mut late: Vec<&&Seed> = caught.iter().collect();
    late.sort_by(|a, b| b.caught.and_then(|c| c.1).unwrap_or(0.0).total_cmp(&a.caught.and_then(|c| c.1).unwrap_or(0.0)).then(a.seed.cmp(&b.seed)));
    if let Some(s) = late.first() {
        let _ = writeln!(out, "- Latest catch: seed {} at {:.1} ms, {}.", s.seed, s.caught.and_then(|c| c.1).unwrap_or(0.0), repro(s.seed, DUELING, true));
    }
    if let Some(s) = m.iter().find(|s| s.caught.is_none()) {
        let _ = writeln!(out, "- A seed not caught: {}.", repro(s.seed, DUELING, true));
    }
    let _ = writeln!(out);
}

fn atomicity(out: &mut String, seeds: &[Seed]) {
    let _ = writeln!(out, "## 4. Atomicity of a move's switch\n");
    let _ = writeln!(out, "Per published handoff: the target serving (`handoff`), the map commit that publishes it, and the last frontend caching that version (`map_cached`). In the window from the source's pause to that last cache, the servers' refusals of requests for the range, by kind, and the client latency of the appends the frontends routed to the range in it (acknowledged), against every acknowledged append of the same runs.\n");
    for sc in [ROLLING, SWARM, DUELING] {
        let s: Vec<&Seed> = of(seeds, sc).collect();
        let sw: Vec<(&super::atomicity::Switch, u64)> = s.iter().flat_map(|x| x.switches.iter().map(move |w| (w, x.seed))).collect();
        let gap = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1000.0;
        let serve_commit: Vec<f64> = sw.iter().map(|(w, _)| gap(w.served_us, w.committed_us)).collect();
        let commit_all: Vec<f64> = sw.iter().filter_map(|(w, _)| w.all_cached_us.map(|t| gap(w.committed_us, t))).collect();
        let serve_all: Vec<f64> = sw.iter().filter_map(|(w, _)| w.all_cached_us.map(|t| gap(w.served_us, t))).collect();
        let mut refusals: BTreeMap<&str, u64> = BTreeMap::new();
        for (w, _) in &sw {
            for (k, c) in &w.refusals {
                *refusals.entry(k).or_default() += c;
            }
        }
        let lat: Vec<f64> = sw.iter().flat_map(|(w, _)| w.latency_ms.iter().copied()).collect();
        let all: Vec<f64> = s.iter().flat_map(|x| x.append_latency_ms.iter().copied()).collect();
        let _ = writeln!(out, "`{sc}` ({} seeds, {} published handoffs):\n", s.len(), sw.len());
        let _ = writeln!(out, "- Target serving to the map commit: {}.", dist(&serve_commit, "ms"));
        let _ = writeln!(out, "- Map commit to the last frontend caching it: {}.", dist(&commit_all, "ms"));
        let _ = writeln!(out, "- Target serving to the last frontend: {}.", dist(&serve_all, "ms"));
        let _ = writeln!(out, "- Refusals at the servers for the range in the window: {} (per handoff: {:.2} moved, {:.2} not_owner).", if refusals.is_empty() { "none".to_string() } else { refusals.iter().map(|(k, c)| format!("{k} {c}")).collect::<Vec<_>>().join(", ") }, *refusals.get("moved").unwrap_or(&0) as f64 / sw.len().max(1) as f64, *refusals.get("not_owner").unwrap_or(&0) as f64 / sw.len().max(1) as f64);
        let _ = writeln!(out, "- Latency of the appends routed to the range in the window: {}; every acknowledged append: {}.", dist(&lat, "ms"), dist(&all, "ms"));
        let _ = writeln!(out, "- Worst seeds, target serving to the last frontend:\n{}", worst(&s, 3, "window", |x| x.switches.iter().filter_map(|w| w.all_cached_us.map(|t| gap(w.served_us, t))).reduce(f64::max)));
    }
}

fn upgrade(out: &mut String, seeds: &[Seed], bound: Option<u64>) {
    let _ = writeln!(out, "## 5. Rolling upgrade\n");
    let s: Vec<&Seed> = of(seeds, ROLLING).collect();
    let mut server = Vec::new();
    let mut client = Vec::new();
    let mut gaps: Vec<(f64, u64, u64, u64)> = Vec::new();
    for x in &s {
        for h in &x.handoffs {
            server.push(h.server_pause_ms);
            if let Some(c) = h.client_gap_ms {
                client.push(c);
                gaps.push((c, x.seed, h.range, h.from));
            }
        }
    }
    gaps.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let unavailable: Vec<f64> = s.iter().map(|x| x.unavailable_ms as f64).collect();
    let range_gap: Vec<f64> = s.iter().map(|x| x.range_unavailable_ms as f64).collect();
    let _ = writeln!(out, "### The servers: `{ROLLING}`\n\n{} seeds, {} published handoffs.\n", s.len(), server.len());
    let _ = writeln!(out, "- Write pause at the servers per handoff (source paused to target serving): {}.", dist(&server, "ms"));
    let _ = writeln!(out, "- Longest gap between acknowledged appends to the range around each handoff, as the clients saw it: {}. This includes the natural gap between arrivals: a range that takes a few appends a second shows hundreds of ms between appends with no move at all.", dist(&client, "ms"));
    let _ = writeln!(out, "- Longest stretch per seed with no append acknowledged anywhere: {}.", dist(&unavailable, "ms"));
    let _ = writeln!(out, "- Longest time per seed one range took no append while clients tried (`expect.max_range_unavailable_ms` judges it): {}.", dist(&range_gap, "ms"));
    let over = s.iter().filter(|x| bound.is_some_and(|b| x.range_unavailable_ms > b)).count();
    let _ = writeln!(out, "- The scenario's bound: {}; seeds over it: {over}.", bound.map_or("none".to_string(), |b| format!("`expect.max_range_unavailable_ms` = {b} ms")));
    let _ = writeln!(out, "- Client gaps over 1 s: {} handoffs. Worst:", gaps.iter().filter(|g| g.0 > 1000.0).count());
    for (gap, seed, range, from) in gaps.iter().take(5) {
        let _ = writeln!(out, "  - seed {seed}: r{range} moved off server-{from}, client gap {gap:.1} ms: {}", repro(*seed, ROLLING, false));
    }
    let t: Vec<&Seed> = of(seeds, TRANSFER).collect();
    let takeovers: Vec<f64> = t.iter().flat_map(|x| x.takeovers.iter().map(|k| k.gap_ms)).collect();
    let standby = t.iter().flat_map(|x| x.takeovers.iter()).filter(|k| k.standby).count();
    let un: Vec<f64> = t.iter().map(|x| x.unavailable_ms as f64).collect();
    let _ = writeln!(out, "\n### The managers: `{TRANSFER}`\n\nThe operator's leader transfer, the step before a manager is restarted in a rolling upgrade: {} seeds, two transfers each.\n", t.len());
    let _ = writeln!(out, "- Release to the next grant: {}; the standby got the term in {standby} of {} ({} within the golden test's 500 ms).", dist(&takeovers, "ms"), takeovers.len(), takeovers.iter().filter(|g| **g <= 500.0).count());
    let _ = writeln!(out, "- Longest stretch per seed with no append acknowledged anywhere: {}.", dist(&un, "ms"));
    let _ = writeln!(out, "- Worst seeds, release to grant:\n{}", worst(&t, 3, "takeover", |x| x.takeovers.iter().map(|k| k.gap_ms).reduce(f64::max)));
}

fn restart_managers(out: &mut String, seeds: &[Seed], bound: Option<u64>) {
    let s: Vec<&Seed> = of(seeds, RESTART_MANAGERS).collect();
    let turns: Vec<(&super::upgrade::Restart, u64)> = s.iter().flat_map(|x| x.restarts.iter().map(move |r| (r, x.seed))).collect();
    let _ = writeln!(out, "### The managers restarted: `{RESTART_MANAGERS}`\n\nEach manager in turn is asked to stand aside (the operator's leader transfer) and is then restarted (crash and restart, 1 s down): {} seeds, {} restarts. A manager's turn runs from the transfer before its restart to the next transfer (or the workload's end); its write pause is the longest of the handoffs that paused in it, its unavailability the longest time one range took no append while clients tried, among the waits that began in it.\n", s.len(), turns.len());
    let _ = writeln!(out, "| manager | turns | restarted while leading | release to grant, ms | handoffs | write pause at the servers, ms | one range without an append, ms |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let mut names: Vec<&str> = turns.iter().map(|(r, _)| r.manager.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let t: Vec<&super::upgrade::Restart> = turns.iter().filter(|(r, _)| r.manager == name).map(|(r, _)| *r).collect();
        let takeover: Vec<f64> = t.iter().filter_map(|r| r.takeover_ms).collect();
        let pause: Vec<f64> = t.iter().map(|r| r.write_pause_ms).collect();
        let un: Vec<f64> = t.iter().map(|r| r.range_unavailable_ms).collect();
        let _ = writeln!(out, "| {name} | {} | {} | {} | {} | {} | {} |", t.len(), t.iter().filter(|r| r.was_leader).count(), dist(&takeover, "ms"), t.iter().map(|r| r.handoffs).sum::<usize>(), dist(&pause, "ms"), dist(&un, "ms"));
    }
    let all_un: Vec<f64> = turns.iter().map(|(r, _)| r.range_unavailable_ms).collect();
    let all_pause: Vec<f64> = turns.iter().map(|(r, _)| r.write_pause_ms).collect();
    let range_gap: Vec<f64> = s.iter().map(|x| x.range_unavailable_ms as f64).collect();
    let whole: Vec<f64> = s.iter().map(|x| x.unavailable_ms as f64).collect();
    let _ = writeln!(out, "\n- Every turn: write pause {}; one range without an append {}.", dist(&all_pause, "ms"), dist(&all_un, "ms"));
    let _ = writeln!(out, "- Per seed, over the whole run: one range without an append (`expect.max_range_unavailable_ms` judges it) {}; no append acknowledged anywhere {}. The clients start at 2 s, once the ranges are open, so the run's figure is the restarts' and the planned moves'.", dist(&range_gap, "ms"), dist(&whole, "ms"));
    let over = s.iter().filter(|x| bound.is_some_and(|b| x.range_unavailable_ms > b)).count();
    let _ = writeln!(out, "- The scenario's bound: {}; seeds over it: {over}.", bound.map_or("none".to_string(), |b| format!("`expect.max_range_unavailable_ms` = {b} ms")));
    let _ = writeln!(out, "- Worst seeds, one range without an append in a manager's turn:\n{}", worst(&s, 3, "wait", |x| x.restarts.iter().map(|r| r.range_unavailable_ms).reduce(f64::max)));
}
