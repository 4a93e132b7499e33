//! Helpers several of `bins`' test targets share.
#![allow(dead_code)]

pub mod chaos;
pub mod process;
pub mod secure_metrics;
