//! kcp's root CA publisher (kube-controller-manager's root-ca-cert-publisher, run per
//! workspace): every namespace holds the ConfigMap `kube-root-ca.crt` with the server's CA
//! under `ca.crt`, written by `kcp`. Deleted, it is made again; its `ca.crt` changed or other
//! `data` keys added, the data is put back to the CA alone; its description annotation changed
//! or removed, it is put back too. Labels, other annotations and `binaryData` are left alone.
//! Seen on kcp v0.30.0 (conformance `kcp-root-ca.yaml`).
//!
//! The publisher is a controller, not part of the request that woke it: when it cannot write
//! (a quota full of config maps, say) the request still succeeds, as on kcp.

use serde_json::{Map, Value, json};

use crate::managed_fields::{self, FieldManager};
use crate::resource::{Flavor, GroupResource};
use crate::semantics::{self, now};
use crate::status::ApiResult;
use crate::store::State;

use super::CONTROLLER_MANAGER;

/// The ConfigMap's name.
pub const CONFIG_MAP: &str = "kube-root-ca.crt";

/// The key of the CA bundle in its data.
const CA_KEY: &str = "ca.crt";

/// The annotation that says what the ConfigMap is for, and its value.
const DESCRIPTION_KEY: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver \
    when using internal endpoints such as the internal service IP or kubernetes.default.svc. \
    No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Makes `namespace`'s `kube-root-ca.crt` what the publisher keeps it as: created if missing,
/// its data and description put back if changed. Nothing in a namespace that is gone or
/// terminating, nor on a Kubernetes-mode server (the test bed's kube-controller-manager runs
/// no publisher).
pub(crate) fn publish(state: &mut State, cluster: &str, namespace: &str) -> ApiResult<()> {
    if state.flavor != Flavor::Kcp || !accepts_content(state, cluster, namespace) {
        return Ok(());
    }
    let Some(ca) = state.root_ca.clone() else {
        return Ok(());
    };
    let gr = GroupResource::new("", "configmaps");
    match state.lookup(cluster, &gr, namespace, CONFIG_MAP) {
        None => create(state, cluster, namespace, &ca),
        Some(stored) => {
            let current = stored.value()?;
            if current.pointer("/metadata/deletionTimestamp").is_some() || is_kept(&current, &ca) {
                return Ok(());
            }
            put_back(state, cluster, namespace, &current, &ca)
        }
    }
}

/// Whether a ConfigMap write or deletion concerns the published one.
pub(crate) fn is_published(gr: &GroupResource, name: &str) -> bool {
    gr.group.is_empty() && gr.resource == "configmaps" && name == CONFIG_MAP
}

fn accepts_content(state: &State, cluster: &str, namespace: &str) -> bool {
    let gr = GroupResource::new("", "namespaces");
    state
        .lookup(cluster, &gr, "", namespace)
        .and_then(|ns| ns.value().ok())
        .is_some_and(|ns| ns.pointer("/metadata/deletionTimestamp").is_none())
}

fn is_kept(config_map: &Value, ca: &str) -> bool {
    let data_kept = config_map
        .get("data")
        .and_then(Value::as_object)
        .is_some_and(|data| data.len() == 1 && data.get(CA_KEY) == Some(&json!(ca)));
    let described = config_map
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DESCRIPTION_KEY))
        .is_some_and(|d| d == DESCRIPTION);
    data_kept && described
}

fn create(state: &mut State, cluster: &str, namespace: &str, ca: &str) -> ApiResult<()> {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "annotations": {DESCRIPTION_KEY: DESCRIPTION}},
        "data": {CA_KEY: ca}});
    match semantics::ensure_created(
        state,
        cluster,
        "configmaps",
        Some(namespace),
        body,
        CONTROLLER_MANAGER,
    ) {
        // Refused (a quota, say): the controller would try again later; the request that woke
        // it is not the publisher's.
        Err(e) if e.code < 500 => Ok(()),
        other => other,
    }
}

fn put_back(
    state: &mut State,
    cluster: &str,
    namespace: &str,
    current: &Value,
    ca: &str,
) -> ApiResult<()> {
    let mut updated = current.clone();
    updated["data"] = json!({CA_KEY: ca});
    let meta = &mut updated["metadata"];
    if !meta.get("annotations").is_some_and(Value::is_object) {
        meta["annotations"] = Value::Object(Map::new());
    }
    meta["annotations"][DESCRIPTION_KEY] = json!(DESCRIPTION);
    let time = now();
    let who = FieldManager {
        manager: CONTROLLER_MANAGER,
        subresource: None,
        time: &time,
        api_version: "v1",
    };
    managed_fields::record_update(Some(current), &mut updated, &who);
    let gr = GroupResource::new("", "configmaps");
    state.store(cluster, &gr, namespace, CONFIG_MAP, &mut updated)?;
    Ok(())
}
