//! Goals: named protocol steps a run can reach, declared where the step happens ("sometimes"
//! assertions, as Antithesis's `sometimes` and TigerBeetle's coverage marks use them). A goal
//! is not a property: nothing fails when one is reached. A sweep that never reaches one has a
//! hole in its search, and the harness's explorer (`partmap-sim explore`) steers toward the
//! rare ones. Goals leave the control plane through [`reach`] to a sink the harness installs;
//! they are not part of the history, so they change no trace hash.

use std::cell::RefCell;

/// A protocol step worth reaching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Goal {
    /// A server admitted an append less than 100 ms (its clock) before its lease runs out.
    AdmitNearLeaseEnd,
    /// A move's source did not answer the leader's pause in time (the move is then aborted or
    /// retried by the next round).
    MovePauseUnanswered,
    /// A parent of a split or merge did not answer the leader's pause in time.
    ReshapePauseUnanswered,
    /// A frontend fetched a map two or more versions newer than the one it had been routing
    /// on.
    RoutedOnStaleMap,
    /// A move's target was told to finish while its copy did not match the source's digest.
    FinishWithDivergedCopy,
    /// A manager's command for a range (a pause, a release, an open) reached a server that
    /// holds the range at a newer epoch than the command names: the command outlived the flow
    /// that sent it (held or duplicated in the network, or sent by a deposed leader).
    StaleRangeCommand,
}

impl Goal {
    /// Every goal with its name and what it means.
    pub const ALL: [(Goal, &'static str, &'static str); 6] = [
        (Goal::AdmitNearLeaseEnd, "admit_near_lease_end", "a server admitted an append less than 100 ms before its lease ran out"),
        (Goal::MovePauseUnanswered, "move_pause_unanswered", "a move's source did not answer the leader's pause in time"),
        (Goal::ReshapePauseUnanswered, "reshape_pause_unanswered", "a parent of a split or merge did not answer the leader's pause in time"),
        (Goal::RoutedOnStaleMap, "routed_on_stale_map", "a frontend had routed on a map two or more versions older than the one it fetched"),
        (Goal::FinishWithDivergedCopy, "finish_with_diverged_copy", "a move's target was asked to finish with a copy that did not match the source"),
        (Goal::StaleRangeCommand, "stale_range_command", "a manager's pause, release or open reached a server holding the range at a newer epoch than the command named"),
    ];

    /// The goal's name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(g, ..)| *g == self).map(|(_, n, _)| *n).expect("listed")
    }
}

/// Where [`reach`] sends goals: the harness's collector.
pub type Sink = Box<dyn FnMut(Goal)>;

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Report that `goal` was reached, to the sink installed on this thread, if any.
pub fn reach(goal: Goal) {
    SINK.with(|s| {
        if let Some(f) = s.borrow_mut().as_mut() {
            f(goal);
        }
    });
}

/// Install `sink` for this thread's goals (`None` removes it); returns the previous one.
pub fn set_sink(sink: Option<Sink>) -> Option<Sink> {
    SINK.with(|s| std::mem::replace(&mut *s.borrow_mut(), sink))
}
