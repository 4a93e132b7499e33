//! Workspaces held by terminators: a WorkspaceType with `terminator: true` (or one it
//! extends) gives its workspaces' LogicalCluster that terminator in `spec` and `status`, a
//! label per terminator and kcp's `kcp.io/has-terminators` finalizer. Deleting such a
//! Workspace marks its LogicalCluster deleted and leaves both waiting until every terminator
//! has removed itself through its terminatingworkspaces view; then both go (conformance
//! kcp-views/a-terminator-holds-a-deleted-workspace-until-it-removes-itself, kcp v0.30.0).

use serde_json::{Value, json};

use super::lifecycle_views::entries;
use super::{
    CONTROLLER_MANAGER, LOGICAL_CLUSTER_FINALIZER, LOGICAL_CLUSTER_NAME, PHASE_LABEL,
    controller_write, logical_clusters, set_label, workspaces,
};
use crate::apiexport::conditions::{self, Condition};
use crate::managed_fields::{self, FieldManager};
use crate::semantics::now;
use crate::status::ApiResult;
use crate::store::State;

/// The finalizer kcp's LogicalCluster controller keeps while terminators are listed.
pub const HAS_TERMINATORS_FINALIZER: &str = "kcp.io/has-terminators";

/// The label prefix of a terminator ([`super::lifecycle_label`]).
pub const LABEL_PREFIX: &str = "terminator.internal.kcp.io/";

/// The condition kcp's deletion controller reports the content of a deleted cluster in.
const CONTENT_DELETED: &str = "WorkspaceContentDeleted";

/// A new LogicalCluster (`lc`, with its create records) gets its terminators: kcp's
/// LogicalCluster controller adds its finalizer (its own write), and the status lists them
/// as they were set at creation (recorded by no manager).
pub fn attach(lc: &mut Value, terminators: &[String]) {
    if terminators.is_empty() {
        return;
    }
    let before = lc.clone();
    crate::object_meta::add_finalizer(lc, HAS_TERMINATORS_FINALIZER);
    let time = now();
    managed_fields::record_update(
        Some(&before),
        lc,
        &FieldManager {
            manager: CONTROLLER_MANAGER,
            subresource: None,
            time: &time,
            api_version: "core.kcp.io/v1alpha1",
        },
    );
    lc["status"]["terminators"] = json!(terminators);
}

/// Whether terminators hold a deleted Workspace (`ws`, in `cluster`): while its
/// LogicalCluster lists any, the LogicalCluster is marked deleted (once) and the Workspace
/// shows it, and neither goes.
pub fn holds(state: &mut State, cluster: &str, ws: &Value) -> ApiResult<bool> {
    let Some(lc_cluster) = ws.pointer("/spec/cluster").and_then(Value::as_str) else {
        return Ok(false);
    };
    let lc_cluster = lc_cluster.to_string();
    let Some(stored) = state.lookup(&lc_cluster, &logical_clusters(), "", LOGICAL_CLUSTER_NAME)
    else {
        return Ok(false);
    };
    let lc = stored.value()?;
    if entries(&lc, "terminators").is_empty() {
        return Ok(false);
    }
    if lc.pointer("/metadata/deletionTimestamp").is_none() {
        let condition = mark_deleted(state, &lc_cluster)?;
        let mut next = ws.clone();
        set_label(&mut next, PHASE_LABEL, Some("Deleting"));
        if let Some(message) = &condition {
            conditions::set(&mut next, content_remaining(message));
        }
        controller_write(
            state,
            cluster,
            &workspaces(),
            ws,
            &mut next,
            "tenancy.kcp.io/v1alpha1",
        )?;
    }
    Ok(true)
}

/// kcp deleting a held LogicalCluster: marked deleted (a zero grace period, the generation
/// moved on), its APIBindings deleted with the rest of the content (so its record of bound
/// resources is empty), its deletion finalizer gone once the deletion controller has been
/// through the content, the phase label `Deleting`, and what content that pass found left
/// (the namespaces, which terminate first) in [`CONTENT_DELETED`]. Answers that message.
fn mark_deleted(state: &mut State, cluster: &str) -> ApiResult<Option<String>> {
    let bindings = crate::apiexport::bindings();
    if let Some(binding_type) = state.served_type(cluster, &bindings) {
        for binding in crate::apiexport::objects_of(state, cluster, &bindings) {
            let name = binding
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            crate::semantics::remove_now(state, cluster, &binding_type, "", name)?;
        }
    }
    super::system_apis::record_resource_bindings(state, cluster)?;
    let Some(stored) = state.lookup(cluster, &logical_clusters(), "", LOGICAL_CLUSTER_NAME) else {
        return Ok(None);
    };
    let mut lc = stored.value()?;
    let namespaces = state
        .clusters
        .get(cluster)
        .and_then(|c| {
            c.objects
                .get(&crate::resource::GroupResource::new("", "namespaces"))
        })
        .map_or(0, |all| all.len());
    let meta = &mut lc["metadata"];
    meta["deletionTimestamp"] = json!(now());
    meta["deletionGracePeriodSeconds"] = json!(0);
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64) {
        meta["generation"] = json!(generation + 1);
    }
    if let Some(finalizers) = meta.get_mut("finalizers").and_then(Value::as_array_mut) {
        finalizers.retain(|f| f != LOGICAL_CLUSTER_FINALIZER);
    }
    // Storing sets the new resourceVersion on `lc`, which is then what was stored.
    state.store(
        cluster,
        &logical_clusters(),
        "",
        LOGICAL_CLUSTER_NAME,
        &mut lc,
    )?;
    let old = lc;
    let mut next = old.clone();
    set_label(&mut next, PHASE_LABEL, Some("Deleting"));
    let message = (namespaces > 0).then(|| {
        format!("Some resources are remaining: namespaces. has {namespaces} resource instances")
    });
    if let Some(message) = &message {
        conditions::set(&mut next, content_remaining(message));
    }
    controller_write(
        state,
        cluster,
        &logical_clusters(),
        &old,
        &mut next,
        "core.kcp.io/v1alpha1",
    )?;
    Ok(message)
}

fn content_remaining(message: &str) -> Condition<'_> {
    Condition {
        type_: CONTENT_DELETED,
        status: false,
        severity: "Info",
        reason: "SomeResourcesRemain",
        message,
    }
}

/// After a LogicalCluster was written: once a deleted one lists no terminator, its Workspace
/// (and with it the LogicalCluster) finishes deleting.
pub fn released(state: &mut State, lc: &Value) -> ApiResult<()> {
    if lc.pointer("/metadata/deletionTimestamp").is_none() || !entries(lc, "terminators").is_empty()
    {
        return Ok(());
    }
    let (Some(owner_cluster), Some(owner_name)) = (
        lc.pointer("/spec/owner/cluster").and_then(Value::as_str),
        lc.pointer("/spec/owner/name").and_then(Value::as_str),
    ) else {
        return Ok(());
    };
    let Some(ws_type) = state.served_type(owner_cluster, &workspaces()) else {
        return Ok(());
    };
    crate::semantics::try_finish_termination(state, owner_cluster, &ws_type, "", owner_name)
}
