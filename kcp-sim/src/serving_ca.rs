//! The CA kcp-sim serves HTTPS with ([`crate::Config::tls`]) and, in kcp mode, publishes as
//! kcp does: a certificate authority made when the server starts (an ECDSA P-256 key that never
//! leaves the process) and a serving certificate it signs for `localhost`, `127.0.0.1` and the
//! address bound. Clients trust the CA ([`crate::Server::ca_pem`], the kubeconfig's
//! `certificate-authority-data`), as they trust a real server's.

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::{Error, Result};

/// A CA and the TLS configuration of a serving certificate it signed.
#[derive(Clone)]
pub struct ServingCa {
    ca_pem: String,
    ca_der: Vec<u8>,
    tls: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for ServingCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The serving key is in `tls`; only the public CA is shown.
        f.debug_struct("ServingCa")
            .field("ca_pem", &self.ca_pem)
            .finish_non_exhaustive()
    }
}

impl ServingCa {
    /// A new CA, and a serving certificate for `localhost`, `127.0.0.1` and `ip`.
    pub fn generate(ip: IpAddr) -> Result<ServingCa> {
        let ca = certificate_authority()?;
        let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        if !ip.is_unspecified() && ip.to_string() != "127.0.0.1" {
            names.push(ip.to_string());
        }
        let mut params = CertificateParams::new(names).map_err(failed("the serving names"))?;
        params.distinguished_name = common_name("kcp-sim");
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().map_err(failed("a serving key"))?;
        let certificate = params
            .signed_by(&key, &ca)
            .map_err(failed("signing the serving certificate"))?;
        let chain = vec![certificate.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok(ServingCa {
            ca_pem: ca.pem(),
            ca_der: ca.der().to_vec(),
            tls: server_config(chain, key)?,
        })
    }

    /// The CA certificate (PEM) that signs the serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate (DER), as clients take their trust roots.
    pub fn ca_der(&self) -> &[u8] {
        &self.ca_der
    }

    /// The rustls configuration serving the certificate (HTTP/1.1).
    pub fn tls(&self) -> Arc<rustls::ServerConfig> {
        self.tls.clone()
    }
}

fn certificate_authority() -> Result<CertifiedIssuer<'static, KeyPair>> {
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name("kcp-sim-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().map_err(failed("a CA key"))?;
    CertifiedIssuer::self_signed(params, key).map_err(failed("the CA certificate"))
}

fn common_name(name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn
}

fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(failed("TLS versions"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(failed("the serving certificate"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn failed<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Error {
    move |e| Error::Config {
        message: format!("making kcp-sim's serving CA: {what}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_one_pem_certificate_marked_as_a_ca() {
        let ca = ServingCa::generate(IpAddr::from([127, 0, 0, 1])).unwrap();
        let blocks = pem::parse_many(ca.ca_pem()).unwrap();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].tag(), "CERTIFICATE");
        let (_, cert) = x509_parser::parse_x509_certificate(blocks[0].contents()).unwrap();
        assert!(cert.is_ca());
        assert_eq!(cert.subject().to_string(), "CN=kcp-sim-ca");
    }

    #[test]
    fn each_server_gets_its_own_ca() {
        let ip = IpAddr::from([127, 0, 0, 1]);
        let (a, b) = (
            ServingCa::generate(ip).unwrap(),
            ServingCa::generate(ip).unwrap(),
        );
        assert_ne!(a.ca_pem(), b.ca_pem());
    }
}
