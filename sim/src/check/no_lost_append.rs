//! `no_lost_append` (always): against the final content of every key, after the heal: every
//! acknowledged append is there exactly once; nothing that definitely failed is there; an append
//! with an unknown outcome is there at most once; nothing is there that no client ever appended;
//! and if one append was acknowledged before another was invoked, on the same key, it comes
//! first.
//!
//! Judged on two views of the final content (issue 12):
//! - **served**: what the live system answers to a final strong read, through the frontends, of
//!   every key any client tried to append to. An acknowledged append that no live owner serves is
//!   lost, even if its record sits in some stream (a child or a move target that loaded one
//!   record short).
//! - **stored**: the records of the store's synced streams, per key in stream order (the view
//!   this checker had before issue 12; kept as a second opinion).
//!
//! [`disagreement`] reports a key whose two views differ.

use super::index::{Clients, Finals, KeyNo, Keys, OpNo, View as FinalView, NONE};
use super::pool::Pooled;
use super::{secs, Violation};
use crate::events::{Event, Outcome};
use crate::workload::parse_content;
use partmap::ids::{show_key, Key, OpId};
use std::collections::BTreeMap;

/// Final content by key (absent = none).
pub type Content = BTreeMap<Key, Vec<u8>>;

/// Check the appends of `events` against `content`, the `view` (`served` or `stored`) of the
/// final content. With `only`, just those keys are judged (the served view: the keys the final
/// reads answered; a key that could not be read fails liveness instead).
///
/// Errors: the first violation, naming the view, the key, the append, its outcome and times.
pub fn check(events: &[Event], content: &Content, view: &str, only: Option<&std::collections::BTreeSet<Key>>) -> Result<(), Violation> {
    let mut clients = Clients::of(events);
    let finals = Finals::of(&[content], &mut clients);
    let keys = &clients.keys;
    let only_keys = only.map(|o| move |k: KeyNo| o.contains(keys.name(k)));
    check_indexed(&clients, &finals.view(0), view, only_keys.as_ref().map(|f| f as &dyn Fn(KeyNo) -> bool), &|_| false)
}

/// [`check`] over a history and a final content indexed once for every checker and view
/// ([`Finals::of`] numbered the content's keys into `clients.keys`). With `only`, just the keys
/// it holds are judged. Keys for which `settled` holds are not judged: another view judged them
/// on the same bytes (the same parse) and found them sound, so they would pass here too (issue
/// 13; the caller passes `|_| false` unless that view passed).
pub fn check_indexed(clients: &Clients<'_>, content: &FinalView<'_, '_>, view: &str, only: Option<&dyn Fn(KeyNo) -> bool>, settled: &dyn Fn(KeyNo) -> bool) -> Result<(), Violation> {
    if let Some((id, _)) = clients.orphans.iter().find(|(_, k)| judged(only, *k)) {
        return Err(format!("complete without invoke for {id}").into());
    }
    for (k, parsed) in content.iter() {
        if let Err(e) = parsed {
            let key = clients.keys.name(k);
            return Err(Violation::new(format!("{view}: key {}: {e}", show_key(key))).key(key));
        }
    }
    // Per append number: its position in the key being judged (NONE: not there), reset after
    // each key.
    let mut position: Pooled<Vec<u32>> = Pooled::take();
    position.resize(clients.appends.len(), NONE);
    let mut acked: Pooled<Vec<(u64, usize, OpId)>> = Pooled::take();
    let mut latest: Pooled<Vec<(usize, OpId)>> = Pooled::take();
    // Every key some append was invoked on (and judged) or the view holds, in key order.
    for &k in content.order() {
        let on_key: &[u32] = if judged(only, k) { clients.by_key.get(k) } else { &[] };
        let records = match content.get(k) {
            Some(parsed) => parsed.expect("parse errors reported above"),
            None if on_key.is_empty() => continue,
            None => content.empty(),
        };
        if settled(k) {
            continue;
        }
        let one = OneKey { clients, view, only, k, key: clients.keys.name(k), on_key, ids: records.ids, ops: records.ops };
        one.check_records(&mut position)?;
        one.check_acknowledged_present(&position)?;
        one.check_real_time_order(&position, &mut acked, &mut latest)?;
        for &n in one.ops {
            if n != NONE {
                position[n as usize] = NONE;
            }
        }
    }
    Ok(())
}

/// Whether key number `k` is judged: every key without `only`, else those it holds.
fn judged(only: Option<&dyn Fn(KeyNo) -> bool>, k: KeyNo) -> bool {
    only.is_none_or(|o| o(k))
}

/// An outcome's name, for messages: `ok`, ..., or `unknown (never completed)`.
fn outcome_name(o: Option<Outcome>) -> &'static str {
    o.map_or("unknown (never completed)", |o| o.name())
}

/// One key being judged: its final records (`ids`, and `ops` their append numbers) and the
/// appends invoked on it (`on_key`, empty when the key is not judged).
struct OneKey<'c, 'a, 'f> {
    clients: &'c Clients<'a>,
    view: &'c str,
    only: Option<&'c dyn Fn(KeyNo) -> bool>,
    k: KeyNo,
    key: &'c [u8],
    on_key: &'c [u32],
    ids: &'f [OpId],
    ops: &'f [OpNo],
}

impl OneKey<'_, '_, '_> {
    /// Every record is an append some client invoked on this key, there once, and not one that
    /// definitely failed. Notes each append's position in `position`.
    fn check_records(&self, position: &mut [u32]) -> Result<(), Violation> {
        let (clients, view, key, k) = (self.clients, self.view, self.key, self.k);
        for (i, (id, &n)) in self.ids.iter().zip(self.ops).enumerate() {
            let op = (n != NONE).then(|| &clients.appends[n as usize]).filter(|op| op.invoked && judged(self.only, op.key_no));
            let Some(op) = op else {
                return Err(Violation::new(format!("{view}: key {} holds {id}, which no client appended", show_key(key))).key(key).op(*id));
            };
            let cite = |v: Violation| {
                let v = v.key(key).op(*id).at(op.invoke_us);
                match op.complete_us {
                    Some(t) => v.at(t),
                    None => v,
                }
            };
            if op.key_no != k {
                return Err(cite(Violation::new(format!("{view}: key {} holds {id}, which was appended to key {}", show_key(key), show_key(clients.keys.name(op.key_no))))).key(clients.keys.name(op.key_no)));
            }
            let first = std::mem::replace(&mut position[n as usize], i as u32);
            if first != NONE {
                return Err(cite(Violation::new(format!("{view}: key {}: {id} ({} outcome, invoked {}) is there twice, at positions {first} and {i}", show_key(key), outcome_name(op.outcome), secs(op.invoke_us)))));
            }
            if matches!(op.outcome, Some(Outcome::Fail | Outcome::Unavailable)) {
                return Err(cite(Violation::new(format!("{view}: key {}: {id} definitely failed (completed {}) but is in the final content at position {i}", show_key(key), secs(op.complete_us.unwrap_or(0))))));
            }
        }
        Ok(())
    }

    /// Every acknowledged append on this key is in its final content.
    fn check_acknowledged_present(&self, position: &[u32]) -> Result<(), Violation> {
        for &n in self.on_key {
            let op = &self.clients.appends[n as usize];
            if op.outcome == Some(Outcome::Ok) && position[n as usize] == NONE {
                return Err(Violation::new(format!(
                    "{}: key {}: {} was acknowledged (invoked {}, completed {}) but is not in the final content ({} records)",
                    self.view, show_key(self.key), op.id, secs(op.invoke_us), secs(op.complete_us.unwrap_or(0)), self.ids.len()
                ))
                .at(op.invoke_us)
                .at(op.complete_us.unwrap_or(0))
                .key(self.key)
                .op(op.id));
            }
        }
        Ok(())
    }

    /// Real-time order: every append acknowledged before `b` was invoked precedes `b`. The
    /// acknowledged appends sorted by completion, with a running maximum of their positions,
    /// answer each `b` with one binary search (linear in the history, not quadratic). `acked`
    /// and `latest` are scratch buffers, refilled here.
    fn check_real_time_order(&self, position: &[u32], acked: &mut Vec<(u64, usize, OpId)>, latest: &mut Vec<(usize, OpId)>) -> Result<(), Violation> {
        let appends = &self.clients.appends;
        acked.clear();
        acked.extend(self.on_key.iter().map(|&n| (n, &appends[n as usize])).filter(|(_, op)| op.outcome == Some(Outcome::Ok)).map(|(n, op)| (op.complete_us.unwrap_or(0), position[n as usize] as usize, op.id)));
        acked.sort_unstable();
        latest.clear();
        for &(_, pos, id) in acked.iter() {
            let best = latest.last().copied().filter(|(p, _)| *p >= pos).unwrap_or((pos, id));
            latest.push(best);
        }
        for &n in self.on_key {
            let op = &appends[n as usize];
            let pos_b = position[n as usize];
            if pos_b == NONE {
                continue;
            }
            let n = acked.partition_point(|(done, _, _)| *done < op.invoke_us);
            if n == 0 {
                continue;
            }
            let (pos_a, a) = latest[n - 1];
            if pos_a > pos_b as usize {
                let done = acked.iter().find(|(_, _, id)| *id == a).map_or(0, |x| x.0);
                let b = op.id;
                return Err(Violation::new(format!(
                    "{}: key {}: {a} was acknowledged at {} before {b} was invoked at {}, but comes after it (positions {pos_a} and {pos_b})",
                    self.view, show_key(self.key), secs(done), secs(op.invoke_us)
                ))
                .at(done)
                .at(op.invoke_us)
                .key(self.key)
                .op(a)
                .op(b));
            }
        }
        Ok(())
    }
}

/// The first key whose served and stored final contents differ, in words; `None` when they
/// agree on every key that was read (`served` holds every key the final reads answered, with
/// no content as empty).
pub fn disagreement(served: &Content, stored: &Content) -> Option<String> {
    let empty = Vec::new();
    for key in served.keys() {
        let (a, b) = (served.get(key).unwrap_or(&empty), stored.get(key).unwrap_or(&empty));
        if a != b {
            return Some(differ(key, a, b));
        }
    }
    None
}

/// The words for `key`'s served content `a` differing from its stored content `b`.
fn differ(key: &[u8], a: &[u8], b: &[u8]) -> String {
    let count = |c: &[u8]| parse_content(c).map_or(0, |v| v.len());
    format!("key {}: the live system serves {} records, the store's streams hold {}", show_key(key), count(a), count(b))
}

/// [`disagreement`] over the final contents parsed once (`finals`, [`Finals::of`] of
/// `[served, stored]`, with the keys it numbered in `keys`): a key the two views hold as the very
/// same bytes (one parse for both) agrees without comparing them again.
pub fn disagreement_indexed(finals: &Finals<'_>, keys: &Keys<'_>) -> Option<String> {
    let (served, stored) = (finals.view(0), finals.view(1));
    for (k, _) in served.iter() {
        if finals.same_in(0, 1, k) {
            continue;
        }
        let (a, b) = (served.bytes(k).unwrap_or(&[]), stored.bytes(k).unwrap_or(&[]));
        if a != b {
            return Some(differ(keys.name(k), a, b));
        }
    }
    None
}
