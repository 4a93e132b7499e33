//! cert-manager's `cert-manager.io/v1` Certificate and Issuer, as typed structs of the fields
//! kcp-operator sets and reads (unknown fields of live objects are ignored when read).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{MetadataTemplate, X509Subject};

/// The API group of cert-manager.
pub const CERT_MANAGER_GROUP: &str = "cert-manager.io";

/// A cert-manager Certificate spec (the fields kcp-operator uses).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cert-manager.io",
    version = "v1",
    kind = "Certificate",
    plural = "certificates",
    namespaced,
    status = "CertificateStatus",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct CertificateSpec {
    /// The subject CN.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub common_name: String,
    /// The Secret the certificate is stored in (`tls.crt`, `tls.key`, `ca.crt`).
    pub secret_name: String,
    /// Labels and annotations of that Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_template: Option<MetadataTemplate>,
    /// Lifetime (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Renewal window (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_before: Option<String>,
    /// Private key settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<CertificatePrivateKey>,
    /// Further subject attributes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<X509Subject>,
    /// Key usages (`server auth`, `client auth`, `digital signature`, `key encipherment`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usages: Vec<String>,
    /// DNS SANs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns_names: Vec<String>,
    /// IP SANs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_addresses: Vec<String>,
    /// Whether this is a CA certificate.
    #[serde(
        rename = "isCA",
        default,
        skip_serializing_if = "crate::api::common::is_false"
    )]
    pub is_ca: bool,
    /// The issuer.
    pub issuer_ref: IssuerReference,
}

/// A cert-manager private key spec.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificatePrivateKey {
    /// `Never` or `Always`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rotation_policy: String,
    /// `PKCS1` or `PKCS8`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub encoding: String,
    /// `RSA`, `ECDSA` or `Ed25519`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub algorithm: String,
    /// Key size.
    #[serde(default, skip_serializing_if = "crate::api::common::is_zero")]
    pub size: i32,
}

/// A reference to an Issuer or ClusterIssuer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuerReference {
    /// Name.
    pub name: String,
    /// `Issuer` or `ClusterIssuer`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `cert-manager.io`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
}

/// The observed state of a Certificate (as cert-manager or the built-in issuer writes it).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateStatus {
    /// Conditions; `Ready=True` once the Secret holds a valid certificate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Incremented on every issuance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// Expiry of the current certificate, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<String>,
    /// Start of validity, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<String>,
    /// When it will be renewed, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewal_time: Option<String>,
}

impl Certificate {
    /// Whether the certificate reports `Ready=True`.
    pub fn is_ready(&self) -> bool {
        self.status
            .as_ref()
            .is_some_and(|s| kcp_core::runtime::conditions::is_true(&s.conditions, "Ready"))
    }
}

/// A cert-manager Issuer spec (the CA and self-signed issuer types).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cert-manager.io",
    version = "v1",
    kind = "Issuer",
    plural = "issuers",
    namespaced,
    status = "IssuerStatus",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct IssuerSpec {
    /// A CA issuer signing with the key pair in a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<CaIssuer>,
    /// A self-signing issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_signed: Option<SelfSignedIssuer>,
}

/// A cert-manager ClusterIssuer spec (the CA and self-signed issuer types); a CA
/// ClusterIssuer's Secret lives in cert-manager's cluster resource namespace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cert-manager.io",
    version = "v1",
    kind = "ClusterIssuer",
    plural = "clusterissuers",
    status = "IssuerStatus",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIssuerSpec {
    /// A CA issuer signing with the key pair in a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<CaIssuer>,
    /// A self-signing issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_signed: Option<SelfSignedIssuer>,
}

/// The observed state of an Issuer or ClusterIssuer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct IssuerStatus {
    /// Conditions; `Ready=True` once the issuer can sign.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// A CA issuer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaIssuer {
    /// The Secret with `tls.crt` and `tls.key` of the CA.
    pub secret_name: String,
}

/// A self-signing issuer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct SelfSignedIssuer {}

/// CustomResourceDefinitions of the Certificate, Issuer and ClusterIssuer fields kcp-operator
/// uses: enough for tests and the playground; real clusters install cert-manager's own CRDs.
pub fn crds()
-> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>
{
    use kube::CustomResourceExt as _;
    vec![Certificate::crd(), Issuer::crd(), ClusterIssuer::crd()]
}

/// [`crds`] as a YAML stream (the playground's fixture `00-cert-manager-crds.yaml`).
pub fn crds_yaml() -> crate::Result<String> {
    serde_saphyr::to_string_multiple(&crds()).map_err(|err| crate::Error::Serialization {
        context: "writing the cert-manager CustomResourceDefinitions as YAML".to_owned(),
        message: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_playground_cert_manager_crds_are_the_generated_ones() {
        let want = super::crds_yaml().unwrap_or_default();
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/playground/operator/00-cert-manager-crds.yaml"
        );
        if std::env::var_os("UPDATE_FIXTURES").is_some() {
            std::fs::write(path, &want).unwrap_or_else(|e| panic!("{e}"));
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "run with UPDATE_FIXTURES=1 to regenerate {path}"
        );
    }
}
