//! The serving certificate of `--metrics-secure`.
//!
//! As controller-runtime does: the certificate and key in `--metrics-cert-path` (files named by
//! `--metrics-cert-name` and `--metrics-cert-key`, `tls.crt` and `tls.key` by default, as
//! cert-manager writes them) when given, otherwise a self-signed certificate made at start (the
//! scraper then skips verification or pins it, as with controller-runtime).

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::Error;

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateSource {
    /// `--metrics-cert-path`; empty: self-signed.
    pub dir: String,
    /// `--metrics-cert-name`.
    pub cert_name: String,
    /// `--metrics-cert-key`.
    pub key_name: String,
}

fn tls_error(reason: impl std::fmt::Display) -> Error {
    Error::Flag {
        flag: "metrics-cert-path".into(),
        reason: reason.to_string(),
    }
}

/// The rustls configuration serving the certificate `source` names.
pub fn server_config(source: &CertificateSource) -> Result<Arc<ServerConfig>, Error> {
    let (chain, key) = if source.dir.is_empty() {
        self_signed()?
    } else {
        from_files(
            &Path::new(&source.dir).join(&source.cert_name),
            &Path::new(&source.dir).join(&source.key_name),
        )?
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(tls_error)?;
    Ok(Arc::new(config))
}

fn from_files(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), Error> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| tls_error(format!("reading {}: {e}", cert.display())))?;
    if chain.is_empty() {
        return Err(tls_error(format!(
            "{} holds no certificate",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| tls_error(format!("reading {}: {e}", key.display())))?;
    Ok((chain, key))
}

fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), Error> {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let certified = rcgen::generate_simple_self_signed(names)
        .map_err(|e| tls_error(format!("making a self-signed certificate: {e}")))?;
    let key = PrivateKeyDer::try_from(certified.signing_key.serialize_der())
        .map_err(|e| tls_error(format!("encoding the self-signed key: {e}")))?;
    Ok((vec![certified.cert.der().clone()], key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(dir: &str) -> CertificateSource {
        CertificateSource {
            dir: dir.into(),
            cert_name: "tls.crt".into(),
            key_name: "tls.key".into(),
        }
    }

    #[test]
    fn without_a_certificate_path_a_self_signed_one_is_served() {
        assert!(server_config(&source("")).is_ok());
    }

    #[test]
    fn the_certificate_in_the_path_is_served() {
        let dir = std::env::temp_dir().join(format!("metrics-cert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let certified = rcgen::generate_simple_self_signed(vec!["metrics".into()]).unwrap();
        std::fs::write(dir.join("tls.crt"), certified.cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), certified.signing_key.serialize_pem()).unwrap();
        let served = server_config(&source(&dir.display().to_string()));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(served.is_ok(), "{:?}", served.err());
    }

    #[test]
    fn a_missing_certificate_names_the_flag_and_the_file() {
        let err = server_config(&source("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--metrics-cert-path") && err.contains("/nonexistent/tls.crt"),
            "{err}"
        );
    }
}
