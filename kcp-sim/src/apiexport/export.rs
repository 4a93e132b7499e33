//! Reading APIExports: the stored (v1alpha2) object as what bindings and the virtual workspace
//! need, and finding an export by workspace path and name or by identity hash.

use serde_json::Value;

use super::{exports, str_at, view_key};
use crate::store::State;

/// A resource an APIExport exports: `spec.resources[]` with CRD storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedResource {
    /// API group.
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// Name of the APIResourceSchema (in the export's workspace).
    pub schema: String,
}

/// A permission claim of an APIExport (or, with its state, of an APIBinding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// API group of the claimed resource.
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// Identity hash of the export providing the resource (empty for builtin resources).
    pub identity_hash: String,
    /// Verbs claimed (`*` for all).
    pub verbs: Vec<String>,
}

impl Claim {
    /// A claim as either API version writes it (v1alpha1 claims have no verbs: all verbs).
    pub fn from_value(v: &Value) -> Self {
        let verbs: Vec<String> = v
            .get("verbs")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .filter(|a: &Vec<String>| !a.is_empty())
            .unwrap_or_else(|| vec!["*".to_string()]);
        Self {
            group: str_at(v, "/group").to_string(),
            resource: str_at(v, "/resource").to_string(),
            identity_hash: str_at(v, "/identityHash").to_string(),
            verbs,
        }
    }

    /// Same group, resource and identity (kcp's `EqualGRI`).
    pub fn same_resource(&self, other: &Claim) -> bool {
        self.group == other.group
            && self.resource == other.resource
            && self.identity_hash == other.identity_hash
    }

    /// Whether an export's claim (`self`) and the binding's acceptance of it (`accepted`)
    /// allow a verb: as kcp's apiexport authorizer does, the two verb lists are intersected
    /// literally (`*` matches only `*`), and the verb or `*` must be in the intersection.
    pub fn allows_with(&self, accepted: &Claim, verb: &str) -> bool {
        ["*", verb]
            .iter()
            .any(|v| self.verbs.iter().any(|e| e == v) && accepted.verbs.iter().any(|b| b == v))
    }
}

/// An APIExport as bindings and the virtual workspace see it.
#[derive(Debug, Clone)]
pub struct Export {
    /// Logical cluster of the export.
    pub cluster: String,
    /// Name of the export.
    pub name: String,
    /// `status.identityHash` (empty until the identity is known).
    pub identity_hash: String,
    /// The exported (CRD-backed) resources.
    pub resources: Vec<ExportedResource>,
    /// The permission claims.
    pub claims: Vec<Claim>,
}

impl Export {
    /// An export from its stored (v1alpha2) object.
    pub fn from_value(cluster: &str, v: &Value) -> Self {
        let list = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let resources = list("/spec/resources")
            .iter()
            .filter(|r| r.pointer("/storage/crd").is_some() || r.get("storage").is_none())
            .map(|r| ExportedResource {
                group: str_at(r, "/group").to_string(),
                resource: str_at(r, "/name").to_string(),
                schema: str_at(r, "/schema").to_string(),
            })
            .collect();
        Self {
            cluster: cluster.to_string(),
            name: str_at(v, "/metadata/name").to_string(),
            identity_hash: str_at(v, "/status/identityHash").to_string(),
            resources,
            claims: list("/spec/permissionClaims")
                .iter()
                .map(Claim::from_value)
                .collect(),
        }
    }

    /// The export `name` in logical cluster `cluster`.
    pub fn load(state: &State, cluster: &str, name: &str) -> Option<Self> {
        let stored = state.lookup(cluster, &exports(), "", name)?;
        Some(Self::from_value(cluster, &stored.value().ok()?))
    }

    /// The export `name` in the workspace at `path_or_cluster`.
    pub fn find(state: &State, path_or_cluster: &str, name: &str) -> Option<Self> {
        let cluster = state.resolve_cluster(path_or_cluster)?.to_string();
        Self::load(state, &cluster, name)
    }

    /// Every export with this identity hash, in a stable order.
    pub fn with_identity(state: &State, identity_hash: &str) -> Vec<Self> {
        let gr = exports();
        let mut found = Vec::new();
        for (name, cluster) in &state.clusters {
            for obj in cluster
                .objects
                .get(&gr)
                .into_iter()
                .flat_map(|m| m.values())
            {
                let Ok(v) = obj.value() else { continue };
                if str_at(&v, "/status/identityHash") == identity_hash {
                    found.push(Self::from_value(name, &v));
                }
            }
        }
        found
    }

    /// The key of this export's virtual workspace.
    pub fn key(&self) -> String {
        view_key(&self.cluster, &self.name)
    }

    /// The claim on a group and resource, if any (claims on exported resources do not count).
    pub fn claim_on(&self, group: &str, resource: &str) -> Option<&Claim> {
        if self.exports(group, resource) {
            return None;
        }
        self.claims
            .iter()
            .find(|c| c.group == group && c.resource == resource)
    }

    /// Whether a group and resource is one of the exported resources.
    pub fn exports(&self, group: &str, resource: &str) -> bool {
        self.resources
            .iter()
            .any(|r| r.group == group && r.resource == resource)
    }
}
