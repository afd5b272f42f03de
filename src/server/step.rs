//! Core (pure): the vocabulary of a partition server's steps, shared by the protocol state
//! (`core`) and its request flows (`flow`): what the core is told ([`Input`]), what it
//! returns ([`Step`]: its [`Effect`]s, then what the flow waits for, [`Next`]), and the flow
//! state handed back with each answer ([`Then`] and its parts). Types only, so that `core` and
//! `flow` both build on it and neither imports the other's definitions both ways.

use crate::event::Event;
use crate::goal::Goal;
use crate::ids::{Epoch, OpId, RangeId};
use crate::map::{RangeRow, Strategy};
use crate::msg::{Msg, Record, Source, StreamDigest};
use std::rc::Rc;

/// One output of the server core, performed by the driver in the order the core queued it.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Effect {
    /// Emit this event to the history.
    Event(Event),
    /// Report this goal reached ([`crate::goal::reach`]).
    Goal(Goal),
    /// Records were applied to a range or an admitted effect finished: wake the waits on this
    /// held range ([`Wait`]), so they look at the core again.
    Progress(Notifier),
    /// Start this flow as a task of its own: feed [`Input::Resume`] with it to the
    /// core when the task first runs (a reload in the background, an unawaited fence).
    Spawn(Then),
}

/// The waits on one held range: the range and the serial of the [`Held`](crate::server::Held) (a range dropped
/// and opened again is another one; its old waits are not woken by the new one's progress).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Notifier {
    /// The range.
    pub range: RangeId,
    /// Which [`Held`](crate::server::Held) of it (counted by the core from 1).
    pub serial: u64,
}

/// What the core is told.
#[derive(Debug)]
pub enum Input {
    /// The node started: begin the session upkeep (register, then renew).
    Start,
    /// A request arrived; `link_backlog_us` is this server's outgoing link backlog now
    /// ([`crate::seam::Rpc::link_backlog_us`]): a pause's drain bound grows with it.
    Request {
        /// The request.
        msg: Msg,
        /// The outgoing link's backlog, µs.
        link_backlog_us: u64,
    },
    /// A call of [`Next::Call`] ended with `answer` (`None`: no answer in time).
    Answered {
        /// What the flow does with it.
        then: Then,
        /// The answer.
        answer: Option<Msg>,
    },
    /// A sleep of [`Next::Sleep`] ended, or a flow spawned by [`Effect::Spawn`] or
    /// [`Next::Detach`] starts.
    Resume(Then),
    /// A wait of [`Next::Wait`] ended: the core's [`crate::server::ServerCore::poll`] said it may go on, or its
    /// timeout passed (`timed_out`).
    Waited {
        /// The wait.
        wait: Wait,
        /// Whether its timeout passed first.
        timed_out: bool,
    },
}

/// The core's answer to one input: perform `effects` in order, then `next`.
#[derive(Debug)]
pub struct Step {
    /// Events, goals, wakes and spawns, in the order the core made them.
    pub effects: Vec<Effect>,
    /// What the flow waits for next.
    pub next: Next,
}

/// Whom a call goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// The stream store.
    Store,
    /// The coordination authority.
    Authority,
}

/// What a flow waits for next.
#[derive(Debug)]
pub enum Next {
    /// The flow ends: answer the request with this (`None`: a flow with no one to answer).
    Done(Option<Msg>),
    /// Call `to` with `msg`, waiting at most `timeout_ms`; then [`Input::Answered`].
    Call {
        /// The peer.
        to: Peer,
        /// The request.
        msg: Msg,
        /// The call's timeout, ms of the local clock.
        timeout_ms: u64,
        /// What the flow does with the answer.
        then: Then,
    },
    /// Sleep `ms`; then [`Input::Resume`] with `then`.
    Sleep {
        /// How long, ms of the local clock.
        ms: u64,
        /// What the flow does next.
        then: Then,
    },
    /// Wait until [`crate::server::ServerCore::poll`] of `wait` says go on, looking again at each
    /// [`Effect::Progress`] of the range it names, for at most `timeout_ms` (`None`: no
    /// bound); then [`Input::Waited`].
    Wait {
        /// The wait.
        wait: Wait,
        /// Its bound, ms of the local clock.
        timeout_ms: Option<u64>,
    },
    /// Run `flow` as a task of its own ([`Input::Resume`] when it starts) and answer its reply,
    /// or `otherwise` if it has none within `patience_ms` (the task goes on).
    Detach {
        /// The flow.
        flow: Then,
        /// How long the request waits for it, ms of the local clock.
        patience_ms: u64,
        /// The answer when it does not end in time.
        otherwise: Msg,
    },
}

/// A condition a flow waits for, looked at each time the range it names makes progress.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Wait {
    /// An append stored at `epoch` is visible to reads here (or the range left that epoch).
    Applied {
        /// The range.
        range: RangeId,
        /// The epoch the effect carried.
        epoch: Epoch,
        /// The append's idempotency id.
        op: OpId,
    },
    /// The paused `range` at `epoch` drained ([`crate::server::ServerCore::drained`]).
    Drained {
        /// The range.
        range: RangeId,
        /// The paused epoch.
        epoch: Epoch,
    },
    /// The finish of a move to `row` already running here ended (the range left `Loading`).
    Finish {
        /// The target row.
        row: RangeRow,
    },
}

/// What a flow does with the next answer: the flow's state between two steps.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Then {
    /// The session upkeep's next round: register or renew.
    Session,
    /// The authority answered a registration sent at `sent_us`.
    Registered {
        /// When it was sent (µs, local clock).
        sent_us: u64,
    },
    /// The authority answered the renewal of `session` sent at `sent_us`.
    Renewed {
        /// The session renewed.
        session: u64,
        /// When it was sent (µs, local clock).
        sent_us: u64,
    },
    /// Admit an append (after mutation `check-then-await-then-admit`'s await).
    Admit {
        /// The range.
        range: RangeId,
        /// The append as asked: the record with the epoch the request named.
        request: Box<Record>,
    },
    /// The store answered an admitted append.
    Appended {
        /// The range.
        range: RangeId,
        /// The record sent.
        record: Record,
    },
    /// The store answered one chunk of a transfer.
    Chunk(Box<Chunks>),
    /// The store answered a fence.
    Fenced(Box<FenceCall>),
    /// Reload `row` (its content may have diverged from its stream), in the background.
    Resync(RangeRow),
    /// Mutation `publish-before-fence`: send `row`'s fence, without anyone waiting for it.
    LooseFence(RangeRow),
    /// Nothing: the answer is not looked at.
    Ignore,
    /// Finish a move to `row` (the target's cutover), in a task of its own.
    Finish(Box<FinishMove>),
}

/// A move's cutover as the target was asked for it.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct FinishMove {
    /// The target row (the transfer's epoch).
    pub row: RangeRow,
    /// The source's drained digest.
    pub digest: StreamDigest,
    /// The move's strategy.
    pub strategy: Strategy,
    /// The range's sealed ancestors.
    pub lineage: Vec<Source>,
}

/// Why a stream could not be fenced and loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The fence is already above our epoch: a newer owner exists.
    Fenced(Epoch),
    /// The store did not answer in time.
    NoAnswer,
    /// The transfer is no longer wanted here (the range was dropped or reopened at a newer
    /// epoch, the session was lost, the pre-copy was dropped): it stopped reading.
    Abandoned,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Fenced(e) => write!(f, "fence already at {e}"),
            LoadError::NoAnswer => write!(f, "store did not answer the fence"),
            LoadError::Abandoned => write!(f, "no longer loading here"),
        }
    }
}

/// Consecutive unanswered chunk reads after which a transfer gives up.
pub const CHUNK_ATTEMPTS: u32 = 3;

/// Whether a transfer is still wanted, asked before each chunk.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum Want {
    /// While `row` is loading here at its epoch ([`crate::server::ServerCore::loading`]).
    Loading(RangeRow),
    /// While the pre-copy of `row` is kept here ([`crate::server::ServerCore::copying`]).
    Copying(RangeRow),
}

/// A transfer read a chunk at a time: `stream` from offset `from` up to `end` (`None`: the
/// durable end when the first chunk is answered). Each chunk waits the store timeout: the
/// store sizes every answer to leave its link within half of it, so the bound holds for a
/// range of any size and the transfer as a whole takes as long as its bytes need. A chunk left
/// unanswered is asked again, up to [`CHUNK_ATTEMPTS`] times in a row. A transfer no longer
/// wanted ([`Want`]) stops at once instead of reading the rest of the stream (a load of an
/// epoch already dropped would otherwise go on reading, and queue on the store's link ahead of
/// the load that matters).
///
/// Errors (to `after`): `NoAnswer` when a chunk went unanswered that many times, or the stream
/// ended short of `end`; `Abandoned` when no longer wanted.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Chunks {
    /// The stream.
    pub stream: RangeId,
    /// The offset of `out[0]`.
    pub from: u64,
    /// The records read so far.
    pub out: Vec<Record>,
    /// Where the transfer ends.
    pub end: Option<u64>,
    /// Unanswered chunks in a row.
    pub misses: u32,
    /// A pre-copy round's read (the store traces it apart).
    pub precopy: bool,
    /// Whether it is still wanted.
    pub want: Want,
    /// What is done with the records.
    pub after: After,
}

/// What a flow does with a transfer's records (or its [`LoadError`]).
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum After {
    /// One source of a lineage was read.
    Lineage(Box<Lineage>),
    /// An open's load: serve with `base` inherited.
    Opened {
        /// The row opened.
        row: RangeRow,
        /// The lineage's records (`None`: kept from before).
        base: Option<Rc<Vec<Record>>>,
    },
    /// Mutation `publish-before-fence`: the unfenced load of an open; send the fence, then serve.
    OpenedUnfenced {
        /// The row opened.
        row: RangeRow,
        /// The lineage's records (`None`: kept from before).
        base: Option<Rc<Vec<Record>>>,
    },
    /// A background reload of `row`.
    Resynced(RangeRow),
    /// A pre-copy round of `row` from offset `from`.
    Precopied {
        /// The target row.
        row: RangeRow,
        /// Where the round read from.
        from: u64,
    },
    /// A move's tail, past the pre-copied `records`.
    Tail(Box<Tail>),
}

/// A move's cutover once the lineage is read: the records pre-copied and what the copy is
/// checked against.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Tail {
    /// The cutover asked for.
    pub finish: FinishMove,
    /// The lineage's records.
    pub base: Rc<Vec<Record>>,
    /// The records pre-copied (offset 0 on).
    pub records: Vec<Record>,
}

/// The sealed ancestors of a range read one after the other (oldest first), keeping the
/// records that fall in each source's key range, in order.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct Lineage {
    /// The sources.
    pub sources: Vec<Source>,
    /// The next source to read.
    pub next: usize,
    /// The records kept so far.
    pub out: Vec<Record>,
    /// What the lineage is for.
    pub then: LineageFor,
}

/// What a lineage is read for.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum LineageFor {
    /// An open from offset `from`.
    Open {
        /// The row opened.
        row: RangeRow,
        /// The offset the load starts from.
        from: u64,
    },
    /// A move's cutover, with the records pre-copied.
    Finish {
        /// The cutover asked for.
        finish: FinishMove,
        /// The records pre-copied.
        records: Vec<Record>,
    },
}

/// A fence sent for a load and what follows it.
#[derive(Clone, Debug, PartialEq, Hash)]
pub struct FenceCall {
    /// The row whose stream is fenced.
    pub row: RangeRow,
    /// The offset the content was asked from.
    pub from: u64,
    /// The ids barred with it.
    pub bar: Vec<OpId>,
    /// Whether the content kept here (below `from`) is checked against the store's digest of
    /// it ([`crate::server::ServerCore::keep_prefix`]): a reload's fence; a move's tail fence is not.
    pub reload: bool,
    /// What the loaded records are for.
    pub after: After,
}
