//! Embedding examples for kcp-rs. Each binary in `src/bin/` is one example:
//!
//! - `plan`: parse a manifest bundle and print the waves kcp-core's apply engine would use
//!   (`cargo run -p kcp-examples --bin plan -- examples/manifests/bundle.yaml`).
//! - `config-generator`: a controller on kcp-rs's runtime ([`config_generator`]), the one to
//!   copy when writing a new one (`cargo run -p kcp-examples --bin config-generator -- crd`
//!   prints its CRD; without arguments it runs against the current kubeconfig).

pub mod config_generator;
