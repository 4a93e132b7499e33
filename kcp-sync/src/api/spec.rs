//! The nested types of `PublishedResourceSpec`, field for field as upstream.

use std::collections::BTreeMap;

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_false;

/// The source type on the service cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceResourceDescriptor {
    /// The API group, for example `storage.initroid.com` (empty for the core group).
    #[serde(rename = "apiGroup")]
    pub api_group: String,
    /// Publish only this version. Deprecated: use `versions`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The subset of versions to publish; empty publishes all versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// The Kind, for example `Database`.
    pub kind: String,
}

/// Which kcp objects are handled.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceFilter {
    /// Matched against the labels of the kcp Namespace of an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<LabelSelector>,
    /// Matched against the labels of the kcp object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<LabelSelector>,
}

/// A Kubernetes label selector (`metav1.LabelSelector`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct LabelSelector {
    /// Labels that must be present with exactly these values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Set-based requirements; all must hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

/// One set-based requirement of a [`LabelSelector`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// Values for `In` and `NotIn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub values: Option<Vec<String>>,
}

/// How local namespaces and names are formed: Go templates, or the deprecated `$var` forms.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceNaming {
    /// The local name. Default:
    /// `{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The local namespace of namespaced objects. Default: `{{ .ClusterName }}`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// The scope of a resource.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ResourceScope {
    /// Cluster-scoped.
    Cluster,
    /// Namespaced.
    Namespaced,
}

impl ResourceScope {
    /// `Cluster` or `Namespaced`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceScope::Cluster => "Cluster",
            ResourceScope::Namespaced => "Namespaced",
        }
    }
}

/// How the source type's GVK and names change in kcp.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceProjection {
    /// The API group in kcp.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The single version's name in kcp. Deprecated: use `versions`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Old to new version names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, String>,
    /// The scope in kcp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ResourceScope>,
    /// The Kind in kcp; also sets the list kind, singular and (unless `plural`) plural.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The plural resource name in kcp.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plural: String,
    /// Short names in kcp: absent keeps the source's, `[]` clears them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_names: Option<Vec<String>>,
    /// Categories in kcp: absent keeps the source's, `[]` clears them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Vec<String>>,
}

/// Rewrite rules: `spec` rules on the way from the source to the destination, `status`
/// rules on the way back.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMutationSpec {
    /// Rules applied to the source object before it is written to the destination.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec: Vec<ResourceMutation>,
    /// Rules applied to the destination object before its status goes back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<ResourceMutation>,
}

/// One rewrite step; exactly one of the fields must be set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMutation {
    /// Delete the value at a path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<ResourceDeleteMutation>,
    /// Rewrite the value at a path with a regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<ResourceRegexMutation>,
    /// Set the value at a path from a template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<ResourceTemplateMutation>,
    /// Set the value at a path from a CEL expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<ResourceCELMutation>,
}

/// Delete the value at `path`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceDeleteMutation {
    /// A gjson-style path (`spec.a.b`, `spec.list.0`).
    pub path: String,
}

/// Rewrite the value at `path` with `pattern` and `replacement`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceRegexMutation {
    /// A gjson-style path.
    pub path: String,
    /// A regular expression; empty replaces the whole value with `replacement`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pattern: String,
    /// The replacement; `$1` refers to capture groups.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub replacement: String,
}

/// Set the value at `path` to a rendered template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceTemplateMutation {
    /// A gjson-style path.
    pub path: String,
    /// A Go template; `.Value`, `.LocalObject` and `.RemoteObject` are available.
    pub template: String,
}

/// Set the value at `path` to the result of a CEL expression.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceCELMutation {
    /// A gjson-style path.
    pub path: String,
    /// A CEL expression over `self`, `other` and `value`.
    pub expression: String,
}

/// The side that owns the original of a related object.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RelatedResourceOrigin {
    /// The original lives on the service cluster; its copy goes to kcp.
    Service,
    /// The original lives in kcp; its copy goes to the service cluster.
    Kcp,
}

/// The deprecated `kind` shorthand of a related resource.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum RelatedResourceKind {
    /// core/v1 configmaps.
    ConfigMap,
    /// core/v1 secrets.
    Secret,
}

/// A related resource: objects that belong to the synced object and travel with it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.kind) != (has(self.version) || has(self.resource))").message("must specify either kind (deprecated) or group, version, resource"),
    validation = Rule::new("has(self.resource) == has(self.version)").message("resource and version must be configured together or not at all"),
    validation = Rule::new("!has(self.group) || (has(self.resource) && has(self.version))").message("configuring a group also requires a version and resource"),
    validation = Rule::new("!has(self.identityHash) || (has(self.group) && has(self.version) && has(self.resource))").message("identity hashes can only be used with GVRs"),
    validation = Rule::new("!(self.origin == 'service' && has(self.syncStatus) && self.syncStatus) || has(self.watch)").message("watch must be configured when origin is service and syncStatus is true"),
)]
pub struct RelatedResourceSpec {
    /// Unique name within the PublishedResource; used in annotation keys.
    pub identifier: String,
    /// The side that owns the original.
    pub origin: RelatedResourceOrigin,
    /// API group on the origin side (empty for the core group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// API version on the origin side.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Resource (plural) on the origin side.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// Deprecated shorthand for core/v1 configmaps or secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<RelatedResourceKind>,
    /// Identity hash of the APIExport providing the resource, when it is not builtin.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    /// Delete the destination copy when the primary is deleted.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cleanup: bool,
    /// The GVR on the destination side; empty fields keep the origin's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<RelatedResourceProjection>,
    /// How the related objects are found.
    pub object: RelatedResourceObject,
    /// Rewrite rules; status rules only apply to kcp-origin objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<ResourceMutationSpec>,
    /// How a change of a related object finds its primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<RelatedResourceWatch>,
    /// Also copy `status` from the origin to the destination.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sync_status: bool,
}

/// How a changed related object maps back to its primary: exactly one field is set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.byOwner) != has(self.bySelector)").message("exactly one of byOwner or bySelector must be set")
)]
pub struct RelatedResourceWatch {
    /// The owner reference of the primary's kind leads to the primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_owner: Option<RelatedResourceWatchByOwner>,
    /// Every primary matching this selector is re-examined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_selector: Option<LabelSelector>,
}

/// Reverse lookup through ownerReferences (no settings).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RelatedResourceWatchByOwner {}

/// The GVR of related objects on the destination side.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RelatedResourceProjection {
    /// The API group; empty keeps the origin's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The API version; empty keeps the origin's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The resource; empty keeps the origin's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
}

/// Where related objects are found (names), and in which namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RelatedResourceObject {
    /// How the names are found.
    #[serde(flatten)]
    pub spec: RelatedResourceObjectSpec,
    /// How the namespaces are found; default: the primary's namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<RelatedResourceObjectSpec>,
}

/// One way of locating objects; the fields are mutually exclusive.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RelatedResourceObjectSpec {
    /// A label selector on the origin side, with a rewrite for the destination name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<RelatedResourceObjectSelector>,
    /// A path into the primary objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<RelatedResourceObjectReference>,
    /// A Go template rendered for both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateExpression>,
}

/// A path into a primary object (on both sides), optionally rewritten by a regex.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RelatedResourceObjectReference {
    /// A gjson-style path, e.g. `spec.secretName`.
    pub path: String,
    /// A regex applied to each value found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<RegularExpression>,
}

/// A label selector (with templated `matchLabels`) and how to name the copies.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct RelatedResourceObjectSelector {
    /// Labels that must be present with exactly these values (keys and values may be
    /// templates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    /// Set-based requirements; all must hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
    /// How the name of each found object becomes the destination name.
    pub rewrite: RelatedResourceSelectorRewrite,
}

/// How a selected name becomes the destination name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RelatedResourceSelectorRewrite {
    /// A regex replacement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<RegularExpression>,
    /// A Go template (`.Value` is the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateExpression>,
}

/// A Go regular expression replacement.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RegularExpression {
    /// The pattern; empty replaces the whole value with `replacement`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pattern: String,
    /// The replacement; `$1` refers to capture groups.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub replacement: String,
}

/// A Go template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct TemplateExpression {
    /// The template source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub template: String,
}

/// Whether objects are synced.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct SynchronizationSpec {
    /// `false` publishes the schema only.
    pub enabled: bool,
}

impl RelatedResourceSpec {
    /// The group, version and resource on the origin side (the `kind` shorthand resolved).
    pub fn origin_gvr(&self) -> (String, String, String) {
        match self.kind {
            Some(RelatedResourceKind::ConfigMap) => ("".into(), "v1".into(), "configmaps".into()),
            Some(RelatedResourceKind::Secret) => ("".into(), "v1".into(), "secrets".into()),
            None => (
                self.group.clone(),
                self.version.clone(),
                self.resource.clone(),
            ),
        }
    }

    /// The group, version and resource on the destination side (the projection applied).
    pub fn destination_gvr(&self) -> (String, String, String) {
        let (mut group, mut version, mut resource) = self.origin_gvr();
        if let Some(p) = &self.projection {
            if !p.group.is_empty() {
                group.clone_from(&p.group);
            }
            if !p.version.is_empty() {
                version.clone_from(&p.version);
            }
            if !p.resource.is_empty() {
                resource.clone_from(&p.resource);
            }
        }
        (group, version, resource)
    }

    /// The group, version and resource as seen in kcp: the origin GVR for kcp-origin
    /// objects, the destination GVR for service-origin ones.
    pub fn kcp_gvr(&self) -> (String, String, String) {
        match self.origin {
            RelatedResourceOrigin::Kcp => self.origin_gvr(),
            RelatedResourceOrigin::Service => self.destination_gvr(),
        }
    }
}
