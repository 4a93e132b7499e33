//! Helpers several of `bins`' test targets share.
#![allow(dead_code)]

pub mod chaos;
pub mod crds;
pub mod hosted;
pub mod kind_stand_in;
pub mod process;
pub mod secure_metrics;
pub mod service_account;
