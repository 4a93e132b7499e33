//! The kcp-rs binaries. Each `main` is short: flags, lifecycle, health, metrics and leader
//! election come from `kcp-manager`; the work from one component crate. Nothing here is a
//! library of its own: embedders use `kcp-manager` and the component crates directly.
