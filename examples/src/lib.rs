//! Embedding examples for kcp-rs. Each binary in `src/bin/` is one example:
//!
//! - `plan`: parse a manifest bundle and print the waves kcp-core's apply engine would use
//!   (`cargo run -p kcp-examples --bin plan -- examples/manifests/bundle.yaml`).
