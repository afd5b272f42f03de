//! `reads_consistent` (always): a read returns a prefix of the key's final content (at a record
//! boundary). A strong read's prefix holds every append to the key acknowledged before the read
//! was invoked; a bounded-staleness read's, every append acknowledged before (invocation −
//! bound). Reads are recorded as length and hash of the returned content; the invocation
//! carries the level (`strong` or `bounded`) and the bound in ms. The final content is the served
//! view (the final strong reads after the heal), so a read is judged against what the live
//! system serves.

use super::index::{Clients, Finals, KeyNo, OpNo, Read, View as FinalView, NONE};
use super::no_lost_append::Content;
use super::pool::Pooled;
use super::{secs, Violation};
use crate::events::Event;
use partmap::ids::{show_key, Key};
use std::collections::BTreeSet;

/// Check every successful read in `events` against `finals` (key → final content).
///
/// Errors: the first read that is not a prefix of the final content, or misses an append that
/// was acknowledged before it began; with the key, the client, times and lengths.
/// With `only`, just the reads of those keys are judged (the served view: the keys the final
/// reads answered).
pub fn check(events: &[Event], finals: &Content, only: Option<&BTreeSet<Key>>) -> Result<(), Violation> {
    let mut clients = Clients::of(events);
    let indexed = Finals::of(&[finals], &mut clients);
    let keys = &clients.keys;
    let only_keys = only.map(|o| move |k: KeyNo| o.contains(keys.name(k)));
    check_indexed(&clients, &indexed.view(0), only_keys.as_ref().map(|f| f as &dyn Fn(KeyNo) -> bool), &|_| false)
}

/// [`check`] over a history and a final content indexed once for every checker and view
/// ([`Finals::of`] numbered the content's keys into `clients.keys`). With `only`, just the
/// reads of the keys it holds are judged. The reads of keys for which `settled` holds are not
/// judged: another view judged them against the same bytes (the same parse) and found them
/// sound, so they would pass here too (issue 13; the caller passes `|_| false` unless that
/// view passed).
pub fn check_indexed(clients: &Clients<'_>, finals: &FinalView<'_, '_>, only: Option<&dyn Fn(KeyNo) -> bool>, settled: &dyn Fn(KeyNo) -> bool) -> Result<(), Violation> {
    for (k, parsed) in finals.iter() {
        if let Err(e) = parsed {
            let key = clients.keys.name(k);
            return Err(Violation::new(format!("key {}: {e}", show_key(key))).key(key));
        }
    }
    let mut furthest: Pooled<Vec<(u64, OpNo, u64)>> = Pooled::take();
    furthest_acknowledged(clients, finals, settled, &mut furthest);
    for read in clients.reads.iter() {
        if only.is_some_and(|o| !o(read.key_no)) || settled(read.key_no) {
            continue;
        }
        check_read(clients, finals, &furthest, read)?;
    }
    Ok(())
}

/// Fill `furthest` (empty, from the pool): per key not `settled`, over its acknowledgements in
/// completion order, the one ending furthest into the final content among the first n (the
/// latest of equals) as (completed, append number, end byte; `u64::MAX`: not there), so a read
/// is judged with one binary search, linear in the history rather than quadratic per key.
/// Laid out as `clients.acked` is (settled keys' entries are never read).
fn furthest_acknowledged(clients: &Clients<'_>, finals: &FinalView<'_, '_>, settled: &dyn Fn(KeyNo) -> bool, furthest: &mut Vec<(u64, OpNo, u64)>) {
    let acked = clients.acked.items();
    furthest.resize(acked.len(), (0, NONE, 0));
    // Per append number: where its record ends in the key being judged (its last occurrence;
    // u64::MAX: not there), reset after each key.
    let mut end_of: Pooled<Vec<u64>> = Pooled::take();
    end_of.resize(clients.appends.len(), u64::MAX);
    for k in clients.acked.keys().filter(|k| !settled(*k)) {
        let fin = finals.content_or_empty(k);
        for (i, &n) in fin.ops.iter().enumerate() {
            if n != NONE {
                end_of[n as usize] = fin.prefixes[i + 1].0;
            }
        }
        let span = clients.acked.span(k);
        let mut best: Option<(u64, OpNo, u64)> = None;
        for (slot, &(done, a)) in furthest[span.clone()].iter_mut().zip(&acked[span]) {
            let end = end_of[a as usize];
            if best.is_none_or(|b| end >= b.2) {
                best = Some((done, a, end));
            }
            *slot = best.expect("set above");
        }
        for &n in fin.ops {
            if n != NONE {
                end_of[n as usize] = u64::MAX;
            }
        }
    }
}

/// `bounded(500 ms) ` for a bounded-staleness read of `bound_us`, nothing for a strong one.
fn level_words(bound_us: u64) -> String {
    if bound_us > 0 { format!("bounded({} ms) ", bound_us / 1000) } else { String::new() }
}

/// One read: a prefix of the key's final content at a record boundary, holding every append
/// acknowledged before its horizon (its invocation, less its bound); `furthest` as
/// [`furthest_acknowledged`] fills it.
fn check_read(clients: &Clients<'_>, finals: &FinalView<'_, '_>, furthest: &[(u64, OpNo, u64)], read: &Read) -> Result<(), Violation> {
    let Read { id, key_no, invoke_us: began, bound_us, answered_us, len, hash } = *read;
    let fin = finals.content_or_empty(key_no);
    let key = clients.keys.name(key_no);
    // Everything acknowledged before this instant must be in the answer.
    let horizon = began.saturating_sub(bound_us);
    if !fin.has_prefix(len, hash) {
        return Err(Violation::new(format!(
            "key {}: {}read {id} (invoked {}, answered {}) returned {len} bytes that are not a prefix of the final content",
            show_key(key), level_words(bound_us), secs(began), secs(answered_us)
        ))
        .at(began)
        .at(answered_us)
        .key(key)
        .op(id));
    }
    // Acknowledgements come in time order: only those before the horizon count, and the
    // one ending furthest into the content decides.
    let span = clients.acked.span(key_no);
    let n = clients.acked.items()[span.clone()].partition_point(|(done, _)| *done < horizon);
    if let Some((done, missing, end)) = n.checked_sub(1).map(|i| furthest[span.start + i]) {
        if end > len {
            let missing = clients.appends[missing as usize].id;
            return Err(Violation::new(format!(
                "key {}: {}read {id} (invoked {}) returned {len} bytes, missing {missing}, acknowledged at {} (ends at byte {})",
                show_key(key), level_words(bound_us), secs(began), secs(done), if end == u64::MAX { "?".to_string() } else { end.to_string() }
            ))
            .at(began)
            .at(answered_us)
            .at(done)
            .key(key)
            .op(id)
            .op(missing));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Outcome, What};
    use crate::workload::{content_hash, payload};
    use partmap::ids::OpId;
    use partmap::event::ClientOp;

    fn id(seq: u64) -> OpId {
        OpId { client: 1, seq }
    }

    fn invoke(t_us: u64, op: ClientOp, seq: u64, bound_ms: Option<u64>) -> Event {
        Event { t_us, what: What::Invoke { op, id: id(seq), key: b"k1".to_vec(), bound_ms } }
    }

    fn acked(t_us: u64, seq: u64) -> Event {
        Event { t_us, what: What::Complete { op: ClientOp::Append, id: id(seq), key: b"k1".to_vec(), outcome: Outcome::Ok, reason: String::new(), value_len: 0, value_hash: 0 } }
    }

    fn read_done(t_us: u64, seq: u64, value: &[u8]) -> Event {
        let what = What::Complete { op: ClientOp::Read, id: id(seq), key: b"k1".to_vec(), outcome: Outcome::Ok, reason: String::new(), value_len: value.len() as u64, value_hash: content_hash(value) };
        Event { t_us, what }
    }

    #[test]
    fn reads_consistent_flags_a_stale_and_a_foreign_read() {
        let a = payload(id(1), 16);
        let b = payload(id(2), 16);
        let fin = Content::from([(b"k1".to_vec(), [a.clone(), b.clone()].concat())]);
        let mut evs = vec![invoke(1, ClientOp::Append, 1, None), acked(2, 1), invoke(3, ClientOp::Read, 3, None), read_done(4, 3, &a)];
        check(&evs, &fin, None).unwrap();
        // A read that began after the ack must see it.
        evs.push(invoke(5, ClientOp::Read, 4, None));
        evs.push(read_done(6, 4, &[]));
        assert!(check(&evs, &fin, None).unwrap_err().contains("missing c1.1"));
        evs.pop();
        evs.push(read_done(6, 4, &b));
        assert!(check(&evs, &fin, None).unwrap_err().contains("not a prefix"));
    }

    #[test]
    fn reads_consistent_lets_a_bounded_read_miss_only_what_is_newer_than_its_bound() {
        let a = payload(id(1), 16);
        let fin = Content::from([(b"k1".to_vec(), a.clone())]);
        // Acknowledged at 2 ms; a bounded(1 ms) read invoked at 2.5 ms may miss it ...
        let mut evs = vec![invoke(1_000, ClientOp::Append, 1, None), acked(2_000, 1), invoke(2_500, ClientOp::Read, 3, Some(1)), read_done(2_600, 3, &[])];
        check(&evs, &fin, None).unwrap();
        // ... one invoked at 3.5 ms may not.
        evs.push(invoke(3_500, ClientOp::Read, 4, Some(1)));
        evs.push(read_done(3_600, 4, &[]));
        assert!(check(&evs, &fin, None).unwrap_err().contains("bounded(1 ms) read c1.4"));
    }

    /// Issue 13: a stale read shows in both views when they hold the same bytes (the stored
    /// view skips a key only when the served view passed on it), and in the view whose bytes
    /// it contradicts when they differ.
    #[test]
    fn reads_consistent_stored_view_skips_only_keys_the_served_view_passed() {
        let (a, b) = (payload(id(1), 16), payload(id(2), 16));
        let both = Content::from([(b"k1".to_vec(), [a.clone(), b.clone()].concat())]);
        let evs = vec![invoke(1, ClientOp::Append, 1, None), acked(2, 1), invoke(3, ClientOp::Read, 3, None), read_done(4, 3, &[])];
        let of = |views: &[crate::check::View], view: &str| views.iter().find(|v| v.property == "reads_consistent" && v.view == view).and_then(|v| v.violation.clone());
        let views = crate::check::judge(&evs, &both, &both, &[], &Default::default());
        assert!(of(&views, "served").is_some_and(|v| v.contains("missing c1.1")));
        assert!(of(&views, "stored").is_some_and(|v| v.contains("missing c1.1")), "{views:?}");
        // A read of a: served holds a, the streams b then a: the stored view alone finds that
        // the read is not a prefix of what it holds.
        let evs = vec![invoke(1, ClientOp::Append, 1, None), acked(2, 1), invoke(3, ClientOp::Read, 3, None), read_done(4, 3, &a)];
        let views = crate::check::judge(&evs, &Content::from([(b"k1".to_vec(), a.clone())]), &Content::from([(b"k1".to_vec(), [b, a].concat())]), &[], &Default::default());
        assert!(of(&views, "served").is_none(), "{views:?}");
        assert!(of(&views, "stored").is_some_and(|v| v.contains("not a prefix")), "{views:?}");
    }
}
