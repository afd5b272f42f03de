//! Question 2, refresh errors: every reason a frontend made another attempt of a client's
//! operation (the `after` of each `routed` event past the first attempt), how often, and what
//! the appends that met it cost their clients in attempts and latency against the appends
//! answered on their first attempt. Latency is the client's: from its `invoke` to its
//! `complete`, both in the history; appends are matched to their attempts by idempotency id.

use crate::events::{Event, Outcome, Sys, What};
use partmap::event::{ClientOp, Retry};
use partmap::frontend::{next_step, Route, Step};
use partmap::ids::{Epoch, RangeId, ServerId};
use partmap::msg::Refusal;
use std::collections::BTreeMap;

/// One client append, as its attempts and its answer show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Append {
    /// Invocation to completion at the client, ms.
    pub latency_ms: f64,
    /// Attempts the frontends sent.
    pub sends: u32,
    /// Every reason of a further attempt, in order (a kind per retry, [`Retry::kind`]).
    pub retries: Vec<&'static str>,
    /// Acknowledged.
    pub ok: bool,
}

/// The refresh figures of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Refresh {
    /// Further attempts by reason, appends and reads.
    pub retries: BTreeMap<&'static str, u64>,
    /// Attempts sent in all, appends and reads.
    pub sends: u64,
    /// Every completed client append that the frontends sent at least once.
    pub appends: Vec<Append>,
}

/// Whether a frontend reads the map again after an attempt ended this way (at once, or after
/// the backoff of `NotReady`), from the frontend's own rule ([`next_step`]).
pub fn refreshes(kind: &Retry) -> bool {
    let route = Route { range: RangeId(1), owner: ServerId(1), epoch: Epoch(1) };
    match kind {
        Retry::First | Retry::Unknown => false,
        Retry::NoAnswer | Retry::NoOwner => true,
        Retry::Refused(Refusal::NotReady) => true,
        Retry::Refused(r) => matches!(next_step(route, r), Step::Refresh | Step::Follow(_)),
    }
}

/// The refresh figures of `events`.
pub fn measure(events: &[Event]) -> Refresh {
    let mut out = Refresh::default();
    // (client, seq) -> (invoked µs, sends, retries).
    let mut open: BTreeMap<(u32, u64), (u64, u32, Vec<&'static str>)> = BTreeMap::new();
    for ev in events {
        match &ev.what {
            What::Invoke { op: ClientOp::Append, id, .. } if id.client > 0 => {
                open.insert((id.client, id.seq), (ev.t_us, 0, Vec::new()));
            }
            What::Sys(Sys::Routed { id, attempt, after, .. }) => {
                out.sends += 1;
                if *attempt > 0 {
                    *out.retries.entry(after.kind()).or_default() += 1;
                }
                if let Some(a) = id.and_then(|id| open.get_mut(&(id.client, id.seq))) {
                    a.1 += 1;
                    if *attempt > 0 {
                        a.2.push(after.kind());
                    }
                }
            }
            What::Complete { op: ClientOp::Append, id, outcome, .. } if id.client > 0 => {
                if let Some((t0, sends, retries)) = open.remove(&(id.client, id.seq)) {
                    if sends > 0 {
                        out.appends.push(Append { latency_ms: ev.t_us.saturating_sub(t0) as f64 / 1000.0, sends, retries, ok: *outcome == Outcome::Ok });
                    }
                }
            }
            _ => {}
        }
    }
    out
}
