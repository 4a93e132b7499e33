//! Signing X.509 certificates for the built-in PKI, with `rcgen` over `ring`.
//!
//! [`CertificateRequest::from_spec`] validates a cert-manager Certificate spec (usages, IP
//! addresses, durations, key algorithm) into what is signed; [`sign`] generates (or reuses) a
//! key and signs. rcgen keeps one value per subject attribute type, but Kubernetes reads every
//! `O` of a client certificate as a group, so the subject (every attribute, in Go's
//! `pkix.Name` order, as cert-manager writes it) and the issuer (the CA's subject, byte for
//! byte) are written by this module into the TBS certificate rcgen produced, which is then
//! signed again with the issuer's key.
//!
//! Keys: `ring` cannot generate RSA keys, so a Certificate asking for `RSA` (every Certificate
//! kcp-operator renders asks for RSA 4096) gets an ECDSA P-256 key; `ECDSA` with size 384 gets
//! P-384 and `Ed25519` gets Ed25519. Keys are PKCS#8 (`PRIVATE KEY`). A CA Secret provided by
//! the user must hold a PKCS#8 key (ECDSA, Ed25519 or RSA: ring signs with RSA keys).

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
    SanType, SerialNumber, SignatureAlgorithm, SigningKey,
};
use x509_parser::prelude::{FromDer as _, X509Certificate};

use crate::api::X509Subject;
use crate::render::certmanager::CertificateSpec;
use crate::render::duration;

/// cert-manager's default lifetime when `spec.duration` is not set (90 days).
pub const DEFAULT_DURATION_SECONDS: i64 = 90 * 24 * 3600;

/// A failure of the built-in PKI; never carries key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct SignError {
    /// The field (of the Certificate, or the Secret key) at fault, e.g. `spec.ipAddresses`.
    pub field: String,
    /// Why.
    pub reason: String,
}

fn fail(field: &str, reason: impl Into<String>) -> SignError {
    SignError {
        field: field.to_owned(),
        reason: reason.into(),
    }
}

/// The key algorithm a Certificate gets from the built-in PKI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAlgorithm {
    /// ECDSA on P-256 with SHA-256 (also what `RSA` requests get).
    EcdsaP256,
    /// ECDSA on P-384 with SHA-384 (`ECDSA`, size 384).
    EcdsaP384,
    /// Ed25519.
    Ed25519,
}

impl KeyAlgorithm {
    /// The algorithm for a Certificate's `privateKey` (`algorithm`, `size`).
    pub fn for_spec(spec: &CertificateSpec) -> KeyAlgorithm {
        let (algorithm, size) = spec
            .private_key
            .as_ref()
            .map(|k| (k.algorithm.as_str(), k.size))
            .unwrap_or(("", 0));
        match (algorithm, size) {
            ("Ed25519", _) => KeyAlgorithm::Ed25519,
            ("ECDSA", 384) => KeyAlgorithm::EcdsaP384,
            _ => KeyAlgorithm::EcdsaP256,
        }
    }

    fn rcgen(self) -> &'static SignatureAlgorithm {
        match self {
            KeyAlgorithm::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            KeyAlgorithm::EcdsaP384 => &rcgen::PKCS_ECDSA_P384_SHA384,
            KeyAlgorithm::Ed25519 => &rcgen::PKCS_ED25519,
        }
    }
}

/// What one certificate is made of, validated from a Certificate spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateRequest {
    /// The subject, as (OID bytes, value) in Go's `pkix.Name` order.
    pub subject: Vec<(&'static [u8], String)>,
    /// DNS SANs.
    pub dns_names: Vec<String>,
    /// IP SANs.
    pub ip_addresses: Vec<IpAddr>,
    /// Whether it is a CA.
    pub is_ca: bool,
    /// Key usages.
    pub key_usages: Vec<KeyUsagePurpose>,
    /// Extended key usages.
    pub extended_key_usages: Vec<ExtendedKeyUsagePurpose>,
    /// Lifetime in seconds.
    pub duration_seconds: i64,
    /// The key algorithm.
    pub algorithm: KeyAlgorithm,
}

/// Attribute OIDs (DER content bytes) of the subject.
mod oid {
    pub const COUNTRY: &[u8] = &[0x55, 0x04, 0x06];
    pub const ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0a];
    pub const ORGANIZATIONAL_UNIT: &[u8] = &[0x55, 0x04, 0x0b];
    pub const LOCALITY: &[u8] = &[0x55, 0x04, 0x07];
    pub const PROVINCE: &[u8] = &[0x55, 0x04, 0x08];
    pub const STREET: &[u8] = &[0x55, 0x04, 0x09];
    pub const POSTAL_CODE: &[u8] = &[0x55, 0x04, 0x11];
    pub const SERIAL_NUMBER: &[u8] = &[0x55, 0x04, 0x05];
    pub const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
}

/// The subject attributes in Go's `pkix.Name.ToRDNSequence` order (C, O, OU, L, ST, street,
/// postal code, serial number, CN), one RDN each.
pub fn subject(common_name: &str, s: Option<&X509Subject>) -> Vec<(&'static [u8], String)> {
    let mut out = Vec::new();
    if let Some(s) = s {
        for (oid, values) in [
            (oid::COUNTRY, &s.countries),
            (oid::ORGANIZATION, &s.organizations),
            (oid::ORGANIZATIONAL_UNIT, &s.organizational_units),
            (oid::LOCALITY, &s.localities),
            (oid::PROVINCE, &s.provinces),
            (oid::STREET, &s.street_addresses),
            (oid::POSTAL_CODE, &s.postal_codes),
        ] {
            out.extend(values.iter().map(|v| (oid, v.clone())));
        }
        if !s.serial_number.is_empty() {
            out.push((oid::SERIAL_NUMBER, s.serial_number.clone()));
        }
    }
    if !common_name.is_empty() {
        out.push((oid::COMMON_NAME, common_name.to_owned()));
    }
    out
}

fn usages(
    spec: &CertificateSpec,
) -> Result<(Vec<KeyUsagePurpose>, Vec<ExtendedKeyUsagePurpose>), SignError> {
    let defaults = ["digital signature", "key encipherment"].map(str::to_owned);
    let requested = if spec.usages.is_empty() {
        &defaults[..]
    } else {
        &spec.usages[..]
    };
    let (mut ku, mut eku) = (Vec::new(), Vec::new());
    for usage in requested {
        match usage.as_str() {
            "signing" | "digital signature" => ku.push(KeyUsagePurpose::DigitalSignature),
            "content commitment" => ku.push(KeyUsagePurpose::ContentCommitment),
            "key encipherment" => ku.push(KeyUsagePurpose::KeyEncipherment),
            "key agreement" => ku.push(KeyUsagePurpose::KeyAgreement),
            "data encipherment" => ku.push(KeyUsagePurpose::DataEncipherment),
            "cert sign" => ku.push(KeyUsagePurpose::KeyCertSign),
            "crl sign" => ku.push(KeyUsagePurpose::CrlSign),
            "encipher only" => ku.push(KeyUsagePurpose::EncipherOnly),
            "decipher only" => ku.push(KeyUsagePurpose::DecipherOnly),
            "any" => eku.push(ExtendedKeyUsagePurpose::Any),
            "server auth" => eku.push(ExtendedKeyUsagePurpose::ServerAuth),
            "client auth" => eku.push(ExtendedKeyUsagePurpose::ClientAuth),
            "code signing" => eku.push(ExtendedKeyUsagePurpose::CodeSigning),
            "email protection" => eku.push(ExtendedKeyUsagePurpose::EmailProtection),
            "timestamping" => eku.push(ExtendedKeyUsagePurpose::TimeStamping),
            "ocsp signing" => eku.push(ExtendedKeyUsagePurpose::OcspSigning),
            other => {
                return Err(fail(
                    "spec.usages",
                    format!(
                        "unknown key usage {other:?} (cert-manager's names, e.g. \"server auth\")"
                    ),
                ));
            }
        }
    }
    if spec.is_ca && !ku.contains(&KeyUsagePurpose::KeyCertSign) {
        ku.push(KeyUsagePurpose::KeyCertSign);
    }
    Ok((ku, eku))
}

impl CertificateRequest {
    /// Validates a Certificate spec into a request.
    pub fn from_spec(spec: &CertificateSpec) -> Result<CertificateRequest, SignError> {
        let ip_addresses = spec
            .ip_addresses
            .iter()
            .map(|ip| {
                ip.parse::<IpAddr>()
                    .map_err(|_| fail("spec.ipAddresses", format!("{ip:?} is not an IP address")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let duration_seconds = match spec.duration.as_deref() {
            None | Some("") => DEFAULT_DURATION_SECONDS,
            Some(d) => duration::parse(d)
                .map(|ns| (ns / 1_000_000_000) as i64)
                .filter(|s| *s > 0)
                .ok_or_else(|| {
                    fail(
                        "spec.duration",
                        format!("{d:?} is not a positive Go duration"),
                    )
                })?,
        };
        if spec.subject.is_none()
            && spec.common_name.is_empty()
            && spec.dns_names.is_empty()
            && ip_addresses.is_empty()
        {
            return Err(fail(
                "spec",
                "at least one of commonName, subject, dnsNames or ipAddresses must be set",
            ));
        }
        let (key_usages, extended_key_usages) = usages(spec)?;
        Ok(CertificateRequest {
            subject: subject(&spec.common_name, spec.subject.as_ref()),
            dns_names: spec.dns_names.clone(),
            ip_addresses,
            is_ca: spec.is_ca,
            key_usages,
            extended_key_usages,
            duration_seconds,
            algorithm: KeyAlgorithm::for_spec(spec),
        })
    }

    fn params(&self, not_before: i64) -> Result<CertificateParams, SignError> {
        let mut params = CertificateParams::default();
        params.not_before = unix(not_before)?;
        params.not_after = unix(not_before + self.duration_seconds)?;
        params.serial_number = Some(serial()?);
        let mut sans = Vec::new();
        for name in &self.dns_names {
            let dns = name
                .clone()
                .try_into()
                .map_err(|_| fail("spec.dnsNames", format!("{name:?} is not a DNS name")))?;
            sans.push(SanType::DnsName(dns));
        }
        sans.extend(self.ip_addresses.iter().copied().map(SanType::IpAddress));
        params.subject_alt_names = sans;
        params.is_ca = if self.is_ca {
            IsCa::Ca(BasicConstraints::Unconstrained)
        } else {
            IsCa::ExplicitNoCa
        };
        params.key_usages = self.key_usages.clone();
        params.extended_key_usages = self.extended_key_usages.clone();
        params.use_authority_key_identifier_extension = true;
        Ok(params)
    }
}

fn unix(seconds: i64) -> Result<time::OffsetDateTime, SignError> {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .map_err(|_| fail("spec.duration", "the certificate would end after year 9999"))
}

/// A positive 128-bit serial number from the operating system's CSPRNG (RFC 5280 asks for
/// unpredictable serials, so a fast non-cryptographic generator will not do).
fn serial() -> Result<SerialNumber, SignError> {
    let mut bytes = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| fail("serialNumber", "the system random number generator failed"))?;
    bytes[0] &= 0x7f;
    bytes[0] |= 0x40;
    Ok(SerialNumber::from_slice(&bytes))
}

/// The key a certificate is signed with: a CA's certificate and key, or none (self-signed).
pub struct CaKeyPair {
    /// The CA certificate, DER.
    pub certificate: Vec<u8>,
    /// The CA key.
    pub key: KeyPair,
}

impl std::fmt::Debug for CaKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaKeyPair")
            .field("key", &"[elided]")
            .finish()
    }
}

impl CaKeyPair {
    /// Reads a CA from PEM: the first certificate of `tls.crt` and the PKCS#8 `tls.key`.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<CaKeyPair, SignError> {
        let certificate = first_certificate_der(cert_pem)
            .ok_or_else(|| fail("tls.crt", "holds no PEM certificate"))?;
        X509Certificate::from_der(&certificate)
            .map_err(|_| fail("tls.crt", "is not an X.509 certificate"))?;
        let key = KeyPair::from_pem(key_pem).map_err(|_| {
            fail(
                "tls.key",
                "is not a PKCS#8 private key (\"PRIVATE KEY\"; convert with `openssl pkcs8 -topk8 -nocrypt`)",
            )
        })?;
        Ok(CaKeyPair { certificate, key })
    }
}

/// The DER of the first `CERTIFICATE` block of a PEM bundle.
pub fn first_certificate_der(pem: &str) -> Option<Vec<u8>> {
    certificates_der(pem).into_iter().next()
}

/// The DER of every `CERTIFICATE` block of a PEM bundle, in order.
pub fn certificates_der(pem: &str) -> Vec<Vec<u8>> {
    pem::parse_many(pem)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.tag() == "CERTIFICATE")
        .map(|p| p.into_contents())
        .collect()
}

/// PEM of one DER certificate.
pub fn certificate_pem(der: &[u8]) -> String {
    pem::encode(&pem::Pem::new("CERTIFICATE", der.to_vec()))
}

/// A signed certificate and its key, PEM.
pub struct Signed {
    /// The certificate.
    pub certificate_pem: String,
    /// The PKCS#8 private key (never logged).
    pub key_pem: String,
}

impl std::fmt::Debug for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signed")
            .field("certificate_pem", &self.certificate_pem)
            .field("key_pem", &"[elided]")
            .finish()
    }
}

/// Signs `request` at `now` (unix seconds) with `ca` (self-signed when `None`). The key is
/// `reuse` when given and of the requested algorithm (rotation policy `Never`), else new.
pub fn sign(
    request: &CertificateRequest,
    ca: Option<&CaKeyPair>,
    reuse: Option<&str>,
    now: i64,
) -> Result<Signed, SignError> {
    let wanted = request.algorithm.rcgen();
    let key = match reuse.and_then(|pem| KeyPair::from_pem(pem).ok()) {
        Some(k) if k.algorithm() == wanted => k,
        _ => KeyPair::generate_for(wanted).map_err(|e| fail("spec.privateKey", e.to_string()))?,
    };
    let params = request.params(now)?;
    let rcgen_err = |e: rcgen::Error| fail("spec", format!("cannot sign: {e}"));
    let subject = encode_name(&request.subject);
    let der = match ca {
        None => {
            let cert = params.self_signed(&key).map_err(rcgen_err)?;
            rewrite_names(cert.der(), &subject, &subject, &key)?
        }
        Some(ca) => {
            let issuer =
                rcgen::Issuer::from_ca_cert_der(&ca.certificate.as_slice().into(), &ca.key)
                    .map_err(rcgen_err)?;
            let cert = params.signed_by(&key, &issuer).map_err(rcgen_err)?;
            let (_, parsed) = X509Certificate::from_der(&ca.certificate)
                .map_err(|_| fail("tls.crt", "is not an X.509 certificate"))?;
            rewrite_names(cert.der(), parsed.subject().as_raw(), &subject, &ca.key)?
        }
    };
    Ok(Signed {
        certificate_pem: certificate_pem(&der),
        key_pem: key.serialize_pem(),
    })
}

/// A DER TLV.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// A Name: a SEQUENCE of single-attribute RDNs (C as PrintableString, the rest UTF8String).
pub fn encode_name(attributes: &[(&'static [u8], String)]) -> Vec<u8> {
    let rdns: Vec<u8> = attributes
        .iter()
        .flat_map(|(oid, value)| {
            let string_tag = if *oid == oid::COUNTRY { 0x13 } else { 0x0c };
            let attribute = [tlv(0x06, oid), tlv(string_tag, value.as_bytes())].concat();
            tlv(0x31, &tlv(0x30, &attribute))
        })
        .collect();
    tlv(0x30, &rdns)
}

/// The offset of `part` inside `whole` (both borrowed from the same buffer).
fn offset_in(whole: &[u8], part: &[u8]) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then_some(start)
}

/// Replaces the issuer and subject of a certificate's TBS and signs it again with `signer`.
fn rewrite_names(
    der: &[u8],
    issuer: &[u8],
    subject: &[u8],
    signer: &KeyPair,
) -> Result<Vec<u8>, SignError> {
    let broken = || fail("spec", "rcgen produced a certificate that cannot be parsed");
    let (_, cert) = X509Certificate::from_der(der).map_err(|_| broken())?;
    let tbs = cert.tbs_certificate.as_ref();
    let tbs_at = offset_in(der, tbs).ok_or_else(broken)?;
    let old_issuer = cert.issuer().as_raw();
    let old_subject = cert.subject().as_raw();
    let (i, s) = (
        offset_in(tbs, old_issuer).ok_or_else(broken)?,
        offset_in(tbs, old_subject).ok_or_else(broken)?,
    );
    if i + old_issuer.len() > s {
        return Err(broken());
    }
    // The TBS content: everything after its own header.
    let header = tbs.len() - tbs_content_len(tbs).ok_or_else(broken)?;
    let content = [
        &tbs[header..i],
        issuer,
        &tbs[i + old_issuer.len()..s],
        subject,
        &tbs[s + old_subject.len()..],
    ]
    .concat();
    let new_tbs = tlv(0x30, &content);
    // The signature algorithm follows the TBS in the certificate, unchanged.
    let after_tbs = &der[tbs_at + tbs.len()..];
    let algorithm_len = after_tbs.len() - {
        let (rest, _) = x509_parser::der_parser::parse_der(after_tbs).map_err(|_| broken())?;
        rest.len()
    };
    let algorithm = &after_tbs[..algorithm_len];
    let signature = signer
        .sign(&new_tbs)
        .map_err(|e| fail("spec", format!("cannot sign: {e}")))?;
    let bits = [&[0u8][..], &signature].concat();
    Ok(tlv(
        0x30,
        &[new_tbs, algorithm.to_vec(), tlv(0x03, &bits)].concat(),
    ))
}

/// The content length of a DER TLV (from its header).
fn tbs_content_len(tlv: &[u8]) -> Option<usize> {
    let first = *tlv.get(1)?;
    if first < 0x80 {
        return Some(first as usize);
    }
    let n = (first & 0x7f) as usize;
    let bytes = tlv.get(2..2 + n)?;
    Some(bytes.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize))
}

/// What a certificate in a Secret says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    /// Start of validity, unix seconds.
    pub not_before: i64,
    /// End of validity, unix seconds.
    pub not_after: i64,
    /// The subject, DER.
    pub subject: Vec<u8>,
    /// DNS SANs.
    pub dns_names: Vec<String>,
    /// IP SANs.
    pub ip_addresses: Vec<IpAddr>,
    /// Whether it is a CA.
    pub is_ca: bool,
    /// Whether subject and issuer are the same (a root).
    pub self_issued: bool,
}

/// Reads a DER certificate; `None` when it is not one.
pub fn inspect(der: &[u8]) -> Option<Inspected> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let mut dns_names = Vec::new();
    let mut ip_addresses = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                x509_parser::extensions::GeneralName::DNSName(d) => dns_names.push((*d).to_owned()),
                x509_parser::extensions::GeneralName::IPAddress(b) => {
                    if let Ok(v4) = <[u8; 4]>::try_from(*b) {
                        ip_addresses.push(IpAddr::from(v4));
                    } else if let Ok(v6) = <[u8; 16]>::try_from(*b) {
                        ip_addresses.push(IpAddr::from(v6));
                    }
                }
                _ => {}
            }
        }
    }
    Some(Inspected {
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
        subject: cert.subject().as_raw().to_vec(),
        dns_names,
        ip_addresses,
        is_ca: cert.is_ca(),
        self_issued: cert.subject().as_raw() == cert.issuer().as_raw(),
    })
}
