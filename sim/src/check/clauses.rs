//! Every clause of every property, with its one-line definition and the view that judges it:
//! the one list the README's property section is written from ([`markdown`]), so that the
//! documented definitions and the checkers match clause by clause. A test pins the list against
//! the checkers: the properties of [`super::PROPERTIES`] in order, `single_writer`'s numbered
//! clauses in its module doc, and the views [`crate::check::judge()`] produces.

/// One clause of a property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clause {
    /// The property (a name of [`super::PROPERTIES`]).
    pub property: &'static str,
    /// A short name for the clause.
    pub name: &'static str,
    /// The views that judge it (names of [`super::View::view`]; `probe` for liveness).
    pub views: &'static [&'static str],
    /// The definition, one sentence.
    pub definition: &'static str,
}

const fn c(property: &'static str, name: &'static str, views: &'static [&'static str], definition: &'static str) -> Clause {
    Clause { property, name, views, definition }
}

const H: &[&str] = &["history"];
const FINAL: &[&str] = &["served", "stored"];
const MAPS: &[&str] = &["durable", "announced"];

/// Every clause, properties in [`super::PROPERTIES`] order; `single_writer`'s in the order of
/// its module's numbered list.
pub const CLAUSES: &[Clause] = &[
    c("single_writer", "epochs only grow in a stream", H, "per stream, the effects the store holds carry non-decreasing epochs in stream order (an effect a store restart lost is not in the stream)."),
    c("single_writer", "epochs are granted", H, "each effect's epoch was given by the map (a row, a move's journal entry, or a split's or merge's child) to the server that wrote it, and no epoch of a range is given to two servers."),
    c("single_writer", "one owner at a time", H, "once a server activated a range at epoch `e`, no other server admits an append, or answers a strong read, for a key in it at an older epoch (a bounded-staleness read is judged by `reads_consistent`)."),
    c("single_writer", "the fence holds", H, "no effect lands in a stream at or past a fence's sealed length with an epoch below that fence's."),
    c("single_writer", "a new owner's prefix holds", H, "no effect at an epoch below `e` lands past the stream prefix a server loaded when it activated the range at `e`, after that activation."),
    c("single_writer", "a drain waits", H, "a paused range is reported drained only once every append it admitted at that epoch has landed or been refused at the store (or the server reloaded the range since)."),
    c("single_writer", "an expired session serves nothing", H, "no server admits an append, or answers a strong read, after the authority expired the session its authority came from, until it registers anew."),
    c("single_writer", "drained means closed", H, "once a server reported a range drained at an epoch, it admits no append to that range at that epoch."),
    c("no_lost_append", "acknowledged means durable", &["synced"], "when a client's append is acknowledged, the store has made durable at least as many records as it had reported written up to that append's record (judged at the acknowledgement from the store's recovered, synced and effect events)."),
    c("no_lost_append", "acknowledged appends are there once", FINAL, "every acknowledged append is in its key's final content exactly once."),
    c("no_lost_append", "failed appends are absent", FINAL, "no append that definitely failed (`fail` or `unavailable`) is in the final content."),
    c("no_lost_append", "unknown appends at most once", FINAL, "an append whose outcome is unknown is there at most once."),
    c("no_lost_append", "nothing unasked", FINAL, "nothing is in a key's final content that no client appended to that key."),
    c("no_lost_append", "real-time order", FINAL, "an append acknowledged before another on the same key was invoked comes first."),
    c("no_lost_append", "the views agree", &["agreement"], "on every key the final reads answered, what the live system serves equals what the store's streams hold."),
    c("reads_consistent", "a read is a prefix", FINAL, "every answered read returns a prefix of the key's final content, at a record boundary."),
    c("reads_consistent", "a strong read is fresh", FINAL, "a strong read's prefix holds every append to the key acknowledged before the read was invoked."),
    c("reads_consistent", "a bounded read is fresh enough", FINAL, "a `bounded(ms)` read's prefix holds every append to the key acknowledged before its invocation minus the bound."),
    c("map_tiles", "every version tiles", MAPS, "every map version ever durable at the authority, or current at it, tiles the key space: its live rows leave no gap and no overlap, start at the empty key and end unbounded, and there is at least one past version 0."),
    c("map_tiles", "the journal names live rows", MAPS, "a version's journal of moves, splits and merges names only live rows."),
    c("map_tiles", "versions and epochs only grow", MAPS, "map versions only grow, and no range's epoch goes down."),
    c("manager_exclusive", "the current term writes", MAPS, "every map mutation carries the epoch of the leader term current when it was committed, and is made by that term's holder."),
    c("manager_exclusive", "terms only grow", MAPS, "leader terms only grow."),
    c("handoff_in_order", "a pause belongs to a journaled flow", H, "a server pauses a range at an epoch only if some map version up to then journaled a move of the range from that epoch, or a split or merge with the range at that epoch among its parents."),
    c("handoff_in_order", "a commit follows the drain", H, "a move commits only after its source reported the range drained at the move's source epoch, and a split or merge only after every parent's owner reported that parent drained at its journaled epoch, both since the flow was journaled."),
    c("handoff_in_order", "a release follows the commit", H, "a server drops a range as moved only once the map current at the authority no longer names it the range's live owner at that epoch."),
    c("handoff_in_order", "a failover waits for the session", H, "the map gives a live range to another server or session, other than by a move's commit, only once the authority ended the session its owner held it under (the lease expired, or the server registered anew)."),
    c("handoff_in_order", "an owner serves behind its fence", H, "a server activates a range at an epoch only once the store raised the range's stream fence to at least that epoch."),
    c("no_stuck_range", "a pause belongs to a flow", H, "once a server paused a range at an epoch, and while it still holds it (not dropped, not crashed), the map does not name that server the range's owner at that epoch with no move, split or merge of the range in the journal for longer than `lease + 2 * manager_tick + 4 * rpc_timeout` (4.4 s at the defaults), counted while no fault touches that server, a manager or the authority."),
    c("liveness", "every range takes an append", &["probe"], "within the deadline after the heal, an append to every range is acknowledged."),
    c("liveness", "every appended key is read", &["probe"], "within the deadline after the heal, every key any client appended to is answered by a strong read."),
];

/// The clauses of `property`, in order.
pub fn of(property: &str) -> impl Iterator<Item = &'static Clause> + '_ {
    CLAUSES.iter().filter(move |c| c.property == property)
}

/// The README's definitions of the properties, from [`CLAUSES`]: per property a line with its
/// name and kind, then one numbered line per clause with its views.
pub fn markdown() -> String {
    let mut out = String::new();
    for &(property, kind) in super::PROPERTIES.iter() {
        out.push_str(&format!("- `{property}` ({}):\n", kind.name()));
        for (i, c) in of(property).enumerate() {
            let views: Vec<String> = c.views.iter().map(|v| format!("`{v}`")).collect();
            out.push_str(&format!("  {}. {}: {} ({})\n", i + 1, c.name, c.definition, views.join(", ")));
        }
    }
    out
}

/// The markers between which the README carries [`markdown`]'s text.
pub const README_MARKERS: (&str, &str) = ("<!-- clauses: begin (generated from sim/src/check/clauses.rs) -->", "<!-- clauses: end -->");
