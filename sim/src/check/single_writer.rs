//! `single_writer` (always):
//! 1. per stream, the effects at the store carry non-decreasing epochs (in stream order);
//! 2. each effect's epoch was given by the map to the server that wrote it;
//! 3. no two servers hold valid authority over a key at the same instant: once a server
//!    activated a range at epoch `e`, no other server admits an append, or answers a strong
//!    read, for a key in it at an older epoch (a bounded-staleness read may be answered by a
//!    just-deposed owner: `reads_consistent` judges it against its bound);
//! 4. no effect lands in a stream below a fence raised before it: an effect at an offset at or
//!    past a fence's sealed length carries at least that fence's epoch (clauses 1 and 4 judge
//!    the stream the store holds: an effect that a later incarnation of the store shows the
//!    stream too short to hold was lost in a restart and is not in it; losing it is
//!    `no_lost_append`'s finding);
//! 5. no effect at an epoch below `e` lands past the stream prefix a server loaded when it
//!    activated the range at `e`, after that activation (a new owner serves only once its fence
//!    keeps older writers out; an effect inside the loaded prefix was in the stream before,
//!    whenever its `effect` event, which follows the store's fsync, comes);
//! 6. a paused range reports itself drained only once every append it admitted at that epoch
//!    has landed or been refused at the store, or the server reloaded the range since (the
//!    outcome was unknown): DESIGN.md's "a pause waits for every admitted append to land or
//!    be refused";
//! 7. no server admits an append or answers a strong read after the authority expired its
//!    session, until it registers anew: its lease, by its own clock and with the safety
//!    margin, must run out first (DESIGN.md: "a server serves a range only while its session
//!    lease is valid by its own clock");
//! 8. drained ⇒ closed: once a server reported a range drained at an epoch, it admits no
//!    append to that range at that epoch (it stays paused there until it drops the range or
//!    reopens it at a newer epoch): the digest it reported is the range's final content at that
//!    epoch, which a split, merge or move hands on.
//!
//! Read from the store's `effect`, the servers' `admit` / `activated` and the maps of the
//! authority's `map_commit` and `map_restored` events (rows, the transfer journal with a move's
//! target and its new epoch, and the children of splits and merges).

use super::{secs, Violation};
use crate::events::{Event, Sys, What};
use partmap::ids::{show_key, Key, OpId};
use super::index::{Clients, IdMap, KeyNo, Keys, MapStep, Maps};
use super::pool::Pooled;
use rustc_hash::{FxHashMap, FxHashSet};

/// One effect at the store, as the checker keeps it (borrowing its key from the history).
struct Effect<'a> {
    epoch: u64,
    server: u32,
    t_us: u64,
    key: &'a [u8],
    id: OpId,
    /// The store's incarnation it was reported in (see [`Lengths`]).
    incarnation: u32,
}

impl Effect<'_> {
    /// `c1.7 on key k000042`, for messages.
    fn what(&self) -> String {
        format!("{} on key {}", self.id, show_key(self.key))
    }
}

#[derive(Clone, Copy)]
struct Activation {
    server: u32,
    epoch: u64,
    t_us: u64,
}

/// An append on its way, as `(range or stream, client, seq)`.
type Pending = (u64, u32, u64);

/// The (stream, client, seq) of the appends that landed, as a set: the stream an id first
/// landed in by id ([`IdMap`]: next to the client's neighbouring ids, not in a random hash
/// bucket), any other stream it landed in in a hash set.
struct Landed {
    first: IdMap<u64>,
    more: Pooled<FxHashSet<Pending>>,
}

impl Landed {
    fn new(events: usize) -> Landed {
        Landed { first: IdMap::new(events), more: Pooled::take() }
    }

    fn contains(&self, op: Pending) -> bool {
        let (stream, client, seq) = op;
        match self.first.get(&OpId { client, seq }) {
            Some(s) if s == stream => true,
            Some(_) => self.more.contains(&op),
            None => false,
        }
    }

    fn insert(&mut self, op: Pending) {
        let (stream, client, seq) = op;
        let id = OpId { client, seq };
        match self.first.get(&id) {
            None => self.first.insert(id, stream),
            Some(s) if s == stream => {}
            Some(_) => {
                self.more.insert(op);
            }
        }
    }
}

/// Per stream, the shortest length each incarnation of the store showed it at: a fence's sealed
/// length, or an effect's offset (the length before that record). A stream only grows while the
/// store runs, and a restart keeps only what was durable, so an effect at offset `o` reported in
/// incarnation `g` is no longer in the stream once some later incarnation showed a length at
/// most `o`.
#[derive(Default)]
struct Lengths {
    /// stream -> (incarnation, shortest length seen in it), incarnations increasing.
    of: FxHashMap<u64, Vec<(u32, u64)>>,
}

impl Lengths {
    fn saw(&mut self, stream: u64, incarnation: u32, length: u64) {
        let seen = self.of.entry(stream).or_default();
        match seen.last_mut() {
            Some((g, l)) if *g == incarnation => *l = (*l).min(length),
            _ => seen.push((incarnation, length)),
        }
    }

    /// Whether the record at `offset` that incarnation `incarnation` reported is gone.
    fn lost(&self, stream: u64, incarnation: u32, offset: u64) -> bool {
        self.of.get(&stream).is_some_and(|seen| seen.iter().any(|&(g, l)| g > incarnation && l <= offset))
    }
}

/// Keys by their place in key order, so that whether a range's bounds hold a key is two integer
/// comparisons: bounds `[start, end)` hold the keys ranked from the number of keys below
/// `start` up to (not including) the number of keys below `end`.
struct Ranks<'k, 'a> {
    keys: &'k Keys<'a>,
    /// Every key number, in key order.
    order: &'k [KeyNo],
    /// Each key number's place in `order`.
    rank: Pooled<Vec<u32>>,
}

impl<'k, 'a> Ranks<'k, 'a> {
    fn of(keys: &'k Keys<'a>, order: &'k [KeyNo]) -> Self {
        let mut rank: Pooled<Vec<u32>> = Pooled::take();
        rank.resize(keys.len(), u32::MAX);
        for (i, k) in order.iter().enumerate() {
            rank[*k as usize] = i as u32;
        }
        Ranks { keys, order, rank }
    }

    /// The ranks of the keys `bounds` holds, as `lo..hi`.
    fn span(&self, bounds: &(Key, Option<Key>)) -> (u32, u32) {
        let below = |b: &[u8]| self.order.partition_point(|k| self.keys.bytes_of(*k) < b) as u32;
        (below(&bounds.0), bounds.1.as_ref().map_or(self.order.len() as u32, |e| below(e)))
    }
}

/// Every range's bounds as spans of key ranks, and the log of their changes.
#[derive(Default)]
struct Bounds {
    /// Range id -> its bounds.
    of: FxHashMap<u64, (Key, Option<Key>)>,
    /// Range id -> its slot in `spans`.
    slot: FxHashMap<u64, u32>,
    /// Per slot: the range id and the span of key ranks its current bounds hold.
    spans: Vec<(u64, u32, u32)>,
    /// Per slot: the range's newest activation (as `activations` in [`check_indexed`] has it),
    /// so that a key's covering ranges are looked up by slot, not hashed by id.
    active: Vec<Option<Activation>>,
    /// Every change of a range's bounds, in order: (range id, its slot, the span of key ranks
    /// its bounds held before (empty for a new range), the span they hold after). A key's
    /// [`Covering`] changes only on an entry whose two spans disagree about the key.
    log: Vec<Change>,
}

/// One entry of [`Bounds::log`]: `(range, slot, (lo, hi) before, (lo, hi) after)`.
type Change = (u64, u32, (u32, u32), (u32, u32));

/// Record every (range, epoch) → owner that the map of `step` gives out: rows, the transfer
/// journal (a move's target gets its new epoch when journaled) and the children of splits and
/// merges. Only what the map changed against the previous one is read: the rest was recorded
/// from that one, identically (issue 13). Every range whose bounds change goes to the log of
/// `bounds`.
fn note_grants(step: &MapStep<'_>, owner_of: &mut FxHashMap<(u64, u64), u32>, bounds: &mut Bounds, ranks: &Ranks<'_, '_>, activations: &FxHashMap<u64, Activation>) -> Result<(), Violation> {
    let (version, t_us) = (step.map.version, step.t_us);
    let mut grant = |range: u64, epoch: u64, owner: u32, what: &str| -> Result<(), Violation> {
        if epoch == 0 || owner == 0 {
            return Ok(());
        }
        match owner_of.insert((range, epoch), owner) {
            Some(prev) if prev != owner => Err(Violation::new(format!("epoch {epoch} of r{range} was given to server-{prev} and later to {what}server-{owner} (map version {version}, {})", secs(t_us)))
                .at(t_us)
                .range(range)
                .server(prev)
                .server(owner)
                .version(version)),
            _ => Ok(()),
        }
    };
    for row in &step.diff.rows {
        let r = row.id.0;
        if bounds.of.get(&r).is_none_or(|b| b.0 != row.start || b.1 != row.end) {
            let b = (row.start.clone(), row.end.clone());
            let (lo, hi) = ranks.span(&b);
            bounds.of.insert(r, b);
            let next = bounds.spans.len() as u32;
            let slot = *bounds.slot.entry(r).or_insert(next);
            let before = if slot == next {
                bounds.spans.push((r, lo, hi));
                bounds.active.push(activations.get(&r).copied());
                (0, 0)
            } else {
                let (_, old_lo, old_hi) = std::mem::replace(&mut bounds.spans[slot as usize], (r, lo, hi));
                (old_lo, old_hi)
            };
            bounds.log.push((r, slot, before, (lo, hi)));
        }
        grant(r, row.epoch.0, row.owner.map_or(0, |s| s.0), "")?;
    }
    for r in &step.diff.reshapes {
        for c in &r.children {
            grant(c.id.0, c.epoch.0, c.owner.0 .0, "")?;
        }
    }
    for t in &step.diff.transfers {
        grant(t.range.0, t.epoch.0, t.to.0 .0, "move target ")?;
    }
    Ok(())
}

/// The ranges whose bounds hold one key, kept up to date from the log of bound changes: a
/// lookup tests only the ranges whose bounds changed since the key's last lookup, so each key
/// costs the number of bound changes over the whole run, not that times the number of ranges.
#[derive(Default)]
struct Covering {
    /// How much of the bound log this is up to date with.
    seen: usize,
    /// The covering ranges as (range id, slot in [`Bounds`]), in id order.
    ranges: Vec<(u64, u32)>,
}

impl Covering {
    /// Bring this up to date for the key ranked `rank`. The log is read in order, so before
    /// an entry the key is among its range's covered keys exactly when the entry's earlier span
    /// holds it: only an entry whose two spans disagree about the key is looked up.
    fn update(&mut self, rank: u32, bounds: &Bounds) {
        let holds = |(lo, hi): (u32, u32)| lo <= rank && rank < hi;
        for &(r, slot, before, after) in &bounds.log[self.seen..] {
            let now = holds(after);
            if holds(before) == now {
                continue;
            }
            match (self.ranges.binary_search_by_key(&r, |c| c.0), now) {
                (Ok(i), false) => {
                    self.ranges.remove(i);
                }
                (Err(i), true) => self.ranges.insert(i, (r, slot)),
                _ => {}
            }
        }
        self.seen = bounds.log.len();
    }
}

/// Check every clause. Errors: the first violation, with both sides.
pub fn check(events: &[Event]) -> Result<(), Violation> {
    let clients = Clients::of(events);
    check_indexed(events, &Maps::of(events), &clients.keys, &clients.served, &clients.keys.sorted())
}

/// What the checker keeps while it reads the history, clause by clause. Every map here is
/// keyed by ids and only looked up, never iterated in an order that reaches a finding (FxHash:
/// deterministic, no order leak); where a finding picks one of several entries it takes the
/// least key, as an ordered map's first would be. `'e` is the history's lifetime (an effect
/// borrows its key from it), `'k` that of the key index and `'a` the keys' own.
struct Writers<'e, 'k, 'a> {
    keys: &'k Keys<'a>,
    ranks: Ranks<'k, 'a>,
    /// The key number of each `admit` and strong `read_served` event, in history order.
    served: std::slice::Iter<'k, KeyNo>,
    /// (range, epoch) -> owner, from the map (announced and restored versions).
    owner_of: FxHashMap<(u64, u64), u32>,
    bounds: Bounds,
    /// stream -> (offset, effect), in history order (sorted by offset at the end, the last
    /// effect at an offset kept, as an offset -> effect map would keep it).
    streams: FxHashMap<u64, Vec<(u64, Effect<'e>)>>,
    activations: FxHashMap<u64, Activation>,
    /// stream -> fences as (sealed length, epoch, time).
    fences: FxHashMap<u64, Vec<(u64, u64, u64)>>,
    /// The store's incarnation (a `recovered node=store-1` event starts one) and, per stream,
    /// the shortest length each incarnation showed: clauses 1 and 4 leave out the effects a
    /// restart lost.
    incarnation: u32,
    lengths: Lengths,
    /// stream -> the newest activation (epoch, server, time, stream records loaded), for
    /// clause 5.
    newest: FxHashMap<u64, (u64, u32, u64, u64)>,
    /// Clause 6: appends admitted and not yet landed or refused, by (range, client, seq), as
    /// (server, epoch, time of admission); and the (stream, client, seq) that landed.
    open: Pooled<FxHashMap<Pending, (u32, u64, u64)>>,
    landed: Landed,
    /// Clause 8: (server, range) -> (epoch, time) of its drain report, until it drops the range.
    closed: FxHashMap<(u32, u64), (u64, u64)>,
    /// Clause 7: server -> (session the authority expired, when), until a newer session renews.
    expired: FxHashMap<u32, (u64, u64)>,
    /// server -> its newest session (from its renewals and registrations).
    current_session: FxHashMap<u32, u64>,
    /// Key number -> the ranges whose bounds hold it (kept up to date from the log of bound
    /// changes), so an admission looks up its key's few ranges instead of testing every one.
    covering: Pooled<Vec<Covering>>,
}

/// `admitted c1.7` for an append, `answered a strong read` / `answered a read` for a read
/// (`any` is the read's adjective with its article).
fn served_what(admit_id: Option<OpId>, any: &str) -> String {
    match admit_id {
        Some(id) => format!("admitted {id}"),
        None => format!("answered {any}read"),
    }
}

/// `v` citing the append `admit_id` too, if the event was an append.
fn cite_append(v: Violation, admit_id: Option<OpId>) -> Violation {
    match admit_id {
        Some(id) => v.op(id),
        None => v,
    }
}

/// One `admit` or strong `read_served` event, as [`Writers::on_served`] judges it.
struct Served<'e> {
    server: u32,
    range: u64,
    epoch: u64,
    key: &'e [u8],
    /// The append's id (`None` for a read).
    admit_id: Option<OpId>,
    t_us: u64,
}

impl<'e, 'k, 'a> Writers<'e, 'k, 'a> {
    fn new(events: usize, keys: &'k Keys<'a>, served: &'k [KeyNo], order: &'k [KeyNo]) -> Self {
        let mut covering: Pooled<Vec<Covering>> = Pooled::take();
        covering.resize_with(keys.len(), Covering::default);
        Writers {
            keys,
            ranks: Ranks::of(keys, order),
            served: served.iter(),
            owner_of: FxHashMap::default(),
            bounds: Bounds::default(),
            streams: FxHashMap::default(),
            activations: FxHashMap::default(),
            fences: FxHashMap::default(),
            incarnation: 0,
            lengths: Lengths::default(),
            newest: FxHashMap::default(),
            open: Pooled::take(),
            landed: Landed::new(events),
            closed: FxHashMap::default(),
            expired: FxHashMap::default(),
            current_session: FxHashMap::default(),
            covering,
        }
    }

    /// Read one event of the history at `t_us`; `steps` yields the map diff of each map event.
    fn on_event(&mut self, sys: &'e Sys, t_us: u64, steps: &mut std::slice::Iter<'_, MapStep<'_>>) -> Result<(), Violation> {
        match sys {
            Sys::MapCommit { .. } | Sys::MapRestored { .. } => {
                let step = steps.next().expect("one step per map event");
                note_grants(step, &mut self.owner_of, &mut self.bounds, &self.ranks, &self.activations)?
            }
            Sys::Activated { server, range, epoch, stream, .. } => self.on_activated(server.0, range.0, epoch.0, *stream as u64, t_us),
            Sys::Dropped { server, range, .. } => {
                self.closed.remove(&(server.0, range.0));
            }
            Sys::Drained { server, range, epoch, .. } => self.on_drained(server.0, range.0, epoch.0, t_us)?,
            // An expiry the authority records after the server moved on to a newer session (it
            // restarted and registered again) concerns an incarnation that is gone.
            Sys::LeaseExpired { server, session } if self.current_session.get(&server.0).is_none_or(|c| c <= session) => {
                self.expired.insert(server.0, (*session, t_us));
            }
            Sys::Renewed { server, session, ok: true, .. } => {
                self.current_session.insert(server.0, *session);
                if self.expired.get(&server.0).is_some_and(|(s, _)| session > s) {
                    self.expired.remove(&server.0);
                }
            }
            Sys::ReadServed { bounded: true, .. } => {}
            Sys::Admit { server, range, epoch, key, .. } | Sys::ReadServed { server, range, epoch, key, bounded: false } => {
                let admit_id = if let Sys::Admit { id, .. } = sys { Some(*id) } else { None };
                self.on_served(&Served { server: server.0, range: range.0, epoch: epoch.0, key, admit_id, t_us })?
            }
            Sys::Recovered { node: super::acked_durable::STORE, .. } => self.incarnation += 1,
            Sys::Fence { stream, epoch, length } => {
                self.lengths.saw(stream.0, self.incarnation, *length as u64);
                self.fences.entry(stream.0).or_default().push((*length as u64, epoch.0, t_us));
            }
            Sys::Fenced { stream, id, .. } => {
                self.open.remove(&(stream.0, id.client, id.seq));
            }
            Sys::Deduplicated { stream, id, .. } => {
                let op = (stream.0, id.client, id.seq);
                self.open.remove(&op);
                self.landed.insert(op);
            }
            Sys::Effect { stream, server, epoch, key, id, offset, .. } => {
                let effect = Effect { epoch: epoch.0, server: server.0, t_us, key, id: *id, incarnation: self.incarnation };
                self.on_effect(stream.0, *offset, effect)?
            }
            _ => {}
        }
        Ok(())
    }

    /// `server` activated `range` at `epoch` having loaded `loaded` stream records: the range's
    /// newest activation (clause 3), its newest epoch's loaded prefix (clause 5), and every
    /// admitted append of that server and epoch settled (clause 6).
    fn on_activated(&mut self, server: u32, range: u64, epoch: u64, loaded: u64, t_us: u64) {
        let a = Activation { server, epoch, t_us };
        self.activations.insert(range, a);
        if let Some(&slot) = self.bounds.slot.get(&range) {
            self.bounds.active[slot as usize] = Some(a);
        }
        if self.newest.get(&range).is_none_or(|n| n.0 < epoch) {
            self.newest.insert(range, (epoch, server, t_us, loaded));
        }
        // A (re)load settles every outcome it was started for.
        self.open.retain(|(r, _, _), (s, e, _)| !(*r == range && *s == server && *e == epoch));
    }

    /// Clause 6: `server` reported `range` drained at `epoch`, so no append it admitted there
    /// may still be open; the range is closed at that epoch from now on (clause 8).
    fn on_drained(&mut self, server: u32, range: u64, epoch: u64, t_us: u64) -> Result<(), Violation> {
        self.closed.insert((server, range), (epoch, t_us));
        // The pending append of least (client, seq).
        let pending = self.open.iter().filter(|((r, _, _), (s, e, _))| *r == range && *s == server && *e == epoch).min_by_key(|(k, _)| **k);
        if let Some(((_, client, seq), (_, _, t_admit))) = pending {
            return Err(Violation::new(format!(
                "server-{server} reported r{range} drained at epoch {epoch} at {} while c{client}.{seq}, admitted at {}, had neither landed nor been refused at the store",
                secs(t_us), secs(*t_admit)
            ))
            .at(t_us)
            .at(*t_admit)
            .server(server)
            .range(range)
            .op(OpId { client: *client, seq: *seq }));
        }
        Ok(())
    }

    /// An append admitted or a strong read answered: not after the authority expired the
    /// server's session (clause 7), no append into a range it reported drained at that epoch
    /// (clause 8), the append open until it lands (clause 6), and no other server holding a
    /// newer activation over the key (clause 3).
    fn on_served(&mut self, s: &Served<'_>) -> Result<(), Violation> {
        let Served { server, range, epoch, key, admit_id, t_us } = *s;
        if let Some(&(session, t_exp)) = self.expired.get(&server) {
            let v = Violation::new(format!(
                "server-{server} {} on key {} (r{range} at epoch {epoch}) at {}, after the authority expired its session {session} at {}",
                served_what(admit_id, "a strong "), show_key(key), secs(t_us), secs(t_exp)
            ))
            .at(t_us)
            .at(t_exp)
            .server(server)
            .range(range)
            .key(key);
            return Err(cite_append(v, admit_id));
        }
        if let Some((id, &(_, t_drained))) = admit_id.zip(self.closed.get(&(server, range)).filter(|c| c.0 == epoch)) {
            return Err(Violation::new(format!(
                "server-{server} admitted {id} on key {} (r{range} at epoch {epoch}) at {}, after it reported r{range} drained at epoch {epoch} at {}: a drained range admits nothing more at that epoch",
                show_key(key), secs(t_us), secs(t_drained)
            ))
            .at(t_us)
            .at(t_drained)
            .server(server)
            .range(range)
            .key(key)
            .op(id));
        }
        if let Some(id) = admit_id {
            let op = (range, id.client, id.seq);
            if !self.landed.contains(op) {
                self.open.entry(op).or_insert((server, epoch, t_us));
            }
        }
        let k = *self.served.next().expect("Clients::of numbers every admitted or strongly read key");
        debug_assert_eq!(self.keys.name(k), key, "the served keys follow the history");
        self.check_one_writer(s, k)
    }

    /// Clause 3 for the served event `s` on key number `k`: no range over the key was
    /// activated by another server at a newer epoch.
    fn check_one_writer(&mut self, s: &Served<'_>, k: KeyNo) -> Result<(), Violation> {
        let Served { server, range, epoch, key, admit_id, t_us } = *s;
        let cover = &mut self.covering[k as usize];
        cover.update(self.ranks.rank[k as usize], &self.bounds);
        let bounds = &self.bounds;
        for (other, a) in cover.ranges.iter().filter_map(|&(r, slot)| bounds.active[slot as usize].as_ref().map(|a| (r, a))) {
            if a.server != server && a.epoch > epoch {
                let v = Violation::new(format!(
                    "two servers with authority over key {}: server-{server} {} at epoch {epoch} (r{range}) at {}, after server-{} activated r{other} at epoch {} at {}",
                    show_key(key), served_what(admit_id, "a "), secs(t_us), a.server, a.epoch, secs(a.t_us)
                ))
                .at(t_us)
                .at(a.t_us)
                .key(key)
                .server(server)
                .server(a.server)
                .range(range)
                .range(other);
                return Err(cite_append(v, admit_id));
            }
        }
        Ok(())
    }

    /// An effect at `offset` of `stream`: not past the prefix a newer activation loaded
    /// (clause 5), at an epoch the map gave its writer (clause 2); kept for clauses 1 and 4.
    fn on_effect(&mut self, stream: u64, offset: u64, e: Effect<'e>) -> Result<(), Violation> {
        let (epoch, server, t_us) = (e.epoch, e.server, e.t_us);
        let op = (stream, e.id.client, e.id.seq);
        self.open.remove(&op);
        self.landed.insert(op);
        let cite = |v: Violation| v.at(t_us).key(e.key).op(e.id).server(server).range(stream);
        if let Some(&(newer, by, t_act, loaded)) = self.newest.get(&stream).filter(|n| n.0 > epoch && offset >= n.3) {
            return Err(cite(Violation::new(format!(
                "effect {} at {} in stream r{stream} by server-{server} at epoch {epoch} landed at offset {offset}, past the {loaded} records server-{by} loaded when it activated r{stream} at epoch {newer} at {}",
                e.what(), secs(t_us), secs(t_act)
            )))
            .at(t_act)
            .server(by));
        }
        match self.owner_of.get(&(stream, epoch)) {
            Some(&owner) if owner == server => {}
            Some(&owner) => {
                return Err(cite(Violation::new(format!("effect {} at {} in stream r{stream} written by server-{server} at epoch {epoch}, which the map gave to server-{owner}", e.what(), secs(t_us)))).server(owner));
            }
            None => return Err(cite(Violation::new(format!("effect {} at {} in stream r{stream} by server-{server} at epoch {epoch}, which the map never gave out", e.what(), secs(t_us))))),
        }
        self.lengths.saw(stream, self.incarnation, offset);
        self.streams.entry(stream).or_default().push((offset, e));
        Ok(())
    }

    /// Clauses 1 and 4 over the streams the store holds at the end, in stream id order.
    fn check_streams(mut self) -> Result<(), Violation> {
        let mut ids: Vec<u64> = self.streams.keys().copied().collect();
        ids.sort_unstable();
        for stream in &ids {
            let effects = self.streams.get_mut(stream).expect("a stream listed");
            settle_stream(*stream, effects, &self.lengths);
        }
        for stream in &ids {
            let effects = &self.streams[stream];
            check_fences(*stream, effects, self.fences.get(stream).map_or(&[][..], |v| v.as_slice()))?;
            check_epochs_rise(*stream, effects)?;
        }
        Ok(())
    }
}

/// [`check`] with the history's maps diffed once for every checker ([`Maps::of`] of `events`)
/// and its keys numbered once: `keys` numbers every key a server admits an append to or
/// answers a strong read of, `served` is the key number of each such `admit` and strong
/// `read_served` event in history order (both as [`Clients::of`] of `events` makes them),
/// `order` is every key number of `keys` in key order ([`Keys::sorted`]).
pub fn check_indexed(events: &[Event], maps: &Maps<'_>, keys: &Keys<'_>, served: &[KeyNo], order: &[KeyNo]) -> Result<(), Violation> {
    let mut steps = maps.steps.iter();
    let mut writers = Writers::new(events.len(), keys, served, order);
    for ev in events {
        let What::Sys(sys) = &ev.what else { continue };
        writers.on_event(sys, ev.t_us, &mut steps)?;
    }
    writers.check_streams()
}

/// One stream's effects as the store holds it at the end, in offset order: the effects a
/// restart lost left out, and of two effects at one offset the later kept. The history lands
/// them nearly in offset order: the stable sort is about linear.
fn settle_stream(stream: u64, effects: &mut Vec<(u64, Effect<'_>)>, lengths: &Lengths) {
    // An effect a later incarnation of the store shows the stream too short to hold was
    // lost in a restart (unsynced, whatever its acknowledgement said): it is not in the
    // stream, so no fence or later effect is judged against it. Losing it is
    // `no_lost_append`'s finding (its `synced` view sees the acknowledgement before the
    // sync), not a second writer.
    effects.retain(|(offset, e)| !lengths.lost(stream, e.incarnation, *offset));
    effects.sort_by_key(|(offset, _)| *offset);
    // `dedup_by` removes the later of two equal offsets: move it into the earlier's place
    // first, so the later effect is the one kept.
    effects.dedup_by(|later, earlier| {
        let same = later.0 == earlier.0;
        if same {
            std::mem::swap(later, earlier);
        }
        same
    });
}

/// Clause 4 on one stream: no effect at or past a fence's sealed length carries an epoch
/// below the fence's. `fences` as (sealed length, epoch, time).
fn check_fences(stream: u64, effects: &[(u64, Effect<'_>)], fences: &[(u64, u64, u64)]) -> Result<(), Violation> {
    for &(length, fence, t_fence) in fences {
        let past = effects.partition_point(|(offset, _)| *offset < length);
        if let Some((offset, e)) = effects[past..].iter().find(|(_, e)| e.epoch < fence) {
            return Err(Violation::new(format!(
                "stream r{stream}: offset {offset} = {} by server-{} at epoch {} ({}) landed past the fence raised to epoch {fence} at length {length} ({})",
                e.what(), e.server, e.epoch, secs(e.t_us), secs(t_fence)
            ))
            .at(e.t_us)
            .at(t_fence)
            .range(stream)
            .server(e.server)
            .key(e.key)
            .op(e.id));
        }
    }
    Ok(())
}

/// Clause 1 on one stream: the effects, in offset order, carry non-decreasing epochs.
fn check_epochs_rise(stream: u64, effects: &[(u64, Effect<'_>)]) -> Result<(), Violation> {
    let mut prev: Option<(&u64, &Effect)> = None;
    for (offset, e) in effects {
        if let Some((po, p)) = prev {
            if e.epoch < p.epoch {
                return Err(Violation::new(format!(
                    "stream r{stream}: epochs go down: offset {po} = {} by server-{} at epoch {} ({}), then offset {offset} = {} by server-{} at epoch {} ({})",
                    p.what(), p.server, p.epoch, secs(p.t_us), e.what(), e.server, e.epoch, secs(e.t_us)
                ))
                .at(p.t_us)
                .at(e.t_us)
                .range(stream)
                .server(p.server)
                .server(e.server)
                .key(p.key)
                .key(e.key)
                .op(p.id)
                .op(e.id));
            }
        }
        prev = Some((offset, e));
    }
    Ok(())
}
