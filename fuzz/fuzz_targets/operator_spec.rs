//! kcp-operator's checks of what the API server cannot check in a spec (image repositories and
//! tags, resource quantities, Go durations), as a pass runs them before writing anything: any
//! text in those fields of a RootShard (and its proxy) and a Kubeconfig, validated, then its
//! certificates rendered. Nothing may panic; a refusal names the object and a field; a
//! quantity, tag or duration the checks accept has the shape their grammar allows.
#![no_main]

use kcp_operator::api::{Kubeconfig, RootShard};
use kcp_operator::render::duration;
use kcp_operator::render::pki::{render_kubeconfig_certificate, render_root_shard_pki};
use kcp_operator::validate::{self, is_quantity, is_repository, is_tag};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

#[derive(Arbitrary, Debug)]
struct Input {
    repository: String,
    tag: String,
    cpu: String,
    memory: String,
    proxy_memory: String,
    duration: String,
    batch_max_wait: String,
    cache_ttl: String,
    validity: String,
}

/// An independent reading of Kubernetes' quantity grammar: sign, digits with at most one
/// point (at least one digit), then a suffix or an exponent.
fn quantity_shape(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let number_end = s
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    let (number, suffix) = s.split_at(number_end);
    let points = number.bytes().filter(|b| *b == b'.').count();
    let digits = number.len() - points;
    let suffixes = [
        "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E",
    ];
    let exponent = |e: &str| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    };
    points <= 1
        && digits >= 1
        && (suffixes.contains(&suffix) || suffix.strip_prefix(['e', 'E']).is_some_and(exponent))
}

fuzz_target!(|input: Input| {
    for q in [&input.cpu, &input.memory, &input.proxy_memory] {
        assert_eq!(is_quantity(q), quantity_shape(q), "quantity {q:?}");
    }
    if is_tag(&input.tag) {
        assert!(!input.tag.is_empty() && input.tag.len() <= 128);
    }
    if is_repository(&input.repository) {
        assert!(!input.repository.is_empty() && input.repository.is_ascii());
    }

    let root_shard = json!({
        "apiVersion": "operator.kcp.io/v1alpha1", "kind": "RootShard",
        "metadata": {"name": "root", "namespace": "kcp", "uid": "u1"},
        "spec": {
            "external": {"hostname": "api.kcp.example.com", "port": 6443},
            "certificates": {"issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer",
                                           "name": "selfsigned"}},
            "cache": {"ref": {"name": "cache"}},
            "etcd": {"endpoints": ["http://etcd:2379"]},
            "image": {"repository": input.repository, "tag": input.tag},
            "resources": {"limits": {"cpu": input.cpu}, "requests": {"memory": input.memory}},
            "certificateTemplates": {"server": {"spec": {"duration": input.duration}}},
            "audit": {"webhook": {"batchMaxWait": input.batch_max_wait,
                                   "configSecretName": "audit"}},
            "auth": {"webhook": {"cacheAuthenticationTTL": input.cache_ttl,
                                 "configSecretName": "authn", "version": "v1"}},
            "proxy": {"replicas": 1, "resources": {"limits": {"memory": input.proxy_memory}}},
        },
    });
    let root_shard: RootShard = match serde_json::from_value(root_shard) {
        Ok(rs) => rs,
        Err(err) => panic!("the generated RootShard does not deserialize: {err}"),
    };
    match validate::root_shard("RootShard kcp/root", &root_shard.spec) {
        Ok(()) => {
            for q in [&input.cpu, &input.memory, &input.proxy_memory] {
                assert!(is_quantity(q));
            }
            for d in [&input.duration, &input.batch_max_wait, &input.cache_ttl] {
                assert!(duration::parse(d).is_some(), "duration {d:?} accepted");
            }
            let _ = render_root_shard_pki(&root_shard);
        }
        Err(err) => {
            let text = err.to_string();
            assert!(
                text.contains("RootShard kcp/root") && text.contains("spec."),
                "{text}"
            );
        }
    }

    let kubeconfig = json!({
        "apiVersion": "operator.kcp.io/v1alpha1", "kind": "Kubeconfig",
        "metadata": {"name": "admin", "namespace": "kcp", "uid": "u2"},
        "spec": {
            "target": {"frontProxyRef": {"name": "edge"}}, "username": "admin",
            "validity": input.validity, "secretRef": {"name": "admin-kubeconfig"},
            "certificateTemplate": {"spec": {"renewBefore": input.duration}},
        },
    });
    let kubeconfig: Kubeconfig = match serde_json::from_value(kubeconfig) {
        Ok(kc) => kc,
        Err(err) => panic!("the generated Kubeconfig does not deserialize: {err}"),
    };
    match validate::kubeconfig("Kubeconfig kcp/admin", &kubeconfig.spec) {
        Ok(()) => {
            let cert = render_kubeconfig_certificate(&kubeconfig, "root");
            let lifetime = cert.spec.duration.as_deref().and_then(duration::parse);
            assert!(
                lifetime.is_some_and(|ns| ns > 0),
                "{:?}",
                cert.spec.duration
            );
        }
        Err(err) => {
            let text = err.to_string();
            assert!(
                text.contains("Kubeconfig kcp/admin") && text.contains("spec."),
                "{text}"
            );
        }
    }
});
