//! The named mutations: each switches off one safety mechanism on purpose, so that a run can
//! show a checker catching the broken build (`partmap-sim mutants`). Selected only from the
//! command line or a test (`Knobs::mutation`), never by a scenario file. Idea: FoundationDB's
//! negative tests and TigerBeetle's VOPR, which must fail on a broken build.

/// A named mutation: one safety mechanism switched off, so a checker must catch the result.
/// Selected only with `partmap-sim --mutation NAME` (or a test's `RunOptions`); scenario files
/// cannot set it, and it is never on by default. `partmap-sim mutants` runs each on the
/// scenario where it applies and requires a checker to catch it (FoundationDB's negative tests
/// with a deliberately broken resolver, TigerBeetle's fuzzer that must fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mutation {
    /// The store appends whatever the fence says (a stale owner's delayed write lands).
    StoreIgnoresFence,
    /// The server ignores the epochs a request or command names: it admits at whatever epoch it
    /// holds, and a manager's pause or release names a range epoch, and a leader epoch, it no
    /// longer checks. Alone,
    /// the request side is covered by the fence (a record at a stale epoch is refused at the
    /// store); the command side is not: a pause delayed in the network from an aborted move
    /// pauses the range at its new epoch, and nothing ever resumes it.
    ServerSkipsEpochCheck,
    /// The server admits appends whatever epoch the request carries and whatever its lease says
    /// (the whole authority check off: epoch, lease, state).
    ServerSkipsAuthorityCheck,
    /// The server keeps serving after its lease has run out by its own clock, as long as it
    /// has a session (tarantool/cartridge#2342, HBASE-2231): only the lease check is off.
    ServerIgnoresLeaseExpiry,
    /// The authority check happens outside the guarded section: the server checks, awaits
    /// (10 ms, as a handler that reads or locks something first), then admits without checking
    /// again. MongoDB SERVER-26885 is this race.
    CheckThenAwaitThenAdmit,
    /// A pause does not wait for admitted effects: the source reports its digest at once, with
    /// appends still on their way to the store. No data is lost in this design: the target
    /// fences before it copies and checks the copy against the digest, so the move aborts
    /// instead (verify masks it). `single_writer` checks the rule itself from the trace (a
    /// `drained` event while an admitted append has neither landed nor been refused).
    PauseSkipsDrain,
    /// A move's source keeps admitting appends after it is paused (no cooperative pause; only
    /// the store's fence stops its writes once the target fenced).
    SourceIgnoresPause,
    /// A move's target serves its copy without checking it against the source's digest.
    TargetSkipsVerify,
    /// A new owner is published (answers the open, serves) before its fence is raised: it loads
    /// the stream with a plain read and sends the fence without waiting for it.
    PublishBeforeFence,
    /// A split or merge retires its parents in one map commit and publishes the children in a
    /// second: between the two the map has a hole.
    RetireParentsFirst,
    /// A frontend retries an append with a fresh idempotency id instead of the same one.
    FreshIdOnRetry,
    /// Servers trust their lease until send time + lease, with no safety margin; clock drift
    /// then lets a server serve after the authority expired it.
    ZeroLeaseMargin,
    /// The leader-epoch check at the map write is gone: the authority applies a compare-and-set
    /// whatever leader epoch it carries (only the map version is compared), and a deposed leader
    /// keeps acting on its old term (as KAFKA-6082's old controller did). Skipping only the
    /// authority's comparison would be covered here by the leader's own lease check, which
    /// stops a round before it writes on an expired lease; that check is "before the write",
    /// which a paused or slow leader can outlive, so the mutation removes both.
    AuthoritySkipsLeaderEpoch,
    /// A new leader ignores the transfer journal it inherited: it does not drive the moves,
    /// splits and merges begun under an earlier term, so one paused in the journal stays paused
    /// (an entry already journaled as aborted is still rolled back: that is a map op the
    /// planner derives from the rows, not a step of the journal's flow).
    NewLeaderIgnoresJournal,
    /// The store acknowledges an append before syncing it to its disk.
    StoreAcksBeforeSync,
    /// A merge commits from a stale view of a parent: the parent's length from the load report
    /// the round began with, not the length the seal returned.
    MergeFromStaleView,
    /// A split commits its parent's sealed length one record short: every child, and every
    /// range later made from them, inherits the parent's stream without its last record, while
    /// the stream at the store keeps it. The store-side view of `no_lost_append` (the only one
    /// before issue 12) passes; the served view (final strong reads of every appended key)
    /// fails on every run; client reads catch it only when some client reads that key again.
    SplitSealsOneShort,
    /// The authority's leader lease forgets who holds it: any candidate asking while the lease
    /// is held is told it leads, at the incumbent's term, and both pass the leader-epoch
    /// compare-and-set (issue 19's first survivor). Only a commit naming its manager shows
    /// two leaders at one term.
    AuthoritySharesLeaderTerm,
    /// The authority writes a compare-and-set's result to its log before validating it and
    /// never takes a refused one back: refused map versions (a deposed leader's, or one built
    /// on an old version) are durable though never announced, and a restart may restore one.
    /// Only the replay of the authority's durable log (issue 12) judges them.
    AuthorityLogsRefusedCas,
    /// The server obeys every manager command whatever leader epoch it carries (issue 19's
    /// second survivor: `ServerCore::command` accepts all): a deposed leader's late open,
    /// pause, pre-copy, finish or release acts. Only the leader-epoch check is off; the range
    /// epoch a pause or release names is still checked (that is `server-skips-epoch-check`).
    /// Defence in depth: a deposed leader cannot journal, so it only repeats steps of flows the
    /// current leader inherited, at the epochs the journal holds; a rollback reopens at a newer
    /// epoch, the store's fence refuses a stale open or finish, and frontends route only to
    /// rows the current leader activated. Obeyed on every seed of `dueling-managers.json`,
    /// caught on none.
    ServerObeysDeposedLeader,
    /// The server admits a request naming a newer range epoch than the one it holds, and the
    /// effect carries that newer epoch (issue 19's third survivor, `ServerCore::authorize`).
    /// Defence in depth: a row is active at epoch E for server S only once S opened it at E,
    /// and S's epoch for a range never goes down, so no frontend names an epoch newer than
    /// the one its server holds; no run tried reaches it.
    ServerAdmitsNewerEpoch,
    /// A server told by the store that a newer owner fenced its stream keeps the range
    /// (issue 19's fourth survivor, `ServerCore::finish_append`). Defence in depth: a newer
    /// owner fences only after this server's session expired at the authority (its own lease
    /// ended a margin earlier) or after it paused the range for a move, split or merge, so it
    /// serves nothing more either way; no run tried reaches it.
    ServerKeepsFencedRange,
    /// The map forgets its splits and merges when asked which one involves a range
    /// (`PartitionMap::reshape_of` returns nothing, issue 19's fifth survivor): a range in a
    /// split or merge is not in flight, so the planner can pick a parent for a move while its
    /// merge is journaled, and the map's phase checks let it. The merge then retires the
    /// parent under the move, which can never finish: a move of a retired range stays in the
    /// journal and holds a move slot forever (`move-during-merge.json`, caught by `map_tiles`'
    /// journal check).
    MapForgetsReshapes,
}

impl Mutation {
    /// Every mutation with its CLI name: first the ones a checker must catch (each has a
    /// target in `partmap-sim mutants`), then the three of issue 19 that are defence in depth
    /// (no run of any scenario tried shows a property they alone protect; see
    /// `reports/mutation-testing.md`).
    pub const ALL: [(Mutation, &'static str); 23] = [
        (Mutation::StoreIgnoresFence, "store-ignores-fence"),
        (Mutation::ServerSkipsEpochCheck, "server-skips-epoch-check"),
        (Mutation::ServerSkipsAuthorityCheck, "server-skips-authority-check"),
        (Mutation::ServerIgnoresLeaseExpiry, "server-ignores-lease-expiry"),
        (Mutation::CheckThenAwaitThenAdmit, "check-then-await-then-admit"),
        (Mutation::PauseSkipsDrain, "pause-skips-drain"),
        (Mutation::SourceIgnoresPause, "source-ignores-pause"),
        (Mutation::TargetSkipsVerify, "target-skips-verify"),
        (Mutation::PublishBeforeFence, "publish-before-fence"),
        (Mutation::RetireParentsFirst, "retire-parents-first"),
        (Mutation::FreshIdOnRetry, "fresh-id-on-retry"),
        (Mutation::ZeroLeaseMargin, "zero-lease-margin"),
        (Mutation::AuthoritySkipsLeaderEpoch, "authority-skips-leader-epoch"),
        (Mutation::NewLeaderIgnoresJournal, "new-leader-ignores-journal"),
        (Mutation::StoreAcksBeforeSync, "store-acks-before-sync"),
        (Mutation::MergeFromStaleView, "merge-from-stale-view"),
        (Mutation::SplitSealsOneShort, "split-seals-one-short"),
        (Mutation::AuthorityLogsRefusedCas, "authority-logs-refused-cas"),
        (Mutation::AuthoritySharesLeaderTerm, "authority-shares-leader-term"),
        (Mutation::MapForgetsReshapes, "map-forgets-reshapes"),
        (Mutation::ServerObeysDeposedLeader, "server-obeys-deposed-leader"),
        (Mutation::ServerAdmitsNewerEpoch, "server-admits-newer-epoch"),
        (Mutation::ServerKeepsFencedRange, "server-keeps-fenced-range"),
    ];

    /// The CLI name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(m, _)| *m == self).map(|(_, n)| *n).expect("listed")
    }

    /// Parse a CLI name. Errors: a message listing the accepted names.
    pub fn parse(name: &str) -> Result<Mutation, String> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(m, _)| *m).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|(_, n)| *n).collect();
            format!("unknown mutation `{name}`; accepted: {}", names.join(", "))
        })
    }

    /// Whether it lives in the store's core (`store-ignores-fence`, `store-acks-before-sync`),
    /// which takes one mutation: two of these cannot be on at once.
    pub fn lives_in_store(self) -> bool {
        matches!(self, Mutation::StoreIgnoresFence | Mutation::StoreAcksBeforeSync)
    }
}
