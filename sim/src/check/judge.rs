//! The judge: every view of every property judged from one run's history (all but the
//! liveness probe's), what the system
//! serves and what it durably holds, each view's CPU time counted for `bench`. With
//! [`super::PROPERTIES`] it is the one registry of properties: the run's verdicts, the summary
//! and the sweep's table follow it.

use super::no_lost_append::Content;
use super::{self as check, View};
use crate::events::{Event, What};
use partmap::event::ClientOp;
use std::collections::BTreeMap;

thread_local! {
    /// CPU time this thread spent in the checkers ([`judge`]), nanoseconds.
    static CHECKER_CPU_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// CPU time (ns) this thread has spent judging runs' histories so far: `bench` reports the
/// checkers' share of a run from it. Read by the harness only, never inside a run.
pub fn checker_cpu_ns() -> u64 {
    CHECKER_CPU_NS.with(|n| n.get())
}


thread_local! {
    /// CPU time this thread spent in each checker's view, nanoseconds, by (property, view).
    static CHECKER_CPU_BY_VIEW: std::cell::RefCell<BTreeMap<(&'static str, &'static str), u64>> = const { std::cell::RefCell::new(BTreeMap::new()) };
}

/// Run `f` and add its thread CPU time to `(property, view)`'s total ([`checker_cpu_by_view`]).
fn checker_timed<T>(property: &'static str, view: &'static str, f: impl FnOnce() -> T) -> T {
    let from = crate::cpu::thread_cpu_ns();
    let out = f();
    let ns = crate::cpu::thread_cpu_ns() - from;
    CHECKER_CPU_BY_VIEW.with(|m| *m.borrow_mut().entry((property, view)).or_default() += ns);
    out
}

/// CPU time (ns) this thread has spent in each checker's view so far, by (property, view);
/// `("index", ...)` is the shared index of the clients' operations and final contents.
pub fn checker_cpu_by_view() -> BTreeMap<(&'static str, &'static str), u64> {
    CHECKER_CPU_BY_VIEW.with(|m| m.borrow().clone())
}


/// The views of the checkers without the durable log and the served final reads (the history,
/// the store's streams, the announced maps), for showing what only those two catch; see
/// [`legacy_violation`].
pub const LEGACY_VIEWS: [&str; 3] = ["history", "stored", "announced"];

/// What the checkers without the durable log and the served final reads would have found, for
/// the mutants table: the history, the store's streams and the announced maps
/// ([`LEGACY_VIEWS`]), with `reads_consistent` on the clients' own reads against the streams,
/// and a probe's check
/// that its final reads of the 16 most-appended keys and of the keys it appended to return what
/// the streams hold. `None`: they would have passed it.
pub fn legacy_violation(events: &[Event], views: &[View], served: &Content, stored: &Content) -> Option<String> {
    let old_views = views.iter().filter(|v| LEGACY_VIEWS.contains(&v.view) && v.property != "reads_consistent").find_map(|v| v.violation.clone());
    if old_views.is_some() {
        return old_views;
    }
    let clients: Vec<Event> = events.iter().filter(|e| !matches!(&e.what, What::Complete { op: ClientOp::Read, id, .. } if id.client == 0)).cloned().collect();
    if let Err(e) = check::reads_consistent::check(&clients, stored, None) {
        return Some(e.message);
    }
    let mut count: BTreeMap<&partmap::ids::Key, u64> = BTreeMap::new();
    let mut probed = std::collections::BTreeSet::new();
    for e in events {
        if let What::Invoke { op: ClientOp::Append, id, key, .. } = &e.what {
            if id.client == 0 {
                probed.insert(key);
            } else {
                *count.entry(key).or_default() += 1;
            }
        }
    }
    let mut busiest: Vec<(u64, &partmap::ids::Key)> = count.into_iter().map(|(k, c)| (c, k)).collect();
    busiest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let empty = Vec::new();
    for key in busiest.into_iter().take(16).map(|(_, k)| k).chain(probed) {
        let Some(read) = served.get(key) else { continue };
        if read != stored.get(key).unwrap_or(&empty) {
            return Some(format!("key {}: the final read differs from the streams", partmap::ids::show_key(key)));
        }
    }
    None
}

/// Every view of every safety property: the history, what the live system serves
/// (`served`, the final strong reads, judged on the keys they answered), what the store's
/// streams hold (`stored`), and the authority's durable log (`durable`). When the served and
/// stored views of the final content disagree on a key that was read, `no_lost_append` fails on
/// the disagreement. `knobs` (the run's) give `no_stuck_range` its bound
/// ([`check::stuck_range::bound_ms`]).
pub fn judge(events: &[Event], served: &Content, stored: &Content, durable: &[partmap::lock::LockRecord], knobs: &crate::scenario::KnobsSpec) -> Vec<View> {
    let from = crate::cpu::thread_cpu_ns();
    let mut views = judge_views(events, served, stored, durable);
    let bound = check::stuck_range::bound_ms(knobs.lease_ms, knobs.manager_tick_ms, knobs.rpc_timeout_ms);
    views.push(checker_timed("handoff_in_order", "history", || View::of("handoff_in_order", "history", check::handoff_order::check(events))));
    views.push(checker_timed("no_stuck_range", "history", || View::of("no_stuck_range", "history", check::stuck_range::check(events, bound, knobs.lease_ms))));
    CHECKER_CPU_NS.with(|n| n.set(n.get() + crate::cpu::thread_cpu_ns() - from));
    views
}

fn judge_views(events: &[Event], served: &Content, stored: &Content, durable: &[partmap::lock::LockRecord]) -> Vec<View> {
    // Each view's CPU time goes to `checker_cpu_by_view` (the harness's bench reads it).
    let timed = |property: &'static str, view: &'static str, finding: &mut dyn FnMut() -> Result<(), check::Violation>| {
        checker_timed(property, view, || View::of(property, view, finding()))
    };
    // The clients' operations and each key's final content, indexed once for both checkers
    // and both views (every key numbered once).
    let (clients, finals) = checker_timed("index", "clients and final contents", || {
        let mut clients = check::index::Clients::of(events);
        let finals = check::index::Finals::of(&[served, stored], &mut clients);
        (clients, finals)
    });
    // The announced maps, each diffed against the one before once, for both map checkers.
    let maps = checker_timed("index", "map diffs", || check::index::Maps::of(events));
    // The keys the final reads answered; one they could not read fails liveness, not this.
    let read = |k: check::index::KeyNo| finals.view(0).contains(k);
    // A key the served view judged sound, on the same bytes as the stored view, would pass the
    // stored view too: that view judges the other keys only.
    let same = |k: check::index::KeyNo| finals.same_in(0, 1, k);
    let none = |_: check::index::KeyNo| false;
    let nla_served = timed("no_lost_append", "served", &mut || check::no_lost_append::check_indexed(&clients, &finals.view(0), "served", Some(&read), &none));
    let settled: &dyn Fn(check::index::KeyNo) -> bool = if nla_served.violation.is_none() { &same } else { &none };
    let nla_stored = timed("no_lost_append", "stored", &mut || check::no_lost_append::check_indexed(&clients, &finals.view(1), "stored", None, settled));
    let rc_served = timed("reads_consistent", "served", &mut || check::reads_consistent::check_indexed(&clients, &finals.view(0), Some(&read), &none));
    let settled: &dyn Fn(check::index::KeyNo) -> bool = if rc_served.violation.is_none() { &same } else { &none };
    let rc_stored = timed("reads_consistent", "stored", &mut || check::reads_consistent::check_indexed(&clients, &finals.view(1), None, settled));
    let mut views = vec![
        timed("single_writer", "history", &mut || check::single_writer::check_indexed(events, &maps, &clients.keys, &clients.served, finals.order())),
        // Acknowledged => durable, judged at each acknowledgement: the earliest evidence of a
        // lost append, so it comes before the final contents' views.
        timed("no_lost_append", "synced", &mut || check::acked_durable::check(events)),
        nla_served,
        nla_stored,
        rc_served,
        rc_stored,
        timed("map_tiles", "durable", &mut || check::map_tiles::check_durable_indexed(durable, events, &maps)),
        timed("map_tiles", "announced", &mut || check::map_tiles::check_announced_indexed(&maps)),
        timed("manager_exclusive", "durable", &mut || check::manager_exclusive::check_durable(durable)),
        timed("manager_exclusive", "announced", &mut || check::manager_exclusive::check(events)),
    ];
    let disagreement = checker_timed("no_lost_append", "agreement", || check::no_lost_append::disagreement_indexed(&finals, &clients.keys));
    let disagreement = disagreement.map(|d| format!("the served and stored views disagree: {d}"));
    views.push(View { property: "no_lost_append", view: "agreement", violation: disagreement, evidence: Default::default() });
    views
}
