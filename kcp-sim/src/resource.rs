//! What a cluster serves: resource types (group, versions, kind, plural, scope, subresources),
//! the builtin kinds, the types a CustomResourceDefinition adds, and discovery documents.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::scale::ScalePaths;

/// A served resource: one group and plural, one kind, one or more versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// API group (`""` for core).
    pub group: String,
    /// Served versions, the preferred (storage) one first.
    pub versions: Vec<String>,
    /// Kind, e.g. `ConfigMap`.
    pub kind: String,
    /// Plural resource name, e.g. `configmaps`.
    pub plural: String,
    /// Singular name, e.g. `configmap`.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the `/status` subresource is enabled.
    pub status: bool,
    /// The `/scale` subresource, where the kind has one.
    pub scale: Option<ScalePaths>,
    /// Short names for kubectl (`cm`, `ns`, ...).
    pub short_names: Vec<String>,
    /// Categories for kubectl (`all`).
    pub categories: Vec<String>,
    /// Which verbs the type allows.
    pub access: Access,
    /// Subresources discovery lists beside `status` and `scale` (`serviceaccounts/token`).
    pub other_subresources: &'static [&'static str],
    /// What each served version declares under `subresources`, for a custom resource (a
    /// CustomResourceDefinition gives each version its own); empty for a builtin kind, whose
    /// every version has `status` and `scale` as above.
    pub version_subresources: BTreeMap<String, VersionSubresources>,
    /// The group and plural that key this type's storage, kept so lookups need no allocation:
    /// the type's own, except for a kind kube-apiserver keeps in another group's storage.
    key: GroupResource,
}

impl ResourceType {
    /// The group and plural that key this type's storage (and its watches): `events` for
    /// `events.k8s.io`'s Events, which kube-apiserver keeps with the core Events.
    pub fn group_resource(&self) -> &GroupResource {
        &self.key
    }

    /// The group and plural this type is served under (its discovery and URLs).
    pub fn served_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// The group of the kind this type's objects are stored and validated as: kube-apiserver
    /// names an invalid `events.k8s.io` Event a core `Event`.
    pub fn stored_group(&self) -> &str {
        &self.key.group
    }

    /// Whether this type's objects are stored as another group's kind (and converted to and
    /// from it on every read and write).
    pub fn stored_as_other_group(&self) -> bool {
        self.key.group != self.group
    }

    /// `group/version` (or `version` for core) of a served version.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// Whether `version` is served.
    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    /// Whether kube-apiserver serves this kind from its Go types (its own kinds and CRDs),
    /// rather than as an unstructured custom resource (CRs, and kcp's kinds, which kcp serves
    /// from CRDs). Such lists' items carry no `apiVersion` and `kind`.
    pub fn is_typed(&self) -> bool {
        is_typed_group(&self.group)
    }

    /// The verbs discovery lists: a builtin kind's sorted, a custom resource's in the
    /// apiextensions server's order; Namespaces cannot be deleted as a collection.
    pub fn verbs(&self) -> &'static [&'static str] {
        match self.access {
            Access::CreateOnly => return &["create"],
            Access::ReadOnly => return &["get", "list"],
            Access::ReadWrite => {}
        }
        if self.group.is_empty() && self.plural == "namespaces" {
            return &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ];
        }
        if self.is_typed() {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        } else {
            &[
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ]
        }
    }
}

/// A subresource as discovery lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    /// Its name (`status`, `scale`, `token`).
    pub name: &'static str,
    /// The group of the kind it answers with, when that is not the resource's own.
    pub group: &'static str,
    /// The version of the kind it answers with, when that is not the resource's own.
    pub version: &'static str,
    /// The kind it answers with.
    pub kind: String,
    /// Its verbs.
    pub verbs: &'static [&'static str],
}

/// The subresources one version of a custom resource declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VersionSubresources {
    /// `subresources.status` is set.
    pub status: bool,
    /// `subresources.scale` is set.
    pub scale: bool,
}

impl ResourceType {
    /// Whether `version` serves the `/status` subresource.
    pub fn has_status(&self, version: &str) -> bool {
        self.status
            && self
                .version_subresources
                .get(version)
                .is_none_or(|declared| declared.status)
    }

    /// The `/scale` subresource of `version`, if it serves one.
    pub fn scale_of(&self, version: &str) -> Option<&ScalePaths> {
        self.scale.as_ref().filter(|_| {
            self.version_subresources
                .get(version)
                .is_none_or(|declared| declared.scale)
        })
    }

    /// This type as `version` serves it: `status` and `scale` only where that version declares
    /// them, as kube-apiserver gives each version of a custom resource its own strategy (a
    /// version without the status subresource writes status with the object). The same type
    /// when every version serves alike.
    pub fn at_version(self: &Arc<Self>, version: &str) -> Arc<Self> {
        let status = self.has_status(version);
        let scale = self.scale_of(version).cloned();
        if status == self.status && scale == self.scale {
            return Arc::clone(self);
        }
        Arc::new(ResourceType {
            status,
            scale,
            ..(**self).clone()
        })
    }

    /// The subresources discovery lists for `version` of this type: a builtin kind's by name,
    /// a custom resource's `status` before `scale`, as the apiextensions server lists them.
    pub fn subresources(&self, version: &str) -> Vec<Subresource> {
        let own = |name, verbs| Subresource {
            name,
            group: "",
            version: "",
            kind: self.kind.clone(),
            verbs,
        };
        let mut list = Vec::new();
        if self.group.is_empty() && self.plural == "namespaces" {
            list.push(own("finalize", &["update"]));
        }
        if self.scale_of(version).is_some() {
            list.push(Subresource {
                name: "scale",
                group: "autoscaling",
                version: "v1",
                kind: "Scale".into(),
                verbs: &["get", "patch", "update"],
            });
        }
        if self.has_status(version) {
            list.push(own("status", &["get", "patch", "update"]));
        }
        for name in self.other_subresources {
            list.push(match *name {
                "token" => Subresource {
                    name: "token",
                    group: "authentication.k8s.io",
                    version: "v1",
                    kind: "TokenRequest".into(),
                    verbs: &["create"],
                },
                "approval" | crate::ephemeral_containers::SUBRESOURCE => {
                    own(name, &["get", "patch", "update"])
                }
                "log" => own("log", &["get"]),
                "attach" | "exec" | "portforward" => Subresource {
                    kind: match *name {
                        "attach" => "PodAttachOptions",
                        "exec" => "PodExecOptions",
                        _ => "PodPortForwardOptions",
                    }
                    .into(),
                    ..own(name, &["create", "get"])
                },
                "eviction" => Subresource {
                    name: "eviction",
                    group: "policy",
                    version: "v1",
                    kind: "Eviction".into(),
                    verbs: &["create"],
                },
                _ => Subresource {
                    kind: "Binding".into(),
                    ..own(name, &["create"])
                },
            });
        }
        if self.is_typed() {
            list.sort_by_key(|s| s.name);
        } else {
            // The apiextensions server lists `status`, then `scale`.
            list.sort_by_key(|s| s.name != "status");
        }
        list
    }
}

/// Which verbs a resource type allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Stored objects: every verb.
    ReadWrite,
    /// Posted and answered, never stored (reviews, `bindings`): only `create`.
    CreateOnly,
    /// Observed on each read, never stored (`componentstatuses`): only `get` and `list`.
    ReadOnly,
}

/// Whether kube-apiserver serves the kinds of `group` from its Go types (see
/// [`ResourceType::is_typed`]); the kinds of other groups are custom resources.
pub fn is_typed_group(group: &str) -> bool {
    matches!(
        group,
        "" | "apps"
            | "admissionregistration.k8s.io"
            | "batch"
            | "discovery.k8s.io"
            | "node.k8s.io"
            | "storage.k8s.io"
            | "policy"
            | "networking.k8s.io"
            | "autoscaling"
            | "scheduling.k8s.io"
            | "events.k8s.io"
            | "coordination.k8s.io"
            | "rbac.authorization.k8s.io"
            | "apiextensions.k8s.io"
            | "apiregistration.k8s.io"
            | "authentication.k8s.io"
            | "authorization.k8s.io"
            | "certificates.k8s.io"
            | "flowcontrol.apiserver.k8s.io"
            | "resource.k8s.io"
    )
}

/// The storage key of a resource type: group plus plural.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    /// API group.
    pub group: String,
    /// Plural resource name.
    pub resource: String,
}

impl GroupResource {
    /// A group resource from its parts.
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// Which family of builtin kinds a cluster serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// A plain Kubernetes cluster.
    Kubernetes,
    /// A kcp logical cluster: the Kubernetes kinds kcp keeps plus the tenancy and core kcp kinds.
    Kcp,
}

impl Flavor {
    /// The Kubernetes release this flavor plays (`/version`, the OpenAPI documents): the test
    /// bed's kube-apiserver for a Kubernetes cluster, the one kcp v0.30.0 is built on (its
    /// go.mod's `k8s.io/kubernetes`) for kcp.
    pub fn kubernetes_version(self) -> &'static str {
        match self {
            Flavor::Kubernetes | Flavor::Kcp => "v1.34.2",
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    status: bool,
    short_names: &[&str],
    categories: &[&str],
) -> ResourceType {
    ResourceType {
        key: GroupResource::new(group, plural),
        group: group.to_string(),
        versions: vec![version.to_string()],
        kind: kind.to_string(),
        plural: plural.to_string(),
        singular: kind.to_ascii_lowercase(),
        namespaced,
        status,
        scale: match (group, plural) {
            ("apps", "deployments" | "statefulsets" | "replicasets") => {
                Some(ScalePaths::workload())
            }
            ("", "replicationcontrollers") => Some(ScalePaths::replication_controller()),
            _ => None,
        },
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
        access: Access::ReadWrite,
        version_subresources: BTreeMap::new(),
        other_subresources: match (group, plural) {
            ("", "serviceaccounts") => &["token"],
            ("", "pods") => &[
                "attach",
                "binding",
                crate::ephemeral_containers::SUBRESOURCE,
                "eviction",
                "exec",
                "log",
                "portforward",
            ],
            ("certificates.k8s.io", "certificatesigningrequests") => &["approval"],
            _ => &[],
        },
    }
}

/// A builtin kind served without behaviour: group, kind, plural, namespaced, status
/// subresource, short names, categories.
type StoredKind = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    bool,
    &'static [&'static str],
    &'static [&'static str],
);

/// The types of kinds served without behaviour, at `version`.
fn stored_kinds<'a>(
    version: &'a str,
    kinds: &'a [StoredKind],
) -> impl Iterator<Item = ResourceType> + 'a {
    kinds.iter().map(
        move |&(group, kind, plural, namespaced, status, short, categories)| {
            builtin(
                group, version, kind, plural, namespaced, status, short, categories,
            )
        },
    )
}

/// The builtin kinds of a cluster of this flavor.
pub fn builtin_types(flavor: Flavor) -> Vec<ResourceType> {
    let mut types = vec![
        builtin(
            "",
            "v1",
            "Namespace",
            "namespaces",
            false,
            true,
            &["ns"],
            &[],
        ),
        builtin(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            true,
            false,
            &["cm"],
            &[],
        ),
        builtin("", "v1", "Secret", "secrets", true, false, &[], &[]),
        builtin(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            true,
            false,
            &["sa"],
            &[],
        ),
        builtin("", "v1", "Event", "events", true, false, &["ev"], &[]),
        // One store for both Event APIs: what one writes, the other reads (kube-rs's Recorder
        // writes events.k8s.io, `kubectl describe` reads core Events).
        ResourceType {
            key: GroupResource::new("", "events"),
            ..builtin(
                "events.k8s.io",
                "v1",
                "Event",
                "events",
                true,
                false,
                &["ev"],
                &[],
            )
        },
        builtin(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            true,
            false,
            &[],
            &[],
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            true,
            false,
            &[],
            &[],
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            true,
            false,
            &[],
            &[],
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            false,
            false,
            &[],
            &[],
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            false,
            &[],
            &[],
        ),
        builtin(
            "",
            "v1",
            "ResourceQuota",
            "resourcequotas",
            true,
            true,
            &["quota"],
            &[],
        ),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            true,
            &["crd", "crds"],
            &["api-extensions"],
        ),
    ];
    // Admission configuration, served by kube-apiserver and in every kcp workspace: policies
    // are enforced (`crate::admission_policies`), webhook configurations only stored.
    let admission: [StoredKind; 4] = [
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
            false,
            &[],
            &["api-extensions"],
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
            true,
            &[],
            &["api-extensions"],
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
            false,
            &[],
            &["api-extensions"],
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
            false,
            &[],
            &["api-extensions"],
        ),
    ];
    types.extend(stored_kinds("v1", &admission));
    // Served by kube-apiserver and in every kcp workspace, stored without a signer.
    types.push(builtin(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        false,
        true,
        &["csr"],
        &[],
    ));
    types.extend(answered_kinds(flavor));
    match flavor {
        Flavor::Kubernetes => {
            // Kinds kcp does not serve (a workspace has no workloads or services of its own).
            types.push(builtin(
                "",
                "v1",
                "Service",
                "services",
                true,
                true,
                &["svc"],
                &["all"],
            ));
            types.push(builtin(
                "apps",
                "v1",
                "Deployment",
                "deployments",
                true,
                true,
                &["deploy"],
                &["all"],
            ));
            types.push(builtin(
                "apps",
                "v1",
                "StatefulSet",
                "statefulsets",
                true,
                true,
                &["sts"],
                &["all"],
            ));
            types.push(builtin(
                "apps",
                "v1",
                "DaemonSet",
                "daemonsets",
                true,
                true,
                &["ds"],
                &["all"],
            ));
            types.push(builtin(
                "apps",
                "v1",
                "ControllerRevision",
                "controllerrevisions",
                true,
                false,
                &[],
                &[],
            ));
            types.push(builtin(
                "",
                "v1",
                "PersistentVolumeClaim",
                "persistentvolumeclaims",
                true,
                true,
                &["pvc"],
                &[],
            ));
            types.push(builtin(
                "networking.k8s.io",
                "v1",
                "Ingress",
                "ingresses",
                true,
                true,
                &["ing"],
                &[],
            ));
            types.push(builtin(
                "networking.k8s.io",
                "v1",
                "IngressClass",
                "ingressclasses",
                false,
                false,
                &[],
                &[],
            ));
            types.push(builtin(
                "networking.k8s.io",
                "v1",
                "NetworkPolicy",
                "networkpolicies",
                true,
                false,
                &["netpol"],
                &[],
            ));
            // Stored at v2, also served at v1 ([`crate::autoscaling`]).
            let mut autoscalers = builtin(
                "autoscaling",
                "v2",
                "HorizontalPodAutoscaler",
                "horizontalpodautoscalers",
                true,
                true,
                &["hpa"],
                &["all"],
            );
            autoscalers.versions.push("v1".into());
            types.push(autoscalers);
            // Kinds stored with kube's defaults and printers, whose controllers (endpoints,
            // volume binding, replication) are not played.
            let stored: [StoredKind; 8] = [
                ("", "Endpoints", "endpoints", true, false, &["ep"], &[]),
                (
                    "",
                    "LimitRange",
                    "limitranges",
                    true,
                    false,
                    &["limits"],
                    &[],
                ),
                (
                    "",
                    "PersistentVolume",
                    "persistentvolumes",
                    false,
                    true,
                    &["pv"],
                    &[],
                ),
                ("", "PodTemplate", "podtemplates", true, false, &[], &[]),
                (
                    "",
                    "ReplicationController",
                    "replicationcontrollers",
                    true,
                    true,
                    &["rc"],
                    &["all"],
                ),
                (
                    "discovery.k8s.io",
                    "EndpointSlice",
                    "endpointslices",
                    true,
                    false,
                    &[],
                    &[],
                ),
                (
                    "node.k8s.io",
                    "RuntimeClass",
                    "runtimeclasses",
                    false,
                    false,
                    &[],
                    &[],
                ),
                (
                    "storage.k8s.io",
                    "StorageClass",
                    "storageclasses",
                    false,
                    false,
                    &["sc"],
                    &[],
                ),
            ];
            types.extend(stored_kinds("v1", &stored));
            types.extend(stored_kinds("v1", KUBE_INFRASTRUCTURE_KINDS));
            types.push(builtin(
                "scheduling.k8s.io",
                "v1",
                "PriorityClass",
                "priorityclasses",
                false,
                false,
                &["pc"],
                &[],
            ));
            types.push(builtin(
                "policy",
                "v1",
                "PodDisruptionBudget",
                "poddisruptionbudgets",
                true,
                true,
                &["pdb"],
                &[],
            ));
            types.push(builtin(
                "",
                "v1",
                "Node",
                "nodes",
                false,
                true,
                &["no"],
                &[],
            ));
            // Workloads kcp does not serve: stored and defaulted, never scheduled or run.
            types.push(builtin(
                "",
                "v1",
                "Pod",
                "pods",
                true,
                true,
                &["po"],
                &["all"],
            ));
            types.push(builtin(
                "apps",
                "v1",
                "ReplicaSet",
                "replicasets",
                true,
                true,
                &["rs"],
                &["all"],
            ));
            types.push(builtin(
                "batch",
                "v1",
                "Job",
                "jobs",
                true,
                true,
                &[],
                &["all"],
            ));
            types.push(builtin(
                "batch",
                "v1",
                "CronJob",
                "cronjobs",
                true,
                true,
                &["cj"],
                &["all"],
            ));
        }
        Flavor::Kcp => {
            types.push(builtin(
                "tenancy.kcp.io",
                "v1alpha1",
                "Workspace",
                "workspaces",
                false,
                true,
                &["ws"],
                &["kcp"],
            ));
            types.push(builtin(
                "tenancy.kcp.io",
                "v1alpha1",
                "WorkspaceType",
                "workspacetypes",
                false,
                true,
                &[],
                &["kcp"],
            ));
            // Served by kcp, kept without behaviour here.
            types.push(builtin(
                "tenancy.kcp.io",
                "v1alpha1",
                "WorkspaceAuthenticationConfiguration",
                "workspaceauthenticationconfigurations",
                false,
                false,
                &[],
                &["kcp"],
            ));
            // Served by kcp through root's `topology.kcp.io` export, kept without behaviour here.
            let topology: [StoredKind; 2] = [
                (
                    "topology.kcp.io",
                    "Partition",
                    "partitions",
                    false,
                    false,
                    &[],
                    &["kcp"],
                ),
                (
                    "topology.kcp.io",
                    "PartitionSet",
                    "partitionsets",
                    false,
                    true,
                    &[],
                    &["kcp"],
                ),
            ];
            types.extend(stored_kinds("v1alpha1", &topology));
            // Served by kcp's cache server in every workspace, kept without behaviour here.
            let cache: [StoredKind; 2] = [
                (
                    "cache.kcp.io",
                    "CachedResource",
                    "cachedresources",
                    false,
                    true,
                    &[],
                    &["kcp"],
                ),
                (
                    "cache.kcp.io",
                    "CachedResourceEndpointSlice",
                    "cachedresourceendpointslices",
                    false,
                    true,
                    &[],
                    &["kcp"],
                ),
            ];
            types.extend(stored_kinds("v1alpha1", &cache));
            types.push(builtin(
                "core.kcp.io",
                "v1alpha1",
                "LogicalCluster",
                "logicalclusters",
                false,
                true,
                &[],
                &["kcp"],
            ));
            types.extend(apis_types());
        }
    }
    types
}

/// Kinds of kube-apiserver that kcp does not serve, stored with kube's defaults where they have
/// any and no behaviour: the clients that write them are the node, storage, device and
/// certificate controllers a test server does not run. kube-apiserver's own `kubernetes`
/// ServiceCIDR, its Services' IPAddresses, its flow-control configuration and its APIServices
/// are written by kcp-sim as kube-apiserver writes them at start.
const KUBE_INFRASTRUCTURE_KINDS: &[StoredKind] = &[
    (
        "apiregistration.k8s.io",
        "APIService",
        "apiservices",
        false,
        true,
        &[],
        &["api-extensions"],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "FlowSchema",
        "flowschemas",
        false,
        true,
        &[],
        &[],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        false,
        true,
        &[],
        &[],
    ),
    (
        "networking.k8s.io",
        "IPAddress",
        "ipaddresses",
        false,
        false,
        &["ip"],
        &[],
    ),
    (
        "networking.k8s.io",
        "ServiceCIDR",
        "servicecidrs",
        false,
        true,
        &[],
        &[],
    ),
    (
        "resource.k8s.io",
        "DeviceClass",
        "deviceclasses",
        false,
        false,
        &[],
        &[],
    ),
    (
        "resource.k8s.io",
        "ResourceClaim",
        "resourceclaims",
        true,
        true,
        &[],
        &[],
    ),
    (
        "resource.k8s.io",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        true,
        false,
        &[],
        &[],
    ),
    (
        "resource.k8s.io",
        "ResourceSlice",
        "resourceslices",
        false,
        false,
        &[],
        &[],
    ),
    (
        "storage.k8s.io",
        "CSIDriver",
        "csidrivers",
        false,
        false,
        &[],
        &[],
    ),
    (
        "storage.k8s.io",
        "CSINode",
        "csinodes",
        false,
        false,
        &[],
        &[],
    ),
    (
        "storage.k8s.io",
        "CSIStorageCapacity",
        "csistoragecapacities",
        true,
        false,
        &[],
        &[],
    ),
    (
        "storage.k8s.io",
        "VolumeAttachment",
        "volumeattachments",
        false,
        true,
        &[],
        &[],
    ),
    (
        "storage.k8s.io",
        "VolumeAttributesClass",
        "volumeattributesclasses",
        false,
        false,
        &["vac"],
        &[],
    ),
];

/// The kinds a server answers without storing them: the reviews (kube-apiserver and kcp) and,
/// in a Kubernetes cluster, `bindings`, which only `create` ([`crate::answered`]), and
/// `componentstatuses`, only read ([`crate::component_statuses`]).
fn answered_kinds(flavor: Flavor) -> Vec<ResourceType> {
    let posted = [
        (
            "authentication.k8s.io",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
        ),
        (
            "authentication.k8s.io",
            "TokenReview",
            "tokenreviews",
            false,
        ),
        (
            "authorization.k8s.io",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
        ),
        (
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
        ),
        (
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
        ),
        (
            "authorization.k8s.io",
            "SubjectAccessReview",
            "subjectaccessreviews",
            false,
        ),
    ];
    let create_only = |(group, kind, plural, namespaced)| ResourceType {
        access: Access::CreateOnly,
        ..builtin(group, "v1", kind, plural, namespaced, false, &[], &[])
    };
    let mut types: Vec<ResourceType> = posted.into_iter().map(create_only).collect();
    if flavor == Flavor::Kcp {
        return types;
    }
    types.push(create_only(("", "Binding", "bindings", true)));
    types.push(ResourceType {
        access: Access::ReadOnly,
        ..builtin(
            "",
            "v1",
            "ComponentStatus",
            "componentstatuses",
            false,
            false,
            &["cs"],
            &[],
        )
    });
    types
}

/// The `apis.kcp.io` kinds of a kcp logical cluster. APIExport and APIBinding are stored as
/// v1alpha2 and also served as v1alpha1 (see [`crate::apiexport::conversion`]).
fn apis_types() -> Vec<ResourceType> {
    let kinds = [
        ("APIExport", "apiexports", true),
        ("APIBinding", "apibindings", true),
        ("APIResourceSchema", "apiresourceschemas", false),
        ("APIExportEndpointSlice", "apiexportendpointslices", true),
        // Served by kcp, kept without behaviour here.
        ("APIConversion", "apiconversions", false),
    ];
    kinds
        .into_iter()
        .map(|(kind, plural, status)| {
            let two_versions = matches!(kind, "APIExport" | "APIBinding");
            let version = if two_versions { "v1alpha2" } else { "v1alpha1" };
            let mut t = builtin(
                "apis.kcp.io",
                version,
                kind,
                plural,
                false,
                status,
                &[],
                &["kcp"],
            );
            if two_versions {
                t.versions.push("v1alpha1".to_string());
            }
            t
        })
        .collect()
}

/// The resource type a CustomResourceDefinition object defines, or why it cannot be served.
pub fn type_of_crd(crd: &Value) -> Result<ResourceType, (String, String)> {
    let spec = crd
        .get("spec")
        .ok_or_else(|| ("spec".to_string(), "Required value".to_string()))?;
    if spec
        .get("group")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(("spec.group".to_string(), "Required value".to_string()));
    }
    let t = type_of_spec(spec)?;
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name != format!("{}.{}", t.plural, t.group) {
        return Err((
            "metadata.name".to_string(),
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    Ok(t)
}

/// The resource type a CRD-shaped spec (a CRD's or an APIResourceSchema's: group, names, scope,
/// versions) defines, or the field that is wrong and why.
pub fn type_of_spec(spec: &Value) -> Result<ResourceType, (String, String)> {
    let field = |path: &str| -> Result<String, (String, String)> {
        let mut cur = spec;
        for part in path.split('.') {
            cur = cur.get(part).unwrap_or(&Value::Null);
        }
        match cur.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err((format!("spec.{path}"), "Required value".to_string())),
        }
    };
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = field("names.kind")?;
    let plural = field("names.plural")?;
    let singular = field("names.singular").unwrap_or_else(|_| kind.to_ascii_lowercase());
    let scope = field("scope")?;
    let namespaced = match scope.as_str() {
        "Namespaced" => true,
        "Cluster" => false,
        other => {
            return Err((
                "spec.scope".to_string(),
                format!(
                    "Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespaced\""
                ),
            ));
        }
    };
    let (served, status) = served_versions(spec)?;
    let version_subresources = declared_subresources(spec);
    let strings = |key: &str| -> Vec<String> {
        crate::object_meta::strings_at(spec, &format!("/names/{key}"))
    };
    Ok(ResourceType {
        key: GroupResource::new(&group, &plural),
        group,
        versions: served,
        kind,
        plural,
        singular,
        namespaced,
        status,
        scale: spec
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(ScalePaths::of_crd_version),
        short_names: strings("shortNames"),
        categories: strings("categories"),
        access: Access::ReadWrite,
        other_subresources: &[],
        version_subresources,
    })
}

/// What each version of a CRD-shaped spec declares under `subresources`, by version name.
fn declared_subresources(spec: &Value) -> BTreeMap<String, VersionSubresources> {
    spec.get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|version| {
            let name = version.get("name").and_then(Value::as_str)?;
            let declared = VersionSubresources {
                status: version.pointer("/subresources/status").is_some(),
                scale: ScalePaths::of_crd_version(version).is_some(),
            };
            Some((name.to_string(), declared))
        })
        .collect()
}

/// The served versions of a CRD-shaped spec, the storage version first, and whether any has a
/// status subresource.
fn served_versions(spec: &Value) -> Result<(Vec<String>, bool), (String, String)> {
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ("spec.versions".to_string(), "Required value".to_string()))?;
    let mut served = Vec::new();
    let mut status = false;
    for (i, v) in versions.iter().enumerate() {
        let vname = v.get("name").and_then(Value::as_str).ok_or_else(|| {
            (
                format!("spec.versions[{i}].name"),
                "Required value".to_string(),
            )
        })?;
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        if v.pointer("/subresources/status").is_some() {
            status = true;
        }
        // The storage version is preferred: it goes first.
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            served.insert(0, vname.to_string());
        } else {
            served.push(vname.to_string());
        }
    }
    if served.is_empty() {
        return Err((
            "spec.versions".to_string(),
            "Invalid value: must have at least one served version".to_string(),
        ));
    }
    Ok((served, status))
}

/// The Kubernetes groups a kcp workspace serves, in the order kcp v0.30.0 lists them.
const KCP_KUBE_GROUPS: &[&str] = &[
    "authentication.k8s.io",
    "authorization.k8s.io",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "events.k8s.io",
    "apiextensions.k8s.io",
];

/// The key kcp's `GET /apis` sorts a group by: its Kubernetes groups in kcp's order, then the
/// rest by name (kcp lists its own groups in an order that changes from request to request).
fn kcp_group_order(group: &str) -> (usize, &str) {
    let known = KCP_KUBE_GROUPS.iter().position(|g| *g == group);
    (known.unwrap_or(KCP_KUBE_GROUPS.len()), group)
}

/// The resource types one cluster serves, looked up by group+plural or group+version+kind.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    by_resource: BTreeMap<GroupResource, Arc<ResourceType>>,
    /// The server whose discovery this is (`None`: a virtual workspace's, ordered as kcp's).
    flavor: Option<Flavor>,
}

impl Registry {
    /// A registry with the builtin kinds of `flavor`.
    pub fn with_builtins(flavor: Flavor) -> Self {
        let mut reg = Self {
            flavor: Some(flavor),
            ..Self::default()
        };
        for t in builtin_types(flavor) {
            reg.insert(t);
        }
        reg
    }

    /// Serves a type (replacing an earlier one with the same group and plural).
    pub fn insert(&mut self, t: ResourceType) {
        self.by_resource.insert(t.served_resource(), Arc::new(t));
    }

    /// Stops serving a type.
    pub fn remove(&mut self, gr: &GroupResource) {
        self.by_resource.remove(gr);
    }

    /// The type served under `group`/`version` with this plural.
    pub fn by_plural(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&Arc<ResourceType>> {
        self.by_resource
            .get(&GroupResource::new(group, plural))
            .filter(|t| t.serves(version))
    }

    /// The type served for a group, version and kind.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<&Arc<ResourceType>> {
        self.by_resource
            .values()
            .find(|t| t.group == group && t.kind == kind && t.serves(version))
    }

    /// The type stored under a group resource, whatever its versions.
    pub fn get(&self, gr: &GroupResource) -> Option<&Arc<ResourceType>> {
        self.by_resource.get(gr)
    }

    /// Every served type.
    pub fn types(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.by_resource.values()
    }

    /// Served groups with their versions (preferred first), core group excluded, in the order
    /// the server lists them: a Kubernetes cluster by its APIServices' priority
    /// ([`crate::api_services::group_order`]), kcp by [`kcp_group_order`], a virtual
    /// workspace by name.
    pub(crate) fn groups(&self) -> Vec<(&str, Vec<&str>)> {
        let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for t in self.by_resource.values().filter(|t| !t.group.is_empty()) {
            let entry = groups.entry(t.group.as_str()).or_default();
            for v in &t.versions {
                if !entry.contains(&v.as_str()) {
                    entry.push(v.as_str());
                }
            }
        }
        let mut groups: Vec<(&str, Vec<&str>)> = groups.into_iter().collect();
        match self.flavor {
            Some(Flavor::Kubernetes) => {
                groups.sort_by_key(|(group, _)| crate::api_services::group_order(group));
            }
            Some(Flavor::Kcp) => groups.sort_by_key(|(group, _)| kcp_group_order(group)),
            // A virtual workspace: kcp v0.30.0 writes its groups in Go's map order (an export's
            // view gave its exported group first on one start and `apis.kcp.io` first on
            // another), so kcp-sim keeps them in the order of their names.
            None => {}
        }
        groups
    }

    /// `GET /api`: the core version, and the server's `host:port` for every client. A virtual
    /// workspace that serves no core resource lists `v1` too, though `/api/v1` is its 404 there
    /// (kcp v0.30.0; `kubectl api-resources` through an export's view reports the empty
    /// version and exits 1: `kubectl-kcp-provider.yaml`).
    pub fn api_versions(&self, server_address: &str) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        })
    }

    /// `GET /apis`: every served group; kcp names the server's address in each of its
    /// Kubernetes groups, as in `GET /api` ([`Self::api_versions`]).
    pub fn api_group_list(&self, server_address: &str) -> Value {
        let kcp = self.flavor != Some(Flavor::Kubernetes);
        let groups: Vec<Value> = self
            .groups()
            .into_iter()
            .map(|(g, versions)| {
                let mut doc = group_document(g, &versions);
                if kcp && is_typed_group(g) {
                    doc["serverAddressByClientCIDRs"] =
                        json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]);
                }
                doc
            })
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `GET /apis/<group>`, or `None` when the group is not served.
    pub fn api_group(&self, group: &str) -> Option<Value> {
        let groups = self.groups();
        let (_, versions) = groups.iter().find(|(g, _)| *g == group)?;
        let mut doc = group_document(group, versions);
        doc["kind"] = json!("APIGroup");
        doc["apiVersion"] = json!("v1");
        Some(doc)
    }

    /// Whether any type of `group` is served (at any version).
    pub fn serves_group(&self, group: &str) -> bool {
        self.by_resource.values().any(|t| t.group == group)
    }

    /// `GET /api/v1` or `GET /apis/<group>/<version>`, or `None` when nothing is served there.
    pub fn api_resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let mut resources = Vec::new();
        for t in self
            .by_resource
            .values()
            .filter(|t| t.group == group && t.serves(version))
        {
            let mut r = json!({
                "name": t.plural,
                "singularName": t.singular,
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": t.verbs(),
            });
            if !t.short_names.is_empty() {
                r["shortNames"] = json!(t.short_names);
            }
            if !t.categories.is_empty() {
                r["categories"] = json!(t.categories);
            }
            if let Some(storage) = t.versions.first()
                && t.access == Access::ReadWrite
            {
                r["storageVersionHash"] = json!(storage_version_hash(&t.group, storage, &t.kind));
            }
            resources.push(r);
            for sub in t.subresources(version) {
                let mut r = json!({
                    "name": format!("{}/{}", t.plural, sub.name),
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "kind": sub.kind,
                    "verbs": sub.verbs,
                });
                if !sub.group.is_empty() {
                    r["group"] = json!(sub.group);
                    r["version"] = json!(sub.version);
                }
                resources.push(r);
            }
        }
        if resources.is_empty() {
            return None;
        }
        // The core group's list is written without an `apiVersion`, the named groups' with one.
        Some(if group.is_empty() {
            json!({
                "kind": "APIResourceList",
                "groupVersion": version,
                "resources": resources,
            })
        } else {
            json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": format!("{group}/{version}"),
                "resources": resources,
            })
        })
    }
}

/// kube-apiserver's `discovery.StorageVersionHash`: the first 8 bytes of the SHA-256 of
/// `<group>/<storage version>/<kind>`, base64.
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn group_document(group: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
            "metadata":{"name":"widgets.example.io"},
            "spec":{"group":"example.io","scope":"Namespaced",
                "names":{"kind":"Widget","plural":"widgets","singular":"widget","shortNames":["wd"]},
                "versions":[
                    {"name":"v1beta1","served":true,"storage":false},
                    {"name":"v1","served":true,"storage":true,"subresources":{"status":{}}}]}})
    }

    #[test]
    fn a_crd_defines_a_type_with_its_storage_version_preferred() {
        let t = type_of_crd(&crd()).unwrap();
        assert_eq!(t.versions, ["v1", "v1beta1"]);
        assert!(t.namespaced && t.status);
        assert_eq!(t.short_names, ["wd"]);
    }

    #[test]
    fn a_crd_named_unlike_its_plural_and_group_is_rejected() {
        let mut c = crd();
        c["metadata"]["name"] = json!("widgets");
        let (field, _) = type_of_crd(&c).unwrap_err();
        assert_eq!(field, "metadata.name");
    }

    #[test]
    // The order kube-apiserver lists them in (conformance tables/the-apps-resources).
    fn discovery_lists_scale_and_status_subresources_next_to_their_resource() {
        let reg = Registry::with_builtins(Flavor::Kubernetes);
        let list = reg.api_resource_list("apps", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status"
            ]
        );
    }

    #[test]
    fn a_storage_version_hash_is_kube_apiservers() {
        // discovery.StorageVersionHash("", "v1", "ConfigMap") in kube-apiserver.
        assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
    }

    #[test]
    fn kcp_clusters_serve_the_tenancy_group_and_plain_clusters_do_not() {
        assert!(
            Registry::with_builtins(Flavor::Kcp)
                .api_group("tenancy.kcp.io")
                .is_some()
        );
        assert!(
            Registry::with_builtins(Flavor::Kubernetes)
                .api_group("tenancy.kcp.io")
                .is_none()
        );
    }

    fn widgets(versions: Value) -> ResourceType {
        type_of_spec(&json!({
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": versions,
        }))
        .unwrap()
    }

    #[test]
    fn a_custom_resource_lists_status_before_scale() {
        let t = widgets(
            json!([{"name": "v1", "served": true, "storage": true, "subresources": {
                "status": {},
                "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
            }}]),
        );
        let names: Vec<&str> = t.subresources("v1").iter().map(|s| s.name).collect();
        assert_eq!(names, ["status", "scale"]);
    }

    #[test]
    fn a_custom_resource_version_without_subresources_serves_none() {
        let t = widgets(json!([
            {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
            {"name": "v1beta1", "served": true, "storage": false},
        ]));
        assert!(t.has_status("v1"));
        assert!(!t.has_status("v1beta1"));
        assert!(t.subresources("v1beta1").is_empty());
        let t = Arc::new(t);
        assert!(t.at_version("v1").status);
        assert!(!t.at_version("v1beta1").status);
    }
}
