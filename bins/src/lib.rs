//! The kcp-rs binaries. Each `main` is short: flags, lifecycle, health, metrics and leader
//! election come from `kcp-manager`; the work from one component crate. The library part holds
//! only the [`playground`]; embedders use `kcp-manager` and the component crates directly.

pub mod playground;
