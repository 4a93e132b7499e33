//! kcp-init: the kcp init-agent as a library.
//!
//! An `InitTarget` names a kcp `WorkspaceType` and lists sources (`InitTemplate`s). Every new
//! workspace of that type waits in phase `Initializing` until the agent has rendered the
//! templates for it, applied the objects through the initializingworkspaces virtual workspace,
//! and removed the type's initializer from the workspace's `LogicalCluster`.

pub mod api;
pub mod render;
