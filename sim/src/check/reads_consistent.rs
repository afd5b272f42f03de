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
