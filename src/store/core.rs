//! Core (pure: no runtime, no I/O, no await): the durable stream store's rules. One
//! append-only stream per range, and the fence that makes a stale owner's write fail where it
//! takes effect. [`StoreCore::handle`] takes a request and returns a [`Step`]: the records to
//! write to the disk, the events, and then the reply or a sync to wait for first (then
//! [`Input::Synced`]). The store's rules do not depend on time, so no time is passed in. The
//! node task that performs the steps is `node` ([`super::run`]).
//!
//! `append(stream, epoch, record)` fails if the stream's fence is above `epoch`, and is
//! idempotent per stream: a record whose id is already there is not appended twice;
//! `fence(stream, epoch)` raises the fence (never lowers it) and returns the sealed content (from
//! an offset the caller names); `read(stream, from)` returns content without fencing (pre-copy).
//! Appends are synced to disk before they are acknowledged, and so is the fence. Idea: the
//! fencing token of Kleppmann's "How to do distributed locking" (2016) and Azure Storage's
//! stream layer sealing extents on partition reassignment (Calder et al., SOSP 2011).

use crate::config::Mutation;
use crate::event::Event;
use crate::ids::{Epoch, Key, OpId, RangeId, ServerId};
use crate::msg::{Msg, Record, StreamDigest};
use std::collections::{BTreeMap, BTreeSet};

/// A durable record of the store.
#[derive(Clone, Debug, Hash)]
pub enum StoreRecord {
    /// The fence of `stream` was raised to `epoch`.
    Fence {
        /// The stream (its range id).
        stream: RangeId,
        /// The new fence: appends at a lower epoch fail from now on.
        epoch: Epoch,
    },
    /// Appends with these ids are barred from `stream` (a reload's fence after an unknown
    /// outcome; see `Msg::Fence::bar`).
    Bar {
        /// The stream (its range id).
        stream: RangeId,
        /// The ids barred, none of them in the stream when barred.
        ids: Vec<OpId>,
    },
    /// `record` was appended to `stream`.
    Append {
        /// The stream (its range id).
        stream: RangeId,
        /// The record, with the writer's epoch and its idempotency id.
        record: Record,
    },
}

/// One stream: its fence and its records in append order.
#[derive(Clone, Debug, Default, Hash)]
pub struct Stream {
    /// Appends below this epoch fail.
    pub fence: Epoch,
    /// The content.
    pub records: Vec<Record>,
    /// Offset of each idempotency id in `records`.
    pub ids: BTreeMap<OpId, u64>,
    /// Ids that may never be appended: an owner reloaded without them while their outcome was
    /// unknown to it (see `Msg::Fence::bar`). An append of one fails like a fenced one.
    pub barred: BTreeSet<OpId>,
    /// `digests[i]`: the digest of `records[..=i]` (24 bytes a record), computed when first
    /// asked for and kept, so each record is hashed here at most once however often a reload
    /// asks for the digest of the prefix it keeps.
    digests: Vec<StreamDigest>,
}

impl Stream {
    fn push(&mut self, record: Record) {
        self.ids.insert(record.id, self.records.len() as u64);
        self.records.push(record);
    }

    /// The digest of the first `n` records, or of all of them when there are fewer (its
    /// `records` then says how many).
    pub fn prefix_digest(&mut self, n: u64) -> StreamDigest {
        let n = (n as usize).min(self.records.len());
        while self.digests.len() < n {
            let mut d = self.digests.last().copied().unwrap_or_default();
            d.add(&self.records[self.digests.len()]);
            self.digests.push(d);
        }
        if n == 0 {
            StreamDigest::default()
        } else {
            self.digests[n - 1]
        }
    }
}

/// The store's streams, rebuilt from disk on start.
#[derive(Clone, Debug, Default, Hash)]
pub struct Streams {
    /// Streams by id.
    pub streams: BTreeMap<RangeId, Stream>,
}

impl Streams {
    /// Replay durable records.
    pub fn recover(records: &[StoreRecord]) -> Self {
        let mut s = Streams::default();
        for rec in records {
            match rec {
                StoreRecord::Fence { stream, epoch } => {
                    let st = s.streams.entry(*stream).or_default();
                    assert!(*epoch >= st.fence, "fence went down on disk");
                    st.fence = *epoch;
                }
                StoreRecord::Bar { stream, ids } => {
                    s.streams.entry(*stream).or_default().barred.extend(ids.iter().copied());
                }
                StoreRecord::Append { stream, record } => {
                    s.streams.entry(*stream).or_default().push(record.clone());
                }
            }
        }
        s
    }

    /// Raise the fence of `stream` to `epoch`. Returns whether it rose (false: already there).
    ///
    /// Errors: `Err(fence)` when the fence is already above `epoch`.
    pub fn fence(&mut self, stream: RangeId, epoch: Epoch) -> Result<bool, Epoch> {
        let st = self.streams.entry(stream).or_default();
        if st.fence > epoch {
            return Err(st.fence);
        }
        let rose = st.fence < epoch;
        st.fence = epoch;
        Ok(rose)
    }

    /// Append `record` to `stream` if the fence allows its epoch. Returns the record's offset
    /// and whether it is new: an id already in the stream is not appended again (a retry after
    /// an unknown outcome), its first offset is returned instead.
    ///
    /// Errors: `Err(fence)` when the fence is above `record.epoch`.
    pub fn append(&mut self, stream: RangeId, record: Record, ignore_fence: bool) -> Result<(u64, bool), Epoch> {
        let st = self.streams.entry(stream).or_default();
        if (st.fence > record.epoch || st.barred.contains(&record.id)) && !ignore_fence {
            return Err(st.fence);
        }
        if let Some(&offset) = st.ids.get(&record.id) {
            return Ok((offset, false));
        }
        let offset = st.records.len() as u64;
        st.push(record);
        Ok((offset, true))
    }
}

/// How much link time one read answer aims at, ms: small enough that other traffic on the
/// store's link (append acknowledgements) waits at most about this long behind a transfer,
/// large enough that a chunk's round trip (two latencies and a sync, a few ms) costs little.
pub const CHUNK_TARGET_MS: u64 = 50;

/// The payload bytes one read answer may carry: what the outgoing link (`bandwidth_bytes_per_s`)
/// sends in [`CHUNK_TARGET_MS`], or less when the `backlog_us` already queued on it leaves less
/// than that of half the store timeout (`store_timeout_ms`), but at least a twentieth of the
/// timeout's worth. A reader's timeout per chunk (the store timeout) then holds whatever the
/// stream's size: a transfer that grows with the range is a sequence of bounded chunks (one
/// answer of a 2 MB stream at 1 MiB/s would never fit in a 1 s timeout).
pub fn chunk_budget(bandwidth_bytes_per_s: u64, store_timeout_ms: u64, backlog_us: u64) -> u64 {
    let room_us = (store_timeout_ms * 500).saturating_sub(backlog_us);
    let window_us = room_us.min(CHUNK_TARGET_MS * 1000).max(store_timeout_ms * 50);
    (bandwidth_bytes_per_s as u128 * window_us as u128 / 1_000_000) as u64
}

/// The records of `records[from..end]` that fit in `budget` payload bytes (wire size), at
/// least one when any is there.
pub(super) fn chunk(records: &[Record], from: usize, end: usize, budget: u64) -> Vec<Record> {
    let span = records.get(from..end).unwrap_or(&[]);
    // Count first, then copy into a vector of the right size (no regrowth).
    let mut used = 0;
    let mut n = 0;
    for r in span {
        if n > 0 && used + r.wire_bytes() > budget {
            break;
        }
        used += r.wire_bytes();
        n += 1;
    }
    span[..n].to_vec()
}


/// What the store core is told.
#[derive(Debug)]
pub enum Input {
    /// A request arrived; a read answer carries at most `budget` payload bytes
    /// ([`chunk_budget`] of the store's link when the request arrived).
    Request {
        /// The request.
        msg: Msg,
        /// The payload bytes one read answer may carry.
        budget: u64,
    },
    /// The disk sync a [`Next::Sync`] asked for is done.
    Synced(Then),
}

/// The core's answer to one input: append `writes` to the disk, emit `events` (in order), then
/// `next`.
#[derive(Debug)]
pub struct Step {
    /// Records to append to the disk now (durable at the next sync).
    pub writes: Vec<StoreRecord>,
    /// Events, in order.
    pub events: Vec<Event>,
    /// The reply, or a sync to wait for first.
    pub next: Next,
}

/// What a request waits for next.
#[derive(Debug)]
pub enum Next {
    /// Answer this.
    Reply(Msg),
    /// Sync the disk, then [`Input::Synced`] with this.
    Sync(Then),
}

/// What a request does once the disk is synced.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Then {
    /// Answer a read of `stream[from..end)` (`end` fixed when the request arrived: only what was
    /// there, and is now durable).
    Read {
        /// The stream.
        stream: RangeId,
        /// The first offset.
        from: u64,
        /// The end, exclusive.
        end: u64,
        /// A pre-copy round's read.
        precopy: bool,
        /// The answer's payload bound.
        budget: u64,
    },
    /// Answer a seal: the fence rose (or stood) at `epoch` with `length` records sealed.
    Sealed {
        /// The stream.
        stream: RangeId,
        /// The fence.
        epoch: Epoch,
        /// The sealed length.
        length: u64,
    },
    /// Answer a fence: the sealed content from `from`, and the digest of what is before it.
    Fenced {
        /// The stream.
        stream: RangeId,
        /// The fence.
        epoch: Epoch,
        /// The offset asked from.
        from: u64,
        /// The sealed length.
        length: u64,
        /// The answer's payload bound.
        budget: u64,
    },
    /// Answer an append already in the stream (at `offset`), now that it is durable.
    Deduplicated(Box<Appended>),
    /// Answer a new append (at `offset`), now that it is durable.
    Effect(Box<Appended>),
}

/// An append the store took (new, or already there), as its event names it.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Appended {
    /// The stream.
    pub stream: RangeId,
    /// The owner that sent it.
    pub server: ServerId,
    /// The record's epoch.
    pub epoch: Epoch,
    /// The key.
    pub key: Key,
    /// The idempotency id.
    pub id: OpId,
    /// Its offset in the stream.
    pub offset: u64,
    /// Its payload bytes.
    pub bytes: usize,
}

/// The store's protocol state: its streams, and a deliberately broken rule (`knobs.mutation`,
/// `None` in normal runs): `store-ignores-fence` or `store-acks-before-sync`.
#[derive(Clone, Debug, Default, Hash)]
pub struct StoreCore {
    /// The streams.
    pub streams: Streams,
    /// The mutation, if any.
    pub mutation: Option<Mutation>,
}

impl StoreCore {
    /// The store after a restart: its streams replayed from the disk's `records`, and the
    /// event that says so.
    pub fn recover(records: &[StoreRecord], mutation: Option<Mutation>) -> (StoreCore, Vec<Event>) {
        let event = Event::Recovered { node: "store-1", records: records.len() };
        (StoreCore { streams: Streams::recover(records), mutation }, vec![event])
    }

    /// Take one input and return the request's next step. Panics on a message the store is
    /// never sent.
    pub fn handle(&mut self, input: Input) -> Step {
        match input {
            Input::Request { msg, budget } => self.request(msg, budget),
            Input::Synced(then) => {
                let events = Self::synced_event(&then).into_iter().collect();
                Step { writes: Vec::new(), events, next: Next::Reply(self.synced(then)) }
            }
        }
    }

    fn request(&mut self, msg: Msg, budget: u64) -> Step {
        let (mut writes, mut events) = (Vec::new(), Vec::new());
        let next = match msg {
            Msg::ReadStream { stream, from, upto, precopy } => {
                // Only what is durable: a record a crash could still take away must not be copied
                // (the copy would then hold a record the stream lost).
                let len = self.streams.streams.get(&stream).map_or(0, |s| s.records.len()) as u64;
                let end = upto.map_or(len, |u| u.min(len));
                Next::Sync(Then::Read { stream, from, end, precopy, budget })
            }
            Msg::Seal { stream, epoch } => match self.raise_fence(stream, epoch, &[], &mut writes) {
                Ok(length) => Next::Sync(Then::Sealed { stream, epoch, length }),
                Err(fence) => Next::Reply(Msg::Sealed { result: Err(fence) }),
            },
            Msg::Fence { stream, epoch, from, bar } => match self.raise_fence(stream, epoch, &bar, &mut writes) {
                Ok(length) => Next::Sync(Then::Fenced { stream, epoch, from, length, budget }),
                Err(fence) => Next::Reply(Msg::FenceResult { result: Err(fence), length: 0, prefix: StreamDigest::default() }),
            },
            Msg::StoreAppend { stream, server, record } => self.append(stream, server, record, &mut writes, &mut events),
            other => panic!("store-1: unexpected message {other:?}"),
        };
        Step { writes, events, next }
    }

    /// Raise the fence of `stream` to `epoch`, and bar the ids of `bar` not in the stream yet
    /// (in the same step as the fence, so an append that lands while the fence syncs is refused
    /// too), queuing the records that make both durable. Returns the sealed length: only
    /// records below it are durable once the sync is done (an append at the same epoch that
    /// lands during the sync is not yet).
    ///
    /// Errors: `Err(fence)` when the fence is already above `epoch`.
    fn raise_fence(&mut self, stream: RangeId, epoch: Epoch, bar: &[OpId], writes: &mut Vec<StoreRecord>) -> Result<u64, Epoch> {
        if self.streams.fence(stream, epoch)? {
            writes.push(StoreRecord::Fence { stream, epoch });
        }
        let st = self.streams.streams.get_mut(&stream).expect("fence made it");
        let barred: Vec<OpId> = bar.iter().copied().filter(|id| !st.ids.contains_key(id) && st.barred.insert(*id)).collect();
        if !barred.is_empty() {
            writes.push(StoreRecord::Bar { stream, ids: barred });
        }
        Ok(st.records.len() as u64)
    }

    /// An append: refused below the fence (or barred), answered from the stream when its id is
    /// already there (once durable), else written and answered once durable (mutation
    /// `store-acks-before-sync`: at once).
    fn append(&mut self, stream: RangeId, server: ServerId, record: Record, writes: &mut Vec<StoreRecord>, events: &mut Vec<Event>) -> Next {
        let ignore_fence = self.mutation == Some(Mutation::StoreIgnoresFence);
        let (epoch, id, key, bytes) = (record.epoch, record.id, record.key.clone(), record.payload_bytes() as usize);
        match self.streams.append(stream, record.clone(), ignore_fence) {
            Err(fence) => {
                events.push(Event::Fenced { stream, server, epoch, fence, id });
                Next::Reply(Msg::StoreAppended { result: Err(fence) })
            }
            // Already there; it may not be synced yet, so sync before answering.
            Ok((offset, false)) => Next::Sync(Then::Deduplicated(Box::new(Appended { stream, server, epoch, key, id, offset, bytes }))),
            Ok((offset, true)) => {
                writes.push(StoreRecord::Append { stream, record });
                let then = Then::Effect(Box::new(Appended { stream, server, epoch, key, id, offset, bytes }));
                if self.mutation == Some(Mutation::StoreAcksBeforeSync) {
                    events.extend(Self::synced_event(&then));
                    return Next::Reply(self.synced(then));
                }
                Next::Sync(then)
            }
        }
    }

    /// The answer once the disk is synced (its event: [`StoreCore::synced_event`]).
    fn synced(&mut self, then: Then) -> Msg {
        match then {
            Then::Read { stream, from, end, precopy, budget } => {
                let records = self.streams.streams.get(&stream).map_or(Vec::new(), |s| chunk(&s.records, from as usize, end as usize, budget));
                Msg::StreamRead { records, length: end, precopy }
            }
            Then::Sealed { length, .. } => Msg::Sealed { result: Ok(length) },
            Then::Fenced { stream, from, length, budget, .. } => {
                let st = self.streams.streams.get_mut(&stream).expect("raise_fence made it");
                let records = chunk(&st.records, from as usize, length as usize, budget);
                // The digest of what the caller says it holds (durable: below the sealed
                // length, synced by the fence), for it to check before keeping it.
                let prefix = st.prefix_digest(from.min(length));
                Msg::FenceResult { result: Ok(records), length, prefix }
            }
            Then::Deduplicated(a) | Then::Effect(a) => Msg::StoreAppended { result: Ok(a.offset) },
        }
    }

    /// The event a request emits once the disk is synced, before its answer.
    fn synced_event(then: &Then) -> Option<Event> {
        match then {
            Then::Read { .. } => None,
            Then::Sealed { stream, epoch, length } | Then::Fenced { stream, epoch, length, .. } => Some(Event::Fence { stream: *stream, epoch: *epoch, length: *length as usize }),
            Then::Deduplicated(a) => Some(Event::Deduplicated { stream: a.stream, server: a.server, epoch: a.epoch, key: a.key.clone(), id: a.id, offset: a.offset }),
            Then::Effect(a) => Some(Event::Effect { stream: a.stream, server: a.server, epoch: a.epoch, key: a.key.clone(), id: a.id, offset: a.offset, bytes: a.bytes }),
        }
    }
}
