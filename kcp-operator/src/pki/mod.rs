//! The built-in PKI: an issuer for the cert-manager `Certificate`s the operator renders, for
//! clusters without cert-manager (and the playground). cert-manager stays the default
//! ([`Pki::CertManager`]); with [`Pki::Builtin`] the operator itself plays cert-manager's CA and
//! self-signed issuers, so the renderers and the config group are the same either way.
//!
//! It reads `Issuer`s (`spec.ca.secretName` or `spec.selfSigned`) and `ClusterIssuer`s (whose CA
//! Secrets live in the cluster resource namespace, `cert-manager` by default, as cert-manager's
//! `--cluster-resource-namespace`), writes the Secret named in `spec.secretName` with
//! `tls.crt` (the certificate and the intermediates above it), `tls.key` and `ca.crt` (the
//! root), and sets the Certificate's `Ready` condition, `notBefore`, `notAfter`,
//! `renewalTime` and `revision`; it renews at `renewalTime`. Pure decisions are in [`plan`],
//! signing in [`x509`] (keys: see there; ECDSA P-256 where a Certificate asks for RSA).

pub mod plan;
pub mod reconcile;
pub mod x509;

use crate::error::{Error, Result};

/// Settings of the built-in issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinPki {
    /// The namespace of ClusterIssuers' CA Secrets (cert-manager's
    /// `--cluster-resource-namespace`).
    pub cluster_resource_namespace: String,
}

impl Default for BuiltinPki {
    fn default() -> Self {
        BuiltinPki {
            cluster_resource_namespace: "cert-manager".to_owned(),
        }
    }
}

/// Who issues the operator's Certificates (`--pki`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Pki {
    /// cert-manager, installed in the cluster (the default, as upstream).
    #[default]
    CertManager,
    /// The operator's built-in issuer.
    Builtin(BuiltinPki),
}

impl Pki {
    /// Parses `--pki`: `cert-manager` or `builtin`.
    pub fn parse(value: &str, cluster_resource_namespace: &str) -> Result<Pki> {
        match value.trim() {
            "cert-manager" => Ok(Pki::CertManager),
            "builtin" => Ok(Pki::Builtin(BuiltinPki {
                cluster_resource_namespace: cluster_resource_namespace.to_owned(),
            })),
            other => Err(Error::InvalidField {
                object: "kcp-operator".into(),
                field: "--pki".into(),
                reason: format!("unknown PKI {other:?} (known: cert-manager, builtin)"),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
