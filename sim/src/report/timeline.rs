//! `partmap-sim timeline`: one run drawn as a single self-contained HTML page (inline SVG and a
//! little script; no network, no CDN), after Jepsen's timeline of a history (Kingsbury,
//! `jepsen.checker.timeline`) with the cluster's own state laid beside it:
//!
//! - a lane per node: up, crashed, paused, cut off (isolated or on one side of a split) or
//!   partly cut (a one-way cut); leader terms on the managers' lanes, session expiries on the
//!   servers';
//! - the faults as spans (operator requests as ticks), packed into rows;
//! - a lane per range: its owner and epoch over time, as every committed or restored map
//!   version had it (paused and preparing rows hatched), moves, failovers, splits and merges
//!   marked where they commit, and each handoff's write pause;
//! - client operations as a histogram of completions per time bucket by outcome (a 60-second
//!   run has thousands), and every operation on the keys the violation names as its own bar;
//! - the violation: its message at the top, its evidence times as red lines across every lane,
//!   its servers and ranges marked; a click on a marker (or the button) lists the events around
//!   that moment, rendered from the typed history.
//!
//! Everything is computed from the typed values of [`RunReport`] (events, verdicts with their
//! [`Evidence`], handoffs); nothing is parsed back from rendered text. Drag across the plot to
//! zoom in, double-click or "whole run" to zoom out. A page with a violation opens zoomed on
//! its evidence (a second either side at least) with the events around the first evidence time
//! listed; `#view=A-B` (seconds) in the URL opens another window, `#view=all` the whole run, and
//! `#events=N` the events around evidence time N.

use crate::check::Evidence;
use crate::events::{Event, Outcome, Sys, What};
use crate::fault::{Fault, Request};
use crate::run::{RunOptions, RunReport};
use partmap::event::ClientOp;
use partmap::ids::{show_key, Key, OpId};
use partmap::map::RangeState;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Width of the lane labels, px.
pub const LABEL_W: f64 = 190.0;
/// Width of the plot area at the initial view, px.
pub const PLOT_W: f64 = 1360.0;
/// Height of one lane, px.
const LANE_H: f64 = 16.0;
/// Client-operation histogram buckets over the whole run (at most).
const BUCKETS: u64 = 300;
/// Events listed on each side of an evidence time.
const AROUND: usize = 40;
/// Operations drawn one by one per evidence key (the ones nearest the evidence times).
const KEY_OPS_MAX: usize = 300;

/// HTML-escape `s` (text and attribute values).
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `12.345678s`.
fn secs(t_us: u64) -> String {
    crate::check::secs(t_us)
}

/// A fill colour per server number (owner colours on the range lanes).
fn server_colour(n: u32) -> &'static str {
    const PALETTE: [&str; 12] = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#86bcb6", "#8cd17d", "#d4a6c8", "#a0cbe8"];
    PALETTE[(n as usize).wrapping_sub(1) % PALETTE.len()]
}

/// Colour of a fault span by kind.
fn fault_colour(f: &Fault) -> &'static str {
    match f {
        Fault::Crash(_) => "#d62728",
        Fault::Pause(_) => "#ff7f0e",
        Fault::Isolate(_) | Fault::Split(_) => "#7b3294",
        // Partly cut, in the legend's and the node lanes' one-way colour.
        Fault::OneWay(..) => "#c2a5cf",
        Fault::Delay(..) | Fault::DelayNext(..) | Fault::Reorder(..) | Fault::Duplicate(..) => "#1f77b4",
        Fault::SlowDisk(..) => "#8c564b",
        Fault::Corrupt(..) => "#e377c2",
        Fault::Request(_) => "#2ca02c",
    }
}

/// One operation on a key the violation names: invoked and completed (µs), id, kind, outcome.
type KeyOp = (u64, u64, OpId, ClientOp, Outcome);

/// One injected fault with its span (end = when it was undone, or the heal).
struct Span {
    fault: Fault,
    start_us: u64,
    end_us: u64,
    duration_ms: u64,
}

/// What one node was doing over an interval.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum NodeState {
    Crashed,
    Paused,
    CutOff,
    PartlyCut,
}

impl NodeState {
    fn name(self) -> &'static str {
        match self {
            NodeState::Crashed => "crashed",
            NodeState::Paused => "paused",
            NodeState::CutOff => "cut off",
            NodeState::PartlyCut => "partly cut (one way)",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            NodeState::Crashed => "#d62728",
            NodeState::Paused => "#ff7f0e",
            NodeState::CutOff => "#7b3294",
            NodeState::PartlyCut => "#c2a5cf",
        }
    }
}

/// One stretch of a range's life: owner, epoch and state, as the map had it.
struct RangeSeg {
    start_us: u64,
    end_us: u64,
    owner: u32,
    epoch: u64,
    state: RangeState,
}

/// Where a range's owner changed, or a split or merge committed.
struct RangeMark {
    t_us: u64,
    range: u64,
    label: String,
    colour: &'static str,
}

/// The injected faults of `events` with their spans: a fault ends at its `fault_end` (the
/// first one for an equal fault after it), or `duration_ms` after it began; network faults and
/// holds end at the heal at the latest.
fn spans(events: &[Event], heal_us: u64) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for ev in events {
        match &ev.what {
            What::Fault { fault, duration_ms, .. } => {
                let fault: &Fault = fault;
                let end = ev.t_us + duration_ms * 1000;
                let end = if matches!(fault, Fault::Request(Request::Drain(_) | Request::Move(..))) { end } else { end.min(heal_us.max(ev.t_us)) };
                out.push(Span { fault: fault.clone(), start_us: ev.t_us, end_us: end, duration_ms: *duration_ms });
                open.push(out.len() - 1);
            }
            What::FaultEnd { fault } => {
                if let Some(pos) = open.iter().position(|&i| out[i].fault == **fault) {
                    let i = open.remove(pos);
                    out[i].end_us = ev.t_us;
                }
            }
            _ => {}
        }
    }
    out
}

/// Each node's states over time, from the spans: crashes and pauses of the node, isolations
/// and splits that cut it off, one-way cuts that touch it.
fn node_states(spans: &[Span]) -> BTreeMap<String, Vec<(u64, u64, NodeState, String)>> {
    let mut out: BTreeMap<String, Vec<(u64, u64, NodeState, String)>> = BTreeMap::new();
    for s in spans {
        let mut put = |node: &str, state: NodeState| out.entry(node.to_string()).or_default().push((s.start_us, s.end_us, state, s.fault.to_string()));
        match &s.fault {
            Fault::Crash(n) => put(n, NodeState::Crashed),
            Fault::Pause(n) => put(n, NodeState::Paused),
            Fault::Isolate(n) => put(n, NodeState::CutOff),
            Fault::Split(side) => side.iter().for_each(|n| put(n, NodeState::CutOff)),
            Fault::OneWay(a, b) => {
                put(a, NodeState::PartlyCut);
                put(b, NodeState::PartlyCut);
            }
            _ => {}
        }
    }
    out
}

/// Every range's stretches (owner, epoch, state) from the maps the authority committed or
/// restored, and the marks where owners changed (move, failover, reopen) or splits and merges
/// committed. Also each range's bounds, for its label.
#[allow(clippy::type_complexity)]
fn ranges(events: &[Event], end_us: u64) -> (BTreeMap<u64, Vec<RangeSeg>>, Vec<RangeMark>, BTreeMap<u64, (Key, Option<Key>)>) {
    let mut segs: BTreeMap<u64, Vec<RangeSeg>> = BTreeMap::new();
    let mut marks = Vec::new();
    let mut bounds = BTreeMap::new();
    let mut moving: std::collections::BTreeSet<u64> = Default::default();
    for ev in events {
        match &ev.what {
            What::Sys(Sys::MapCommit { map, .. } | Sys::MapRestored { map, .. }) => {
                for row in map.rows.values() {
                    let id = row.id.0;
                    bounds.entry(id).or_insert_with(|| (row.start.clone(), row.end.clone()));
                    let owner = row.owner.map_or(0, |s| s.0);
                    let lane = segs.entry(id).or_default();
                    let last = lane.last_mut().filter(|l| l.end_us == u64::MAX);
                    if let Some(l) = &last {
                        if l.owner == owner && l.epoch == row.epoch.0 && l.state == row.state {
                            continue;
                        }
                    }
                    let prev = last.map(|l| {
                        l.end_us = ev.t_us;
                        (l.owner, l.epoch, l.state)
                    });
                    if let Some((p_owner, p_epoch, _)) = prev {
                        if p_owner != owner && p_owner != 0 && owner != 0 && row.state != RangeState::Retired {
                            let (label, colour) = if moving.contains(&id) { (format!("move s{p_owner}→s{owner}"), "#2ca02c") } else { (format!("failover s{p_owner}→s{owner}"), "#d62728") };
                            marks.push(RangeMark { t_us: ev.t_us, range: id, label, colour });
                        } else if p_owner == owner && row.epoch.0 > p_epoch && row.state == RangeState::Active {
                            marks.push(RangeMark { t_us: ev.t_us, range: id, label: format!("reopened e{}", row.epoch.0), colour: "#555" });
                        }
                    }
                    if row.state != RangeState::Retired {
                        lane.push(RangeSeg { start_us: ev.t_us, end_us: u64::MAX, owner, epoch: row.epoch.0, state: row.state });
                    }
                }
                moving = map.transfers.keys().map(|r| r.0).collect();
            }
            What::Sys(Sys::Reshaped { kind, committed: true, parents, children, .. }) => {
                let kids: Vec<String> = children.iter().map(|c| c.to_string()).collect();
                for p in parents {
                    marks.push(RangeMark { t_us: ev.t_us, range: p.0, label: format!("{} → {}", kind.name(), kids.join(",")), colour: "#17becf" });
                }
            }
            _ => {}
        }
    }
    for lane in segs.values_mut() {
        for s in lane.iter_mut() {
            if s.end_us == u64::MAX {
                s.end_us = end_us;
            }
        }
    }
    (segs, marks, bounds)
}

/// The key, range and server an event is about, where it names them.
fn about(what: &What) -> (Option<&Key>, Option<u64>, Option<u32>) {
    match what {
        What::Invoke { key, .. } | What::Complete { key, .. } => (Some(key), None, None),
        What::Sys(s) => match s {
            Sys::Admit { server, range, key, .. } | Sys::Redirected { server, range, key, .. } | Sys::Refused { server, range, key, .. } | Sys::ReadServed { server, range, key, .. } => (Some(key), Some(range.0), Some(server.0)),
            Sys::Effect { stream, server, key, .. } | Sys::Deduplicated { stream, server, key, .. } => (Some(key), Some(stream.0), Some(server.0)),
            Sys::Fenced { stream, server, .. } => (None, Some(stream.0), Some(server.0)),
            Sys::Fence { stream, .. } => (None, Some(stream.0), None),
            Sys::Activated { server, range, .. } | Sys::Dropped { server, range, .. } | Sys::Paused { server, range, .. } | Sys::Drained { server, range, .. } | Sys::Precopied { server, range, .. } | Sys::Diverged { server, range, .. } | Sys::Handoff { server, range, .. } | Sys::CommandMissed { server, range, .. } => (None, Some(range.0), Some(server.0)),
            Sys::SessionExpired { server, .. } | Sys::Renewed { server, .. } | Sys::LeaseExpired { server, .. } | Sys::StaleCommand { server, .. } => (None, None, Some(server.0)),
            _ => (None, None, None),
        },
        _ => (None, None, None),
    }
}

/// Whether `ev` touches what `evidence` cites: a key, a range or an operation (servers are
/// left out: a busy server's every event would match).
fn touches(ev: &Event, evidence: &Evidence) -> bool {
    let (key, range, _server) = about(&ev.what);
    let op = match &ev.what {
        What::Invoke { id, .. } | What::Complete { id, .. } => Some(*id),
        What::Sys(Sys::Admit { id, .. } | Sys::Effect { id, .. } | Sys::Deduplicated { id, .. } | Sys::Fenced { id, .. }) => Some(*id),
        _ => None,
    };
    key.is_some_and(|k| evidence.keys.contains(k)) || range.is_some_and(|r| evidence.ranges.contains(&r)) || op.is_some_and(|o| evidence.ops.contains(&o))
}

/// The first line of an event's rendering, with `(+N lines)` for a map's rows.
fn line_of(ev: &Event) -> String {
    let text = ev.render();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").to_string();
    let more = lines.count();
    if more > 0 {
        format!("{first}  (+{more} rows and journal entries)")
    } else {
        first
    }
}

/// The events around `t_us`: up to [`AROUND`] on each side, and every event within 2 s that
/// touches the evidence; as HTML list items, the ones at `t_us` or touching the evidence marked.
fn around(events: &[Event], t_us: u64, evidence: &Evidence) -> String {
    let at = events.partition_point(|e| e.t_us < t_us);
    let lo = at.saturating_sub(AROUND);
    let hi = (at + AROUND).min(events.len());
    let from = events.partition_point(|e| e.t_us < t_us.saturating_sub(2_000_000));
    let to = events.partition_point(|e| e.t_us <= t_us + 2_000_000);
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    for (i, ev) in events.iter().enumerate().take(to).skip(from) {
        let near = (lo..hi).contains(&i);
        let hit = touches(ev, evidence);
        if !near && !hit {
            continue;
        }
        if last_shown.is_some_and(|l| l + 1 < i) {
            out.push_str("<li class=gap>…</li>");
        }
        last_shown = Some(i);
        let class = if ev.t_us == t_us { "now" } else if hit { "hit" } else { "" };
        let _ = write!(out, "<li class=\"{class}\">{}</li>", esc(&line_of(ev)));
    }
    out
}

/// Greedy packing of intervals into rows: the row index of each interval (in input order).
fn pack(intervals: &[(u64, u64)], min_gap_us: u64) -> (Vec<usize>, usize) {
    let mut row_end: Vec<u64> = Vec::new();
    let mut rows = Vec::with_capacity(intervals.len());
    for &(s, e) in intervals {
        let r = row_end.iter().position(|&end| end + min_gap_us <= s).unwrap_or_else(|| {
            row_end.push(0);
            row_end.len() - 1
        });
        row_end[r] = e.max(s + 1);
        rows.push(r);
    }
    (rows, row_end.len())
}

/// Builds the SVG: every element in plot coordinates, with `data-t0`/`data-t1` (µs) so the
/// script can lay it out again for another window.
struct Svg {
    body: String,
    labels: String,
    y: f64,
    end_us: u64,
}

impl Svg {
    fn x(&self, t_us: u64) -> f64 {
        LABEL_W + t_us as f64 / self.end_us.max(1) as f64 * PLOT_W
    }

    /// A span `[t0, t1)` at `y`, `h` high, with a tooltip; `min_w` px at least.
    #[allow(clippy::too_many_arguments)]
    fn span(&mut self, t0: u64, t1: u64, y: f64, h: f64, fill: &str, extra: &str, title: &str) {
        let (x0, x1) = (self.x(t0), self.x(t1));
        let _ = write!(
            self.body,
            "<rect data-t0=\"{t0}\" data-t1=\"{t1}\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{fill}\" {extra}><title>{}</title></rect>",
            (x1 - x0).max(1.0),
            esc(title)
        );
    }

    /// A label inside the span `[t0, t1)`, shown when it fits.
    fn span_label(&mut self, t0: u64, t1: u64, y: f64, text: &str, class: &str) {
        let (x0, x1) = (self.x(t0), self.x(t1));
        let fits = (x1 - x0) > text.len() as f64 * 6.2 + 4.0;
        let _ = write!(
            self.body,
            "<text data-t0=\"{t0}\" data-t1=\"{t1}\" data-len=\"{}\" x=\"{:.1}\" y=\"{:.1}\" class=\"{class}\"{}>{}</text>",
            text.len(),
            x0 + 2.0,
            y + LANE_H - 4.5,
            if fits { "" } else { " visibility=\"hidden\"" },
            esc(text)
        );
    }

    /// A marker (a small triangle) at `t` on the lane at `y`, with a tooltip.
    fn mark(&mut self, t: u64, y: f64, colour: &str, title: &str, down: bool) {
        let x = self.x(t);
        let path = if down { "M-4,0 L4,0 L0,6 Z" } else { "M-4,6 L4,6 L0,0 Z" };
        let _ = write!(
            self.body,
            "<g data-t0=\"{t}\" transform=\"translate({x:.1},{y:.1})\"><path d=\"{path}\" fill=\"{colour}\" stroke=\"#222\" stroke-width=\"0.5\"/><title>{}</title></g>",
            esc(title)
        );
    }

    fn label(&mut self, y: f64, text: &str, class: &str, title: &str) {
        let _ = write!(self.labels, "<text x=\"6\" y=\"{:.1}\" class=\"{class}\">{}<title>{}</title></text>", y + LANE_H - 4.5, esc(text), esc(title));
    }

    fn section(&mut self, title: &str) {
        self.y += 8.0;
        let _ = write!(self.labels, "<text x=\"4\" y=\"{:.1}\" class=\"section\">{}</text>", self.y + 12.0, esc(title));
        let _ = write!(self.body, "<line x1=\"0\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"rule\"/>", LABEL_W + PLOT_W, self.y, self.y);
        self.y += 18.0;
    }
}

/// The page for `report`, a run of `opts`: see the module doc.
pub fn render(report: &RunReport, opts: &RunOptions) -> String {
    let events = &report.events;
    let end_us = events.last().map_or(1, |e| e.t_us).max(report.sim_ms * 1000).max(1);
    let heal_us = events.iter().find(|e| matches!(e.what, What::Heal)).map_or(end_us, |e| e.t_us);
    let workload_end_us = report.scenario_run.workload.duration_s * 1_000_000;
    let violated: Vec<&crate::check::Verdict> = report.verdicts.iter().filter(|v| v.violation.is_some()).collect();
    let evidence = gather_evidence(events, &violated, heal_us, end_us);
    let mut times = evidence.times_us.clone();
    times.sort_unstable();
    times.dedup();
    times.truncate(8);

    let mut svg = Svg { body: String::new(), labels: String::new(), y: 22.0, end_us };
    let spans = spans(events, heal_us);
    draw_faults(&mut svg, &spans);
    draw_nodes(&mut svg, report, &spans, &evidence);
    draw_ranges(&mut svg, report, &evidence);
    let key_ops = draw_completions(&mut svg, events, &evidence);
    draw_key_ops(&mut svg, key_ops, &evidence, &times);

    // Heal, workload end, evidence lines (over every lane).
    let height = svg.y + 22.0;
    let overlay = overlay(&svg, height, workload_end_us.min(end_us), heal_us, &times);
    // The events around each evidence time, for the panel.
    let mut panels = String::new();
    for (i, t) in times.iter().enumerate() {
        let _ = write!(panels, "<div class=\"events\" id=\"events-{i}\" hidden><h3>Events around evidence {} at {} (red: at that instant; yellow: the key, range or operation it names) <button onclick=\"zoomTo({},{})\">zoom there</button> <button onclick=\"hideEvents()\">close</button></h3><ol>{}</ol></div>", i + 1, secs(*t), t.saturating_sub(1_000_000), t + 1_000_000, around(events, *t, &evidence));
    }
    let page = Page { svg, height, overlay, panels, banner: banner(report, &violated, &times), times };
    page.html(report, opts)
}

/// The evidence of every violated verdict in `violated`, merged: its times, plus the time of
/// each map version it names; the keys of the operations it names; and, for a violation that
/// cites no time (an eventual property), the heal and the end.
fn gather_evidence(events: &[Event], violated: &[&crate::check::Verdict], heal_us: u64, end_us: u64) -> Evidence {
    let mut evidence = Evidence::default();
    for v in violated {
        let e = &v.evidence;
        evidence.times_us.extend(&e.times_us);
        evidence.keys.extend(e.keys.iter().cloned());
        evidence.servers.extend(&e.servers);
        evidence.ranges.extend(&e.ranges);
        evidence.versions.extend(&e.versions);
        evidence.ops.extend(&e.ops);
    }
    for v in &evidence.versions {
        if let Some(ev) = events.iter().find(|e| matches!(&e.what, What::Sys(Sys::MapCommit { map, .. } | Sys::MapRestored { map, .. }) if map.version == *v)) {
            evidence.times_us.push(ev.t_us);
        }
    }
    // An operation the evidence names without its key: its key gets a lane of operations too.
    for op in evidence.ops.clone() {
        let key = events.iter().find_map(|e| match &e.what {
            What::Invoke { id, key, .. } if *id == op => Some(key),
            _ => None,
        });
        if let Some(key) = key.filter(|k| !evidence.keys.contains(k)) {
            evidence.keys.push(key.clone());
        }
    }
    if !violated.is_empty() && evidence.times_us.is_empty() {
        evidence.times_us.extend([heal_us, end_us]);
    }
    evidence
}

/// The faults section: each fault as a span (an operator move request as a tick), packed into
/// rows by start.
fn draw_faults(svg: &mut Svg, spans: &[Span]) {
    let end_us = svg.end_us;
    svg.section(&format!("faults ({})", spans.len()));
    let intervals: Vec<(u64, u64)> = spans.iter().map(|s| (s.start_us, s.end_us.max(s.start_us + end_us / 400))).collect();
    let (rows, n_rows) = pack(&intervals, end_us / 200);
    let base = svg.y;
    for (s, row) in spans.iter().zip(&rows) {
        let y = base + *row as f64 * LANE_H;
        let title = format!("{} at {} for {} ms (to {})", s.fault, secs(s.start_us), s.duration_ms, secs(s.end_us));
        if matches!(s.fault, Fault::Request(Request::Move(..))) {
            svg.mark(s.start_us, y + 2.0, fault_colour(&s.fault), &title, false);
            svg.span_label(s.start_us, s.start_us + end_us / 25, y, &format!("  {}", s.fault), "flabel");
            continue;
        }
        svg.span(s.start_us, s.end_us, y + 1.0, LANE_H - 2.0, fault_colour(&s.fault), "class=\"fault\" opacity=\"0.85\"", &title);
        svg.span_label(s.start_us, s.end_us, y, &s.fault.to_string(), "flabel");
    }
    for r in 0..n_rows.max(1) {
        svg.label(base + r as f64 * LANE_H, if r == 0 { "faults, by start" } else { "" }, "lane", "each fault as a span; operator move requests as ticks");
    }
    svg.y = base + n_rows.max(1) as f64 * LANE_H;
}

/// The nodes section: a lane per node with its crashed, paused and cut-off spans (from the
/// fault `spans`), leader terms on the managers' lanes and session expiries on the servers'.
fn draw_nodes(svg: &mut Svg, report: &RunReport, spans: &[Span], evidence: &Evidence) {
    let end_us = svg.end_us;
    let names = report.scenario_run.node_names();
    svg.section("nodes: up, crashed, paused, cut off");
    let states = node_states(spans);
    let mut node_y: BTreeMap<String, f64> = BTreeMap::new();
    for name in &names {
        let y = svg.y;
        node_y.insert(name.clone(), y);
        let cited = name.strip_prefix("server-").and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| evidence.servers.contains(&n));
        svg.label(y, name, if cited { "lane cited" } else { "lane" }, if cited { "named by the violation" } else { "" });
        svg.span(0, end_us, y + 3.0, LANE_H - 6.0, "#e8e8e8", "", &format!("{name}: up"));
        let mut mine: Vec<&(u64, u64, NodeState, String)> = states.get(name).map(|v| v.iter().collect()).unwrap_or_default();
        // Draw the milder states first so a crash inside a cut shows on top.
        mine.sort_by_key(|s| std::cmp::Reverse(s.2));
        for (t0, t1, st, why) in mine {
            svg.span(*t0, *t1, y + 2.0, LANE_H - 4.0, st.colour(), "", &format!("{name} {} from {} to {} ({why})", st.name(), secs(*t0), secs(*t1)));
            svg.span_label(*t0, *t1, y, st.name(), "slabel");
        }
        svg.y += LANE_H;
    }
    for ev in &report.events {
        match &ev.what {
            What::Sys(Sys::Leader { manager, leader_epoch }) => {
                if let Some(&y) = node_y.get(&format!("manager-{manager}")) {
                    svg.mark(ev.t_us, y + 1.0, "#2ca02c", &format!("manager-{manager} leads term {leader_epoch} from {}", secs(ev.t_us)), true);
                }
            }
            What::Sys(Sys::LeaseExpired { server, session }) => {
                if let Some(&y) = node_y.get(&format!("server-{}", server.0)) {
                    svg.mark(ev.t_us, y + 1.0, "#000", &format!("the authority expired server-{}'s session {session} at {}", server.0, secs(ev.t_us)), true);
                }
            }
            _ => {}
        }
    }
}

/// The ranges section: a lane per range with its owner and epoch per map version, the moves,
/// failovers, splits and merges marked, and each handoff's write pause as a bar.
fn draw_ranges(svg: &mut Svg, report: &RunReport, evidence: &Evidence) {
    let (segs, marks, bounds) = ranges(&report.events, svg.end_us);
    svg.section(&format!("ranges: owner (colour) and epoch per map version ({} ranges)", segs.len()));
    let mut range_y: BTreeMap<u64, f64> = BTreeMap::new();
    for (id, lane) in &segs {
        let y = svg.y;
        range_y.insert(*id, y);
        let (start, end) = bounds.get(id).cloned().unwrap_or_default();
        let label = format!("r{id} [{}, {})", show_key(&start), end.as_ref().map_or("~".to_string(), |e| show_key(e)));
        let label: String = if label.chars().count() > 28 { format!("{}…", label.chars().take(27).collect::<String>()) } else { label };
        let holds_key = evidence.keys.iter().any(|k| partmap::ids::in_range(k, &start, end.as_ref()));
        let cited = evidence.ranges.contains(id) || holds_key;
        let why = if evidence.ranges.contains(id) { "named by the violation" } else if holds_key { "holds a key the violation names" } else { "" };
        svg.label(y, &label, if cited { "lane cited" } else { "lane" }, why);
        for s in lane {
            draw_range_seg(svg, *id, s, y);
        }
        svg.y += LANE_H;
    }
    for m in &marks {
        if let Some(&y) = range_y.get(&m.range) {
            svg.mark(m.t_us, y + 1.0, m.colour, &format!("{} r{} at {}", m.label, m.range, secs(m.t_us)), true);
        }
    }
    for h in report.handoffs.iter().chain(&report.superseded_handoffs) {
        if let Some(&y) = range_y.get(&h.range) {
            let t1 = h.paused_at_us + (h.server_pause_ms * 1000.0) as u64;
            let client = h.client_gap_ms.map_or("no client tried".to_string(), |g| format!("{g:.1} ms at the clients"));
            let title = format!(
                "handoff r{} server-{}@e{} -> server-{}@e{} {}: write pause {:.1} ms at the servers, {client}{}",
                h.range, h.from, h.from_epoch, h.to, h.epoch, h.strategy, h.server_pause_ms, if h.committed { "" } else { " (superseded: no map version published it)" }
            );
            svg.span(h.paused_at_us, t1.max(h.paused_at_us + 1), y + LANE_H - 4.0, 4.0, "#111", "class=\"pause\"", &title);
        }
    }
}

/// One stretch `s` of range `id`'s lane at `y`: filled with its owner's colour, hatched when
/// the range is not active, labelled with owner and epoch.
fn draw_range_seg(svg: &mut Svg, id: u64, s: &RangeSeg, y: f64) {
    let fill = if s.owner == 0 { "#ccc" } else { server_colour(s.owner) };
    let state = match s.state {
        RangeState::Active => "active",
        RangeState::Paused => "paused",
        RangeState::Preparing => "preparing",
        RangeState::Retired => "retired",
    };
    let extra = if s.state == RangeState::Active { String::new() } else { "class=\"inactive\"".to_string() };
    let owner = if s.owner == 0 { "no owner".to_string() } else { format!("server-{}", s.owner) };
    svg.span(s.start_us, s.end_us, y + 2.0, LANE_H - 4.0, fill, &extra, &format!("r{id}: {owner} at epoch {} ({state}) from {} to {}", s.epoch, secs(s.start_us), secs(s.end_us)));
    if s.state != RangeState::Active {
        svg.span(s.start_us, s.end_us, y + 2.0, LANE_H - 4.0, "url(#hatch)", "pointer-events=\"none\"", "");
    }
    svg.span_label(s.start_us, s.end_us, y, &format!("s{} e{}", s.owner, s.epoch), "rlabel");
}

/// The client operations section: completions per time bucket by outcome, appends and reads
/// as two stacked histograms (the probe's left out). Returns the operations on the keys the
/// evidence names, by key.
fn draw_completions(svg: &mut Svg, events: &[Event], evidence: &Evidence) -> BTreeMap<Key, Vec<KeyOp>> {
    svg.section("client operations: completions per bucket (probe excluded)");
    let bucket_us = (svg.end_us / BUCKETS).max(1);
    let (counts, key_ops) = count_completions(events, evidence, svg.end_us, bucket_us);
    let hist_h = 40.0;
    let max_appends = counts.iter().map(|c| c[0] + c[1] + c[2] + c[3]).max().unwrap_or(0).max(1) as f64;
    let max_reads = counts.iter().map(|c| c[4] + c[5]).max().unwrap_or(0).max(1) as f64;
    let append_colours = ["#59a14f", "#edc948", "#e15759", "#999"];
    let append_names = ["ok", "unknown", "failed", "MapUnavailable"];
    let (ya, yr) = (svg.y, svg.y + hist_h + 6.0);
    svg.label(ya + hist_h - LANE_H, &format!("appends (max {max_appends:.0}/bucket)"), "lane", "appends completed per bucket: ok green, unknown yellow, failed red, MapUnavailable grey");
    svg.label(yr + hist_h - LANE_H, &format!("reads (max {max_reads:.0}/bucket)"), "lane", "reads completed per bucket: ok blue, failed red");
    for (b, c) in counts.iter().enumerate() {
        let (t0, t1) = (b as u64 * bucket_us, (b as u64 + 1) * bucket_us);
        let window = format!("{} to {}", secs(t0), secs(t1));
        let mut top = ya + hist_h;
        for (i, colour) in append_colours.iter().enumerate() {
            if c[i] > 0 {
                let h = c[i] as f64 / max_appends * hist_h;
                top -= h;
                svg.span(t0, t1, top, h, colour, "", &format!("{} appends {} ({window})", c[i], append_names[i]));
            }
        }
        let mut top = yr + hist_h;
        for (i, colour) in [(4, "#4e79a7"), (5, "#e15759")] {
            if c[i] > 0 {
                let h = c[i] as f64 / max_reads * hist_h;
                top -= h;
                svg.span(t0, t1, top, h, colour, "", &format!("{} reads {} ({window})", c[i], if i == 4 { "ok" } else { "failed" }));
            }
        }
    }
    svg.y = yr + hist_h + 4.0;
    key_ops
}

/// Completions per bucket of `bucket_us` over a run of `end_us`, as [appends ok, unknown,
/// fail, unavailable; reads ok, fail] (the probe's left out), and every operation on a key the
/// evidence names, by key.
fn count_completions(events: &[Event], evidence: &Evidence, end_us: u64, bucket_us: u64) -> (Vec<[u32; 6]>, BTreeMap<Key, Vec<KeyOp>>) {
    let n_buckets = (end_us / bucket_us + 1) as usize;
    let mut counts = vec![[0u32; 6]; n_buckets];
    let mut invoked_at: BTreeMap<OpId, u64> = BTreeMap::new();
    let mut key_ops: BTreeMap<Key, Vec<KeyOp>> = BTreeMap::new();
    for ev in events {
        match &ev.what {
            What::Invoke { id, .. } => {
                invoked_at.insert(*id, ev.t_us);
            }
            What::Complete { op, id, key, outcome, .. } => {
                if id.client > 0 {
                    let b = &mut counts[(ev.t_us / bucket_us) as usize];
                    let i = match (op, outcome) {
                        (ClientOp::Append, Outcome::Ok) => 0,
                        (ClientOp::Append, Outcome::Unknown) => 1,
                        (ClientOp::Append, Outcome::Fail) => 2,
                        (ClientOp::Append, Outcome::Unavailable) => 3,
                        (ClientOp::Read, Outcome::Ok) => 4,
                        (ClientOp::Read, _) => 5,
                    };
                    b[i] += 1;
                }
                if evidence.keys.contains(key) {
                    let t0 = invoked_at.get(id).copied().unwrap_or(ev.t_us);
                    key_ops.entry(key.clone()).or_default().push((t0, ev.t_us, *id, *op, *outcome));
                }
            }
            _ => {}
        }
    }
    (counts, key_ops)
}

/// A section per evidence key (the first three): each operation on it from invocation to
/// completion, coloured by outcome, the ones the evidence names outlined; of too many to
/// draw, those nearest the first evidence time in `times`.
fn draw_key_ops(svg: &mut Svg, mut key_ops: BTreeMap<Key, Vec<KeyOp>>, evidence: &Evidence, times: &[u64]) {
    let end_us = svg.end_us;
    for (key, ops) in key_ops.iter_mut().take(3) {
        // The operations nearest the evidence, if there are too many to draw.
        if ops.len() > KEY_OPS_MAX {
            let t = times.first().copied().unwrap_or(0);
            ops.sort_by_key(|o| o.0.abs_diff(t));
            ops.truncate(KEY_OPS_MAX);
            ops.sort_by_key(|o| o.0);
        }
        svg.section(&format!("operations on key {} (named by the violation)", show_key(key)));
        let intervals: Vec<(u64, u64)> = ops.iter().map(|o| (o.0, o.1.max(o.0 + end_us / 2000))).collect();
        let (rows, n_rows) = pack(&intervals, end_us / 1000);
        let base = svg.y;
        let rows_drawn = n_rows.min(12);
        for (o, row) in ops.iter().zip(&rows) {
            let y = base + (*row % rows_drawn) as f64 * 10.0;
            let colour = match (o.3, o.4) {
                (ClientOp::Append, Outcome::Ok) => "#59a14f",
                (ClientOp::Read, Outcome::Ok) => "#4e79a7",
                (_, Outcome::Unknown) => "#edc948",
                (_, Outcome::Unavailable) => "#999",
                _ => "#e15759",
            };
            let cited = evidence.ops.contains(&o.2);
            let extra = if cited { "stroke=\"#d00\" stroke-width=\"2\" class=\"cited\"" } else { "" };
            svg.span(o.0, o.1.max(o.0 + 1), y + 1.0, 7.0, colour, extra, &format!("{} {} {}: invoked {}, {} {}", o.3.name(), o.2, show_key(key), secs(o.0), o.4.name(), secs(o.1)));
        }
        svg.label(base, &format!("{} ops on {}", ops.len(), show_key(key)), "lane", "each operation from invoke to completion; red outline: named by the violation");
        svg.y = base + rows_drawn as f64 * 10.0 + 4.0;
    }
}

/// A vertical line at `t` (x `x`) across a plot `height` high, with its label `dy` px above the
/// bottom: right of the line, or left of it (anchored at its end) where it would run past the
/// plot's right edge and be clipped. The page's `layout` makes the same choice when zoomed.
/// Appends the SVG to `out`; `t` is the event's time in µs (kept as `data-t0`), `x`, `height`
/// and `dy` are px, `class` the line's CSS class.
pub fn vline(out: &mut String, height: f64, t: u64, class: &str, label: &str, x: f64, dy: f64) {
    let _ = write!(out, "<line data-t0=\"{t}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"18\" y2=\"{height:.1}\" class=\"{class}\"/>");
    let len = label.chars().count();
    let (lx, anchor) = if point_label_fits_right(x, len) { (x + 3.0, "") } else { (x - 3.0, " text-anchor=\"end\"") };
    let _ = write!(out, "<text data-t0=\"{t}\" data-len=\"{len}\" x=\"{lx:.1}\" y=\"{:.1}\" class=\"{class}-label\"{anchor}>{}</text>", height - 2.0 - dy, esc(label));
}

/// Whether a label of `len` characters (about 6.2 px each at the page's 10 px font) drawn 3 px
/// right of `x` ends inside the plot area.
fn point_label_fits_right(x: f64, len: usize) -> bool {
    x + 3.0 + len as f64 * 6.2 <= LABEL_W + PLOT_W
}

/// The lines over every lane: the workload's end (`workload_end_us`), the heal, and each
/// evidence time in `times` with its numbered marker that opens the events around it.
fn overlay(svg: &Svg, height: f64, workload_end_us: u64, heal_us: u64, times: &[u64]) -> String {
    let mut overlay = String::new();
    vline(&mut overlay, height, workload_end_us, "phase", "workload ends", svg.x(workload_end_us), 0.0);
    vline(&mut overlay, height, heal_us, "phase", "heal", svg.x(heal_us), 11.0);
    for (i, t) in times.iter().enumerate() {
        let x = svg.x(*t);
        let _ = write!(overlay, "<line data-t0=\"{t}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"18\" y2=\"{height:.1}\" class=\"evidence\"/>");
        let _ = write!(
            overlay,
            "<g data-t0=\"{t}\" transform=\"translate({x:.1},10)\" class=\"emark\" onclick=\"showEvents({i})\"><circle r=\"8\"/><text y=\"4\" text-anchor=\"middle\">{}</text><title>evidence at {}: click for the events around it</title></g>",
            i + 1,
            secs(*t)
        );
    }
    overlay
}

/// The banner at the top: every property held, or each violation's message with buttons to
/// its events and the evidence (`times`, the evidence times drawn).
fn banner(report: &RunReport, violated: &[&crate::check::Verdict], times: &[u64]) -> String {
    let mut banner = String::new();
    if violated.is_empty() {
        let _ = write!(banner, "<div class=\"ok\">every property held (outcome {:?})</div>", report.outcome());
    }
    for v in violated {
        let _ = write!(banner, "<div class=\"violation\"><b>{} VIOLATED</b>: {} ", esc(v.property), esc(v.violation.as_deref().unwrap_or("")));
        if !times.is_empty() {
            // This violation's own first evidence time, or the first of all (liveness cites none).
            let own = v.evidence.times_us.iter().filter_map(|t| times.iter().position(|u| u == t)).min().unwrap_or(0);
            let _ = write!(banner, "<button onclick=\"showEvents({own})\">events around it</button> <button onclick=\"zoomEvidence()\">zoom to the evidence</button>");
        }
        banner.push_str("</div>");
    }
    banner
}

/// The run in one line: simulated time, faults injected, operation counts and trace hash.
fn summary_line(report: &RunReport, end_us: u64) -> String {
    let faults_line: Vec<String> = report.faults.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let o = &report.ops;
    format!(
        "sim {:.1} s; faults injected: {}; operations: appends ok={} failed={} unknown={}, reads ok={} failed={}; trace_hash={:016x}",
        end_us as f64 / 1e6,
        if faults_line.is_empty() { "none".to_string() } else { faults_line.join(" ") },
        o.appends_ok, o.appends_failed, o.appends_unknown, o.reads_ok, o.reads_failed, report.trace_hash
    )
}

/// The legend under the summary: the colours of faults and node states, and the marks.
const LEGEND: &str = "<span class=sw style=\"background:#d62728\"></span>crash <span class=sw style=\"background:#ff7f0e\"></span>pause <span class=sw style=\"background:#7b3294\"></span>cut off (isolate, split) <span class=sw style=\"background:#c2a5cf\"></span>one-way cut <span class=sw style=\"background:#1f77b4\"></span>delay, hold, reorder, duplicate <span class=sw style=\"background:#8c564b\"></span>slow disk <span class=sw style=\"background:#2ca02c\"></span>operator request / move / leader term &nbsp; ▼ on a range: move (green), failover (red), split or merge (teal); black bar: a handoff's write pause; hatched: paused or preparing; red lines: the violation's evidence";

/// The drawn parts of a page, before they are put together.
struct Page {
    svg: Svg,
    /// The plot's height, px.
    height: f64,
    /// The lines over every lane ([`overlay`]).
    overlay: String,
    /// The events around each evidence time, one hidden panel each.
    panels: String,
    banner: String,
    /// The evidence times drawn, µs.
    times: Vec<u64>,
}

impl Page {
    /// The whole HTML document for `report`, a run of `opts`.
    fn html(self, report: &RunReport, opts: &RunOptions) -> String {
        let Page { svg, height, overlay, panels, banner, times } = self;
        let end_us = svg.end_us;
        let flag = opts.mutation.map_or(String::new(), |m| format!(" --mutation {}", m.name()));
        let repro = crate::run::repro_command(opts, opts.seed);
        let summary = summary_line(report, end_us);
        let header: String = report.header.iter().map(|l| esc(l)).collect::<Vec<_>>().join("\n");
        let width = LABEL_W + PLOT_W + 10.0;
        let mut html = String::with_capacity(svg.body.len() + panels.len() + 16_384);
        html.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
        let _ = write!(html, "partmap timeline: seed {} of {}{}", opts.seed, esc(&opts.scenario_label), esc(&flag));
        html.push_str("</title><style>");
        html.push_str(CSS);
        html.push_str("</style></head><body>");
        let _ = write!(html, "<h1>seed {} of {}{}</h1>", opts.seed, esc(&opts.scenario_label), esc(&flag));
        html.push_str(&banner);
        let _ = write!(html, "<p class=meta>{}<br>repro: <code>{}</code></p>", esc(&summary), esc(&repro));
        let _ = write!(html, "<details><summary>seed, knobs and drawn rates</summary><pre>{header}</pre></details>");
        let _ = write!(html, "<p class=legend>{LEGEND}</p>");
        html.push_str("<p class=controls><button onclick=\"zoomTo(0,END)\">whole run</button> <span id=window></span> — drag across the plot to zoom in, double-click to zoom out; hover for details</p>");
        let _ = write!(
            html,
            "<svg id=\"tl\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\"><defs><clipPath id=\"plot\"><rect x=\"{LABEL_W}\" y=\"0\" width=\"{PLOT_W}\" height=\"{height:.0}\"/></clipPath><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#fff\" stroke-width=\"2.5\"/></pattern></defs>"
        );
        let _ = write!(html, "<g id=\"axis\"></g><g id=\"plotarea\" clip-path=\"url(#plot)\">{}{overlay}</g><rect id=\"labelbg\" x=\"0\" y=\"0\" width=\"{LABEL_W}\" height=\"{height:.0}\" fill=\"#fff\" opacity=\"0.9\"/>{}<rect id=\"brush\" x=\"0\" y=\"0\" width=\"0\" height=\"{height:.0}\" visibility=\"hidden\"/></svg>", svg.body, svg.labels);
        html.push_str(&panels);
        html.push_str("<script>");
        let _ = write!(html, "const X0={LABEL_W},PW={PLOT_W},END={end_us},EVID=[{}];", times.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(","));
        html.push_str(SCRIPT);
        html.push_str("</script></body></html>\n");
        html
    }
}

const CSS: &str = r#"
body{font:13px/1.35 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:12px 16px;color:#222}
h1{font-size:17px;margin:0 0 6px}
.violation{background:#fde8e8;border:1px solid #d00;border-left:6px solid #d00;padding:6px 10px;margin:4px 0;font-size:13px}
.ok{background:#e8f6e8;border:1px solid #393;padding:6px 10px;margin:4px 0}
.meta{color:#444;margin:6px 0}
.legend{color:#333;font-size:12px;margin:4px 0}
.sw{display:inline-block;width:11px;height:11px;margin:0 3px 0 8px;vertical-align:-1px}
.controls{margin:4px 0;color:#444}
button{font:12px system-ui,sans-serif;padding:1px 7px;cursor:pointer}
svg{display:block;user-select:none}
text{font:11px system-ui,sans-serif;fill:#222}
text.section{font-weight:600;font-size:12px}
text.lane{fill:#333}
text.cited{fill:#c00;font-weight:700}
text.flabel{fill:#fff;font-size:10px;pointer-events:none}
text.slabel{fill:#fff;font-size:10px;pointer-events:none}
text.rlabel{fill:#fff;font-size:10px;pointer-events:none;paint-order:stroke;stroke:rgba(0,0,0,.35);stroke-width:2px}
text.tick{fill:#666;font-size:10px}
line.tick{stroke:#eee}
line.rule{stroke:#bbb}
line.phase{stroke:#555;stroke-dasharray:2 3}
text.phase-label{fill:#555;font-size:10px}
line.evidence{stroke:#d00;stroke-width:1.5;stroke-dasharray:5 3}
g.emark{cursor:pointer}
g.emark circle{fill:#d00}
g.emark text{fill:#fff;font-weight:700}
rect.inactive{opacity:.75}
rect.cited{stroke:#d00}
#brush{fill:rgba(30,120,220,.15);stroke:#1e78dc}
.events{position:fixed;left:0;right:0;bottom:0;max-height:42vh;overflow:auto;border-top:2px solid #d00;background:#fafafa;padding:4px 14px;box-shadow:0 -2px 8px rgba(0,0,0,.2)}
.events h3{font-size:13px;margin:4px 0}
.events ol{font:11px/1.3 ui-monospace,Menlo,Consolas,monospace;margin:0;padding-left:8px;list-style:none}
.events li.now{background:#fcc;font-weight:700}
.events li.hit{background:#ffd}
.events li.gap{color:#999}
details pre{font-size:11px;white-space:pre-wrap}
"#;

const SCRIPT: &str = r#"
let v0=0,v1=END;
const svg=document.getElementById('tl');
function sx(t){return X0+(t-v0)/(v1-v0)*PW;}
function fmt(us){return (us/1e6).toFixed(us<1e7&&v1-v0<2e6?3:1)+'s';}
function layout(){
  for(const el of svg.querySelectorAll('[data-t0]')){
    const t0=+el.dataset.t0, has1=el.dataset.t1!==undefined, t1=has1?+el.dataset.t1:t0;
    const x0=sx(t0), x1=sx(t1);
    switch(el.tagName){
      case 'rect': el.setAttribute('x',x0.toFixed(1)); el.setAttribute('width',Math.max(x1-x0,1).toFixed(1)); break;
      case 'line': el.setAttribute('x1',x0.toFixed(1)); el.setAttribute('x2',x0.toFixed(1)); break;
      case 'text': {
        if(!has1){ const right=x0+3+(+el.dataset.len||0)*6.2<=X0+PW;
          el.setAttribute('x',(right?x0+3:x0-3).toFixed(1)); if(right)el.removeAttribute('text-anchor'); else el.setAttribute('text-anchor','end'); break; }
        const a=Math.max(x0,X0), fits=(x1-a)>(+el.dataset.len||0)*6.2+4;
        el.setAttribute('x',(a+2).toFixed(1)); el.setAttribute('visibility',fits?'visible':'hidden'); break; }
      case 'g': { const m=/translate\([^,]+,([^)]+)\)/.exec(el.getAttribute('transform')); el.setAttribute('transform','translate('+x0.toFixed(1)+','+(m?m[1]:0)+')');
        el.setAttribute('visibility',(x0<X0-6||x0>X0+PW+6)?'hidden':'visible'); break; }
    }
  }
  axis();
  document.getElementById('window').textContent='window '+fmt(v0)+' to '+fmt(v1);
}
function axis(){
  const g=document.getElementById('axis'); g.textContent='';
  const span=(v1-v0)/1e6, steps=[0.001,0.002,0.005,0.01,0.02,0.05,0.1,0.2,0.5,1,2,5,10,20,30,60,120,300];
  let step=steps.find(s=>span/s<=16)||600;
  const h=+svg.getAttribute('height'), ns='http://www.w3.org/2000/svg';
  for(let s=Math.ceil(v0/1e6/step)*step; s<=v1/1e6+1e-9; s+=step){
    const x=sx(s*1e6); if(x<X0-1||x>X0+PW+1) continue;
    const l=document.createElementNS(ns,'line'); l.setAttribute('x1',x);l.setAttribute('x2',x);l.setAttribute('y1',18);l.setAttribute('y2',h);l.setAttribute('class','tick'); g.appendChild(l);
    const t=document.createElementNS(ns,'text'); t.setAttribute('x',x+2);t.setAttribute('y',14);t.setAttribute('class','tick'); t.textContent=(+s.toFixed(3))+'s'; g.appendChild(t);
  }
}
function zoomTo(a,b){v0=Math.max(0,Math.min(a,b));v1=Math.min(END,Math.max(a,b));if(v1-v0<1000)v1=v0+1000;layout();}
function zoomEvidence(){if(!EVID.length)return;const a=Math.min(...EVID),b=Math.max(...EVID);const pad=Math.max((b-a)*0.25,1e6);zoomTo(a-pad,b+pad);}
function hideEvents(){for(const d of document.querySelectorAll('.events'))d.hidden=true;}
function showEvents(i){hideEvents();const d=document.getElementById('events-'+i);if(d){d.hidden=false;const now=d.querySelector('li.now');if(now)d.scrollTop=Math.max(0,now.offsetTop-d.clientHeight/3);}}
let drag=null;const brush=document.getElementById('brush');
function tAt(ev){const p=svg.createSVGPoint();p.x=ev.clientX;p.y=ev.clientY;const q=p.matrixTransform(svg.getScreenCTM().inverse());return {x:q.x,t:v0+(q.x-X0)/PW*(v1-v0)};}
svg.addEventListener('mousedown',e=>{const p=tAt(e);if(p.x<X0)return;drag=p;brush.setAttribute('x',p.x);brush.setAttribute('width',0);brush.setAttribute('visibility','visible');});
svg.addEventListener('mousemove',e=>{if(!drag)return;const p=tAt(e);brush.setAttribute('x',Math.min(p.x,drag.x));brush.setAttribute('width',Math.abs(p.x-drag.x));});
window.addEventListener('mouseup',e=>{if(!drag)return;const p=tAt(e);brush.setAttribute('visibility','hidden');if(Math.abs(p.x-drag.x)>4)zoomTo(drag.t,p.t);drag=null;});
svg.addEventListener('dblclick',()=>zoomTo(0,END));
function fromHash(){const h=new URLSearchParams(location.hash.slice(1));const v=h.get('view');if(v==='all')zoomTo(0,END);else if(v){const [a,b]=v.split('-').map(Number);if(!isNaN(a)&&!isNaN(b))zoomTo(a*1e6,b*1e6);}else if(EVID.length)zoomEvidence();else layout();const e=h.get('events');if(e!==null)showEvents(+e-1);else if(!v&&EVID.length)showEvents(0);}
fromHash();
"#;
