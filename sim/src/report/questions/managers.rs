//! Question 3, two managers: how far leader terms overlapped. The authority grants term T+1
//! only once term T's lease ran out or was released, so the overlap that can exist is a deposed
//! leader still acting: its map writes (a `map_commit` of term T after T+1 was granted would be
//! an overlap the authority allowed; a `cas_refused` of term T is one it stopped) and its
//! commands to servers (`stale_command` of term T: a server that had seen a newer term refused
//! it). The window of commands in flight from two terms is from the grant of T+1 to the last of
//! term T's writes or commands to arrive anywhere. Two managers committing under one term is
//! the overlap of their commit spans in that term.

use crate::events::{Event, Sys};
use std::collections::BTreeMap;

/// One handover from a term to the next.
#[derive(Clone, Debug, PartialEq)]
pub struct Handover {
    /// The older term.
    pub term: u64,
    /// When the next term was granted, µs.
    pub next_granted_us: u64,
    /// The older term's last accepted map write after the next term was granted, ms after
    /// the grant (the authority let two terms write); `None`: none.
    pub commit_overlap_ms: Option<f64>,
    /// The older term's last map write or command that arrived (and was refused) after the
    /// next term was granted, ms after the grant; `None`: none arrived.
    pub in_flight_ms: Option<f64>,
    /// The older term's map writes refused after the grant, and commands refused by servers.
    pub refused: u64,
}

/// The manager figures of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Managers {
    /// Every handover, in term order.
    pub handovers: Vec<Handover>,
    /// The longest time two managers both committed map versions under one term, ms (the
    /// overlap of their first-to-last commit spans); 0 when no term had two.
    pub shared_term_ms: f64,
}

/// The manager figures of `events`.
pub fn measure(events: &[Event]) -> Managers {
    // Term -> grant time; term -> (manager -> (first, last) commit µs); late activity.
    let mut granted: BTreeMap<u64, u64> = BTreeMap::new();
    let mut commits: BTreeMap<u64, BTreeMap<u32, (u64, u64)>> = BTreeMap::new();
    let mut refused: Vec<(u64, u64)> = Vec::new();
    for ev in events {
        match ev.sys() {
            Some(Sys::Leader { leader_epoch, .. }) => {
                granted.entry(*leader_epoch).or_insert(ev.t_us);
            }
            Some(Sys::MapCommit { leader_epoch, manager, .. }) if *leader_epoch > 0 => {
                let span = commits.entry(*leader_epoch).or_default().entry(*manager).or_insert((ev.t_us, ev.t_us));
                span.1 = ev.t_us;
            }
            Some(Sys::CasRefused { leader_epoch, .. }) if *leader_epoch > 0 => refused.push((*leader_epoch, ev.t_us)),
            Some(Sys::StaleCommand { leader_epoch, .. }) => refused.push((*leader_epoch, ev.t_us)),
            _ => {}
        }
    }
    let mut out = Managers::default();
    let terms: Vec<(u64, u64)> = granted.iter().map(|(e, t)| (*e, *t)).collect();
    for w in terms.windows(2) {
        let ((term, _), (_, next)) = (w[0], w[1]);
        let last_commit = commits.get(&term).and_then(|m| m.values().map(|s| s.1).max());
        let late: Vec<u64> = refused.iter().filter(|(e, t)| *e == term && *t > next).map(|(_, t)| *t).collect();
        let ms = |t: u64| (t - next) as f64 / 1000.0;
        out.handovers.push(Handover {
            term,
            next_granted_us: next,
            commit_overlap_ms: last_commit.filter(|t| *t > next).map(ms),
            in_flight_ms: late.iter().max().map(|t| ms(*t)),
            refused: late.len() as u64,
        });
    }
    for by_manager in commits.values() {
        let spans: Vec<(u64, u64)> = by_manager.values().copied().collect();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                let (lo, hi) = (a.0.max(b.0), a.1.min(b.1));
                if hi > lo {
                    out.shared_term_ms = out.shared_term_ms.max((hi - lo) as f64 / 1000.0);
                }
            }
        }
    }
    out
}
