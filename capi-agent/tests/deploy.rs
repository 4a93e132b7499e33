//! The checked-in deployment assets are the generated ones, follow clusterctl's rules, and
//! apply to a cluster. `CAPI_AGENT_WRITE_DEPLOY=1 cargo test -p capi-agent --test deploy`
//! rewrites them (as `capi-provider-agent crds` / `components` print them).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::path::PathBuf;

use capi_agent::deploy;
use kcp_core::parse_manifests;
use support::*;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/capi-provider-agent")
}

fn generated() -> Vec<(&'static str, String)> {
    vec![
        ("kustomization.yaml", deploy::KUSTOMIZATION_YAML.to_owned()),
        ("namespace.yaml", deploy::namespace_yaml().unwrap()),
        ("crds.yaml", capi_agent::api::crds_yaml().unwrap()),
        ("rbac.yaml", deploy::rbac_yaml().unwrap()),
        ("deployment.yaml", deploy::deployment_yaml().unwrap()),
        (
            "infrastructure-components.yaml",
            deploy::components_yaml().unwrap(),
        ),
        ("metadata.yaml", deploy::METADATA_YAML.to_owned()),
    ]
}

#[test]
fn the_checked_in_assets_are_the_generated_ones() {
    for (file, text) in generated() {
        let path = dir().join(file);
        if std::env::var_os("CAPI_AGENT_WRITE_DEPLOY").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == text,
            "{file} is stale: run CAPI_AGENT_WRITE_DEPLOY=1 cargo test -p capi-agent --test deploy"
        );
    }
}

/// clusterctl's envsubst for `${VAR:=default}` with nothing set: the default.
fn envsubst_defaults(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').map(|e| start + e).unwrap();
        let var = &rest[start + 2..end];
        out.push_str(var.split_once(":=").map_or("", |(_, default)| default));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn components_have_one_namespace_the_provider_label_and_a_manager_container() {
    let objects = parse_manifests(
        "components",
        &envsubst_defaults(&deploy::components_yaml().unwrap()),
    )
    .unwrap();
    let namespaces = objects
        .iter()
        .filter(|o| o.types.as_ref().unwrap().kind == "Namespace")
        .count();
    assert_eq!(namespaces, 1);
    for o in &objects {
        let labels = o.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("cluster.x-k8s.io/provider").map(String::as_str),
            Some("infrastructure-agent"),
            "{:?}",
            o.metadata.name
        );
    }
    let text = deploy::components_yaml().unwrap();
    assert!(
        text.contains("--namespace=${WATCH_NAMESPACE:=}")
            && text.contains("--agent-namespace=${AGENTS_NAMESPACE:=}")
    );
    let deployment = objects
        .iter()
        .find(|o| o.types.as_ref().unwrap().kind == "Deployment")
        .unwrap();
    assert_eq!(
        deployment.data["spec"]["template"]["spec"]["containers"][0]["name"],
        "manager"
    );
}

#[test]
fn the_aggregated_role_lets_capi_core_manage_the_provider_kinds() {
    let role = deploy::aggregated_role();
    assert_eq!(
        role.metadata.labels.unwrap()["cluster.x-k8s.io/aggregate-to-manager"],
        "true"
    );
    let rules = role.rules.unwrap();
    assert!(
        rules[0]
            .resources
            .as_ref()
            .unwrap()
            .contains(&"agentmachines".to_owned())
    );
}

#[test]
fn the_manager_may_patch_machines_but_not_update_them() {
    let rules = deploy::manager_role().rules.unwrap();
    let machines = rules
        .iter()
        .find(|r| {
            r.resources
                .as_ref()
                .unwrap()
                .contains(&"machines".to_owned())
        })
        .unwrap();
    // The pre-terminate hook annotation is a merge patch; nothing replaces a Machine.
    assert!(
        machines.verbs.contains(&"patch".to_owned())
            && !machines.verbs.contains(&"update".to_owned())
    );
}

#[tokio::test]
async fn the_components_apply_to_a_cluster() {
    let sim = kcp_sim::Server::start(kcp_sim::Config::default())
        .await
        .unwrap();
    let client = sim.object_client("");
    let objects = parse_manifests(
        "components",
        &envsubst_defaults(&deploy::components_yaml().unwrap()),
    )
    .unwrap();
    apply(&client, objects).await;
}

#[test]
fn the_kustomize_deployment_has_no_clusterctl_variables() {
    assert!(!deploy::deployment_yaml().unwrap().contains("${"));
}
