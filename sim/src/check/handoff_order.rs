//! `handoff_in_order` (always, judged from the history): every handoff (a move, split or
//! merge, and a failover) takes its steps in the order the protocol gives them (DESIGN.md, "The
//! history and the verdicts"), and no server acts on a step of a handoff that is not, or no
//! longer, the range's. Five clauses:
//!
//! 1. **A pause belongs to a journaled flow.** A server pauses range `r` at epoch `e` only if
//!    some map version up to then journaled a move of `r` from `e`, or a split or merge with `r`
//!    at `e` among its parents. (The leader journals the pause before it sends one.) A pause
//!    delayed in the network from a flow that ended must be refused once the range moved on to
//!    a newer epoch; acting on it pauses a range that no flow will ever resume.
//! 2. **A commit follows the drain.** A move commits only after its source reported the range
//!    drained at the move's source epoch, and a split or merge only after every parent's owner
//!    reported that parent drained at its journaled epoch, both since the flow was journaled.
//!    A commit without it hands the range on while the old owner may still admit appends or
//!    answer strong reads (a pause that was never answered, a timeout taken for success).
//! 3. **A release follows the commit.** A server drops a range as moved (the leader's release)
//!    only once the map current at the authority no longer names it the range's live owner at
//!    that epoch. A release delayed in the network from an earlier flow must be refused once the
//!    server holds the range at a newer epoch; acting on it leaves the map's owner without the
//!    range.
//!
//! 4. **A failover waits for the session.** The map gives a live range owned by server `S`
//!    under session `x` to another server or session, other than by committing a move, only
//!    once the authority ended session `x` (its lease expired, or `S` registered anew after a
//!    restart: a `renewed` of a newer session, or a map version naming one). Before that `S` may still serve the range under its lease; a leader that
//!    reassigns early (a missed renewal or a missing load report taken for a death) makes two
//!    owners at once, which the other properties see only if a request reaches the old owner in
//!    the window.
//!
//! 5. **An owner serves behind its fence.** A server activates range `r` at epoch `e` only
//!    once the store raised `r`'s stream fence to at least `e`: a new owner (a move's target, a
//!    child of a split or merge, a failover's or rollback's owner) must keep older writers out
//!    before it serves, or an old owner's append in flight lands after the new owner loaded the
//!    stream (`single_writer` sees that only when such an append happens to be in flight).
//!
//! The checker needs no timing bound: each clause is judged at the step itself, so a wrong
//! step is caught even when the next move of the range heals it a moment later (which is why
//! these steps escaped `no_stuck_range` and the liveness probe).
//!
//! Read from the servers' `paused`, `drained`, `dropped`, `activated` and `renewed` events, the
//! store's `fence` events, and the authority's `lease_expired` and `session_expired` events (and
//! the `session` and `session_expired` records it restored from its log after a crash) and
//! the maps of its `map_commit` and `map_restored` events (rows and the journal of moves, splits
//! and merges).

use super::{secs, Violation};
use crate::events::{Event, Sys, What};
use partmap::map::{PartitionMap, RangeState};
use std::collections::BTreeMap;

/// `(range, epoch)`, ids as numbers.
type RangeAt = (u64, u64);

/// What the checker remembers of the history so far.
#[derive(Default)]
struct Seen {
    /// Every flow source the journal ever named, `(range, epoch)`, with when it was first
    /// journaled, µs.
    journaled: BTreeMap<RangeAt, u64>,
    /// Every `drained` report, `(server, range, epoch)`, with its last time, µs.
    drained: BTreeMap<(u32, u64, u64), u64>,
    /// Every session the authority expired, `(server, session)`.
    expired: std::collections::BTreeSet<(u32, u64)>,
    /// The highest fence the store raised on each stream.
    fences: BTreeMap<u64, u64>,
    /// The newest session each server renewed, or a map named it under: the authority keeps one
    /// session per server, so granting it ended every older one.
    newest: BTreeMap<u32, u64>,
}

impl Seen {
    /// Whether the authority ended `server`'s `session`.
    fn ended(&self, server: u32, session: u64) -> bool {
        self.expired.contains(&(server, session)) || self.newest.get(&server).is_some_and(|&n| n > session)
    }

    /// Note that the authority granted `server` its `session`.
    fn granted(&mut self, server: u32, session: u64) {
        let newest = self.newest.entry(server).or_default();
        *newest = (*newest).max(session);
    }

    /// Note the flow sources `map` journals, at `t_us`.
    fn journal(&mut self, map: &PartitionMap, t_us: u64) {
        for t in map.transfers.values() {
            self.journaled.entry((t.range.0, t.from_epoch.0)).or_insert(t_us);
        }
        for r in map.reshapes.values() {
            for (p, e) in &r.parents {
                self.journaled.entry((p.0, e.0)).or_insert(t_us);
            }
        }
    }

    /// Whether `server` reported `range` drained at `epoch` since the flow from there was
    /// journaled.
    fn drained_since_journaled(&self, server: u32, range: u64, epoch: u64) -> bool {
        let since = self.journaled.get(&(range, epoch)).copied().unwrap_or(0);
        self.drained.get(&(server, range, epoch)).is_some_and(|&t| t >= since)
    }
}

/// The handoff sources `before` journals that `after` committed, as `(server, range, epoch,
/// what)`: a move whose row now carries its target and new epoch, and every parent of a split
/// or merge whose parents are all retired in `after`.
fn committed_sources(before: &PartitionMap, after: &PartitionMap) -> Vec<(u32, u64, u64, &'static str)> {
    let mut out = Vec::new();
    for t in before.transfers.values() {
        let Some(row) = after.rows.get(&t.range) else { continue };
        if row.epoch == t.epoch && row.owner == Some(t.to.0) && !after.transfers.contains_key(&t.range) {
            out.push((t.from.0 .0, t.range.0, t.from_epoch.0, "move"));
        }
    }
    for (first, r) in &before.reshapes {
        if after.reshapes.contains_key(first) {
            continue;
        }
        let retired = r.parents.iter().all(|(p, _)| after.rows.get(p).is_some_and(|row| row.state == RangeState::Retired));
        if !retired {
            continue; // aborted, or dropped by a failover of a parent
        }
        for (p, e) in &r.parents {
            let Some(owner) = before.rows.get(p).and_then(|row| row.owner) else { continue };
            out.push((owner.0, p.0, e.0, r.kind.name()));
        }
    }
    out
}

/// The live rows of `before` that `after` gives to another server or session other than by
/// committing the move `before` journals for them, as `(range, old owner, its session, new
/// owner, its session)`.
fn reassigned(before: &PartitionMap, after: &PartitionMap) -> Vec<(u64, u32, u64, u32, u64)> {
    let mut out = Vec::new();
    for (id, old) in before.rows.live() {
        let (Some(from), Some(new)) = (old.owner, after.rows.get(id)) else { continue };
        if new.state == RangeState::Retired {
            continue;
        }
        let Some(to) = new.owner else { continue };
        if (to, new.owner_session) == (from, old.owner_session) {
            continue;
        }
        let moved = before.transfers.get(id).is_some_and(|t| t.to == (to, new.owner_session) && t.epoch == new.epoch);
        if !moved {
            out.push((id.0, from.0, old.owner_session, to.0, new.owner_session));
        }
    }
    out
}

/// Clauses 2 and 4 at the commit of `after` over `before`, at `t` µs: every committed source
/// drained, every reassigned owner's session ended.
fn judge_commit(seen: &mut Seen, before: &PartitionMap, after: &PartitionMap, t: u64) -> Result<(), Violation> {
    for (s, r, e, what) in committed_sources(before, after) {
        if !seen.drained_since_journaled(s, r, e) {
            let v = format!(
                "the {what} of r{r} from server-{s} at epoch {e} committed at {} (map version {}) but server-{s} never reported r{r} drained at epoch {e} since the {what} was journaled",
                secs(t),
                after.version
            );
            return Err(Violation::new(v).at(t).server(s).range(r));
        }
    }
    // A map naming a server's session shows the authority granted it.
    for row in after.rows.live().values() {
        if let Some(o) = row.owner {
            seen.granted(o.0, row.owner_session);
        }
    }
    for (r, s, x, to, y) in reassigned(before, after) {
        if !seen.ended(s, x) {
            let v = format!(
                "map version {} gave r{r} to server-{to} (session {y}) at {}, but the authority had not ended server-{s}'s session {x}, under which server-{s} owned it: its lease had not expired and it had not registered anew",
                after.version,
                secs(t)
            );
            return Err(Violation::new(v).at(t).server(s).server(to).range(r));
        }
    }
    Ok(())
}

/// Clauses 1, 3 and 5 at a server's step `sys` at `t` µs, with the map current at the
/// authority (`map`).
fn judge_server_step(seen: &Seen, map: Option<&PartitionMap>, sys: &Sys, t: u64) -> Result<(), Violation> {
    let (server, range, why) = match sys {
        Sys::Paused { server, range, epoch } if !seen.journaled.contains_key(&(range.0, epoch.0)) => {
            (server, range, format!("paused r{} at epoch {} at {}, but no map version up to then journaled a move, split or merge of r{} from epoch {}: a pause with no flow to resume it", range.0, epoch.0, secs(t), range.0, epoch.0))
        }
        Sys::Dropped { server, range, epoch, reason } if reason == "moved" => {
            let Some(m) = map.filter(|m| m.rows.get(range).is_some_and(|row| row.state != RangeState::Retired && row.owner == Some(*server) && row.epoch == *epoch)) else { return Ok(()) };
            (server, range, format!("dropped r{} at epoch {} as moved at {}, but the map current at the authority (version {}) still names it the range's owner at that epoch: no move, split or merge of r{} from there had committed", range.0, epoch.0, secs(t), m.version, range.0))
        }
        Sys::Activated { server, range, epoch, .. } => {
            let fence = seen.fences.get(&range.0).copied().unwrap_or(0);
            if fence >= epoch.0 {
                return Ok(());
            }
            (server, range, format!("activated r{} at epoch {} at {}, but the store had raised r{}'s fence only to epoch {fence}: the new owner serves before its fence keeps older writers out", range.0, epoch.0, secs(t), range.0))
        }
        _ => return Ok(()),
    };
    Err(Violation::new(format!("server-{} {why}", server.0)).at(t).server(server.0).range(range.0))
}

/// The check over `events`. Errors: the first step out of order, with the server, range,
/// epoch and time.
pub fn check(events: &[Event]) -> Result<(), Violation> {
    let mut seen = Seen::default();
    let mut map: Option<&PartitionMap> = None;
    for ev in events {
        let t = ev.t_us;
        let What::Sys(sys) = &ev.what else { continue };
        match sys {
            Sys::MapCommit { map: after, .. } | Sys::MapRestored { map: after, .. } => {
                let after: &PartitionMap = after;
                if let Some(before) = map {
                    judge_commit(&mut seen, before, after, t)?;
                }
                seen.journal(after, t);
                map = Some(after);
            }
            // An expiry the authority logged and then found in its log on recovery counts as
            // the end of the session, though its crash came before the `lease_expired` event.
            Sys::LeaseExpired { server, session } | Sys::SessionExpired { server, session } | Sys::Restored { record: partmap::event::Restored::SessionExpired { server, session }, .. } => {
                seen.expired.insert((server.0, *session));
            }
            Sys::Renewed { server, session, ok: true, .. } | Sys::Restored { record: partmap::event::Restored::Session { server, session }, .. } => seen.granted(server.0, *session),
            Sys::Fence { stream, epoch, .. } => {
                let f = seen.fences.entry(stream.0).or_default();
                *f = (*f).max(epoch.0);
            }
            Sys::Drained { server, range, epoch, .. } => {
                seen.drained.insert((server.0, range.0, epoch.0), t);
            }
            _ => judge_server_step(&seen, map, sys, t)?,
        }
    }
    Ok(())
}
