//! Snapshot and behaviour tests of the renderers, on the spec's example manifests (section 7)
//! and the variations of upstream's unit tests (section 8). Tests named after a corrected
//! behaviour cover the defects of spec section 9.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, LocalObjectReference};

use super::cacheserver::*;
use super::deployment as d;
use super::fixtures::*;
use super::frontproxy::*;
use super::kubeconfig::*;
use super::pki::*;
use super::revisions::*;
use super::rootshard::*;
use super::shard::*;
use super::virtualworkspace::*;
use crate::api::*;

fn container(dep: &Deployment) -> &Container {
    &dep.spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
}

fn args(dep: &Deployment) -> Vec<String> {
    container(dep).args.clone().unwrap()
}

fn volume_names(dep: &Deployment) -> Vec<String> {
    let pod = dep.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    pod.volumes
        .iter()
        .flatten()
        .map(|v| v.name.clone())
        .collect()
}

fn secret_of(dep: &Deployment, volume: &str) -> String {
    let pod = dep.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let v = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == volume)
        .unwrap();
    v.secret.as_ref().unwrap().secret_name.clone().unwrap()
}

fn local(name: &str) -> Option<LocalObjectReference> {
    Some(LocalObjectReference { name: name.into() })
}

fn kubeconfig_text(secret: &k8s_openapi::api::core::v1::Secret) -> String {
    String::from_utf8(secret.data.as_ref().unwrap()["kubeconfig"].0.clone()).unwrap()
}

// ----- PKI ------------------------------------------------------------------------------------

#[test]
fn root_shard_pki_matches_snapshot() {
    let (certs, issuers) = render_root_shard_pki(&root_shard());
    insta::assert_yaml_snapshot!("root_shard_certificates", certs);
    insta::assert_yaml_snapshot!("root_shard_issuers", issuers);
}

#[test]
fn shard_certificates_match_snapshot() {
    let certs: Vec<_> = ShardLeaf::ALL
        .iter()
        .map(|l| render_shard_certificate(&shard(), "root", *l))
        .collect();
    insta::assert_yaml_snapshot!(certs);
}

#[test]
fn front_proxy_and_internal_proxy_certificates_match_snapshot() {
    let rs = root_shard();
    let fp = front_proxy();
    let certs: Vec<_> = ProxyLeaf::ALL
        .iter()
        .flat_map(|l| {
            [
                render_proxy_certificate(&rs, Some(&fp), *l),
                render_proxy_certificate(&rs, None, *l),
            ]
        })
        .collect();
    insta::assert_yaml_snapshot!(certs);
}

#[test]
fn cache_server_pki_matches_snapshot() {
    let cs = cache_server();
    let objects = (
        render_cache_server_ca_certificate(&cs),
        render_cache_server_issuer(&cs),
        render_cache_server_certificate(&cs, true),
        render_cache_server_certificate(&cs, false),
    );
    insta::assert_yaml_snapshot!(objects);
}

#[test]
fn virtual_workspace_and_kubeconfig_certificates_match_snapshot() {
    let certs = vec![
        render_virtual_workspace_certificate(&virtual_workspace(), "root", false),
        render_virtual_workspace_certificate(&virtual_workspace(), "root", true),
        render_kubeconfig_certificate(&kubeconfig(), "root"),
    ];
    insta::assert_yaml_snapshot!(certs);
}

#[test]
fn root_ca_certificate_is_not_rendered_with_ca_secret_ref_and_the_issuer_reads_that_secret() {
    let mut rs = root_shard();
    rs.spec.certificates = Certificates {
        issuer_ref: None,
        ca_secret_ref: local("my-ca"),
    };
    assert!(render_root_ca_certificate(&rs).is_none());
    assert_eq!(
        render_root_ca_issuer(&rs).spec.ca.unwrap().secret_name,
        "my-ca"
    );
}

#[test]
fn cache_server_with_only_ca_secret_ref_renders_without_a_ca_certificate() {
    let mut cs = cache_server();
    cs.spec.certificates = Certificates {
        issuer_ref: None,
        ca_secret_ref: local("cache-ca-in"),
    };
    assert!(render_cache_server_ca_certificate(&cs).is_none());
    assert_eq!(
        render_cache_server_issuer(&cs).spec.ca.unwrap().secret_name,
        "cache-ca-in"
    );
    let dep = render_cache_server_deployment(&compiled_cache_server(&cs));
    assert_eq!(secret_of(&dep, "client-ca"), "cache-ca-in");
}

#[test]
fn proxy_server_certificate_uses_the_cluster_domain() {
    let mut rs = root_shard();
    rs.spec.common.cluster_domain = "corp.example".into();
    let cert = render_proxy_certificate(&rs, None, ProxyLeaf::Server);
    assert_eq!(
        cert.spec.dns_names,
        [
            "root-proxy",
            "root-proxy.kcp",
            "root-proxy.kcp.svc.corp.example"
        ]
    );
}

#[test]
fn certificate_template_unions_dns_names_without_issuer_and_replaces_them_with_one() {
    let rs = root_shard();
    let server = render_root_shard_certificate(&rs, RootShardLeaf::Server);
    assert_eq!(
        server.spec.dns_names,
        [
            "api.kcp.example.com",
            "localhost",
            "root-kcp.kcp.svc.cluster.local"
        ]
    );
    let mut rs = root_shard();
    let t = rs
        .spec
        .common
        .certificate_templates
        .get_mut("server")
        .unwrap();
    t.spec.as_mut().unwrap().issuer_ref = Some(ObjectReference {
        name: "other".into(),
        ..Default::default()
    });
    let server = render_root_shard_certificate(&rs, RootShardLeaf::Server);
    assert_eq!(server.spec.dns_names, ["localhost"]);
    assert_eq!(server.spec.issuer_ref.name, "other");
}

#[test]
fn certificate_template_metadata_never_overrides_operator_labels() {
    let mut rs = root_shard();
    rs.spec.common.certificate_templates.insert(
        "client".into(),
        yaml("metadata: {labels: {app.kubernetes.io/name: other, team: a}}\nspec: {duration: 2h, privateKey: {size: 8192}, subject: {organizations: [z]}}"),
    );
    let cert = render_root_shard_certificate(&rs, RootShardLeaf::Client);
    let labels = cert.metadata.labels.unwrap();
    assert_eq!(labels["app.kubernetes.io/name"], "kcp");
    assert_eq!(labels["team"], "a");
    assert_eq!(cert.spec.duration.as_deref(), Some("2h0m0s"));
    assert_eq!(cert.spec.private_key.unwrap().size, 8192);
    assert_eq!(
        cert.spec.subject.unwrap().organizations,
        ["system:masters", "z"]
    );
}

#[test]
fn kubeconfig_certificate_carries_sorted_unique_groups_and_the_validity() {
    let mut kc = kubeconfig();
    kc.spec.groups = vec!["b".into(), "a".into(), "b".into()];
    let cert = render_kubeconfig_certificate(&kc, "root");
    assert_eq!(
        cert.spec.subject.unwrap().organizations,
        ["a", "b", "kubeconfig:admin"]
    );
    assert_eq!(cert.spec.duration.as_deref(), Some("8766h0m0s"));
    assert_eq!(cert.spec.renew_before, None);
    assert_eq!(cert.spec.issuer_ref.name, "root-client-ca");
}

// ----- kubeconfig Secrets -----------------------------------------------------------------------

#[test]
fn root_shard_kubeconfig_secrets_match_snapshot() {
    let rs = root_shard();
    let lca =
        render_root_shard_kubeconfig_secret(&rs, AdminKubeconfig::LogicalClusterAdmin).unwrap();
    let elca =
        render_root_shard_kubeconfig_secret(&rs, AdminKubeconfig::ExternalLogicalClusterAdmin)
            .unwrap();
    insta::assert_snapshot!(
        "root_shard_logical_cluster_admin_kubeconfig",
        kubeconfig_text(&lca)
    );
    insta::assert_snapshot!(
        "root_shard_external_logical_cluster_admin_kubeconfig",
        kubeconfig_text(&elca)
    );
    assert_eq!(
        lca.metadata.name.as_deref(),
        Some("root-logical-cluster-admin-kubeconfig")
    );
}

#[test]
fn shard_kubeconfig_secrets_match_snapshot() {
    let (s, rs) = (shard(), root_shard());
    let texts: Vec<String> = [
        ShardKubeconfig::Client,
        ShardKubeconfig::LogicalClusterAdmin,
        ShardKubeconfig::ExternalLogicalClusterAdmin,
    ]
    .iter()
    .map(|w| kubeconfig_text(&render_shard_kubeconfig_secret(&s, &rs, *w).unwrap()))
    .collect();
    insta::assert_snapshot!(texts.join("---\n"));
}

#[test]
fn external_admin_kubeconfig_prefers_the_private_host_and_port() {
    let mut rs = root_shard();
    rs.spec.external.private_hostname = "internal.kcp".into();
    rs.spec.external.private_port = Some(8443);
    assert_eq!(external_admin_server(&rs), "https://internal.kcp:8443");
    rs.spec.external.private_port = None;
    assert_eq!(external_admin_server(&rs), "https://internal.kcp:6443");
}

#[test]
fn cache_server_kubeconfig_secret_matches_snapshot() {
    let secret = render_cache_server_kubeconfig_secret(&cache_server()).unwrap();
    assert_eq!(secret.metadata.name.as_deref(), Some("cache-kubeconfig"));
    insta::assert_snapshot!(kubeconfig_text(&secret));
}

#[test]
fn kubeconfig_object_secret_embeds_credentials_and_targets_the_workspace() {
    let creds = EmbeddedCredentials {
        base_url: "https://api.kcp.example.com:6443".into(),
        ca: b"CA".to_vec(),
        certificate: b"CERT".to_vec(),
        key: b"KEY".to_vec(),
        front_proxy: true,
    };
    let secret = render_kubeconfig_secret(&kubeconfig(), &creds).unwrap();
    assert_eq!(secret.metadata.name.as_deref(), Some("admin-kubeconfig"));
    insta::assert_snapshot!(kubeconfig_text(&secret));
}

// ----- root shard -------------------------------------------------------------------------------

#[test]
fn root_shard_deployment_matches_snapshot() {
    insta::assert_yaml_snapshot!(render_root_shard_deployment(&compiled_root_shard(
        &root_shard()
    )));
}

#[test]
fn root_shard_service_matches_snapshot() {
    insta::assert_yaml_snapshot!(render_root_shard_service(&compiled_root_shard(
        &root_shard()
    )));
}

#[test]
fn root_shard_with_service_accounts_mounts_the_keys_of_every_shard() {
    let dep = render_root_shard_deployment(&compiled_root_shard(&root_shard()));
    let a = args(&dep);
    assert!(a.contains(
        &"--service-account-key-file=/etc/kcp/tls/root/service-account/tls.crt".to_owned()
    ));
    assert!(a.contains(
        &"--service-account-key-file=/etc/kcp/tls/alpha/service-account/tls.crt".to_owned()
    ));
    assert!(volume_names(&dep).contains(&"alpha-service-account".to_owned()));
}

#[test]
fn root_shard_etcd_prefix_is_passed_only_when_set() {
    let mut rs = root_shard();
    assert!(
        !args(&render_root_shard_deployment(&compiled_root_shard(&rs)))
            .iter()
            .any(|a| a.starts_with("--etcd-prefix"))
    );
    rs.spec.common.etcd.prefix = "/root".into();
    assert!(
        args(&render_root_shard_deployment(&compiled_root_shard(&rs)))
            .contains(&"--etcd-prefix=/root".to_owned())
    );
}

#[test]
fn root_shard_with_authentication_webhook_audit_and_authorization_matches_snapshot() {
    let mut rs = root_shard();
    rs.spec.common.auth = Some(yaml(
        "webhook: {configSecretName: authn, cacheAuthenticationTTL: 1m, version: v1}\ntokenAuthFile: {secretName: tokens}",
    ));
    rs.spec.common.audit = Some(yaml(
        "policy: {configMap: {name: audit, key: policy.yaml}}\nwebhook: {configSecretName: audit-hook, batchMaxWait: 30s, mode: batch, truncateMaxEventSize: 100}",
    ));
    rs.spec.common.authorization = Some(yaml(
        "webhook: {configSecretName: authz, allowPaths: [/healthz, /readyz], cacheAuthorizedTTL: 5m}",
    ));
    rs.spec.common.etcd.tls_config = Some(EtcdTlsConfig {
        secret_ref: LocalObjectReference {
            name: "etcd-client".into(),
        },
    });
    let dep = render_root_shard_deployment(&compiled_root_shard(&rs));
    insta::assert_yaml_snapshot!(args(&dep));
    assert_eq!(secret_of(&dep, "etcd-client-cert"), "etcd-client");
}

#[test]
fn root_shard_with_ca_secret_ref_mounts_it_as_the_root_ca() {
    let mut rs = root_shard();
    rs.spec.certificates = Certificates {
        issuer_ref: None,
        ca_secret_ref: local("my-ca"),
    };
    let dep = render_root_shard_deployment(&compiled_root_shard(&rs));
    assert_eq!(secret_of(&dep, "kcp-ca"), "my-ca");
}

#[test]
fn root_shard_bundle_refs_switch_to_the_merged_secrets() {
    let mut rs = root_shard();
    rs.spec.common.client_ca_bundle_ref = local("extra-client-ca");
    rs.spec.common.ca_bundle_secret_ref = local("extra-ca");
    let dep = render_root_shard_deployment(&compiled_root_shard(&rs));
    assert_eq!(secret_of(&dep, "client-ca"), "root-merged-client-ca");
    assert_eq!(secret_of(&dep, "ca-bundle"), "root-merged-ca-bundle");
}

#[test]
fn root_shard_with_external_virtual_workspace_disables_its_own() {
    let rs = root_shard();
    let mut crs = compiled_root_shard(&rs);
    crs.spec.root_shard.common.kcp_virtual_workspace = local("vw-root");
    crs.spec.virtual_workspace = Some(NamedVirtualWorkspaceSpec {
        name: "vw-root".into(),
        spec: virtual_workspace().spec,
    });
    let a = args(&render_root_shard_deployment(&crs));
    let expected = [
        "--run-virtual-workspaces=false".to_owned(),
        "--shard-virtual-workspace-url=https://vw-root-virtual-workspace.kcp.svc.cluster.local:6443".to_owned(),
        "--shard-virtual-workspace-ca-file=/etc/kcp/tls/ca/server/tls.crt".to_owned(),
    ];
    assert!(a.windows(3).any(|w| w == expected), "{a:?}");
    let ports = render_root_shard_service(&crs).spec.unwrap().ports.unwrap();
    assert_eq!(ports.len(), 1);
}

#[test]
fn deployment_template_merges_pod_fields_and_keeps_image_pull_secrets() {
    let mut rs = root_shard();
    rs.spec.common.image = Some(yaml("imagePullSecrets: [{name: registry}]"));
    rs.spec.common.deployment_template = Some(yaml(
        "metadata: {labels: {app.kubernetes.io/name: x, extra: y}}\nspec: {template: {metadata: {annotations: {a: b}}, spec: {nodeSelector: {disk: ssd}, imagePullSecrets: [{name: other}], tolerations: [{key: k, operator: Exists}]}}}",
    ));
    let dep = render_root_shard_deployment(&compiled_root_shard(&rs));
    let labels = dep.metadata.labels.clone().unwrap();
    assert_eq!(labels["app.kubernetes.io/name"], "kcp");
    assert_eq!(labels["extra"], "y");
    let template = &dep.spec.as_ref().unwrap().template;
    assert_eq!(
        template
            .metadata
            .as_ref()
            .unwrap()
            .annotations
            .as_ref()
            .unwrap()["a"],
        "b"
    );
    let pod = template.spec.as_ref().unwrap();
    let pulls: Vec<_> = pod
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(pulls, ["registry", "other"]);
    assert_eq!(pod.node_selector.as_ref().unwrap()["disk"], "ssd");
    assert_eq!(pod.tolerations.as_ref().unwrap().len(), 1);
}

#[test]
fn resources_are_merged_per_key_over_the_defaults() {
    let mut rs = root_shard();
    rs.spec.common.resources = Some(yaml("limits: {memory: 4Gi}"));
    let dep = render_root_shard_deployment(&compiled_root_shard(&rs));
    let r = container(&dep).resources.clone().unwrap();
    assert_eq!(r.limits.as_ref().unwrap()["memory"].0, "4Gi");
    assert_eq!(r.limits.as_ref().unwrap()["cpu"].0, "2");
    assert_eq!(r.requests.as_ref().unwrap()["cpu"].0, "1");
}

#[test]
fn oidc_ca_file_key_defaults_to_ca_crt() {
    let mut rs = root_shard();
    rs.spec.common.auth = Some(yaml(
        "oidc: {issuerURL: 'https://idp', clientID: kcp, caFileRef: {name: idp-ca}}",
    ));
    let dep = render_root_shard_deployment(&compiled_root_shard(&rs));
    assert!(args(&dep).contains(&"--oidc-ca-file=/etc/kcp/tls/oidc/ca.crt".to_owned()));
    assert_eq!(secret_of(&dep, "oidc-ca-file"), "idp-ca");
}

// ----- shard ------------------------------------------------------------------------------------

#[test]
fn shard_deployment_matches_snapshot() {
    insta::assert_yaml_snapshot!(render_shard_deployment(&compiled_shard(
        &shard(),
        &root_shard()
    )));
}

#[test]
fn shard_service_matches_snapshot() {
    insta::assert_yaml_snapshot!(render_shard_service(&compiled_shard(
        &shard(),
        &root_shard()
    )));
}

#[test]
fn shard_mounts_proxy_certificate_follows_the_version_gate() {
    for (tag, expected) in [
        ("v0.31.5", false),
        ("v0.31.6", true),
        ("v0.32.2", false),
        ("v0.32.3", true),
        ("v0.33.0", true),
        ("main", true),
    ] {
        let mut s = shard();
        s.spec.common.image = Some(ImageSpec {
            tag: tag.into(),
            ..Default::default()
        });
        let dep = render_shard_deployment(&compiled_shard(&s, &root_shard()));
        assert_eq!(
            volume_names(&dep).contains(&"mounts-proxy-cert".to_owned()),
            expected,
            "{tag}"
        );
        assert_eq!(
            args(&dep)
                .iter()
                .any(|a| a.starts_with("--mount-proxy-client-cert-file")),
            expected,
            "{tag}"
        );
    }
}

#[test]
fn shard_without_cache_uses_the_root_shard_kubeconfig_as_cache() {
    let mut rs = root_shard();
    rs.spec.cache.reference = None;
    let a = args(&render_shard_deployment(&compiled_shard(&shard(), &rs)));
    assert!(a.contains(&"--cache-kubeconfig=/etc/kcp/client-kubeconfig/kubeconfig".to_owned()));
    let mut s = shard();
    s.spec.cache = Some(ShardCacheConfig {
        reference: local("own-cache"),
    });
    let dep = render_shard_deployment(&compiled_shard(&s, &rs));
    assert!(
        args(&dep)
            .contains(&"--cache-kubeconfig=/etc/cache-server/kubeconfig/kubeconfig".to_owned())
    );
    assert_eq!(
        secret_of(&dep, "cache-server-kubeconfig"),
        "own-cache-kubeconfig"
    );
}

// ----- front-proxy ------------------------------------------------------------------------------

fn cfp() -> CompiledFrontProxy {
    compiled_front_proxy(&front_proxy(), &root_shard())
}

#[test]
fn front_proxy_deployment_matches_snapshot() {
    insta::assert_yaml_snapshot!(render_proxy_deployment(&ProxyInput::front_proxy(&cfp())));
}

#[test]
fn front_proxy_service_config_map_and_dynamic_kubeconfig_match_snapshot() {
    let c = cfp();
    let input = ProxyInput::front_proxy(&c);
    insta::assert_yaml_snapshot!("front_proxy_service", render_proxy_service(&input));
    insta::assert_yaml_snapshot!(
        "front_proxy_config_map",
        render_proxy_config_map(&input).unwrap()
    );
    let secret = render_proxy_dynamic_kubeconfig_secret(&input).unwrap();
    assert_eq!(
        secret.metadata.name.as_deref(),
        Some("root-edge-dynamic-kubeconfig")
    );
    insta::assert_snapshot!("front_proxy_dynamic_kubeconfig", kubeconfig_text(&secret));
}

#[test]
fn internal_proxy_objects_match_snapshot() {
    let crs = compiled_root_shard(&root_shard());
    let input = ProxyInput::internal(&crs);
    insta::assert_yaml_snapshot!("internal_proxy_deployment", render_proxy_deployment(&input));
    insta::assert_yaml_snapshot!("internal_proxy_service", render_proxy_service(&input));
    insta::assert_yaml_snapshot!(
        "internal_proxy_config_map",
        render_proxy_config_map(&input).unwrap()
    );
}

/// The group flags of the front-proxy, for `auth` given as YAML.
fn group_flags(auth: &str) -> Vec<String> {
    let mut c = cfp();
    c.spec.front_proxy.auth = Some(yaml(auth));
    args(&render_proxy_deployment(&ProxyInput::front_proxy(&c)))
        .into_iter()
        .filter(|a| a.starts_with("--authentication-"))
        .collect()
}

/// Expected values from upstream's own table, `TestGetArgs` in
/// `internal/resources/compiledfrontproxy/deployment_test.go` (kcp-operator 406169b): the
/// cases "with drop groups", "with pass on groups" and "with both drop and pass on groups".
#[test]
fn group_flags_are_quoted_as_upstream_quotes_them() {
    assert_eq!(
        group_flags("dropGroups: [group1, group2]"),
        [r#"--authentication-drop-groups="group1,group2""#]
    );
    assert_eq!(
        group_flags("passOnGroups: [group3, group4]"),
        [r#"--authentication-pass-on-groups="group3,group4""#]
    );
    assert_eq!(
        group_flags("dropGroups: [group1]\npassOnGroups: [group2]"),
        [
            r#"--authentication-drop-groups="group1""#,
            r#"--authentication-pass-on-groups="group2""#
        ]
    );
}

/// Upstream emits the flag whenever the list is set (`auth.DropGroups != nil`), empty or not.
#[test]
fn an_explicitly_empty_group_list_is_passed_on() {
    assert_eq!(
        group_flags("dropGroups: []"),
        [r#"--authentication-drop-groups="""#]
    );
    assert!(group_flags("serviceAccount: {enabled: true}").is_empty());
}

#[test]
fn internal_proxy_inherits_the_root_shard_image() {
    let mut rs = root_shard();
    rs.spec.common.image = Some(ImageSpec {
        repository: "mirror/kcp".into(),
        tag: "v0.32.9".into(),
        ..Default::default()
    });
    let crs = compiled_root_shard(&rs);
    let dep = render_proxy_deployment(&ProxyInput::internal(&crs));
    assert_eq!(container(&dep).image.as_deref(), Some("mirror/kcp:v0.32.9"));
}

#[test]
fn front_proxy_requestheader_flags_follow_the_version_gate() {
    for (tag, expected) in [("v0.31.5", false), ("v0.32.3", true)] {
        let mut c = cfp();
        c.spec.front_proxy.image = Some(ImageSpec {
            tag: tag.into(),
            ..Default::default()
        });
        let dep = render_proxy_deployment(&ProxyInput::front_proxy(&c));
        assert_eq!(
            args(&dep)
                .iter()
                .any(|a| a.starts_with("--requestheader-client-ca-file")),
            expected,
            "{tag}"
        );
        assert_eq!(
            volume_names(&dep).contains(&"root-requestheader-client-ca".to_owned()),
            expected,
            "{tag}"
        );
    }
}

#[test]
fn front_proxy_with_oidc_service_accounts_and_pull_secrets() {
    let mut c = cfp();
    c.spec.front_proxy.auth = Some(yaml(
        "oidc: {issuerURL: 'https://idp', clientID: kcp, usernamePrefix: 'oidc:'}\nserviceAccount: {enabled: true}",
    ));
    c.spec.front_proxy.image = Some(yaml("imagePullSecrets: [{name: pull}]"));
    c.spec.front_proxy.replicas = Some(3);
    let dep = render_proxy_deployment(&ProxyInput::front_proxy(&c));
    let a = args(&dep);
    assert!(a.contains(&"--oidc-issuer-url=https://idp".to_owned()));
    assert!(a.contains(&"--oidc-username-prefix=oidc:".to_owned()));
    assert!(a.contains(
        &"--service-account-key-file=/etc/kcp/tls/alpha/service-account/tls.crt".to_owned()
    ));
    let spec = dep.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(
        spec.template.spec.unwrap().image_pull_secrets.unwrap()[0].name,
        "pull"
    );
}

#[test]
fn path_mapping_uses_the_ca_bundle_when_configured() {
    let mut c = cfp();
    assert_eq!(
        path_mappings(&ProxyInput::front_proxy(&c))[0].backend_server_ca,
        "/etc/kcp/tls/ca/tls.crt"
    );
    c.spec.front_proxy.ca_bundle_secret_ref = local("bundle");
    let input = ProxyInput::front_proxy(&c);
    assert_eq!(
        path_mappings(&input)[1].backend_server_ca,
        "/etc/kcp/tls/ca/ca-bundle/tls.crt"
    );
    assert!(
        volume_names(&render_proxy_deployment(&input))
            .contains(&"edge-merged-ca-bundle".to_owned())
    );
}

#[test]
fn front_proxy_service_port_resolution() {
    let cases: [(Option<u32>, &str, u32, i32); 5] = [
        (Some(7443), "", 6443, 7443),
        (None, "proxy.example.com:9443", 6443, 9443),
        (None, "proxy.example.com", 6443, 6443),
        (None, "", 8443, 8443),
        (None, "", 0, 6443),
    ];
    for (fp_port, hostname, rs_port, expected) in cases {
        let mut c = cfp();
        c.spec.front_proxy.external = fp_port.map(|port| ExternalConfig {
            hostname: "x".into(),
            port,
            ..Default::default()
        });
        c.spec.front_proxy.external_hostname = hostname.into();
        c.spec.root_shard.spec.external.port = rs_port;
        assert_eq!(
            proxy_service_port(&ProxyInput::front_proxy(&c)),
            expected,
            "{fp_port:?} {hostname} {rs_port}"
        );
    }
    let crs = compiled_root_shard(&root_shard());
    assert_eq!(proxy_service_port(&ProxyInput::internal(&crs)), 6443);
}

// ----- cache server -----------------------------------------------------------------------------

#[test]
fn cache_server_deployment_and_service_match_snapshot() {
    let ccs = compiled_cache_server(&cache_server());
    insta::assert_yaml_snapshot!(
        "cache_server_deployment",
        render_cache_server_deployment(&ccs)
    );
    insta::assert_yaml_snapshot!("cache_server_service", render_cache_server_service(&ccs));
}

#[test]
fn cache_server_with_embedded_etcd_runs_one_replica_with_scratch_space() {
    let mut cs = cache_server();
    cs.spec.etcd = None;
    cs.spec.replicas = None;
    let ccs = compiled_cache_server(&cs);
    let dep = render_cache_server_deployment(&ccs);
    assert_eq!(dep.spec.as_ref().unwrap().replicas, Some(1));
    assert!(args(&dep).contains(&"--embedded-etcd-directory=/var/etcd".to_owned()));
    assert!(volume_names(&dep).contains(&"etcd-scratch".to_owned()));
    assert_eq!(cache_server_replicas(&ccs, Some(3)), 1);
}

#[test]
fn cache_server_etcd_prefix_is_wired() {
    let mut cs = cache_server();
    cs.spec.etcd.as_mut().unwrap().prefix = "/cache".into();
    let a = args(&render_cache_server_deployment(&compiled_cache_server(&cs)));
    assert!(a.contains(&"--etcd-prefix=/cache".to_owned()));
}

#[test]
fn cache_server_resources_are_configurable() {
    let mut cs = cache_server();
    cs.spec.resources = Some(yaml("requests: {cpu: 250m}"));
    let dep = render_cache_server_deployment(&compiled_cache_server(&cs));
    let r = container(&dep).resources.clone().unwrap();
    assert_eq!(r.requests.unwrap()["cpu"].0, "250m");
}

// ----- virtual workspace ------------------------------------------------------------------------

#[test]
fn virtual_workspace_deployment_and_service_match_snapshot() {
    let cvw = compiled_virtual_workspace(&virtual_workspace(), &root_shard());
    insta::assert_yaml_snapshot!(
        "virtual_workspace_deployment",
        render_virtual_workspace_deployment(&cvw)
    );
    insta::assert_yaml_snapshot!(
        "virtual_workspace_service",
        render_virtual_workspace_service(&cvw)
    );
}

#[test]
fn virtual_workspace_of_kcp_has_probes_and_a_custom_one_does_not() {
    let cvw = compiled_virtual_workspace(&virtual_workspace(), &root_shard());
    assert!(
        container(&render_virtual_workspace_deployment(&cvw))
            .readiness_probe
            .is_some()
    );
    let mut vw = virtual_workspace();
    vw.spec.command = vec!["/mock".into()];
    let dep = render_virtual_workspace_deployment(&compiled_virtual_workspace(&vw, &root_shard()));
    assert!(container(&dep).readiness_probe.is_none());
    assert_eq!(container(&dep).command.clone().unwrap(), ["/mock"]);
}

#[test]
fn virtual_workspace_init_containers_select_their_own_kubeconfig_and_volumes_are_deduplicated() {
    let mut vw = virtual_workspace();
    vw.spec.kubeconfig_secret_ref = local("vw-identity");
    vw.spec.extra_volumes = vec![yaml("{name: shared, emptyDir: {}}")];
    vw.spec.init_containers = vec![yaml(
        "{name: bootstrap, image: {repository: example/boot, tag: v1, imagePullSecrets: [{name: boot-pull}]}, kubeconfigSecretRef: {name: admin-kubeconfig}, volumes: [{name: shared, configMap: {name: ignored}}]}",
    )];
    let dep = render_virtual_workspace_deployment(&compiled_virtual_workspace(&vw, &root_shard()));
    let names = volume_names(&dep);
    assert_eq!(names.iter().filter(|n| *n == "shared").count(), 1);
    assert_eq!(secret_of(&dep, "server-kubeconfig"), "vw-identity");
    assert_eq!(
        secret_of(&dep, "init-bootstrap-kubeconfig"),
        "admin-kubeconfig"
    );
    assert!(args(&dep).contains(&"--kubeconfig=/etc/kcp/server-kubeconfig/kubeconfig".to_owned()));
    let pod = dep.spec.unwrap().template.spec.unwrap();
    let init = &pod.init_containers.unwrap()[0];
    assert_eq!(init.image.as_deref(), Some("example/boot:v1"));
    assert!(
        init.volume_mounts
            .iter()
            .flatten()
            .any(|m| m.mount_path == "/etc/kcp/init-kubeconfig")
    );
    assert!(
        pod.image_pull_secrets
            .unwrap()
            .iter()
            .any(|s| s.name == "boot-pull")
    );
}

// ----- revisions --------------------------------------------------------------------------------

#[test]
fn revision_labels_name_every_mounted_object_and_report_missing_ones() {
    let c = cfp();
    let mut dep = render_proxy_deployment(&ProxyInput::front_proxy(&c));
    let missing = apply_revision_labels(&mut dep, |kind, name| {
        (name != "edge-merged-client-ca").then(|| format!("{kind:?}-{name}"))
    });
    assert_eq!(
        missing,
        [(MountKind::Secret, "edge-merged-client-ca".to_owned())]
    );
    let labels = dep.spec.unwrap().template.metadata.unwrap().labels.unwrap();
    assert_eq!(
        labels[&revision_label(MountKind::ConfigMap, "edge-config")],
        "ConfigMap-edge-config"
    );
    assert!(revision_label(MountKind::Secret, "x").starts_with("operator.kcp.io/secret-"));
    assert_eq!(
        revision_label(MountKind::Secret, "x").len(),
        "operator.kcp.io/secret-".len() + 20 + 4
    );
}

#[test]
fn image_version_parse_is_lenient_like_masterminds() {
    assert_eq!(
        d::parse_version("v0.32"),
        Some(semver::Version::new(0, 32, 0))
    );
    assert_eq!(d::parse_version("main"), None);
    assert!(d::supports_mount_proxy(None));
}

// ----- an external endpoint on 443 served by an Ingress or Gateway (upstream #124) ----------

/// The example installation with clients on `api.kcp.example.com:443` (an Ingress or Gateway)
/// in front of a front-proxy Service that keeps port 6443.
fn behind_ingress() -> (RootShard, Shard, FrontProxy) {
    let external = ExternalConfig {
        hostname: "api.kcp.example.com".into(),
        port: 443,
        service_port: Some(6443),
        ..ExternalConfig::default()
    };
    let mut rs = root_shard();
    rs.spec.external = external.clone();
    let mut fp = front_proxy();
    fp.spec.external = Some(external);
    (rs, shard(), fp)
}

#[test]
fn behind_an_ingress_the_front_proxy_service_keeps_its_service_port() {
    let (rs, _, fp) = behind_ingress();
    let cfp = compiled_front_proxy(&fp, &rs);
    let input = ProxyInput::front_proxy(&cfp);
    assert_eq!(proxy_service_port(&input), 6443);
    insta::assert_yaml_snapshot!(render_proxy_service(&input));
}

#[test]
fn without_a_service_port_the_front_proxy_service_listens_on_the_external_port() {
    let (rs, _, mut fp) = behind_ingress();
    fp.spec.external.as_mut().unwrap().service_port = None;
    let cfp = compiled_front_proxy(&fp, &rs);
    assert_eq!(proxy_service_port(&ProxyInput::front_proxy(&cfp)), 443);
}

#[test]
fn a_front_proxy_without_its_own_external_uses_the_root_shard_service_port() {
    let (rs, _, mut fp) = behind_ingress();
    fp.spec.external = None;
    let cfp = compiled_front_proxy(&fp, &rs);
    assert_eq!(proxy_service_port(&ProxyInput::front_proxy(&cfp)), 6443);
}

#[test]
fn behind_an_ingress_shards_advertise_the_external_port() {
    let (rs, s, _) = behind_ingress();
    let shard_args = args(&render_shard_deployment(&compiled_shard(&s, &rs)));
    let root_args = args(&render_root_shard_deployment(&compiled_root_shard(&rs)));
    assert!(shard_args.contains(&"--external-hostname=api.kcp.example.com:443".to_owned()));
    for a in [&shard_args, &root_args] {
        assert!(a.contains(&"--shard-external-url=https://api.kcp.example.com:443".to_owned()));
    }
    insta::assert_yaml_snapshot!(shard_args);
}

#[test]
fn on_the_default_port_the_external_hostname_flag_stays_as_upstream() {
    let shard_args = args(&render_shard_deployment(&compiled_shard(
        &shard(),
        &root_shard(),
    )));
    assert!(shard_args.contains(&"--external-hostname=api.kcp.example.com".to_owned()));
}

#[test]
fn behind_an_ingress_kubeconfigs_name_the_external_port() {
    let (rs, s, fp) = behind_ingress();
    assert_eq!(
        crate::reconcile::kubeconfig::front_proxy_url(&fp.spec, &rs.spec),
        "https://api.kcp.example.com:443"
    );
    assert_eq!(
        external_admin_server(&rs),
        "https://api.kcp.example.com:443"
    );
    let secret =
        render_shard_kubeconfig_secret(&s, &rs, ShardKubeconfig::ExternalLogicalClusterAdmin)
            .unwrap();
    insta::assert_snapshot!(kubeconfig_text(&secret));
}

#[test]
fn behind_an_ingress_the_front_proxy_certificate_names_the_external_host() {
    let (rs, _, fp) = behind_ingress();
    let cert = render_proxy_certificate(&rs, Some(&fp), ProxyLeaf::Server);
    insta::assert_yaml_snapshot!(cert);
}

#[test]
fn a_port_in_the_deprecated_external_hostname_stays_out_of_the_certificate_sans() {
    let rs = root_shard();
    let mut fp = front_proxy();
    fp.spec.external = None;
    fp.spec.external_hostname = "proxy.example.com:443".into();
    let cert = render_proxy_certificate(&rs, Some(&fp), ProxyLeaf::Server);
    let dns = serde_json::to_value(&cert).unwrap()["spec"]["dnsNames"].clone();
    let dns: Vec<String> = serde_json::from_value(dns).unwrap();
    assert!(dns.contains(&"proxy.example.com".to_owned()), "{dns:?}");
    assert!(!dns.iter().any(|d| d.contains(':')), "{dns:?}");
}
