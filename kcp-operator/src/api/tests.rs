//! Tests of the API types: CRD generation, upstream manifests, validation rules.

use super::*;

/// The example manifests of the spec's section 7, one per kind.
pub(crate) const EXAMPLES: &str = include_str!("../../tests/fixtures/examples.yaml");

fn crd(kind: &str) -> CustomResourceDefinition {
    crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap()
}

fn validations(value: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_rules(value, &mut out);
    out
}

fn collect_rules(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Array(rules)) = map.get("x-kubernetes-validations") {
                out.extend(
                    rules
                        .iter()
                        .filter_map(|r| r["rule"].as_str().map(String::from)),
                );
            }
            map.values().for_each(|v| collect_rules(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_rules(v, out)),
        _ => {}
    }
}

fn schema(kind: &str) -> serde_json::Value {
    serde_json::to_value(&crd(kind).spec.versions[0].schema).unwrap()
}

#[test]
fn crds_yaml_matches_snapshot() {
    insta::assert_snapshot!(crds_yaml().unwrap());
}

#[test]
fn crds_keep_upstream_groups_kinds_plurals_and_namespaced_scope() {
    let names: Vec<_> = crds()
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "rootshards.operator.kcp.io",
            "shards.operator.kcp.io",
            "frontproxies.operator.kcp.io",
            "cacheservers.operator.kcp.io",
            "kubeconfigs.operator.kcp.io",
            "virtualworkspaces.operator.kcp.io",
            "compiledrootshards.deploy.operator.kcp.io",
            "compiledshards.deploy.operator.kcp.io",
            "compiledfrontproxies.deploy.operator.kcp.io",
            "compiledcacheservers.deploy.operator.kcp.io",
            "compiledvirtualworkspaces.deploy.operator.kcp.io",
        ]
    );
    for crd in crds() {
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, VERSION);
        assert!(version.subresources.as_ref().unwrap().status.is_some());
    }
}

#[test]
fn every_example_manifest_deserializes_into_its_kind() {
    let objects = kcp_core::parse_manifests("examples", EXAMPLES).unwrap();
    let kinds: Vec<_> = objects
        .iter()
        .map(|o| o.types.as_ref().unwrap().kind.clone())
        .collect();
    assert_eq!(
        kinds,
        [
            "RootShard",
            "Shard",
            "FrontProxy",
            "CacheServer",
            "Kubeconfig",
            "VirtualWorkspace"
        ]
    );
    let docs: Vec<serde_json::Value> = objects
        .iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect();
    let root: RootShard = serde_json::from_value(docs[0].clone()).unwrap();
    assert_eq!(root.spec.common.etcd.endpoints.len(), 1);
    assert_eq!(root.spec.cache.reference.unwrap().name, "cache");
    let shard: Shard = serde_json::from_value(docs[1].clone()).unwrap();
    assert_eq!(shard.spec.root_shard.name(), Some("root"));
    assert_eq!(shard.spec.common.logging.unwrap().level, 4);
    let fp: FrontProxy = serde_json::from_value(docs[2].clone()).unwrap();
    assert_eq!(
        fp.spec.auth.unwrap().drop_groups.unwrap(),
        ["system:masters"]
    );
    let cs: CacheServer = serde_json::from_value(docs[3].clone()).unwrap();
    assert_eq!(cs.spec.replicas, Some(2));
    let kc: Kubeconfig = serde_json::from_value(docs[4].clone()).unwrap();
    assert_eq!(
        kc.spec.target.resolve(),
        Some(TargetRef::FrontProxy("edge"))
    );
    let vw: VirtualWorkspace = serde_json::from_value(docs[5].clone()).unwrap();
    assert_eq!(vw.spec.external.port, 6443);
}

#[test]
fn common_shard_spec_is_inlined_into_root_shard_spec() {
    let props = &schema("RootShard")["openAPIV3Schema"]["properties"]["spec"]["properties"];
    for field in [
        "etcd",
        "clusterDomain",
        "shardBaseURL",
        "external",
        "cache",
        "certificates",
    ] {
        assert!(props.get(field).is_some(), "spec.{field} missing");
    }
    let required = &schema("RootShard")["openAPIV3Schema"]["properties"]["spec"]["required"];
    let mut required: Vec<_> = required
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort();
    assert_eq!(required, ["cache", "certificates", "etcd", "external"]);
}

#[test]
fn kubeconfig_crd_requires_exactly_one_target() {
    let rules = validations(&schema("Kubeconfig"));
    assert!(rules.iter().any(|r| {
        r.contains("has(self.rootShardRef), has(self.shardRef), has(self.frontProxyRef)")
            && r.ends_with("size() == 1")
    }));
}

#[test]
fn certificates_crd_requires_issuer_ref_xor_ca_secret_ref() {
    for kind in ["RootShard", "CacheServer"] {
        let rules = validations(&schema(kind));
        assert!(
            rules.contains(&"has(self.issuerRef) != has(self.caSecretRef)".to_owned()),
            "{kind}: {rules:?}"
        );
    }
}

#[test]
fn shard_and_front_proxy_crds_require_a_named_root_shard_reference() {
    for kind in ["Shard", "FrontProxy"] {
        let rules = validations(&schema(kind));
        assert!(
            rules.contains(&"has(self.ref) && self.ref.name != ''".to_owned()),
            "{kind}: {rules:?}"
        );
    }
}

#[test]
fn every_kind_with_a_deployment_refuses_both_disruption_bounds_at_once() {
    let rule = "!(has(self.minAvailable) && has(self.maxUnavailable))".to_owned();
    for (kind, count) in [
        ("RootShard", 2),
        ("Shard", 1),
        ("FrontProxy", 1),
        ("CacheServer", 1),
        ("VirtualWorkspace", 1),
    ] {
        let rules = validations(&schema(kind));
        let found = rules.iter().filter(|r| **r == rule).count();
        assert_eq!(found, count, "{kind}: {rules:?}");
    }
}

#[test]
fn upstream_validations_are_kept() {
    assert!(
        validations(&schema("FrontProxy"))
            .iter()
            .any(|r| r.contains("!has(self.oidc)"))
    );
    assert!(
        validations(&schema("CacheServer"))
            .iter()
            .any(|r| r.contains("self.replicas <= 1"))
    );
    assert!(
        validations(&schema("VirtualWorkspace"))
            .iter()
            .any(|r| r.contains("!has(self.shardRef)"))
    );
    assert!(
        validations(&schema("Kubeconfig"))
            .iter()
            .any(|r| r.contains("has(self.targetWorkspace)"))
    );
}

#[test]
fn target_workspace_defaults_to_root_and_ignores_deprecated_cluster_for_the_url() {
    let mut kc = Kubeconfig::new("k", KubeconfigSpec::default());
    assert_eq!(kc.target_workspace(), "root");
    assert_eq!(kc.rbac_target_workspace(), "root");
    kc.spec.authorization = Some(KubeconfigAuthorization {
        cluster_role_bindings: KubeconfigClusterRoleBindings {
            cluster: "root:old".into(),
            cluster_roles: vec!["admin".into()],
        },
    });
    assert_eq!(kc.target_workspace(), "root");
    assert_eq!(kc.rbac_target_workspace(), "root:old");
    kc.spec.target_workspace = "root:team-a".into();
    assert_eq!(kc.target_workspace(), "root:team-a");
    assert_eq!(kc.rbac_target_workspace(), "root:team-a");
}

#[test]
fn kubeconfig_target_precedence_is_root_shard_then_shard_then_front_proxy() {
    let r = |n: &str| Some(k8s_openapi::api::core::v1::LocalObjectReference { name: n.into() });
    let t = KubeconfigTarget {
        root_shard_ref: r("a"),
        shard_ref: r("b"),
        front_proxy_ref: r("c"),
    };
    assert_eq!(t.resolve(), Some(TargetRef::RootShard("a")));
    let t = KubeconfigTarget {
        root_shard_ref: None,
        ..t
    };
    assert_eq!(t.resolve(), Some(TargetRef::Shard("b")));
    assert_eq!(KubeconfigTarget::default().resolve(), None);
    assert_eq!(TargetRef::FrontProxy("c").display_name(), "FrontProxy/c");
}

#[test]
fn path_mapping_entries_use_snake_case_keys() {
    let entry = PathMappingEntry {
        path: "/x".into(),
        backend: "https://b".into(),
        backend_server_ca: "ca".into(),
        proxy_client_cert: "c".into(),
        proxy_client_key: "k".into(),
    };
    assert_eq!(
        serde_json::to_value(entry).unwrap(),
        serde_json::json!({"path": "/x", "backend": "https://b", "backend_server_ca": "ca",
            "proxy_client_cert": "c", "proxy_client_key": "k"})
    );
}
