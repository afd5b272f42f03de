//! # partmap: the control plane of a range-partitioned storage service
//!
//! A reference implementation, built to run inside madsim's deterministic simulator (the build
//! always uses `--cfg madsim`). The harness that runs it under faults and checks it lives in the
//! `partmap-sim` package.
//!
//! | module | what |
//! |---|---|
//! | [`map`] | the partition map table: rows, ops, tiling (pure) |
//! | [`authority`] | the coordination authority's rules as a pure state machine: leader lease, session leases, map compare-and-set |
//! | [`lock`] | the authority node: drives [`authority::AuthorityCore`] with the network and its disk |
//! | [`store`] | durable stream store with fencing (a pure core and the node task that performs it) |
//! | [`server`] | partition servers: authority check + admission, open by fence-and-load (a pure core, its flows, and the node task that performs them) |
//! | [`handoff`] | the move and split/merge flows as step machines: next step or abort from the state and the last reply |
//! | [`manager`] | partition manager: leader-only planner (bootstrap, assign, failover) |
//! | [`frontend`] | routing with a cached map, refresh and retry with the same idempotency id: a pure core ([`frontend::FrontendCore`]) under its node task |
//! | [`seam`] | the only door to network, clock and disk |
//! | [`event`] | the structured events the harness checks |
//!
//! Protocol decisions are plain functions and structs ([`map::PartitionMap::apply_batch`],
//! [`manager::plan`], [`server::ServerCore`], [`frontend::FrontendCore`]); node tasks are thin loops.

#![deny(missing_docs)]
pub mod authority;
pub mod config;
pub mod event;
pub mod frontend;
pub mod goal;
pub mod handoff;
pub mod ids;
pub mod lock;
pub mod manager;
pub mod map;
pub mod msg;
pub mod mutation;
pub mod seam;
pub mod server;
pub mod store;
#[cfg(test)]
mod testkit;
