//! AgentMachine behaviour (spec 1.6, the AgentMachine unit behaviours of 1.8, the quirks of 1.9
//! with the corrected behaviour, and the deletion state machine of section 5) against kcp-sim.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use capi_agent::api::{
    AGENT_MACHINE_FINALIZER, MachineAddressType, PRE_TERMINATE_HOOK, UNBIND_STARTED_ANNOTATION,
};
use capi_agent::cluster::reconcile_agent_cluster;
use capi_agent::context::{Context, ProviderConfig};
use capi_agent::machine::reconcile_agent_machine;
use k8s_openapi::api::core::v1::Secret;
use kcp_core::runtime::Outcome;
use kcp_core::typed::from_dynamic;
use kcp_core::{ObjectClient, ObjectClientExt, Subresource};
use serde_json::json;
use support::*;

/// A hosted cluster with its ClusterDeployment, and Machine/AgentMachine `m1`.
async fn world_with_machine() -> (World, Context) {
    let world = World::start().await;
    world.hosted_cluster().await;
    let ctx = world.context();
    reconcile_agent_cluster(&ctx, NS, "hc").await.unwrap();
    world.machine("m1", None).await;
    (world, ctx)
}

async fn reconcile(ctx: &Context, name: &str) -> Outcome {
    reconcile_agent_machine(ctx, NS, name).await.unwrap()
}

fn has_hook(machine: &kcp_core::kube::api::DynamicObject) -> bool {
    machine
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(PRE_TERMINATE_HOOK))
}

#[tokio::test]
async fn a_missing_agent_machine_is_a_no_op() {
    let (_world, ctx) = world_with_machine().await;
    assert_eq!(reconcile(&ctx, "nope").await, Outcome::Done);
}

#[tokio::test]
async fn the_finalizer_and_the_machine_hook_are_added() {
    let (world, ctx) = world_with_machine().await;
    reconcile(&ctx, "m1").await;
    let am = world.agent_machine("m1").await;
    assert_eq!(
        am.metadata.finalizers,
        Some(vec![AGENT_MACHINE_FINALIZER.to_owned()])
    );
    let machine = world.get(&machine_ref("m1")).await.unwrap();
    assert_eq!(
        machine.metadata.annotations.unwrap()[PRE_TERMINATE_HOOK],
        ""
    );
}

#[tokio::test]
async fn a_v1beta1_machine_owner_is_followed_too() {
    let world = World::start().await;
    world.hosted_cluster().await;
    let ctx = world.context();
    let machine = world.create(json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
        "metadata": {"name": "old", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "hc"}},
        "spec": {"clusterName": "hc", "bootstrap": {}}})).await;
    world.create(json!({"apiVersion": "capi-provider.agent-install.openshift.io/v1beta1", "kind": "AgentMachine",
        "metadata": {"name": "old", "namespace": NS, "ownerReferences": [owner(&machine)]}, "spec": {}})).await;
    reconcile(&ctx, "old").await;
    let machine_v1beta1 =
        kcp_core::ObjectRef::namespaced(gvk("cluster.x-k8s.io", "v1beta1", "Machine"), NS, "old");
    assert!(has_hook(&world.get(&machine_v1beta1).await.unwrap()));
    let am = world.agent_machine("old").await;
    assert_eq!(
        am.metadata.finalizers,
        Some(vec![AGENT_MACHINE_FINALIZER.to_owned()])
    );
}

#[tokio::test]
async fn without_agents_the_machine_waits_with_no_suitable_agents() {
    let (world, ctx) = world_with_machine().await;
    reconcile(&ctx, "m1").await;
    let am = world.agent_machine("m1").await;
    assert_eq!(
        condition(&am, "AgentReserved"),
        Some(("False".into(), "NoSuitableAgents".into()))
    );
    for type_ in [
        "AgentSpecSynced",
        "AgentValidated",
        "AgentRequirementsMet",
        "Installed",
    ] {
        assert_eq!(
            condition(&am, type_),
            Some(("False".into(), "AgentNotYetFound".into())),
            "{type_}"
        );
    }
    assert_eq!(condition(&am, "Ready").map(|c| c.0), Some("False".into()));
    assert!(!am.status.unwrap().ready);
}

#[tokio::test]
async fn selection_binds_the_matching_agent_with_every_binding_key() {
    let world = World::start().await;
    world.hosted_cluster().await;
    let ctx = world.context();
    reconcile_agent_cluster(&ctx, NS, "hc").await.unwrap();
    world
        .machine("m1", Some(json!({"matchLabels": {"pool": "a"}})))
        .await;
    world.agent("wrong-pool", json!({"pool": "b"})).await;
    world.agent("good", json!({"pool": "a"})).await;
    reconcile(&ctx, "m1").await;
    let agent = world.typed_agent("good").await;
    assert_eq!(agent.label("agentMachineRef"), Some("m1"));
    assert_eq!(agent.annotation("agentMachineRefNamespace"), Some(NS));
    let cd = agent.spec.cluster_deployment_name.clone().unwrap();
    assert_eq!((cd.namespace.as_str(), cd.name.as_str()), (NS, "hc"));
    assert_eq!(agent.spec.machine_config_pool, "ignition");
    assert_eq!(
        agent
            .spec
            .ignition_endpoint_token_reference
            .clone()
            .unwrap()
            .name,
        "agent-user-data"
    );
    assert_eq!(
        agent.spec.ignition_endpoint_http_headers["NodePool"],
        "clusters/pool"
    );
    assert_eq!(
        world
            .typed_agent("wrong-pool")
            .await
            .label("agentMachineRef"),
        None
    );
}

#[tokio::test]
async fn a_bound_machine_has_provider_id_agent_ref_and_addresses() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    let am = world.agent_machine("m1").await;
    assert_eq!(am.spec.provider_id.as_deref(), Some("agent://host-1"));
    let status = am.status.clone().unwrap();
    assert_eq!(status.agent_ref.unwrap().name, "host-1");
    let addresses: Vec<_> = status
        .addresses
        .iter()
        .map(|a| (a.type_, a.address.as_str()))
        .collect();
    assert_eq!(
        addresses,
        [
            (MachineAddressType::ExternalIp, "192.168.1.10"),
            (MachineAddressType::InternalDns, "host-1.local")
        ]
    );
    assert_eq!(
        condition(&am, "AgentReserved"),
        Some(("True".into(), "AgentReserved".into()))
    );
}

#[tokio::test]
async fn the_token_secret_holds_the_bearer_token_and_is_owned_by_the_bootstrap_data_secret() {
    let (world, ctx) = world_with_machine().await;
    reconcile(&ctx, "m1").await;
    let secret: Secret = world
        .client
        .get_typed(Some(NS), "agent-user-data")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(secret.data.unwrap()["ignition-token"].0, b"s3cr3t");
    let labels = secret.metadata.labels.unwrap();
    assert_eq!(
        (
            labels["agent-install.openshift.io/watch"].as_str(),
            labels["cluster.open-cluster-management.io/backup"].as_str()
        ),
        ("true", "true")
    );
    let owner = secret.metadata.owner_references.unwrap()[0].clone();
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Secret", "user-data")
    );
}

#[tokio::test]
async fn a_rotated_token_updates_the_token_secret_even_when_ready() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    world
        .patch(
            &agent_ref("host-1"),
            Subresource::Status,
            json!({"status": {"conditions": [
        {"type": "Validated", "status": "True"}, {"type": "Connected", "status": "True"},
        {"type": "Bound", "status": "True"}, {"type": "SpecSynced", "status": "True"},
        {"type": "RequirementsMet", "status": "True"}, {"type": "Installed", "status": "True"}]}}),
        )
        .await;
    reconcile(&ctx, "m1").await;
    assert!(world.agent_machine("m1").await.status.unwrap().ready);
    let rotated = USER_DATA.replace("s3cr3t", "n3w");
    world
        .patch(
            &secret_ref("user-data"),
            Subresource::Main,
            json!({"data": {"value": base64(&rotated)}}),
        )
        .await;
    reconcile(&ctx, "m1").await;
    let secret: Secret = world
        .client
        .get_typed(Some(NS), "agent-user-data")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(secret.data.unwrap()["ignition-token"].0, b"n3w");
}

#[tokio::test]
async fn ready_follows_the_agent_conditions_with_both_contract_fields() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    assert!(!world.agent_machine("m1").await.status.unwrap().ready);
    world
        .patch(
            &agent_ref("host-1"),
            Subresource::Status,
            json!({"status": {"conditions": [
        {"type": "Validated", "status": "True"}, {"type": "Connected", "status": "True"},
        {"type": "Bound", "status": "True"}, {"type": "SpecSynced", "status": "True"},
        {"type": "RequirementsMet", "status": "True"}, {"type": "Installed", "status": "True"}]}}),
        )
        .await;
    reconcile(&ctx, "m1").await;
    let am = world.agent_machine("m1").await;
    let status = am.status.clone().unwrap();
    assert!(status.ready);
    assert_eq!(status.initialization.unwrap().provisioned, Some(true));
    assert_eq!(
        condition(&am, "Ready"),
        Some(("True".into(), "Ready".into()))
    );
}

#[tokio::test]
async fn once_provisioned_a_machine_stays_ready_when_its_agent_conditions_change() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    let conditions = |installed: &str| {
        json!({"status": {"conditions": [
        {"type": "Validated", "status": "True"}, {"type": "Connected", "status": "True"},
        {"type": "Bound", "status": "True"}, {"type": "SpecSynced", "status": "True"},
        {"type": "RequirementsMet", "status": "True"}, {"type": "Installed", "status": installed}]}})
    };
    let agent = agent_ref("host-1");
    world
        .patch(&agent, Subresource::Status, conditions("True"))
        .await;
    reconcile(&ctx, "m1").await;
    assert!(world.agent_machine("m1").await.status.unwrap().ready);
    world
        .patch(&agent, Subresource::Status, conditions("False"))
        .await;
    reconcile(&ctx, "m1").await;
    let status = world.agent_machine("m1").await.status.unwrap();
    assert!(status.ready);
    assert_eq!(status.initialization.unwrap().provisioned, Some(true));
}

#[tokio::test]
async fn the_agents_token_reference_follows_a_new_data_secret() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    world.create(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "user-data-2", "namespace": NS},
        "data": {"value": base64(USER_DATA)}})).await;
    world
        .patch(
            &machine_ref("m1"),
            Subresource::Main,
            json!({"spec": {"bootstrap": {"dataSecretName": "user-data-2"}}}),
        )
        .await;
    reconcile(&ctx, "m1").await;
    let agent = world.typed_agent("host-1").await;
    assert_eq!(
        agent.spec.ignition_endpoint_token_reference.unwrap().name,
        "agent-user-data-2"
    );
}

#[tokio::test]
async fn binding_waits_for_the_bootstrap_data_secret_name() {
    // Upstream quirk: it binds without a token when dataSecretName is missing.
    let (world, ctx) = world_with_machine().await;
    world
        .patch(
            &machine_ref("m1"),
            Subresource::Main,
            json!({"spec": {"bootstrap": {"dataSecretName": null}}}),
        )
        .await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    assert_eq!(
        world.typed_agent("host-1").await.label("agentMachineRef"),
        None
    );
    let am = world.agent_machine("m1").await;
    assert_eq!(
        condition(&am, "BootstrapDataReady"),
        Some(("False".into(), "WaitingForBootstrapData".into()))
    );
}

#[tokio::test]
async fn invalid_bootstrap_data_is_a_condition_and_a_permanent_error() {
    let (world, ctx) = world_with_machine().await;
    world
        .patch(
            &secret_ref("user-data"),
            Subresource::Main,
            json!({"data": {"value": base64("#cloud-config")}}),
        )
        .await;
    world.agent("host-1", json!({})).await;
    let err = reconcile_agent_machine(&ctx, NS, "m1").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("Secret clusters-hc/user-data: field data.value"),
        "{err}"
    );
    let am = world.agent_machine("m1").await;
    assert_eq!(
        condition(&am, "BootstrapDataReady"),
        Some(("False".into(), "BootstrapDataInvalid".into()))
    );
    assert_eq!(
        world.typed_agent("host-1").await.label("agentMachineRef"),
        None
    );
}

#[tokio::test]
async fn a_crash_after_the_claim_is_recovered_through_the_label() {
    let (world, ctx) = world_with_machine().await;
    world
        .agent("host-1", json!({"agentMachineRef": "m1"}))
        .await;
    world
        .patch(
            &agent_ref("host-1"),
            Subresource::Main,
            json!({"metadata": {"annotations": {"agentMachineRefNamespace": NS}}}),
        )
        .await;
    world.agent("host-2", json!({})).await;
    reconcile(&ctx, "m1").await;
    assert_eq!(
        world
            .agent_machine("m1")
            .await
            .status
            .unwrap()
            .agent_ref
            .unwrap()
            .name,
        "host-1"
    );
    assert_eq!(
        world.typed_agent("host-2").await.label("agentMachineRef"),
        None
    );
}

#[tokio::test]
async fn recovery_ignores_an_agent_of_a_same_named_machine_in_another_namespace() {
    // Upstream quirk: the name-only label lets same-named AgentMachines adopt each other's Agent.
    let (world, ctx) = world_with_machine().await;
    world
        .agent("theirs", json!({"agentMachineRef": "m1"}))
        .await;
    world
        .patch(
            &agent_ref("theirs"),
            Subresource::Main,
            json!({"metadata": {"annotations": {"agentMachineRefNamespace": "other-ns"}}}),
        )
        .await;
    world.agent("free", json!({})).await;
    reconcile(&ctx, "m1").await;
    assert_eq!(
        world
            .agent_machine("m1")
            .await
            .status
            .unwrap()
            .agent_ref
            .unwrap()
            .name,
        "free"
    );
}

#[tokio::test]
async fn hook_wait_unbinds_the_agent_back_to_its_pre_bind_state_and_requeues_five_seconds() {
    let (world, ctx) = world_with_machine().await;
    let before = world.get(&agent_ref("host-1")).await;
    assert!(before.is_none());
    let before = world.agent("host-1", json!({"rack": "r1"})).await;
    reconcile(&ctx, "m1").await;
    world.delete_machine_at_hook("m1").await;
    let outcome = reconcile(&ctx, "m1").await;
    assert_eq!(outcome, Outcome::RequeueAfter(Duration::from_secs(5)));
    let after = world.get(&agent_ref("host-1")).await.unwrap();
    let strip = |o: &kcp_core::kube::api::DynamicObject| {
        let mut v = serde_json::to_value(o).unwrap();
        let meta = v["metadata"].as_object_mut().unwrap();
        for k in ["resourceVersion", "managedFields", "generation"] {
            meta.remove(k);
        }
        meta.retain(|_, v| v != &json!({}));
        v
    };
    assert_eq!(strip(&after), strip(&before));
}

async fn released(world: &World) -> bool {
    let machine = world.get(&machine_ref("m1")).await.unwrap();
    let am = world.agent_machine("m1").await;
    !has_hook(&machine) && am.metadata.finalizers.unwrap_or_default().is_empty()
}

#[tokio::test]
async fn an_agent_back_in_discovery_releases_hook_and_finalizer() {
    for state in ["discovering-unbound", "unbinding-pending-user-action"] {
        let (world, ctx) = world_with_machine().await;
        world.agent("host-1", json!({})).await;
        reconcile(&ctx, "m1").await;
        world.delete_machine_at_hook("m1").await;
        reconcile(&ctx, "m1").await;
        assert!(!released(&world).await);
        world
            .patch(
                &agent_ref("host-1"),
                Subresource::Status,
                json!({"status": {"debugInfo": {"state": state}}}),
            )
            .await;
        assert_eq!(reconcile(&ctx, "m1").await, Outcome::Done);
        assert!(released(&world).await, "{state}");
    }
}

#[tokio::test]
async fn without_an_agent_the_hook_and_finalizer_are_released_at_once() {
    let (world, ctx) = world_with_machine().await;
    reconcile(&ctx, "m1").await;
    world.delete_machine_at_hook("m1").await;
    reconcile(&ctx, "m1").await;
    assert!(released(&world).await);
}

#[tokio::test]
async fn a_deleted_agent_releases_the_hook_and_finalizer() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    world
        .client
        .delete(&agent_ref("host-1"), &Default::default())
        .await
        .unwrap();
    world.delete_machine_at_hook("m1").await;
    reconcile(&ctx, "m1").await;
    assert!(released(&world).await);
}

#[tokio::test]
async fn the_legacy_hook_condition_in_the_deprecated_section_is_honoured() {
    // Upstream quirk: it reads the v1beta1 condition from status.conditions only.
    let (world, ctx) = world_with_machine().await;
    reconcile(&ctx, "m1").await;
    world
        .client
        .delete(&machine_ref("m1"), &Default::default())
        .await
        .unwrap();
    world.patch(&machine_ref("m1"), Subresource::Status, json!({"status": {"deprecated": {"v1beta1": {"conditions": [
        {"type": "PreTerminateDeleteHookSucceeded", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}}})).await;
    reconcile(&ctx, "m1").await;
    assert!(released(&world).await);
}

/// Deletes AgentMachine `m1` (held by its finalizer), then its Machine for good.
async fn delete_agent_machine_after_its_machine(world: &World) {
    world
        .client
        .delete(&agent_machine_ref("m1"), &Default::default())
        .await
        .unwrap();
    world
        .patch(
            &machine_ref("m1"),
            Subresource::Main,
            json!({"metadata": {"finalizers": null}}),
        )
        .await;
    world
        .client
        .delete(&machine_ref("m1"), &Default::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_finalizer_is_dropped_when_the_machine_is_gone() {
    let (world, ctx) = world_with_machine().await;
    reconcile(&ctx, "m1").await;
    delete_agent_machine_after_its_machine(&world).await;
    reconcile(&ctx, "m1").await;
    assert!(world.try_agent_machine("m1").await.is_none());
}

#[tokio::test]
async fn a_host_bound_to_a_gone_machine_is_unbound_before_the_finalizer_goes() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    assert_eq!(
        world.typed_agent("host-1").await.label("agentMachineRef"),
        Some("m1")
    );
    delete_agent_machine_after_its_machine(&world).await;
    reconcile(&ctx, "m1").await;
    assert!(
        world.try_agent_machine("m1").await.is_some(),
        "held until the host is unbound"
    );
    let agent = world.typed_agent("host-1").await;
    assert_eq!(agent.label("agentMachineRef"), None);
    assert_eq!(agent.spec.cluster_deployment_name, None);
    reconcile(&ctx, "m1").await;
    assert!(world.try_agent_machine("m1").await.is_none());
}

/// Found by a fault run on the real server (bins/tests/real_faults_capi_agent.rs): a deleted
/// AgentMachine that had released its host took it back from the AgentMachine that claimed it
/// since, leaving that one naming a host bound to nobody.
#[tokio::test]
async fn a_released_host_another_machine_claimed_is_not_unbound_again() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    delete_agent_machine_after_its_machine(&world).await;
    reconcile(&ctx, "m1").await;
    assert!(world.try_agent_machine("m1").await.is_some(), "m1 waits");
    world.machine("m2", None).await;
    reconcile(&ctx, "m2").await;
    assert_eq!(
        world.typed_agent("host-1").await.label("agentMachineRef"),
        Some("m2")
    );
    reconcile(&ctx, "m1").await;
    let agent = world.typed_agent("host-1").await;
    assert_eq!(
        agent.label("agentMachineRef"),
        Some("m2"),
        "m1 took it back"
    );
    assert!(agent.spec.cluster_deployment_name.is_some());
    assert!(world.try_agent_machine("m1").await.is_none(), "m1 released");
}

#[tokio::test]
async fn the_finalizer_is_never_re_added_once_the_machine_is_deleted() {
    // Upstream quirk: step 3b re-adds the finalizer after the hook was removed, then hangs.
    let (world, ctx) = world_with_machine().await;
    reconcile(&ctx, "m1").await;
    world.delete_machine_at_hook("m1").await;
    reconcile(&ctx, "m1").await;
    assert!(released(&world).await);
    world.patch(&machine_ref("m1"), Subresource::Status, json!({"status": {"conditions": [
        {"type": "Deleting", "status": "True", "reason": "WaitingForInfrastructure", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})).await;
    reconcile(&ctx, "m1").await;
    assert!(released(&world).await);
}

#[tokio::test]
async fn a_paused_machine_is_skipped_and_never_unbinds_while_live() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    world
        .patch(
            &agent_machine_ref("m1"),
            Subresource::Main,
            json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": "true"}}}),
        )
        .await;
    world.agent("host-2", json!({})).await;
    assert_eq!(reconcile(&ctx, "m1").await, Outcome::Done);
    assert_eq!(
        world.typed_agent("host-1").await.label("agentMachineRef"),
        Some("m1")
    );
    assert_eq!(
        condition(&world.agent_machine("m1").await, "Paused").map(|c| c.0),
        Some("True".into())
    );
}

#[tokio::test]
async fn deleting_a_paused_machine_releases_without_unbinding() {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    world
        .patch(
            &agent_machine_ref("m1"),
            Subresource::Main,
            json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": "true"}}}),
        )
        .await;
    world.delete_machine_at_hook("m1").await;
    reconcile(&ctx, "m1").await;
    assert!(released(&world).await);
    assert_eq!(
        world.typed_agent("host-1").await.label("agentMachineRef"),
        Some("m1")
    );
}

#[tokio::test]
async fn the_unbind_wait_is_bounded_and_surfaced() {
    let (world, _) = unbinding_machine().await;
    let ctx = world.context_with(ProviderConfig {
        unbind_timeout: Duration::ZERO,
        ..ProviderConfig::default()
    });
    reconcile(&ctx, "m1").await;
    assert!(released(&world).await);
    let am = world.agent_machine("m1").await;
    assert_eq!(
        condition(&am, "Deleting"),
        Some(("False".into(), "UnbindTimedOut".into()))
    );
}

/// A machine bound to `host-1`, deleted and parked at the hook, its Agent unbinding (the
/// provider has unbound it and waits for it to return to discovery).
async fn unbinding_machine() -> (World, Context) {
    let (world, ctx) = world_with_machine().await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    world.delete_machine_at_hook("m1").await;
    reconcile(&ctx, "m1").await;
    world
        .patch(
            &agent_ref("host-1"),
            Subresource::Status,
            json!({"status": {"debugInfo": {"state": "unbinding"}}}),
        )
        .await;
    (world, ctx)
}

#[tokio::test]
async fn the_unbind_wait_starts_when_the_agent_is_unbound() {
    let (world, ctx) = unbinding_machine().await;
    let am = world.agent_machine("m1").await;
    let started = am.metadata.annotations.unwrap()[UNBIND_STARTED_ANNOTATION].clone();
    let started: jiff::Timestamp = started.parse().unwrap();
    assert!(jiff::Timestamp::now().duration_since(started).as_secs() < 60);
    reconcile(&ctx, "m1").await;
    assert!(!released(&world).await);
    assert_eq!(
        condition(&world.agent_machine("m1").await, "Deleting").map(|c| c.1),
        Some("WaitingForAgentUnbound".into())
    );
}

#[tokio::test]
async fn the_unbind_timeout_counts_from_the_unbind() {
    let (world, ctx) = unbinding_machine().await;
    let long_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(16 * 60);
    world
        .patch(
            &agent_machine_ref("m1"),
            Subresource::Main,
            json!({"metadata": {"annotations": {UNBIND_STARTED_ANNOTATION: long_ago.to_string()}}}),
        )
        .await;
    reconcile(&ctx, "m1").await;
    assert!(released(&world).await);
    assert_eq!(
        condition(&world.agent_machine("m1").await, "Deleting").map(|c| c.1),
        Some("UnbindTimedOut".into())
    );
}

#[tokio::test]
async fn twenty_machines_racing_for_ten_agents_bind_each_agent_once() {
    let world = World::start().await;
    world.hosted_cluster().await;
    let ctx = world.context();
    reconcile_agent_cluster(&ctx, NS, "hc").await.unwrap();
    for i in 0..10 {
        world.agent(&format!("host-{i:02}"), json!({})).await;
    }
    let names: Vec<String> = (0..20).map(|i| format!("m{i:02}")).collect();
    for n in &names {
        world.machine(n, None).await;
    }
    let ctx = &ctx;
    futures::future::join_all(
        names
            .iter()
            .map(|n| async move { reconcile_agent_machine(ctx, NS, n).await.unwrap() }),
    )
    .await;
    let mut bound: BTreeMap<String, String> = BTreeMap::new();
    let mut waiting = 0;
    for n in &names {
        let am = world.agent_machine(n).await;
        match am.status.clone().unwrap().agent_ref {
            Some(r) => assert!(
                bound.insert(r.name.clone(), n.clone()).is_none(),
                "{} bound twice",
                r.name
            ),
            None => {
                assert_eq!(
                    condition(&am, "AgentReserved").unwrap().1,
                    "NoSuitableAgents"
                );
                waiting += 1;
            }
        }
    }
    assert_eq!((bound.len(), waiting), (10, 10));
    for agent in world.agents().await {
        let name = agent.metadata.name.clone().unwrap();
        assert_eq!(
            agent.label("agentMachineRef"),
            bound.get(&name).map(String::as_str)
        );
    }
    let _ =
        from_dynamic::<Secret>(world.get(&secret_ref("agent-user-data")).await.unwrap()).unwrap();
}

#[tokio::test]
async fn an_externally_managed_machine_is_never_touched() {
    let (world, ctx) = world_with_machine().await;
    world
        .patch(
            &agent_machine_ref("m1"),
            Subresource::Main,
            json!({"metadata": {"annotations": {"cluster.x-k8s.io/managed-by": "someone-else"}}}),
        )
        .await;
    world.agent("host-1", json!({})).await;
    reconcile(&ctx, "m1").await;
    let am = world.agent_machine("m1").await;
    assert!(am.status.is_none() && am.metadata.finalizers.is_none());
    assert_eq!(
        world.typed_agent("host-1").await.label("agentMachineRef"),
        None
    );
}
