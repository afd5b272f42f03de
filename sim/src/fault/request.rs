//! Operator requests: what an operator asks the control plane to do, as opposed to what breaks.
//! A schedule names them beside faults (they are timed the same way, and replay the same way),
//! but nothing breaks: the harness's operator node sends each to the authority and records its
//! verdict ([`crate::events::What::OperatorVerdict`]). Every place that asks "which nodes does
//! this fault cut, crash or slow" matches `Fault::Request(_)` once, so a new request is added
//! here and where it is sent, not in every fault match.

/// One operator request.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Request {
    /// Move the range holding the key (first) to the server (second); no duration.
    Move(String, String),
    /// Drain the server for the duration: move its ranges away, assign it nothing.
    Drain(String),
    /// Split the range holding the key at the key; no duration.
    Split(String),
    /// Merge the range holding the first key with the one holding the second; no duration.
    Merge(String, String),
    /// The leader steps down at its next clean point between rounds and releases its lease, so
    /// that a standby manager takes over at once (TiKV evicts leaders before it upgrades a
    /// node for the same reason); no duration.
    LeaderTransfer,
}

impl std::fmt::Display for Request {
    /// `move k000042 to server-3`, `drain server-2`, `split_range at k000250`,
    /// `merge_ranges k000100 k000300`, `leader_transfer`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::Move(k, to) => write!(f, "move {k} to {to}"),
            Request::Drain(n) => write!(f, "drain {n}"),
            Request::Split(k) => write!(f, "split_range at {k}"),
            Request::Merge(l, r) => write!(f, "merge_ranges {l} {r}"),
            Request::LeaderTransfer => write!(f, "leader_transfer"),
        }
    }
}

impl Request {
    /// The request's kind as the sweep's fault table and coverage name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Request::Move(..) => "move_request",
            Request::Drain(_) => "drain",
            Request::Split(_) => "split_request",
            Request::Merge(..) => "merge_request",
            Request::LeaderTransfer => "leader_transfer",
        }
    }

    /// The nodes the request names: a drain's server, a move's target.
    pub fn nodes(&self) -> Vec<&str> {
        match self {
            Request::Drain(n) | Request::Move(_, n) => vec![n],
            Request::Split(_) | Request::Merge(..) | Request::LeaderTransfer => Vec::new(),
        }
    }
}
