//! The built-in PKI's pure parts: what is signed, by whom, when it is renewed, and the Secret.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use x509_parser::prelude::{FromDer as _, X509Certificate};

use super::plan::{self, Issuance, IssuerKey, Material, Signer};
use super::x509::{self, CaKeyPair, CertificateRequest, KeyAlgorithm};
use crate::api::{MetadataTemplate, X509Subject};
use crate::render::certmanager::{
    CaIssuer, Certificate, CertificatePrivateKey, CertificateSpec, IssuerReference,
};

const NOW: i64 = 1_800_000_000;

fn spec(common_name: &str) -> CertificateSpec {
    CertificateSpec {
        common_name: common_name.into(),
        secret_name: common_name.into(),
        duration: Some("8760h0m0s".into()),
        renew_before: Some("168h0m0s".into()),
        private_key: Some(CertificatePrivateKey {
            algorithm: "RSA".into(),
            size: 4096,
            ..Default::default()
        }),
        issuer_ref: IssuerReference {
            name: "root-server-ca".into(),
            kind: "Issuer".into(),
            group: "cert-manager.io".into(),
        },
        ..Default::default()
    }
}

fn certificate(spec: CertificateSpec) -> Certificate {
    Certificate {
        metadata: ObjectMeta {
            name: Some(spec.secret_name.clone()),
            namespace: Some("kcp".into()),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

fn ca_spec(name: &str) -> CertificateSpec {
    CertificateSpec {
        is_ca: true,
        duration: Some("87600h0m0s".into()),
        ..spec(name)
    }
}

fn self_signed_ca(name: &str) -> (CaKeyPair, String) {
    let signed = x509::sign(
        &CertificateRequest::from_spec(&ca_spec(name)).unwrap(),
        None,
        None,
        NOW,
    )
    .unwrap();
    (
        CaKeyPair::from_pem(&signed.certificate_pem, &signed.key_pem).unwrap(),
        signed.certificate_pem,
    )
}

fn der(pem: &str) -> Vec<u8> {
    x509::first_certificate_der(pem).unwrap()
}

#[test]
fn a_leaf_is_signed_by_its_ca_and_names_it_as_issuer() {
    let (ca, ca_pem) = self_signed_ca("root-server-ca");
    let mut s = spec("root-server");
    s.dns_names = vec!["root-kcp.kcp.svc.cluster.local".into()];
    let leaf = x509::sign(
        &CertificateRequest::from_spec(&s).unwrap(),
        Some(&ca),
        None,
        NOW,
    )
    .unwrap();
    let (ca_der, leaf_der) = (der(&ca_pem), der(&leaf.certificate_pem));
    let (_, ca_cert) = X509Certificate::from_der(&ca_der).unwrap();
    let (_, leaf_cert) = X509Certificate::from_der(&leaf_der).unwrap();
    leaf_cert
        .verify_signature(Some(ca_cert.public_key()))
        .expect("the leaf verifies with the CA's key");
    assert_eq!(leaf_cert.issuer().as_raw(), ca_cert.subject().as_raw());
    assert!(
        ca_cert.verify_signature(None).is_ok(),
        "the CA is self-signed"
    );
}

#[test]
fn serials_are_positive_sixteen_byte_numbers_that_differ_per_certificate() {
    let request = CertificateRequest::from_spec(&spec("root-server")).unwrap();
    let serials: Vec<Vec<u8>> = (0..2)
        .map(|_| {
            let signed = x509::sign(&request, None, None, NOW).unwrap();
            let der = der(&signed.certificate_pem);
            let (_, cert) = X509Certificate::from_der(&der).unwrap();
            cert.raw_serial().to_vec()
        })
        .collect();
    assert_ne!(serials[0], serials[1]);
    for serial in &serials {
        assert_eq!(serial.len(), 16, "{serial:x?}");
        assert_eq!(
            serial[0] & 0xc0,
            0x40,
            "positive, no leading zero: {serial:x?}"
        );
    }
}

#[test]
fn every_organization_is_its_own_subject_attribute() {
    let mut s = spec("kcp-admin");
    s.subject = Some(X509Subject {
        organizations: vec![
            "kubeconfig:admin".into(),
            "system:kcp:admin".into(),
            "team-a".into(),
        ],
        ..Default::default()
    });
    let (ca, _) = self_signed_ca("root-client-ca");
    let leaf = x509::sign(
        &CertificateRequest::from_spec(&s).unwrap(),
        Some(&ca),
        None,
        NOW,
    )
    .unwrap();
    let d = der(&leaf.certificate_pem);
    let (_, cert) = X509Certificate::from_der(&d).unwrap();
    let orgs: Vec<&str> = cert
        .subject()
        .iter_organization()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert_eq!(orgs, ["kubeconfig:admin", "system:kcp:admin", "team-a"]);
    let cn: Vec<&str> = cert
        .subject()
        .iter_common_name()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert_eq!(cn, ["kcp-admin"]);
}

#[test]
fn usages_sans_and_lifetime_are_as_the_certificate_asks() {
    let mut s = spec("root-server");
    s.usages = vec![
        "server auth".into(),
        "key encipherment".into(),
        "digital signature".into(),
    ];
    s.dns_names = vec!["localhost".into(), "api.kcp.example.com".into()];
    s.ip_addresses = vec!["10.0.0.1".into()];
    let signed = x509::sign(&CertificateRequest::from_spec(&s).unwrap(), None, None, NOW).unwrap();
    let d = der(&signed.certificate_pem);
    let (_, cert) = X509Certificate::from_der(&d).unwrap();
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.server_auth && !eku.client_auth);
    let ku = cert.key_usage().unwrap().unwrap().value;
    assert!(ku.digital_signature() && ku.key_encipherment() && !ku.key_cert_sign());
    let inspected = x509::inspect(&d).unwrap();
    assert_eq!(inspected.dns_names, ["localhost", "api.kcp.example.com"]);
    assert_eq!(
        inspected.ip_addresses,
        ["10.0.0.1".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(inspected.not_before, NOW);
    assert_eq!(inspected.not_after, NOW + 8760 * 3600);
    assert!(!inspected.is_ca);
}

#[test]
fn a_ca_certificate_may_sign_certificates() {
    let signed = x509::sign(
        &CertificateRequest::from_spec(&ca_spec("root-ca")).unwrap(),
        None,
        None,
        NOW,
    )
    .unwrap();
    let d = der(&signed.certificate_pem);
    let (_, cert) = X509Certificate::from_der(&d).unwrap();
    assert!(cert.is_ca());
    assert!(cert.key_usage().unwrap().unwrap().value.key_cert_sign());
}

#[test]
fn rsa_requests_get_ecdsa_p256_keys_in_pkcs8() {
    let s = spec("root-client");
    assert_eq!(KeyAlgorithm::for_spec(&s), KeyAlgorithm::EcdsaP256);
    let signed = x509::sign(&CertificateRequest::from_spec(&s).unwrap(), None, None, NOW).unwrap();
    assert!(signed.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    assert!(
        !format!("{signed:?}").contains("PRIVATE KEY"),
        "Debug never shows the key"
    );
}

#[test]
fn rotation_policy_never_keeps_the_key_and_always_replaces_it() {
    let request = CertificateRequest::from_spec(&spec("root-client")).unwrap();
    let first = x509::sign(&request, None, None, NOW).unwrap();
    let kept = x509::sign(&request, None, Some(&first.key_pem), NOW + 10).unwrap();
    let fresh = x509::sign(&request, None, None, NOW + 10).unwrap();
    assert_eq!(kept.key_pem, first.key_pem);
    assert_ne!(fresh.key_pem, first.key_pem);
}

#[test]
fn an_unknown_usage_or_ip_address_is_refused_naming_the_field() {
    let mut s = spec("x");
    s.usages = vec!["server-auth".into()];
    let e = CertificateRequest::from_spec(&s).unwrap_err();
    assert_eq!(e.field, "spec.usages");
    assert!(e.reason.contains("server-auth"));
    let mut s = spec("x");
    s.ip_addresses = vec!["10.0.0.300".into()];
    assert_eq!(
        CertificateRequest::from_spec(&s).unwrap_err().field,
        "spec.ipAddresses"
    );
}

#[test]
fn a_ca_key_that_is_not_pkcs8_is_refused_without_echoing_it() {
    let (_, ca_pem) = self_signed_ca("root-ca");
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n";
    let e = CaKeyPair::from_pem(&ca_pem, key).unwrap_err();
    assert_eq!(e.field, "tls.key");
    assert!(!e.to_string().contains("MIIB"));
}

#[test]
fn issuers_are_found_by_kind_and_external_groups_are_refused() {
    let mut r = IssuerReference {
        name: "selfsigned".into(),
        kind: "ClusterIssuer".into(),
        group: "cert-manager.io".into(),
    };
    assert_eq!(
        plan::issuer_of("kcp", &r).unwrap(),
        IssuerKey::ClusterIssuer("selfsigned".into())
    );
    r.kind = String::new();
    assert_eq!(
        plan::issuer_of("kcp", &r).unwrap(),
        IssuerKey::Issuer("kcp".into(), "selfsigned".into())
    );
    r.group = "awspca.cert-manager.io".into();
    assert_eq!(
        plan::issuer_of("kcp", &r).unwrap_err().field,
        "spec.issuerRef.group"
    );
}

#[test]
fn a_ca_issuer_signs_with_its_secret_and_a_self_signed_one_with_the_certificate_key() {
    let ca = CaIssuer {
        secret_name: "root-ca".into(),
    };
    assert_eq!(
        plan::signer_for(Some(&ca), false, "kcp").unwrap(),
        Signer::Ca("kcp".into(), "root-ca".into())
    );
    assert_eq!(
        plan::signer_for(None, true, "kcp").unwrap(),
        Signer::SelfSigned
    );
    assert!(plan::signer_for(None, false, "kcp").is_err());
}

#[test]
fn renewal_is_renew_before_ahead_of_expiry_or_a_third_of_the_lifetime() {
    let year = 8760 * 3600;
    assert_eq!(plan::renewal_time(0, year, Some("168h")), year - 168 * 3600);
    assert_eq!(plan::renewal_time(0, 3 * 3600, None), 2 * 3600);
    assert_eq!(
        plan::renewal_time(0, 3 * 3600, Some("5h")),
        2 * 3600,
        "renewBefore longer than the lifetime"
    );
}

fn issued_secret(cert: &Certificate, now: i64) -> Secret {
    let signed = x509::sign(
        &CertificateRequest::from_spec(&cert.spec).unwrap(),
        None,
        None,
        now,
    )
    .unwrap();
    let material = Material {
        tls_crt: signed.certificate_pem.clone(),
        tls_key: signed.key_pem,
        ca_crt: signed.certificate_pem,
    };
    plan::render_certificate_secret(cert, None, &material)
}

#[test]
fn a_missing_secret_is_issued_and_a_matching_one_is_up_to_date_until_renewal() {
    let cert = certificate(spec("root-client"));
    assert!(matches!(
        plan::issuance(&cert, None, NOW),
        Issuance::Needed {
            reason: "DoesNotExist",
            ..
        }
    ));
    let secret = issued_secret(&cert, NOW);
    let Issuance::UpToDate { renewal_at, .. } = plan::issuance(&cert, Some(&secret), NOW + 60)
    else {
        panic!("a fresh certificate is up to date");
    };
    assert_eq!(renewal_at, NOW + (8760 - 168) * 3600);
    assert!(matches!(
        plan::issuance(&cert, Some(&secret), renewal_at),
        Issuance::Needed {
            reason: "Renewing",
            ..
        }
    ));
}

#[test]
fn a_changed_spec_or_issuer_reissues() {
    let cert = certificate(spec("root-client"));
    let secret = issued_secret(&cert, NOW);
    let mut renamed = cert.clone();
    renamed.spec.dns_names = vec!["new.example.com".into()];
    assert!(matches!(
        plan::issuance(&renamed, Some(&secret), NOW),
        Issuance::Needed {
            reason: "SecretMismatch",
            ..
        }
    ));
    let mut moved = cert.clone();
    moved.spec.issuer_ref.name = "other".into();
    assert!(matches!(
        plan::issuance(&moved, Some(&secret), NOW),
        Issuance::Needed {
            reason: "IncorrectIssuer",
            ..
        }
    ));
    let mut broken = secret.clone();
    broken
        .data
        .as_mut()
        .unwrap()
        .insert("tls.crt".into(), ByteString(b"garbage".to_vec()));
    assert!(matches!(
        plan::issuance(&cert, Some(&broken), NOW),
        Issuance::Needed {
            reason: "InvalidCertificate",
            ..
        }
    ));
}

#[test]
fn the_chain_holds_intermediates_in_tls_crt_and_the_root_in_ca_crt() {
    let (root, root_pem) = self_signed_ca("root-ca");
    let inter = x509::sign(
        &CertificateRequest::from_spec(&ca_spec("root-server-ca")).unwrap(),
        Some(&root),
        None,
        NOW,
    )
    .unwrap();
    let (inter_tls, inter_ca) = plan::chain(&inter.certificate_pem, Some((&root_pem, &root_pem)));
    assert_eq!(
        inter_tls, inter.certificate_pem,
        "a root is not repeated in tls.crt"
    );
    assert_eq!(der(&inter_ca), der(&root_pem));
    let (leaf_tls, leaf_ca) = plan::chain("LEAF\n", Some((&inter_tls, &inter_ca)));
    assert_eq!(
        x509::certificates_der(&leaf_tls),
        vec![der(&inter.certificate_pem)]
    );
    assert!(leaf_tls.starts_with("LEAF\n"));
    assert_eq!(der(&leaf_ca), der(&root_pem));
    assert_eq!(
        plan::chain("SELF\n", None),
        ("SELF\n".to_owned(), "SELF\n".to_owned())
    );
}

#[test]
fn the_certificate_secret_is_rendered_as_cert_manager_writes_it() {
    let mut s = spec("root-client");
    s.dns_names = vec!["a.example.com".into(), "b.example.com".into()];
    s.secret_template = Some(MetadataTemplate {
        labels: BTreeMap::from([("operator.kcp.io/rootshard".to_owned(), "root".to_owned())]),
        ..Default::default()
    });
    let material = Material {
        tls_crt: "CERT\n".into(),
        tls_key: "KEY\n".into(),
        ca_crt: "CA\n".into(),
    };
    let secret = plan::render_certificate_secret(&certificate(s), None, &material);
    insta::assert_yaml_snapshot!(secret);
}
