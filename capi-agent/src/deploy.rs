//! The deployment assets, generated from code so they cannot drift from the binary: RBAC
//! (including `update/patch` on Machines and the aggregated ClusterRole the CAPI contract
//! requires for a non-standard group), the Deployment, and clusterctl's
//! `infrastructure-components.yaml` (one Namespace, everything labelled
//! `cluster.x-k8s.io/provider: infrastructure-agent`, `${WATCH_NAMESPACE:=}` and
//! `${AGENTS_NAMESPACE:=}` for clusterctl's variable substitution) and `metadata.yaml`.
//!
//! `deploy/capi-provider-agent/` holds the checked-in output; a test compares it with these
//! functions.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, Namespace, ObjectFieldSelector,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SecurityContext,
    ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;

use crate::api::GROUP;
use crate::error::{Error, Result};

/// clusterctl's default namespace for the provider.
pub const NAMESPACE: &str = "cluster-api-provider-agent";
/// The name prefix of the provider's objects.
pub const PREFIX: &str = "cluster-api-provider-agent";
/// The provider label clusterctl requires on every object.
pub const PROVIDER: (&str, &str) = ("cluster.x-k8s.io/provider", "infrastructure-agent");
/// The container image.
pub const IMAGE: &str = "ghcr.io/kcp-rs/capi-provider-agent:latest";

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some([(PROVIDER.0.to_owned(), PROVIDER.1.to_owned())].into()),
        ..ObjectMeta::default()
    }
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |s: &[&str]| Some(s.iter().map(|x| (*x).to_owned()).collect());
    PolicyRule {
        api_groups: strings(groups),
        resources: strings(resources),
        verbs: verbs.iter().map(|x| (*x).to_owned()).collect(),
        ..PolicyRule::default()
    }
}

const ALL: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// The manager's ClusterRole: exactly the verbs the provider uses (least privilege; each rule
/// names the calls it allows). Upstream's generated role also grants list/watch/delete on
/// Secrets, create/delete on its own kinds, `*/finalizers` and more it never calls.
// Its length is the rule table itself, one commented rule per resource: nothing to split.
pub fn manager_role() -> ClusterRole {
    ClusterRole {
        metadata: meta(&format!("{PREFIX}-manager-role"), None),
        rules: Some(vec![
            // Kubeconfig Secrets (get), their backup label (patch), the token Secret.
            rule(&[""], &["secrets"], &["get", "create", "update", "patch"]),
            // The Event recorder (core/v1 only).
            rule(&[""], &["events"], &["get", "create", "update"]),
            // Cached and watched; bound and unbound with patch.
            rule(
                &["agent-install.openshift.io"],
                &["agents"],
                &["get", "list", "watch", "patch"],
            ),
            // Finalizers with update, spec.providerID with patch.
            rule(
                &[GROUP],
                &["agentclusters", "agentmachines"],
                &["get", "list", "watch", "update", "patch"],
            ),
            rule(
                &[GROUP],
                &["agentclusters/status", "agentmachines/status"],
                &["update"],
            ),
            // Watched for pause changes (see `pause_watch`).
            rule(
                &["cluster.x-k8s.io"],
                &["clusters"],
                &["get", "list", "watch"],
            ),
            // Watched for deletion; the pre-terminate hook annotation with patch.
            rule(
                &["cluster.x-k8s.io"],
                &["machines"],
                &["get", "list", "watch", "patch"],
            ),
            rule(
                &["hive.openshift.io"],
                &["clusterdeployments"],
                &["get", "list", "create", "patch"],
            ),
            rule(
                &["extensions.hive.openshift.io"],
                &["agentclusterinstalls"],
                &["get", "create", "patch"],
            ),
            rule(
                &["hypershift.openshift.io"],
                &["hostedcontrolplanes"],
                &["get"],
            ),
            // --metrics-secure: each scrape's token is authenticated and authorized.
            rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
            rule(
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
                &["create"],
            ),
        ]),
        ..ClusterRole::default()
    }
}

/// The ClusterRole CAPI core aggregates (`cluster.x-k8s.io/aggregate-to-manager: "true"`): the
/// contract requires it for providers outside `infrastructure.cluster.x-k8s.io`.
pub fn aggregated_role() -> ClusterRole {
    let mut metadata = meta(&format!("{PREFIX}-aggregated-manager-role"), None);
    metadata.labels.get_or_insert_with(BTreeMap::new).insert(
        "cluster.x-k8s.io/aggregate-to-manager".into(),
        "true".into(),
    );
    ClusterRole {
        metadata,
        rules: Some(vec![rule(
            &[GROUP],
            &[
                "agentclusters",
                "agentclusters/status",
                "agentmachines",
                "agentmachines/status",
                "agentmachinetemplates",
            ],
            ALL,
        )]),
        ..ClusterRole::default()
    }
}

fn subject() -> Subject {
    Subject {
        kind: "ServiceAccount".into(),
        name: format!("{PREFIX}-controller-manager"),
        namespace: Some(NAMESPACE.into()),
        ..Subject::default()
    }
}

/// Every RBAC object: ServiceAccount, manager ClusterRole and binding, the leader-election Role
/// and binding, the aggregated ClusterRole.
pub fn rbac() -> Result<Vec<serde_json::Value>> {
    let sa = ServiceAccount {
        metadata: meta(&format!("{PREFIX}-controller-manager"), Some(NAMESPACE)),
        ..ServiceAccount::default()
    };
    let binding = ClusterRoleBinding {
        metadata: meta(&format!("{PREFIX}-manager-rolebinding"), None),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: format!("{PREFIX}-manager-role"),
        },
        subjects: Some(vec![subject()]),
    };
    let election = Role {
        metadata: meta(&format!("{PREFIX}-leader-election-role"), Some(NAMESPACE)),
        // The Lease is read, created once and renewed with patch.
        rules: Some(vec![rule(
            &["coordination.k8s.io"],
            &["leases"],
            &["get", "create", "patch"],
        )]),
    };
    let election_binding = RoleBinding {
        metadata: meta(
            &format!("{PREFIX}-leader-election-rolebinding"),
            Some(NAMESPACE),
        ),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: format!("{PREFIX}-leader-election-role"),
        },
        subjects: Some(vec![subject()]),
    };
    [
        typed(&sa),
        typed(&manager_role()),
        typed(&binding),
        typed(&election),
        typed(&election_binding),
        typed(&aggregated_role()),
    ]
    .into_iter()
    .collect()
}

/// A value with `apiVersion` and `kind` (k8s-openapi types serialize them).
fn typed<T: Serialize>(obj: &T) -> Result<serde_json::Value> {
    serde_json::to_value(obj).map_err(|err| Error::Serialization {
        context: "encoding a deployment object".into(),
        message: err.to_string(),
    })
}

fn probe(path: &str) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String("health".into()),
            ..HTTPGetAction::default()
        }),
        ..Probe::default()
    }
}

/// The `manager` container (clusterctl's variables in its flags when `clusterctl`).
// A flat list of the container's flags, ports, probes and environment: its length is earned.
fn manager_container(clusterctl: bool) -> Container {
    let mut args = vec![
        "--leader-elect",
        "--leader-election-namespace=$(POD_NAMESPACE)",
        "--metrics-bind-address=:8080",
        "--health-probe-bind-address=:8081",
    ];
    if clusterctl {
        args.extend([
            "--namespace=${WATCH_NAMESPACE:=}",
            "--agent-namespace=${AGENTS_NAMESPACE:=}",
        ]);
    }
    Container {
        name: "manager".into(),
        image: Some(IMAGE.into()),
        args: Some(args.iter().map(|a| (*a).to_owned()).collect()),
        env: Some(vec![EnvVar {
            name: "POD_NAMESPACE".into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.namespace".into(),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]),
        ports: Some(vec![
            ContainerPort {
                name: Some("metrics".into()),
                container_port: 8080,
                ..ContainerPort::default()
            },
            ContainerPort {
                name: Some("health".into()),
                container_port: 8081,
                ..ContainerPort::default()
            },
        ]),
        readiness_probe: Some(probe("/readyz")),
        liveness_probe: Some(probe("/healthz")),
        resources: Some(ResourceRequirements {
            requests: Some(
                [
                    ("cpu".to_owned(), Quantity("50m".into())),
                    ("memory".to_owned(), Quantity("32Mi".into())),
                ]
                .into(),
            ),
            limits: Some([("memory".to_owned(), Quantity("128Mi".into()))].into()),
            ..ResourceRequirements::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

/// The manager Deployment: container `manager`, upstream's flags, non-root with a read-only
/// root filesystem. For clusterctl (`clusterctl = true`) the namespace flags take
/// `${WATCH_NAMESPACE:=}` and `${AGENTS_NAMESPACE:=}`.
pub fn deployment(clusterctl: bool) -> Deployment {
    let labels: BTreeMap<String, String> =
        [("control-plane".to_owned(), "controller-manager".to_owned())].into();
    let container = manager_container(clusterctl);
    let mut metadata = meta(&format!("{PREFIX}-controller-manager"), Some(NAMESPACE));
    metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(labels.clone());
    Deployment {
        metadata,
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(format!("{PREFIX}-controller-manager")),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        ..PodSecurityContext::default()
                    }),
                    termination_grace_period_seconds: Some(10),
                    containers: vec![container],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

fn yaml<T: Serialize>(what: &str, docs: &[T]) -> Result<String> {
    serde_saphyr::to_string_multiple(docs).map_err(|err| Error::Serialization {
        context: format!("writing {what} as YAML"),
        message: err.to_string(),
    })
}

/// The CRDs, labelled for clusterctl.
pub fn labelled_crds() -> Result<Vec<serde_json::Value>> {
    let mut crds = crate::api::crds()?;
    for crd in &mut crds {
        crd.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(PROVIDER.0.into(), PROVIDER.1.into());
    }
    crds.iter().map(typed).collect()
}

/// `deploy/capi-provider-agent/rbac.yaml`.
pub fn rbac_yaml() -> Result<String> {
    yaml("the RBAC objects", &rbac()?)
}

/// `deploy/capi-provider-agent/deployment.yaml`.
pub fn deployment_yaml() -> Result<String> {
    yaml("the Deployment", &[typed(&deployment(false))?])
}

/// clusterctl's `infrastructure-components.yaml`: the Namespace, the CRDs, RBAC and the
/// Deployment.
pub fn components_yaml() -> Result<String> {
    let namespace = Namespace {
        metadata: meta(NAMESPACE, None),
        ..Namespace::default()
    };
    let mut docs = vec![typed(&namespace)?];
    docs.extend(labelled_crds()?);
    docs.extend(rbac()?);
    docs.push(typed(&deployment(true))?);
    yaml("infrastructure-components.yaml", &docs)
}

/// clusterctl's `metadata.yaml`: release series 0.1 implements contract v1beta1 (as
/// upstream; the CRDs are labelled for both contracts).
pub const METADATA_YAML: &str = "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- major: 0
  minor: 1
  contract: v1beta1
";

/// `deploy/capi-provider-agent/kustomization.yaml`.
pub const KUSTOMIZATION_YAML: &str = "apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: cluster-api-provider-agent
resources:
- namespace.yaml
- crds.yaml
- rbac.yaml
- deployment.yaml
";

/// `deploy/capi-provider-agent/namespace.yaml`.
pub fn namespace_yaml() -> Result<String> {
    let namespace = Namespace {
        metadata: meta(NAMESPACE, None),
        ..Namespace::default()
    };
    yaml("the Namespace", &[typed(&namespace)?])
}
