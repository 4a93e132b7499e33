//! Process glue shared by the kcp-rs binaries.
