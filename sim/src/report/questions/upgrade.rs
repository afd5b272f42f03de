//! Question 5's managers' half: an operator's leader transfer (the step before restarting a
//! manager in a rolling upgrade). Measured from the history: from each `leader_released` to the
//! next `leader` grant, and whether the standby (another manager) got it.

use crate::events::{Event, Sys};

/// One release and the grant after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Takeover {
    /// From the release to the next grant, ms.
    pub gap_ms: f64,
    /// The next term went to another manager than the one that released.
    pub standby: bool,
}

/// Every release in `events` that a grant followed.
pub fn takeovers(events: &[Event]) -> Vec<Takeover> {
    let mut released: Option<(u64, u32)> = None;
    let mut out = Vec::new();
    for ev in events {
        match ev.sys() {
            Some(Sys::LeaderReleased { manager, .. }) => released = Some((ev.t_us, *manager)),
            Some(Sys::Leader { manager, .. }) => {
                if let Some((t, old)) = released.take() {
                    out.push(Takeover { gap_ms: (ev.t_us - t) as f64 / 1000.0, standby: *manager != old });
                }
            }
            _ => {}
        }
    }
    out
}
