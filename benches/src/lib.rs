//! Shared fixtures for the criterion benchmarks in `benches/benches/`.
