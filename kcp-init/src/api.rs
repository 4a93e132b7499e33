//! The `initialization.kcp.io/v1alpha1` API: `InitTarget` and `InitTemplate`.
//!
//! Both kinds are cluster-scoped and live in the agent's config workspace. The group, version,
//! kinds, resource names and spec field names are the wire contract of the upstream init-agent
//! (`github.com/kcp-dev/init-agent`) and are kept exactly, so kcp-init can take over objects
//! written for it:
//!
//! * [`InitTarget`] (`inittargets`) names a WorkspaceType (`spec.workspaceTypeRef`) and an
//!   ordered list of init sources (`spec.sources`); today the only source kind is a reference to
//!   an InitTemplate in the same logical cluster.
//! * [`InitTemplate`] (`inittemplates`) holds a template (`spec.template`) whose output is a
//!   YAML or JSON stream of objects to create in every new workspace of the type.
//!
//! Differences from upstream, all additive: InitTarget has a `status` (with the status
//! subresource) reporting conditions, the resolved initializer, the virtual workspace URLs and
//! cluster counts, and an `Initializer` printer column. Objects without a status, as written
//! by the upstream agent, read back with [`InitTarget::status`] `None`.
//!
//! [`crds`] and [`crds_yaml`] give the CustomResourceDefinitions to install.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kcp_core::kcp::Condition;
use kube::{CustomResource, CustomResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The API group of both kinds.
pub const GROUP: &str = "initialization.kcp.io";

/// The (only) API version of both kinds.
pub const VERSION: &str = "v1alpha1";

/// Condition type: the target's controller runs and its initializer is being served.
pub const CONDITION_READY: &str = "Ready";

/// Condition type: another InitTarget points at the same WorkspaceType.
pub const CONDITION_CONFLICT: &str = "Conflict";

/// Condition type: a source of the target failed to render.
pub const CONDITION_TEMPLATE_ERROR: &str = "TemplateError";

/// Condition type: two sources rendered the same object differently (the first one's is
/// applied).
pub const CONDITION_DUPLICATE_OBJECTS: &str = "DuplicateObjects";

/// Which WorkspaceType an InitTarget initializes, and which new workspaces it acts on.
// Several printer columns share `type_ = "string"`, which clippy takes for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "initialization.kcp.io",
    version = "v1alpha1",
    kind = "InitTarget",
    plural = "inittargets",
    singular = "inittarget",
    status = "InitTargetStatus",
    derive = "PartialEq",
    doc = "InitTarget initializes every new workspace of a WorkspaceType from its sources.",
    printcolumn(
        name = "WSType Cluster",
        type_ = "string",
        json_path = ".spec.workspaceTypeRef.path"
    ),
    printcolumn(
        name = "WSType",
        type_ = "string",
        json_path = ".spec.workspaceTypeRef.name"
    ),
    printcolumn(
        name = "Initializer",
        type_ = "string",
        json_path = ".status.initializer"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct InitTargetSpec {
    /// The WorkspaceType whose new workspaces are initialized.
    pub workspace_type_ref: WorkspaceTypeReference,
    /// The init sources, rendered and applied in this order. May be empty.
    pub sources: Vec<InitSource>,
}

/// A reference to a WorkspaceType by workspace and name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeReference {
    /// Workspace path (e.g. `root:ws-types`) or logical cluster name that holds the
    /// WorkspaceType. Empty means the InitTarget's own logical cluster.
    pub path: String,
    /// `metadata.name` of the WorkspaceType.
    pub name: String,
}

/// One init source; exactly one variant should be set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitSource {
    /// Render an InitTemplate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateSource>,
}

/// An init source that renders an InitTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateSource {
    /// Name of an InitTemplate in the same logical cluster as the InitTarget.
    pub name: String,
}

/// The observed state of an InitTarget (a kcp-init addition; upstream has no status).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitTargetStatus {
    /// Conditions of types `Ready`, `Conflict` and `TemplateError`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The initializer the target serves: `<logical cluster of the WorkspaceType>:<type name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializer: Option<String>,
    /// URLs of the initializingworkspaces virtual workspaces watched for this target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtual_workspaces: Vec<String>,
    /// How many clusters are waiting, done and failing.
    #[serde(default, skip_serializing_if = "ClusterCounts::is_zero")]
    pub clusters: ClusterCounts,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Counts of the logical clusters an InitTarget has seen.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCounts {
    /// Clusters that still carry the initializer and have not failed.
    #[serde(default)]
    pub pending: u32,
    /// Clusters from which the initializer was removed.
    #[serde(default)]
    pub initialized: u32,
    /// Clusters whose last initialization attempt failed.
    #[serde(default)]
    pub failing: u32,
}

impl ClusterCounts {
    /// Whether all counts are zero.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl InitTargetStatus {
    /// The condition of type `type_`, if set.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

impl InitTarget {
    /// The workspace path or logical cluster name holding the WorkspaceType:
    /// `spec.workspaceTypeRef.path`, or `own_cluster` (the InitTarget's own logical cluster)
    /// when that is empty.
    pub fn workspace_type_path<'a>(&'a self, own_cluster: &'a str) -> &'a str {
        let path = self.spec.workspace_type_ref.path.as_str();
        if path.is_empty() { own_cluster } else { path }
    }
}

/// A template whose output is a YAML or JSON stream of objects to create.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "initialization.kcp.io",
    version = "v1alpha1",
    kind = "InitTemplate",
    plural = "inittemplates",
    singular = "inittemplate",
    derive = "PartialEq",
    doc = "InitTemplate is a template rendering the objects to create in a new workspace."
)]
#[serde(rename_all = "camelCase")]
pub struct InitTemplateSpec {
    /// The template source (Go template or tera syntax). Its output must be a YAML or JSON
    /// stream of Kubernetes objects.
    pub template: String,
}

/// The CustomResourceDefinitions of InitTarget and InitTemplate, in that order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![InitTarget::crd(), InitTemplate::crd()]
}

/// [`crds`] as one YAML stream, documents separated by `---` lines.
pub fn crds_yaml() -> Result<String> {
    serde_saphyr::to_string_multiple(&crds()).map_err(|err| Error::Serialization {
        context: "writing the CustomResourceDefinitions as YAML".to_owned(),
        message: err.to_string(),
    })
}

/// [`crds`] as `DynamicObject`s, ready for an `ApplyPlan` or an `ObjectClient`.
pub fn crd_objects() -> Result<Vec<kcp_core::kube::api::DynamicObject>> {
    crds()
        .into_iter()
        .map(|crd| {
            serde_json::to_value(crd)
                .and_then(serde_json::from_value)
                .map_err(|err| Error::Serialization {
                    context: "converting a CustomResourceDefinition".to_owned(),
                    message: err.to_string(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPSTREAM_INIT_TARGET: &str = r#"
apiVersion: initialization.kcp.io/v1alpha1
kind: InitTarget
metadata:
  name: init-dev-environment
  labels: {team: platform}
spec:
  workspaceTypeRef:
    path: root:ws-types
    name: dev-environment
  sources:
    - template:
        name: cluster-info-configmap
"#;

    const UPSTREAM_INIT_TEMPLATE: &str = r#"
apiVersion: initialization.kcp.io/v1alpha1
kind: InitTemplate
metadata:
  name: cluster-info-configmap
spec:
  template: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      namespace: cluster-info
      name: info
    data:
      cluster: "{{ .ClusterName }}"
      workspace: "{{ .ClusterPath }}"
    ---
    apiVersion: v1
    kind: Namespace
    metadata:
      name: cluster-info
"#;

    fn condition(type_: &str, status: &str, time: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: Some(time.into()),
            ..Condition::default()
        }
    }

    fn target(path: &str) -> InitTarget {
        InitTarget::new(
            "t",
            InitTargetSpec {
                workspace_type_ref: WorkspaceTypeReference {
                    path: path.into(),
                    name: "dev".into(),
                },
                sources: vec![],
            },
        )
    }

    #[test]
    fn crds_yaml_matches_snapshot() {
        insta::assert_snapshot!(crds_yaml().unwrap());
    }

    #[test]
    fn crds_keep_upstream_group_kinds_plurals_and_cluster_scope() {
        let crds = crds();
        let names: Vec<_> = crds.iter().map(|c| c.metadata.name.clone()).collect();
        assert_eq!(
            names,
            [
                Some("inittargets.initialization.kcp.io".to_owned()),
                Some("inittemplates.initialization.kcp.io".to_owned()),
            ]
        );
        for (crd, kind) in crds.iter().zip(["InitTarget", "InitTemplate"]) {
            assert_eq!(crd.spec.group, GROUP);
            assert_eq!(crd.spec.scope, "Cluster");
            assert_eq!(crd.spec.names.kind, kind);
            assert_eq!(crd.spec.versions.len(), 1);
            assert_eq!(crd.spec.versions[0].name, VERSION);
        }
    }

    #[test]
    fn crds_yaml_parses_back_as_two_documents() {
        let objects = kcp_core::parse_manifests("crds", &crds_yaml().unwrap()).unwrap();
        assert_eq!(objects.len(), 2);
    }

    #[test]
    fn upstream_init_target_example_deserializes() {
        let target: InitTarget = serde_saphyr::from_str(UPSTREAM_INIT_TARGET).unwrap();
        assert_eq!(
            target.metadata.name.as_deref(),
            Some("init-dev-environment")
        );
        assert_eq!(target.spec.workspace_type_ref.path, "root:ws-types");
        assert_eq!(target.spec.workspace_type_ref.name, "dev-environment");
        assert_eq!(
            target.spec.sources,
            [InitSource {
                template: Some(TemplateSource {
                    name: "cluster-info-configmap".into()
                })
            }]
        );
        assert_eq!(target.status, None);
    }

    #[test]
    fn upstream_init_template_example_deserializes() {
        let template: InitTemplate = serde_saphyr::from_str(UPSTREAM_INIT_TEMPLATE).unwrap();
        assert_eq!(
            template.metadata.name.as_deref(),
            Some("cluster-info-configmap")
        );
        assert!(
            template
                .spec
                .template
                .starts_with("apiVersion: v1\nkind: ConfigMap\n")
        );
        assert!(
            template
                .spec
                .template
                .contains("cluster: \"{{ .ClusterName }}\"\n")
        );
        assert!(template.spec.template.ends_with("name: cluster-info\n"));
    }

    #[test]
    fn spec_serializes_with_upstream_field_names() {
        let value = serde_json::to_value(target("").spec).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "workspaceTypeRef": {"path": "", "name": "dev"},
                "sources": [],
            })
        );
    }

    #[test]
    fn empty_status_serializes_as_empty_object() {
        let value = serde_json::to_value(InitTargetStatus::default()).unwrap();
        assert_eq!(value, serde_json::json!({}));
    }

    #[test]
    fn status_serializes_with_camel_case_field_names() {
        let status = InitTargetStatus {
            conditions: vec![condition(CONDITION_READY, "True", "2026-01-01T00:00:00Z")],
            initializer: Some("root:dev".into()),
            virtual_workspaces: vec!["https://kcp/services/initializingworkspaces/root:dev".into()],
            clusters: ClusterCounts {
                pending: 1,
                initialized: 2,
                failing: 3,
            },
            observed_generation: Some(4),
        };
        let value = serde_json::to_value(&status).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "conditions": [{
                    "type": "Ready",
                    "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }],
                "initializer": "root:dev",
                "virtualWorkspaces": ["https://kcp/services/initializingworkspaces/root:dev"],
                "clusters": {"pending": 1, "initialized": 2, "failing": 3},
                "observedGeneration": 4,
            })
        );
        let back: InitTargetStatus = serde_json::from_value(value).unwrap();
        assert_eq!(back, status);
    }

    #[test]
    fn workspace_type_path_uses_the_reference_path_when_set() {
        assert_eq!(
            target("root:ws-types").workspace_type_path("abc"),
            "root:ws-types"
        );
    }

    #[test]
    fn workspace_type_path_falls_back_to_own_cluster_when_empty() {
        assert_eq!(target("").workspace_type_path("abc"), "abc");
    }
}
