//! Question 5's managers' half: an operator's leader transfer (the step before restarting a
//! manager in a rolling upgrade), and the rolling restart of the managers. Measured from the
//! history: from each `leader_released` to the next `leader` grant, and whether the standby
//! (another manager) got it; per manager restarted, its turn's takeover, write pauses and
//! client waits ([`restarts`]).

use crate::events::{Event, Sys};

/// One release and the grant after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Takeover {
    /// From the release to the next grant, ms.
    pub gap_ms: f64,
    /// The next term went to another manager than the one that released.
    pub standby: bool,
}

/// Every release in `events` that a grant followed.
pub fn takeovers(events: &[Event]) -> Vec<Takeover> {
    takeovers_at(events).into_iter().map(|(_, k)| k).collect()
}

/// One manager's turn in a rolling restart: the operator's leader transfer, then the restart
/// of the manager that stood aside (a crash of a manager, and the transfer before it).
#[derive(Clone, Debug, PartialEq)]
pub struct Restart {
    /// The manager restarted (`manager-N`).
    pub manager: String,
    /// It held the last term granted when it was crashed (a restart of the leader, not of a
    /// manager that stood aside).
    pub was_leader: bool,
    /// From the release to the next grant in its turn, ms (`None`: no handover in it).
    pub takeover_ms: Option<f64>,
    /// The longest write pause at the servers of a handoff that paused in its turn, ms (0 with
    /// none).
    pub write_pause_ms: f64,
    /// Handoffs that paused in its turn.
    pub handoffs: usize,
    /// The longest time one range took no append while clients tried, among the waits that
    /// began in its turn, ms.
    pub range_unavailable_ms: f64,
}

/// Every manager restart in `events`, each with its turn: from the leader transfer before its
/// crash (or the crash, without one) to the next transfer after the crash (or `end_us`, the
/// workload's end). `handoffs` are the run's published handoffs; the waits are
/// [`crate::check::availability::range_waits`].
pub fn restarts(events: &[Event], handoffs: &[crate::measure::handoff::Handoff], end_us: u64) -> Vec<Restart> {
    use crate::events::What;
    use crate::fault::{Fault, Request};
    let mut transfers: Vec<u64> = Vec::new();
    let mut crashes: Vec<(u64, String, bool)> = Vec::new();
    let mut leader: Option<u32> = None;
    for ev in events {
        match &ev.what {
            What::Fault { fault, .. } => match &**fault {
                Fault::Request(Request::LeaderTransfer) => transfers.push(ev.t_us),
                Fault::Crash(node) if node.starts_with("manager-") => {
                    let led = leader.is_some_and(|m| format!("manager-{m}") == *node);
                    crashes.push((ev.t_us, node.clone(), led));
                }
                _ => {}
            },
            What::Sys(Sys::Leader { manager, .. }) => leader = Some(*manager),
            What::Sys(Sys::LeaderReleased { .. }) => leader = None,
            _ => {}
        }
    }
    let waits = crate::check::availability::range_waits(events, end_us);
    let taken = takeovers_at(events);
    crashes
        .iter()
        .map(|(at, manager, was_leader)| {
            let from = transfers.iter().copied().filter(|t| t <= at).max().unwrap_or(*at);
            let to = transfers.iter().copied().filter(|t| t > at).min().unwrap_or(end_us).max(from);
            let span = from..to;
            let paused: Vec<&crate::measure::handoff::Handoff> = handoffs.iter().filter(|h| span.contains(&h.paused_at_us)).collect();
            Restart {
                manager: manager.clone(),
                was_leader: *was_leader,
                takeover_ms: taken.iter().find(|(t, _)| span.contains(t)).map(|(_, k)| k.gap_ms),
                write_pause_ms: paused.iter().map(|h| h.server_pause_ms).fold(0.0, f64::max),
                handoffs: paused.len(),
                range_unavailable_ms: waits.iter().filter(|(_, s, _)| span.contains(s)).map(|(_, s, e)| (e - s) as f64 / 1000.0).fold(0.0, f64::max),
            }
        })
        .collect()
}

/// [`takeovers`] with the time of each release, µs.
fn takeovers_at(events: &[Event]) -> Vec<(u64, Takeover)> {
    let mut released: Option<(u64, u32)> = None;
    let mut out = Vec::new();
    for ev in events {
        match ev.sys() {
            Some(Sys::LeaderReleased { manager, .. }) => released = Some((ev.t_us, *manager)),
            Some(Sys::Leader { manager, .. }) => {
                if let Some((t, old)) = released.take() {
                    out.push((t, Takeover { gap_ms: (ev.t_us - t) as f64 / 1000.0, standby: *manager != old }));
                }
            }
            _ => {}
        }
    }
    out
}
