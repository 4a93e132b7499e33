//! kcp-operator's certificate templates (`spec.certificateTemplates` of a RootShard,
//! `spec.certificateTemplate` of a Kubeconfig): any template merged into the Certificates the
//! operator renders, then validated and signed by the built-in PKI as it would be. Nothing may
//! panic; every refusal names a field and a reason.
#![no_main]

use kcp_operator::api::{CertificateTemplate, Kubeconfig, RootShard};
use kcp_operator::pki::x509::{CertificateRequest, sign};
use kcp_operator::render::certmanager::Certificate;
use kcp_operator::render::pki::{render_kubeconfig_certificate, render_root_shard_pki};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const KEYS: [&str; 9] = [
    "root-ca",
    "server",
    "service-account",
    "virtual-workspaces",
    "logical-cluster-admin",
    "external-logical-cluster-admin",
    "client",
    "kcp-operator",
    "other",
];

#[derive(Arbitrary, Debug)]
struct Subject {
    organizations: Vec<String>,
    countries: Vec<String>,
    organizational_units: Vec<String>,
    serial_number: String,
}

#[derive(Arbitrary, Debug)]
struct Template {
    key: u8,
    labels: Vec<(String, String)>,
    annotations: Vec<(String, String)>,
    subject: Option<Subject>,
    issuer: Option<(String, String, String)>,
    dns_names: Vec<String>,
    ip_addresses: Vec<String>,
    secret_labels: Vec<(String, String)>,
    duration: Option<String>,
    renew_before: Option<String>,
    private_key: Option<(String, String, String, i32)>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    templates: Vec<Template>,
    validity: String,
    username: String,
    groups: Vec<String>,
    sign: bool,
}

fn map(pairs: &[(String, String)]) -> Value {
    pairs
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn template(t: &Template) -> Value {
    let mut spec = json!({
        "dnsNames": t.dns_names, "ipAddresses": t.ip_addresses,
        "secretTemplate": {"labels": map(&t.secret_labels)},
    });
    if let Some(s) = &t.subject {
        spec["subject"] = json!({"organizations": s.organizations, "countries": s.countries,
            "organizationalUnits": s.organizational_units, "serialNumber": s.serial_number});
    }
    if let Some((name, kind, group)) = &t.issuer {
        spec["issuerRef"] = json!({"name": name, "kind": kind, "group": group});
    }
    if let Some(d) = &t.duration {
        spec["duration"] = json!(d);
    }
    if let Some(d) = &t.renew_before {
        spec["renewBefore"] = json!(d);
    }
    if let Some((rotation, encoding, algorithm, size)) = &t.private_key {
        spec["privateKey"] = json!({"rotationPolicy": rotation, "encoding": encoding,
            "algorithm": algorithm, "size": size});
    }
    json!({"metadata": {"labels": map(&t.labels), "annotations": map(&t.annotations)},
           "spec": spec})
}

fn check(cert: &Certificate, sign_it: bool) {
    match CertificateRequest::from_spec(&cert.spec) {
        Ok(request) => {
            if sign_it {
                if let Err(err) = sign(&request, None, None, 1_800_000_000) {
                    assert!(!err.field.is_empty() && !err.reason.is_empty());
                }
            }
        }
        Err(err) => assert!(!err.field.is_empty() && !err.reason.is_empty()),
    }
    let renew = kcp_operator::pki::plan::renewal_time(0, 86_400, cert.spec.renew_before.as_deref());
    assert!(renew > 0 && renew <= 86_400);
}

fuzz_target!(|input: Input| {
    if input.templates.len() > 4 {
        return;
    }
    let templates: serde_json::Map<String, Value> = input
        .templates
        .iter()
        .map(|t| {
            (
                KEYS[usize::from(t.key) % KEYS.len()].to_owned(),
                template(t),
            )
        })
        .collect();
    let root_shard = json!({
        "apiVersion": "operator.kcp.io/v1alpha1", "kind": "RootShard",
        "metadata": {"name": "root", "namespace": "kcp", "uid": "u1"},
        "spec": {
            "external": {"hostname": "api.kcp.example.com", "port": 6443},
            "certificates": {"issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer",
                                           "name": "selfsigned"}},
            "cache": {"ref": {"name": "cache"}},
            "etcd": {"endpoints": ["http://etcd:2379"]},
            "certificateTemplates": templates,
        },
    });
    let root_shard: RootShard = match serde_json::from_value(root_shard) {
        Ok(rs) => rs,
        Err(err) => panic!("the generated RootShard does not deserialize: {err}"),
    };
    let (certificates, _issuers) = render_root_shard_pki(&root_shard);
    // Signing makes keys: one certificate per input is enough.
    for (i, cert) in certificates.iter().enumerate() {
        check(cert, input.sign && i == 0);
    }

    let kubeconfig_template: Option<CertificateTemplate> = input
        .templates
        .first()
        .map(|t| serde_json::from_value(template(t)))
        .transpose()
        .unwrap_or_else(|err| panic!("the generated template does not deserialize: {err}"));
    let kubeconfig = json!({
        "apiVersion": "operator.kcp.io/v1alpha1", "kind": "Kubeconfig",
        "metadata": {"name": "admin", "namespace": "kcp", "uid": "u2"},
        "spec": {
            "target": {"frontProxyRef": {"name": "edge"}},
            "username": input.username, "groups": input.groups, "validity": input.validity,
            "secretRef": {"name": "admin-kubeconfig"},
            "certificateTemplate": kubeconfig_template,
        },
    });
    let kubeconfig: Kubeconfig = match serde_json::from_value(kubeconfig) {
        Ok(kc) => kc,
        Err(err) => panic!("the generated Kubeconfig does not deserialize: {err}"),
    };
    check(
        &render_kubeconfig_certificate(&kubeconfig, "root"),
        input.sign,
    );
});
