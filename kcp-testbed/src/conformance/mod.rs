//! The conformance suite's machinery: kcp-sim held to the real servers.
//!
//! The same request sequences ([`case`]) are sent to kcp-sim and to kube-apiserver or kcp
//! ([`run`], [`exchange`]); the answers are normalised ([`normalise`]) and compared field by
//! field ([`compare`]). The real servers' answers are recorded beside the cases, so the fast
//! suite compares kcp-sim to them without the peers, and the real suite checks the recordings
//! are still what the servers answer. Each difference is either fixed in kcp-sim or listed with
//! its reason; [`verdict`] turns that into the table README shows.

pub mod case;
pub mod compare;
pub mod exchange;
pub mod normalise;
pub mod run;
pub mod schedule;
pub mod verdict;

pub use case::{Case, CaseFile, ServerKind, Step};
pub use compare::{Difference, Listed, differences};
pub use exchange::CaseNames;
pub use normalise::Normaliser;
pub use schedule::{Lane, Ran, Target, run_all};
pub use verdict::{Table, Verdict, stale};
