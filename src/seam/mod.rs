//! The one seam between the control plane and the world: network, clock and disk (drivers: they
//! run on madsim). One file per concern: [`net`] (request/response messaging and the
//! bandwidth-limited link), [`clock`] (local, drifting time and timers), [`fault`] (the link
//! faults the harness sets) and [`disk`] (an fsync log that loses unsynced records on crash).
//! Their items are re-exported here, so callers name them `crate::seam::Rpc`, `seam::now_us` and
//! so on.
//!
//! Every node reaches the network only through [`Rpc`], time only through [`now_us`] and
//! [`sleep_ms`], and its disk only through [`Disk`]. Under `--cfg madsim` these run on madsim's
//! seeded network and clock; the harness (`partmap-sim`) drives crashes of the [`Disk`]s.
//!
//! madsim charges no time for message size, and its file system is durable at once. So the seam
//! adds what the design needs on top: a per-node outgoing link that charges `bytes / bandwidth`
//! (a transfer of a large range shows up in pause lengths), and a disk whose writes are lost on
//! crash unless synced.

pub mod clock;
pub mod disk;
pub mod fault;
pub mod net;

pub use clock::{clocked, now_ms, now_us, sleep_ms, sleep_us, spawn, timeout_ms};
pub use disk::{CrashReport, Disk};
pub use fault::{Hold, LinkFault, LinkFaults, Release};
pub use net::{messages_sent, set_wire, Net, Rpc, RpcError, CONTROL_BYTES, HEADER_BYTES};
