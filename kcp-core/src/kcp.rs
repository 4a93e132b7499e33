//! kcp's API as seen by a client: typed resources, well-known keys, names and URLs.
//!
//! * [`types`]: LogicalCluster, Workspace, WorkspaceType, APIExport, APIExportEndpointSlice,
//!   APIResourceSchema and APIBinding, with kcp's own field names.
//! * [`names`]: validated [`ClusterName`], [`ClusterPath`] and [`InitializerName`].
//! * [`urls`]: `/clusters/<x>`, initializingworkspaces and apiexport virtual workspace URLs.
//! * The annotation and label keys kcp sets on objects (the constants below).

pub mod names;
pub mod types;
pub mod urls;

pub use names::{ClusterAddress, ClusterName, ClusterPath, InitializerName};
pub use types::{
    APIBinding, APIBindingSpec, APIBindingStatus, APIExport, APIExportEndpointSlice,
    APIExportEndpointSliceSpec, APIExportEndpointSliceStatus, APIExportSpec, APIExportStatus,
    APIResourceSchema, APIResourceSchemaSpec, Condition, LogicalCluster, LogicalClusterSpec,
    LogicalClusterStatus, Workspace, WorkspaceSpec, WorkspaceStatus, WorkspaceType,
    WorkspaceTypeSpec, WorkspaceTypeStatus,
};

/// Annotation holding the logical cluster name of an object, set on everything read through a
/// wildcard (`/clusters/*`) list or watch and on many kcp objects.
pub const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";

/// Annotation holding the canonical workspace path of a LogicalCluster (and other kcp objects).
pub const PATH_ANNOTATION: &str = "kcp.io/path";

/// Label with the phase of a LogicalCluster (`Initializing`, `Ready`, ...), used by kcp to
/// filter what the initializingworkspaces virtual workspace shows.
pub const PHASE_LABEL: &str = "tenancy.kcp.io/phase";

/// Annotation with the owner (user info JSON) of a workspace, used by kcp ≤ 0.29 to
/// impersonate the owner in the initializingworkspaces virtual workspace.
pub const OWNER_ANNOTATION: &str = "experimental.tenancy.kcp.io/owner";

/// Prefix of the per-initializer label kcp puts on LogicalClusters that wait for it
/// (see [`InitializerName::label_key`]).
pub const INITIALIZER_LABEL_PREFIX: &str = "initializer.internal.kcp.io/";

/// The name of the singleton LogicalCluster object in every logical cluster.
pub const LOGICAL_CLUSTER_NAME: &str = "cluster";
