//! What the checkers share, built once per run (issue 13): every key of the history numbered
//! once ([`Keys`]), the clients' appends and reads from one pass over the history ([`Clients`]:
//! per-key state in vectors indexed by key number, not maps keyed by byte strings), each key's
//! final content parsed once ([`Finals`]: a key whose served and stored contents are the same
//! bytes is parsed once for both views), and the announced maps each diffed once against the
//! one before ([`Maps`]), so that the checkers that follow the maps (`single_writer`,
//! `map_tiles`) judge only what each version changed.

use crate::events::{Event, Outcome, Sys, What};
use crate::workload::{content_hash, parse_content, ContentHasher};
use super::pool::{Pooled, Reuse};
use rustc_hash::FxHashMap;
use hashbrown::hash_table::{Entry, HashTable};
use partmap::event::ClientOp;
use partmap::ids::{Key, OpId};
use partmap::map::{PartitionMap, RangeRow, RangeState, Reshape, Transfer};
use std::collections::BTreeMap;
use std::hash::Hasher;

/// A key's number in [`Keys`]: dense, from 0, in first-seen order.
pub type KeyNo = u32;

/// An append's number in [`Clients::appends`]: dense, from 0, in first-seen order.
pub type OpNo = u32;

/// No number: a record whose id no client appended, or a key a view does not hold.
pub const NONE: u32 = u32::MAX;

/// The keys of one run, each numbered once, so that the checkers keep per-key state in vectors
/// indexed by [`KeyNo`] (one hash per event, then array accesses) instead of maps keyed by byte
/// strings (a search of string comparisons per access).
#[derive(Default)]
pub struct Keys<'a> {
    /// Key numbers, found by the key's FxHash and compared by name (the numbering is first-seen
    /// order: the hash never decides an order).
    table: Pooled<HashTable<KeyNo>>,
    names: Vec<&'a Key>,
    /// Every key's bytes, one after the other (compared here, in a few cache lines, rather
    /// than through `names` into the events where each key was first seen).
    bytes: Pooled<Vec<u8>>,
    /// Where each key's bytes end in `bytes` (key `n` starts where key `n - 1` ends).
    ends: Pooled<Vec<u32>>,
}

/// Key `n`'s bytes in `bytes`, whose keys end at `ends`.
fn slot<'b>(bytes: &'b [u8], ends: &[u32], n: KeyNo) -> &'b [u8] {
    let n = n as usize;
    let start = if n == 0 { 0 } else { ends[n - 1] as usize };
    &bytes[start..ends[n] as usize]
}

/// The first 8 bytes of `key` (zero-padded) as a big-endian integer: `prefix(a) < prefix(b)`
/// implies `a < b`.
fn prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

fn key_hash(key: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(key);
    h.finish()
}

impl<'a> Keys<'a> {
    /// The number of `key`, numbering it if it is new.
    pub fn intern(&mut self, key: &'a Key) -> KeyNo {
        let (bytes, ends) = (&self.bytes, &self.ends);
        let hash = key_hash(key);
        match self.table.entry(hash, |n| slot(bytes, ends, *n) == key.as_slice(), |n| key_hash(slot(bytes, ends, *n))) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let n = self.names.len() as KeyNo;
                self.names.push(key);
                self.bytes.extend_from_slice(key);
                self.ends.push(self.bytes.len() as u32);
                e.insert(n);
                n
            }
        }
    }

    /// [`Keys::intern`], trying `likely` first (the number the caller expects `key` to have,
    /// e.g. its append's invocation's): compared, not hashed, when it names the same bytes.
    pub fn intern_likely(&mut self, likely: Option<KeyNo>, key: &'a Key) -> KeyNo {
        match likely {
            Some(k) if self.bytes_of(k) == key.as_slice() => k,
            _ => self.intern(key),
        }
    }

    /// The number of `key`, if it has one.
    pub fn get(&self, key: &[u8]) -> Option<KeyNo> {
        self.table.find(key_hash(key), |n| self.bytes_of(*n) == key).copied()
    }

    /// The bytes of the key numbered `n` (the same as [`Keys::name`]'s, from this table's own
    /// copy).
    pub fn bytes_of(&self, n: KeyNo) -> &[u8] {
        slot(&self.bytes, &self.ends, n)
    }

    /// The key numbered `n`.
    pub fn name(&self, n: KeyNo) -> &'a Key {
        self.names[n as usize]
    }

    /// How many keys are numbered.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no key is numbered.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Every key's number, in key (byte) order: the order the checkers judge keys in, so that
    /// the first violation they report does not depend on numbering.
    pub fn sorted(&self) -> Pooled<Vec<KeyNo>> {
        // Sorted by each key's first 8 bytes as one big-endian integer (zero-padded: it orders
        // keys as their bytes do wherever it differs), the bytes deciding only ties; keys are
        // distinct, so the order is the bytes' whatever the sort.
        let mut by_prefix: Pooled<Vec<(u64, KeyNo)>> = Pooled::take();
        by_prefix.extend((0..self.names.len() as KeyNo).map(|n| (prefix(self.bytes_of(n)), n)));
        by_prefix.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| self.bytes_of(a.1).cmp(self.bytes_of(b.1))));
        let mut order: Pooled<Vec<KeyNo>> = Pooled::take();
        order.extend(by_prefix.iter().map(|(_, n)| *n));
        order
    }
}

/// Items grouped by key number (compressed rows: one vector of items, one of where each key's
/// run of them starts), each key's items in the order they were given.
pub struct PerKey<T: 'static> {
    starts: Pooled<Vec<u32>>,
    items: Pooled<Vec<T>>,
}

impl<T: Copy + 'static> PerKey<T> {
    /// `pairs` grouped by key (stable: each key's items keep their order); `keys` bounds the
    /// key numbers.
    fn of(keys: usize, pairs: &[(KeyNo, T)]) -> PerKey<T> {
        let (mut starts, mut items): (Pooled<Vec<u32>>, Pooled<Vec<T>>) = (Pooled::take(), Pooled::take());
        starts.resize(keys + 1, 0);
        for (k, _) in pairs {
            starts[*k as usize + 1] += 1;
        }
        for i in 0..keys {
            starts[i + 1] += starts[i];
        }
        // Each item goes to its key's next free place (`starts[k]` counts up through the key's
        // run, and is set back after).
        if let Some((_, first)) = pairs.first() {
            items.resize(pairs.len(), *first);
        }
        for (k, t) in pairs {
            items[starts[*k as usize] as usize] = *t;
            starts[*k as usize] += 1;
        }
        for i in (0..keys).rev() {
            starts[i + 1] = starts[i];
        }
        if let Some(s) = starts.first_mut() {
            *s = 0;
        }
        PerKey { starts, items }
    }

    /// Where key `k`'s items sit in [`PerKey::items`] (empty for a key with none, or one
    /// numbered after these were grouped).
    pub fn span(&self, k: KeyNo) -> std::ops::Range<usize> {
        let k = k as usize;
        if k + 1 < self.starts.len() {
            self.starts[k] as usize..self.starts[k + 1] as usize
        } else {
            0..0
        }
    }

    /// Key `k`'s items.
    pub fn get(&self, k: KeyNo) -> &[T] {
        &self.items[self.span(k)]
    }

    /// Every item, grouped by key in number order.
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// The key numbers with at least one item, ascending.
    pub fn keys(&self) -> impl Iterator<Item = KeyNo> + '_ {
        self.starts.windows(2).enumerate().filter(|(_, w)| w[1] > w[0]).map(|(k, _)| k as KeyNo)
    }
}

/// Values by operation id. The ids clients make (client numbers below [`IdMap::CLIENTS`],
/// sequence numbers below the history's length: every operation has an event) sit in one
/// vector per client indexed by sequence number, so that a lookup reads next to the client's
/// neighbouring operations instead of a random hash bucket; any other id (a mutant's made-up
/// one) goes to a hash map. Only looked up, never iterated: no order comes from it.
pub struct IdMap<V: Copy + 'static> {
    dense: Pooled<Dense<V>>,
    sparse: Pooled<FxHashMap<OpId, V>>,
    /// Sequence numbers from this one on go to `sparse`.
    limit: u64,
}

impl<V: Copy + 'static> IdMap<V> {
    /// Client numbers from this one on go to the hash map.
    pub const CLIENTS: u32 = 256;

    /// An empty map for the ids of a history of `events` events.
    pub fn new(events: usize) -> IdMap<V> {
        IdMap { dense: Pooled::take(), sparse: Pooled::take(), limit: events as u64 + 1 }
    }

    fn dense_slot(&self, id: &OpId) -> bool {
        id.client < Self::CLIENTS && id.seq < self.limit
    }

    /// The value of `id`, if it has one.
    pub fn get(&self, id: &OpId) -> Option<V> {
        if self.dense_slot(id) {
            self.dense.0.get(id.client as usize).and_then(|d| d.get(id.seq as usize)).copied().flatten()
        } else {
            self.sparse.get(id).copied()
        }
    }

    /// The value of `id`, set to `v` first if it has none.
    pub fn get_or_insert(&mut self, id: OpId, v: V) -> V {
        self.get(&id).unwrap_or_else(|| {
            self.insert(id, v);
            v
        })
    }

    /// Set the value of `id`.
    pub fn insert(&mut self, id: OpId, v: V) {
        if self.dense_slot(&id) {
            let (client, seq) = (id.client as usize, id.seq as usize);
            let dense = &mut self.dense.0;
            if dense.len() <= client {
                dense.resize_with(client + 1, Vec::new);
            }
            let d = &mut dense[client];
            if d.len() <= seq {
                d.resize(seq + 1, None);
            }
            d[seq] = Some(v);
        } else {
            self.sparse.insert(id, v);
        }
    }
}

/// [`IdMap`]'s vectors, one per client number, kept for reuse as they are (client `c` finds its
/// own vector's room again in the next run).
pub struct Dense<V>(Vec<Vec<Option<V>>>);

impl<V> Default for Dense<V> {
    fn default() -> Self {
        Dense(Vec::new())
    }
}

impl<V: 'static> Reuse for Dense<V> {
    fn clear_for_reuse(&mut self) {
        self.0.iter_mut().for_each(Vec::clear);
    }
    fn room(&self) -> usize {
        self.0.iter().map(Vec::capacity).sum()
    }
}

/// One append id the history names: its key, when it was invoked and completed, and how.
#[derive(Clone, Copy, Debug)]
pub struct Append {
    /// Its id.
    pub id: OpId,
    /// The number of the key appended to (for one completed without an invocation, the
    /// completion's key).
    pub key_no: KeyNo,
    /// Whether the history has its invocation (before any completion of it).
    pub invoked: bool,
    /// Invocation time, µs of simulated time (0 if not invoked).
    pub invoke_us: u64,
    /// Completion time, if it completed after its invocation.
    pub complete_us: Option<u64>,
    /// Its outcome, if it completed after its invocation.
    pub outcome: Option<Outcome>,
}

/// One successful client read.
#[derive(Clone, Copy, Debug)]
pub struct Read {
    /// The read's id.
    pub id: OpId,
    /// The number of the key read.
    pub key_no: KeyNo,
    /// Invocation time, µs (0 if the history has no invocation for it).
    pub invoke_us: u64,
    /// The staleness bound, µs (0: a strong read).
    pub bound_us: u64,
    /// When it was answered, µs.
    pub answered_us: u64,
    /// Length of the content it returned, bytes.
    pub len: u64,
    /// [`content_hash`] of the content it returned.
    pub hash: u64,
}

/// The clients' operations of one history, indexed once.
pub struct Clients<'a> {
    /// Every key of the client operations, and every key a server admitted an append to or
    /// answered a strong read of (`single_writer` follows those); [`Finals::of`] numbers the
    /// final contents' keys too.
    pub keys: Keys<'a>,
    /// Every append id the history invokes or completes, by [`OpNo`]. An id invoked again
    /// starts over (its earlier completion forgotten); one completed before any invocation is
    /// numbered with `invoked` false (and listed in `orphans`).
    pub appends: Pooled<Vec<Append>>,
    numbers: IdMap<OpNo>,
    /// Invoked appends per key, in id order.
    pub by_key: PerKey<OpNo>,
    /// Acknowledged appends per key (the completion's key): (completion time, number), in
    /// completion (history) order.
    pub acked: PerKey<(u64, OpNo)>,
    /// Completions of appends with no invocation before them, in history order, with the
    /// completion's key number.
    pub orphans: Vec<(OpId, KeyNo)>,
    /// Successful reads, in history order.
    pub reads: Pooled<Vec<Read>>,
    /// The key number of every `admit` and strong `read_served` event, in history order
    /// (`single_writer` reads them with those events instead of looking each key up again).
    pub served: Pooled<Vec<KeyNo>>,
}

impl<'a> Clients<'a> {
    /// One pass over `events`.
    pub fn of(events: &'a [Event]) -> Clients<'a> {
        let mut keys = Keys::default();
        let mut appends: Pooled<Vec<Append>> = Pooled::take();
        let mut numbers: IdMap<OpNo> = IdMap::new(events.len());
        let mut orphans = Vec::new();
        let mut reads: Pooled<Vec<Read>> = Pooled::take();
        let mut acked: Pooled<Vec<(KeyNo, (u64, OpNo))>> = Pooled::take();
        let mut read_invoked: IdMap<(u64, u64)> = IdMap::new(events.len());
        let mut served: Pooled<Vec<KeyNo>> = Pooled::take();
        for ev in events {
            match &ev.what {
                What::Invoke { op: ClientOp::Append, id, key, .. } => {
                    let op = Append { id: *id, key_no: keys.intern(key), invoked: true, invoke_us: ev.t_us, complete_us: None, outcome: None };
                    let n = numbers.get_or_insert(*id, appends.len() as OpNo);
                    if n as usize == appends.len() {
                        appends.push(op);
                    } else {
                        appends[n as usize] = op;
                    }
                }
                What::Invoke { op: ClientOp::Read, id, bound_ms, .. } => {
                    read_invoked.insert(*id, (ev.t_us, bound_ms.unwrap_or(0) * 1000));
                }
                What::Complete { op: ClientOp::Append, id, outcome, key, .. } => {
                    // Its key is nearly always its invocation's.
                    let key_no = keys.intern_likely(numbers.get(id).map(|n| appends[n as usize].key_no), key);
                    let n = numbers.get_or_insert(*id, appends.len() as OpNo);
                    if n as usize == appends.len() {
                        appends.push(Append { id: *id, key_no, invoked: false, invoke_us: 0, complete_us: None, outcome: None });
                    }
                    let op = &mut appends[n as usize];
                    if op.invoked {
                        op.complete_us = Some(ev.t_us);
                        op.outcome = Some(*outcome);
                    } else {
                        orphans.push((*id, key_no));
                    }
                    if *outcome == Outcome::Ok {
                        acked.push((key_no, (ev.t_us, n)));
                    }
                }
                What::Complete { op: ClientOp::Read, id, key, outcome: Outcome::Ok, value_len, value_hash, .. } => {
                    let (invoke_us, bound_us) = read_invoked.get(id).unwrap_or((0, 0));
                    reads.push(Read { id: *id, key_no: keys.intern(key), invoke_us, bound_us, answered_us: ev.t_us, len: *value_len, hash: *value_hash });
                }
                What::Sys(Sys::Admit { key, id, .. }) => {
                    // An admitted append's key is nearly always its invocation's.
                    served.push(keys.intern_likely(numbers.get(id).map(|n| appends[n as usize].key_no), key));
                }
                What::Sys(Sys::ReadServed { key, bounded: false, .. }) => {
                    served.push(keys.intern(key));
                }
                _ => {}
            }
        }
        let mut by_key: Pooled<Vec<(KeyNo, OpNo)>> = Pooled::take();
        by_key.extend(appends.iter().enumerate().filter(|(_, op)| op.invoked).map(|(n, op)| (op.key_no, n as OpNo)));
        // Grouped by key, then each key's few appends sorted by id (ids are distinct: one
        // number each), rather than one sort of them all.
        let mut by_key_grouped = PerKey::of(keys.len(), &by_key);
        for k in 0..keys.len() as KeyNo {
            let span = by_key_grouped.span(k);
            by_key_grouped.items[span].sort_unstable_by_key(|n| appends[*n as usize].id);
        }
        let acked_grouped = PerKey::of(keys.len(), &acked);
        Clients { keys, appends, numbers, by_key: by_key_grouped, acked: acked_grouped, orphans, reads, served }
    }

    /// The number of append id `id`, if the history names it.
    pub fn number(&self, id: &OpId) -> Option<OpNo> {
        self.numbers.get(id)
    }
}

/// One key's final content, parsed (borrowed from [`Finals`]).
#[derive(Clone, Copy, Debug)]
pub struct KeyContent<'f> {
    /// The records' ids, in content order.
    pub ids: &'f [OpId],
    /// Each record's append number ([`NONE`]: an id the history never names).
    pub ops: &'f [OpNo],
    /// (end, hash) of every record-boundary prefix, the empty one first: ends strictly grow;
    /// record `i` ends at `prefixes[i + 1].0`.
    pub prefixes: &'f [(u64, u64)],
}

impl KeyContent<'_> {
    /// Whether `(len, hash)` is a record-boundary prefix of the content.
    pub fn has_prefix(&self, len: u64, hash: u64) -> bool {
        self.prefixes.binary_search_by_key(&len, |p| p.0).is_ok_and(|i| self.prefixes[i].1 == hash)
    }
}

/// One parse of one content: where its records and prefixes sit in [`Finals`], or its error.
struct Parsed {
    records: std::ops::Range<usize>,
    prefixes: std::ops::Range<usize>,
    error: Option<String>,
}

/// One view's keys: its parse per key number, and its keys in key order.
struct Slots {
    parse: Pooled<Vec<u32>>,
    keys: Pooled<Vec<KeyNo>>,
}

/// The final contents of one run's views, each key parsed once: [`Finals::view`] gives a view's
/// key → parsed content.
pub struct Finals<'a> {
    /// Parse 0 is the content of a key with none.
    parsed: Pooled<Vec<Parsed>>,
    /// The bytes of each parse.
    bytes: Vec<&'a [u8]>,
    ids: Pooled<Vec<OpId>>,
    ops: Pooled<Vec<OpNo>>,
    prefixes: Pooled<Vec<(u64, u64)>>,
    views: Vec<Slots>,
    /// Every key number of the clients' keys, in key order.
    order: Pooled<Vec<KeyNo>>,
}

/// One view of [`Finals`]: key → parsed content (or the parse error).
#[derive(Clone, Copy)]
pub struct View<'f, 'a> {
    finals: &'f Finals<'a>,
    slots: &'f Slots,
}

impl<'f> View<'f, '_> {
    /// The keys of this view with their parsed contents, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (KeyNo, Result<KeyContent<'f>, &'f str>)> + '_ {
        self.slots.keys.iter().map(|k| (*k, self.finals.content(self.slots.parse[*k as usize])))
    }

    /// The parsed content of key `k`, if the view has it.
    pub fn get(&self, k: KeyNo) -> Option<Result<KeyContent<'f>, &'f str>> {
        let p = *self.slots.parse.get(k as usize)?;
        (p != NONE).then(|| self.finals.content(p))
    }

    /// Whether the view has key `k`.
    pub fn contains(&self, k: KeyNo) -> bool {
        self.slots.parse.get(k as usize).is_some_and(|p| *p != NONE)
    }

    /// The content of key `k` if the view has it and it parsed, else the empty content.
    pub fn content_or_empty(&self, k: KeyNo) -> KeyContent<'f> {
        match self.get(k) {
            Some(Ok(c)) => c,
            _ => self.empty(),
        }
    }

    /// The content of a key with none.
    pub fn empty(&self) -> KeyContent<'f> {
        self.finals.content(0).expect("parse 0 is the empty content")
    }

    /// The raw bytes of key `k`, if the view has it.
    pub fn bytes(&self, k: KeyNo) -> Option<&'f [u8]> {
        let p = *self.slots.parse.get(k as usize)?;
        (p != NONE).then(|| self.finals.bytes[p as usize])
    }

    /// Every key number of the run, in key order (a view's own keys are [`View::iter`]'s).
    pub fn order(&self) -> &'f [KeyNo] {
        &self.finals.order
    }
}

impl<'a> Finals<'a> {
    /// No parse and no view yet (not even parse 0, the content of a key with none, which
    /// [`Finals::of`] adds first).
    pub fn empty() -> Finals<'a> {
        Finals { parsed: Pooled::take(), bytes: Vec::new(), ids: Pooled::take(), ops: Pooled::take(), prefixes: Pooled::take(), views: Vec::new(), order: Pooled::take() }
    }

    /// Parse every key of `contents` (the views, in order), numbering new keys into
    /// `clients.keys`; a key whose bytes equal the same key's in an earlier view reuses that
    /// parse.
    pub fn of(contents: &[&'a BTreeMap<Key, Vec<u8>>], clients: &mut Clients<'a>) -> Finals<'a> {
        let mut f = Finals::empty();
        f.parse(&[], clients);
        for content in contents {
            let mut keys: Pooled<Vec<KeyNo>> = Pooled::take();
            let mut parse: Pooled<Vec<u32>> = Pooled::take();
            for (key, bytes) in content.iter() {
                let k = clients.keys.intern(key);
                let same = f.views.iter().map(|v| v.parse.get(k as usize).copied().unwrap_or(NONE)).find(|p| *p != NONE && f.bytes[*p as usize] == bytes.as_slice());
                let p = match same {
                    Some(p) => p,
                    None => f.parse(bytes, clients),
                };
                keys.push(k);
                parse.push(p);
            }
            let mut slots: Pooled<Vec<u32>> = Pooled::take();
            slots.resize(clients.keys.len(), NONE);
            for (k, p) in keys.iter().zip(parse.iter()) {
                slots[*k as usize] = *p;
            }
            f.views.push(Slots { parse: slots, keys });
        }
        for v in &mut f.views {
            v.parse.resize(clients.keys.len(), NONE);
        }
        f.order = clients.keys.sorted();
        f
    }

    /// Parse `bytes` (a key's final content) into the next parse number, which it returns
    /// (read it back with [`Finals::content`]); op ids are numbered by `clients`.
    pub fn parse(&mut self, bytes: &'a [u8], clients: &Clients<'a>) -> u32 {
        let (r0, p0) = (self.ids.len(), self.prefixes.len());
        let error = if self.parse_records(bytes, clients) {
            None
        } else {
            // Not of the plain shape: drop what the one pass pushed; the general parse reads
            // the content or words its error.
            self.ids.truncate(r0);
            self.ops.truncate(r0);
            self.prefixes.truncate(p0);
            match parse_content(bytes) {
                Err(e) => Some(e),
                Ok(ids) => {
                    self.prefixes.push((0, content_hash(&[])));
                    let (mut end, mut hash) = (0usize, ContentHasher::new());
                    for piece in ids.iter().zip(bytes.split_inclusive(|b| *b == b';')).map(|(_, piece)| piece) {
                        end += piece.len();
                        hash.extend(piece);
                        self.prefixes.push((end as u64, hash.finish()));
                    }
                    self.ops.extend(ids.iter().map(|id| clients.number(id).unwrap_or(NONE)));
                    self.ids.extend(ids);
                    None
                }
            }
        };
        self.parsed.push(Parsed { records: r0..self.ids.len(), prefixes: p0..self.prefixes.len(), error });
        self.bytes.push(bytes);
        (self.parsed.len() - 1) as u32
    }

    /// One pass over `bytes` for a content made only of well-formed records, as
    /// [`parse_content`] reads them (`c<client>.<seq>`, any `-` padding, each record ended by
    /// `;`, the last one's `;` optional): pushes each record's id, append number and prefix,
    /// with no allocation. `false` at the first byte of any other shape (what was pushed is
    /// then dropped by the caller, and [`parse_content`] parses the content or words its error).
    fn parse_records(&mut self, bytes: &[u8], clients: &Clients<'a>) -> bool {
        /// The decimal number at `bytes[*i..]` (at least one digit, no overflow), moving `i`
        /// past it.
        fn digits(bytes: &[u8], i: &mut usize) -> Option<u64> {
            let start = *i;
            let mut v: u64 = 0;
            while let Some(d) = bytes.get(*i).filter(|b| b.is_ascii_digit()) {
                v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                *i += 1;
            }
            (*i > start).then_some(v)
        }
        self.prefixes.push((0, content_hash(&[])));
        let mut hash = ContentHasher::new();
        let mut i = 0;
        while i < bytes.len() {
            let start = i;
            if bytes[i] != b'c' {
                return false;
            }
            i += 1;
            let Some(client) = digits(bytes, &mut i).and_then(|c| u32::try_from(c).ok()) else { return false };
            if bytes.get(i) != Some(&b'.') {
                return false;
            }
            i += 1;
            let Some(seq) = digits(bytes, &mut i) else { return false };
            while bytes.get(i) == Some(&b'-') {
                i += 1;
            }
            match bytes.get(i) {
                Some(b';') => i += 1,
                None => {}
                Some(_) => return false,
            }
            hash.extend(&bytes[start..i]);
            self.prefixes.push((i as u64, hash.finish()));
            let id = OpId { client, seq };
            self.ids.push(id);
            self.ops.push(clients.number(&id).unwrap_or(NONE));
        }
        true
    }

    /// Parse number `p`'s content (its op ids and prefix hashes), or its parse error.
    pub fn content(&self, p: u32) -> Result<KeyContent<'_>, &str> {
        let parsed = &self.parsed[p as usize];
        match &parsed.error {
            Some(e) => Err(e),
            None => Ok(KeyContent { ids: &self.ids[parsed.records.clone()], ops: &self.ops[parsed.records.clone()], prefixes: &self.prefixes[parsed.prefixes.clone()] }),
        }
    }

    /// Every key number of the clients' keys (those of the final contents included), in key
    /// order.
    pub fn order(&self) -> &[KeyNo] {
        &self.order
    }

    /// Whether views `a` and `b` hold key `k` with the same bytes (parsed once for both): a
    /// checker that judged the key in one view finds the same in the other.
    pub fn same_in(&self, a: usize, b: usize, k: KeyNo) -> bool {
        let (x, y) = (self.views[a].parse[k as usize], self.views[b].parse[k as usize]);
        x != NONE && x == y
    }

    /// View number `n` (in the order given to [`Finals::of`]).
    pub fn view(&self, n: usize) -> View<'_, 'a> {
        View { finals: self, slots: &self.views[n] }
    }
}

/// What one map version changed against the map before it in the same sequence (the history's
/// announced maps, or the authority's durable log): the checkers that follow a sequence of maps
/// judge only these (issue 13), since everything else is as the previous map had it.
#[derive(Debug, Default)]
pub struct MapDiff<'a> {
    /// Rows that are new or differ from the previous map's row of the same id, in id order
    /// (every row, for the first map).
    pub rows: Vec<&'a RangeRow>,
    /// Whether some row of the previous map is missing from this one (a restored older map).
    pub rows_removed: bool,
    /// Split and merge journal entries that are new or changed, in key order.
    pub reshapes: Vec<&'a Reshape>,
    /// Move journal entries that are new or changed, in key order.
    pub transfers: Vec<&'a Transfer>,
    /// Whether the live rows' bounds may differ from the previous map's: some row was added or
    /// removed, or changed its bounds or went to or from `Retired`; always true for the first
    /// map and after version 0. A map whose live bounds are the previous map's tiles exactly
    /// when that one did.
    pub tiling_changed: bool,
}

/// Calls `on` with every entry of `next` that is new or differs from `prev`'s under the same
/// key (with `prev`'s entry, if any, else `prev_other`'s), in key order; returns whether some
/// key of `prev` is missing from `next` and from `next_other`. One merge walk over both. (The
/// `other` maps are the other half of a table split in two, as [`partmap::map::Rows`] keeps its
/// live and retired rows: a row that moved from one half to the other is changed, not removed.)
fn changed<'p, 'a, K: Ord, V: PartialEq>(
    prev: &'p BTreeMap<K, V>,
    next: &'a BTreeMap<K, V>,
    prev_other: Option<&'p BTreeMap<K, V>>,
    next_other: Option<&BTreeMap<K, V>>,
    mut on: impl FnMut(Option<&'p V>, &'a V),
) -> bool {
    let mut removed = false;
    let mut old = prev.iter().peekable();
    for (k, v) in next {
        let mut before = None;
        while let Some(&(ok, ov)) = old.peek() {
            match ok.cmp(k) {
                std::cmp::Ordering::Less => {
                    removed |= next_other.is_none_or(|o| !o.contains_key(ok));
                    old.next();
                }
                std::cmp::Ordering::Equal => {
                    before = Some(ov);
                    old.next();
                    break;
                }
                std::cmp::Ordering::Greater => break,
            }
        }
        let before = before.or_else(|| prev_other.and_then(|o| o.get(k)));
        if before != Some(v) {
            on(before, v);
        }
    }
    removed || old.any(|(ok, _)| next_other.is_none_or(|o| !o.contains_key(ok)))
}

impl<'a> MapDiff<'a> {
    /// What `next` changed against `prev` (`None`: `next` is the first map of its sequence).
    pub fn between(prev: Option<&PartitionMap>, next: &'a PartitionMap) -> MapDiff<'a> {
        let mut d = MapDiff { tiling_changed: prev.is_none_or(|p| p.version == 0), ..MapDiff::default() };
        if prev.is_some_and(|p| std::ptr::eq(p, next)) {
            // The very same copy: nothing changed.
            return d;
        }
        let empty = PartitionMap::default();
        let old = prev.unwrap_or(&empty);
        let retired = |r: &RangeRow| r.state == RangeState::Retired;
        let mut tiling_changed = false;
        let mut on_row = |before: Option<&partmap::map::SharedRow>, row: &'a partmap::map::SharedRow| {
            let row: &'a RangeRow = row;
            d.rows.push(row);
            tiling_changed |= before.is_none_or(|b| b.start != row.start || b.end != row.end || retired(b) != retired(row));
        };
        // The live rows, then the retired ones only if this version has other retired rows
        // than the previous (it shares their copy otherwise): the cost is the live rows'.
        let (ol, or, nl, nr) = (old.rows.live(), old.rows.retired(), next.rows.live(), next.rows.retired());
        d.rows_removed = changed(ol, nl, Some(or), Some(nr), &mut on_row);
        if !old.rows.same_lineage(&next.rows) {
            d.rows_removed |= changed(or, nr, Some(ol), Some(nl), &mut on_row);
            d.rows.sort_unstable_by_key(|r| r.id);
        }
        d.tiling_changed |= tiling_changed || d.rows_removed;
        changed(&old.reshapes, &next.reshapes, None, None, |_, r| d.reshapes.push(r));
        changed(&old.transfers, &next.transfers, None, None, |_, t| d.transfers.push(t));
        d
    }
}

/// One map the history announces (a `map_commit` or `map_restored` event), with what it
/// changed against the announced map before it.
#[derive(Debug)]
pub struct MapStep<'a> {
    /// When, µs of simulated time.
    pub t_us: u64,
    /// The map.
    pub map: &'a PartitionMap,
    /// `true` for `map_restored`, `false` for `map_commit`.
    pub restored: bool,
    /// What it changed.
    pub diff: MapDiff<'a>,
}

/// The announced maps of one history, in history order, each diffed against the one before
/// it once, for every checker that follows them.
#[derive(Debug, Default)]
pub struct Maps<'a> {
    /// One step per `map_commit` and `map_restored` event, in history order.
    pub steps: Vec<MapStep<'a>>,
    /// The first step of each map copy (by address: versions are shared copies).
    by_copy: FxHashMap<*const PartitionMap, usize>,
}

impl<'a> Maps<'a> {
    /// One pass over `events`.
    pub fn of(events: &'a [Event]) -> Maps<'a> {
        let mut steps: Vec<MapStep<'a>> = Vec::new();
        for ev in events {
            let (map, restored) = match &ev.what {
                What::Sys(Sys::MapCommit { map, .. }) => (map, false),
                What::Sys(Sys::MapRestored { map, .. }) => (map, true),
                _ => continue,
            };
            let diff = MapDiff::between(steps.last().map(|s| s.map), map);
            steps.push(MapStep { t_us: ev.t_us, map, restored, diff });
        }
        let mut by_copy = FxHashMap::with_capacity_and_hasher(steps.len(), Default::default());
        for (i, s) in steps.iter().enumerate() {
            by_copy.entry(s.map as *const PartitionMap).or_insert(i);
        }
        Maps { steps, by_copy }
    }

    /// The diff already made of the very copy `next` against the very copy `prev` (the
    /// authority's durable log holds the copies its commits announced), if the history has
    /// them one after the other.
    pub fn diff_of(&self, prev: Option<&PartitionMap>, next: &PartitionMap) -> Option<&MapDiff<'a>> {
        let &i = self.by_copy.get(&(next as *const PartitionMap))?;
        let before = i.checked_sub(1).map(|j| self.steps[j].map);
        let same = match (before, prev) {
            (None, None) => true,
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            _ => false,
        };
        same.then(|| &self.steps[i].diff)
    }
}
