//! Types shared by several kinds of `operator.kcp.io/v1alpha1`: images, etcd, external
//! addresses, certificate settings and templates, Service and Deployment templates, logging,
//! authentication, audit and authorization.
//!
//! Field names and JSON keys are upstream's (`sdk/apis/operator/v1alpha1/common.go`,
//! `certmanager.go`, `shard_types.go`, `frontproxy_types.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, HostAlias, LocalObjectReference, Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The default kcp image repository.
pub const IMAGE_REPOSITORY: &str = "ghcr.io/kcp-dev/kcp";

/// The default kcp image tag (the newest kcp release this operator supports).
pub const IMAGE_TAG: &str = "v0.32.3";

/// Duration of CA certificates unless templated (10 years).
pub const DEFAULT_CA_DURATION: &str = "87600h0m0s";
/// Renewal window of CA certificates unless templated (30 days).
pub const DEFAULT_CA_RENEWAL: &str = "720h0m0s";
/// Duration of leaf certificates unless templated (1 year).
pub const DEFAULT_CERTIFICATE_DURATION: &str = "8760h0m0s";
/// Renewal window of leaf certificates unless templated (7 days).
pub const DEFAULT_CERTIFICATE_RENEWAL: &str = "168h0m0s";

/// Settings for a container image, overriding the defaults.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageSpec {
    /// The container image repository. Defaults to `ghcr.io/kcp-dev/kcp`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repository: String,
    /// The container image tag. Defaults to the newest kcp release the operator supports.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tag: String,
    /// Secrets used to pull the image (e.g. from a private registry).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
}

/// A reference to the RootShard an object belongs to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootShardConfig {
    /// The RootShard in the same namespace.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<LocalObjectReference>,
}

impl RootShardConfig {
    /// The referenced RootShard's name, when a non-empty one is set.
    pub fn name(&self) -> Option<&str> {
        self.reference
            .as_ref()
            .map(|r| r.name.as_str())
            .filter(|n| !n.is_empty())
    }
}

/// The etcd cluster a component stores its data in.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdConfig {
    /// etcd endpoints, e.g. `https://etcd-hostname:2379`.
    pub endpoints: Vec<String>,
    /// The client certificate used to access etcd.
    #[serde(rename = "tlsConfig", default, skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<EtcdTlsConfig>,
    /// The etcd key prefix; when unset, the component's default prefix is used.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

/// The TLS client certificate for etcd.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtcdTlsConfig {
    /// A Secret with `tls.crt`, `tls.key` and `ca.crt`.
    pub secret_ref: LocalObjectReference,
}

/// How a component is reached from outside the cluster.
///
/// `hostname` and `port` are what clients use: the kubeconfigs, `--shard-external-url`, a
/// shard's `--external-hostname` and the front-proxy certificate's SANs all name them. When an
/// Ingress, a Gateway or a load balancer serves that endpoint on another port than the
/// front-proxy's Service (e.g. `port: 443` in front of a Service on 6443), `servicePort`
/// (a kcp-rs addition, upstream kcp-operator#124) sets the Service's port apart.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalConfig {
    /// The external host name (a DNS record pointing at the front-proxy).
    pub hostname: String,
    /// The external port clients connect to.
    #[schemars(schema_with = "go_uint32")]
    pub port: u32,
    /// The port of the front-proxy's Service when the external endpoint is served by an
    /// Ingress, Gateway or load balancer on another port; `port` when unset (as upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "go_optional_uint32")]
    pub service_port: Option<u32>,
    /// A host name for internal access to front-proxy services; `hostname` when unset.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub private_hostname: String,
    /// A port for internal access; `port` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "go_optional_uint32")]
    pub private_port: Option<u32>,
}

/// The schema upstream's CRDs give a Go `uint32` (controller-gen writes `format: int32`; a
/// real API server knows no `uint32` format).
fn go_uint32(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer", "format": "int32"})
}

/// [`go_uint32`] for an optional field.
fn go_optional_uint32(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer", "format": "int32", "nullable": true})
}

/// A reference to an object by name, kind and group (an Issuer or ClusterIssuer).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// Name of the object.
    pub name: String,
    /// Kind of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Group of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
}

/// A key in a namespace-local ConfigMap or Secret.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalDataKeyReference {
    /// Name of the object.
    pub name: String,
    /// Key in its data.
    pub key: String,
}

/// How the root CA of an installation is obtained: from a cert-manager issuer, or from an
/// existing CA Secret (exactly one of the two; validated in the CRD).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.issuerRef) != has(self.caSecretRef)",
    "message": "exactly one of issuerRef and caSecretRef must be set"
}]))]
pub struct Certificates {
    /// A pre-existing cert-manager Issuer or ClusterIssuer that issues the root CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer_ref: Option<ObjectReference>,
    /// A pre-existing CA Secret (certificate and key) that signs everything else.
    #[serde(
        rename = "caSecretRef",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ca_secret_ref: Option<LocalObjectReference>,
}

/// Certificate templates by key: leaf kinds (`server`, `client`, ...) or `<ca>-ca`.
pub type CertificateTemplateMap = BTreeMap<String, CertificateTemplate>;

/// Customizations of one generated Certificate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateTemplate {
    /// Labels and annotations for the Certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MetadataTemplate>,
    /// Spec fields for the Certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<CertificateSpecTemplate>,
}

/// Labels and annotations to copy onto a generated object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetadataTemplate {
    /// Annotations to copy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Labels to copy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// Customizable fields of a cert-manager Certificate spec.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateSpecTemplate {
    /// X.509 subject attributes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<X509Subject>,
    /// The issuer; replaces the operator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer_ref: Option<ObjectReference>,
    /// DNS names: merged with the defaults, or used as-is when `issuerRef` is also set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns_names: Vec<String>,
    /// IP addresses, merged with the defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_addresses: Vec<String>,
    /// Labels and annotations for the certificate's Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_template: Option<MetadataTemplate>,
    /// The requested lifetime (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// How long before expiry to renew (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_before: Option<String>,
    /// Private key options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<CertificatePrivateKeyTemplate>,
}

/// Private key options of a certificate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificatePrivateKeyTemplate {
    /// `Never` or `Always`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["Never", "Always"]))]
    pub rotation_policy: String,
    /// `PKCS1` or `PKCS8`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["PKCS1", "PKCS8"]))]
    pub encoding: String,
    /// `RSA`, `ECDSA` or `Ed25519`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["RSA", "ECDSA", "Ed25519"]))]
    pub algorithm: String,
    /// Key size in bits.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub size: i32,
}

/// cert-manager's X.509 subject.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct X509Subject {
    /// Organizations (O).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub organizations: Vec<String>,
    /// Countries (C).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub countries: Vec<String>,
    /// Organizational units (OU).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub organizational_units: Vec<String>,
    /// Localities (L).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub localities: Vec<String>,
    /// Provinces (ST).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provinces: Vec<String>,
    /// Street addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub street_addresses: Vec<String>,
    /// Postal codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub postal_codes: Vec<String>,
    /// Serial number.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub serial_number: String,
}

/// Customizations of a generated Service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceTemplate {
    /// Labels and annotations (the operator's keys win).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MetadataTemplate>,
    /// Service spec fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ServiceSpecTemplate>,
}

/// Customizable Service spec fields.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpecTemplate {
    /// The Service type (`ClusterIP`, `NodePort`, `LoadBalancer`, ...).
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// The cluster IP.
    #[serde(
        rename = "clusterIP",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub cluster_ip: String,
}

/// An optional PodDisruptionBudget for a generated Deployment (a kcp-rs addition, upstream
/// kcp-operator#176). Named like the Deployment, selecting its pods; at most one of
/// `minAvailable` and `maxUnavailable` (validated in the CRD); `maxUnavailable: 1` when neither
/// is set. Turning it off (or removing it) deletes the budget.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!(has(self.minAvailable) && has(self.maxUnavailable))",
    "message": "at most one of minAvailable and maxUnavailable may be set"
}]))]
pub struct PodDisruptionBudgetSpec {
    /// Whether the PodDisruptionBudget exists.
    pub enabled: bool,
    /// Pods (a number or a percentage) that must stay available during a voluntary disruption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// Pods (a number or a percentage) that may be unavailable during a voluntary disruption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// Customizations of a generated Deployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTemplate {
    /// Labels and annotations of the Deployment (the operator's keys win).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MetadataTemplate>,
    /// Deployment spec fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<DeploymentSpecTemplate>,
}

/// Customizable Deployment spec fields.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSpecTemplate {
    /// The pod template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<PodTemplateSpec>,
}

/// Customizations of the pod template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplateSpec {
    /// Labels and annotations of the pods (the operator's keys win).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MetadataTemplate>,
    /// Pod spec fields, merged into the operator's pod spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<PodSpecTemplate>,
}

/// Pod spec fields a user may set on a generated Deployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSpecTemplate {
    /// Node labels the pod must match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Scheduling constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Tolerations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Entries for the pod's hosts file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_aliases: Vec<HostAlias>,
    /// Image pull secrets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Topology spread constraints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
}

/// Logging settings of a kcp component.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoggingSpec {
    /// Verbosity (`-v`), 0 to 10.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0, max = 10))]
    pub level: i32,
}

/// Authentication settings of a shard or front-proxy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthSpec {
    /// OpenID Connect authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<OidcConfiguration>,
    /// Webhook token authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<AuthenticationWebhookSpec>,
    /// Static token file authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_auth_file: Option<TokenAuthFileSpec>,
    /// ServiceAccount authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountAuthentication>,
    /// Groups dropped before requests are forwarded to shards (front-proxy). An explicitly
    /// empty list is passed on as an empty flag, as upstream does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_groups: Option<Vec<String>>,
    /// Groups passed on to shards (front-proxy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_on_groups: Option<Vec<String>>,
}

impl AuthSpec {
    /// Whether ServiceAccount authentication is enabled.
    pub fn service_accounts_enabled(&self) -> bool {
        self.service_account.as_ref().is_some_and(|s| s.enabled)
    }
}

/// OpenID Connect settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcConfiguration {
    /// The issuer URL (https only).
    #[serde(rename = "issuerURL")]
    pub issuer_url: String,
    /// The client ID.
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// Deprecated and unused: kube OIDC is secretless.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_secret: String,
    /// The groups claim.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub groups_claim: String,
    /// The username claim.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username_claim: String,
    /// The groups prefix.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub groups_prefix: String,
    /// The username prefix.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username_prefix: String,
    /// A Secret with the issuer's CA bundle.
    #[serde(rename = "caFileRef", default, skip_serializing_if = "Option::is_none")]
    pub ca_file_ref: Option<OidcCaFileRef>,
}

/// A Secret key holding an OIDC CA bundle.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcCaFileRef {
    /// The Secret's name.
    pub name: String,
    /// The key; defaults to `ca.crt`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

/// Webhook token authentication.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationWebhookSpec {
    /// How long to cache authentication responses (a Go duration).
    #[serde(
        rename = "cacheAuthenticationTTL",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_authentication_ttl: Option<String>,
    /// A Secret with the webhook kubeconfig under `kubeconfig`.
    pub config_secret_name: String,
    /// The TokenReview version, `v1beta1` or `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["v1beta1", "v1"]))]
    pub version: String,
}

/// Static token file authentication (`--token-auth-file`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenAuthFileSpec {
    /// A Secret holding the token CSV file.
    pub secret_name: String,
    /// The key of the file; defaults to `token.csv`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

/// ServiceAccount authentication.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountAuthentication {
    /// Whether ServiceAccount tokens are accepted.
    pub enabled: bool,
}

/// Audit settings of a shard.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditSpec {
    /// The audit webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<AuditWebhookSpec>,
    /// The audit policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<AuditPolicySpec>,
}

/// Where the audit policy file comes from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditPolicySpec {
    /// A ConfigMap key holding the policy file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<LocalDataKeyReference>,
}

/// The audit webhook backend.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditWebhookSpec {
    /// Buffer size before batching (batch mode).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch_buffer_size: i32,
    /// Maximum batch size (batch mode).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch_max_size: i32,
    /// Maximum wait before a batch is written (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_max_wait: Option<String>,
    /// Throttle burst (batch mode).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch_throttle_burst: i32,
    /// Whether batch throttling is enabled.
    #[serde(default, skip_serializing_if = "is_false")]
    pub batch_throttle_enable: bool,
    /// Batches per second, a decimal number as a string (e.g. `"3.1"`).
    #[serde(
        rename = "batchThrottleQPS",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub batch_throttle_qps: String,
    /// A Secret with the webhook kubeconfig under `kubeconfig`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub config_secret_name: String,
    /// Backoff before the first retry (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_backoff: Option<String>,
    /// `batch`, `blocking` or `blocking-strict`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("enum" = ["", "batch", "blocking", "blocking-strict"]))]
    pub mode: String,
    /// Whether truncating is enabled.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncate_enabled: bool,
    /// Maximum batch size sent to the backend.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncate_max_batch_size: i32,
    /// Maximum event size sent to the backend.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncate_max_event_size: i32,
    /// API group and version of the serialized events.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// Authorization settings of a shard.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationSpec {
    /// The authorization webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<AuthorizationWebhookSpec>,
}

/// The authorization webhook.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationWebhookSpec {
    /// Paths authorized without asking the webhook.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_paths: Vec<String>,
    /// How long to cache authorized responses (a Go duration).
    #[serde(
        rename = "cacheAuthorizedTTL",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_authorized_ttl: Option<String>,
    /// How long to cache unauthorized responses (a Go duration).
    #[serde(
        rename = "cacheUnauthorizedTTL",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_unauthorized_ttl: Option<String>,
    /// A Secret with the webhook kubeconfig under `kubeconfig`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub config_secret_name: String,
    /// The SubjectAccessReview version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

pub(crate) fn is_zero(value: &i32) -> bool {
    *value == 0
}

pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}
