//! ResourceQuotas, as kube-apiserver's quota admission and kube-controller-manager's quota
//! controller keep them.
//!
//! - **The controller** ([`sync_namespace`]) writes a quota's `status`: `hard` as its spec says,
//!   and `used`, what the namespace's objects use of each resource it limits. The real one does
//!   this a moment after a quota is made or changed, or an object it counts is deleted or
//!   finishes; kcp-sim does it inside that write, so a quota is never without its status.
//! - **Admission** ([`admit`]) charges each quota that covers a new object (and a service or
//!   claim changed to use more) from the quota's `status.used`, before the object is stored,
//!   and refuses a write that would take a quota over its `hard` (`exceeded quota: ...`), or a
//!   pod whose containers do not all name the cpu and memory a quota limits. A dry run is
//!   checked but not charged.
//!
//! Each writer is recorded as on the real server: `kube-controller-manager` and
//! `kube-apiserver`, both through the status subresource (`kcp` for both in a kcp workspace,
//! where only `count/` names are measured). Not played: a pod stuck terminating
//! past its grace period still counts; a create refused after admission (a name already taken)
//! is not charged, where kube charges it until the controller's next resync.

mod scopes;
mod usage;

use serde_json::{Map, Value, json};

use crate::managed_fields::{self, FieldManager};
use crate::resource::{Flavor, GroupResource, ResourceType};
use crate::semantics::now;
use crate::status::{ApiError, ApiResult};
use crate::store::State;
use usage::ResourceList;

/// The field manager of the controller's status writes: kube-controller-manager's, or kcp's
/// (which runs both the controller and admission).
fn controller(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Kubernetes => "kube-controller-manager",
        Flavor::Kcp => "kcp",
    }
}

/// The field manager of admission's charges.
fn admission(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Kubernetes => "kube-apiserver",
        Flavor::Kcp => "kcp",
    }
}

/// A write quota admission sees.
pub(crate) struct QuotaWrite<'a> {
    /// The written object's type.
    pub rt: &'a ResourceType,
    /// Its namespace (empty for a cluster-scoped object, which no quota covers).
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// The object as it will be stored.
    pub object: &'a Value,
    /// The object before an update; `None` on create.
    pub old: Option<&'a Value>,
    /// Checked, not charged.
    pub dry_run: bool,
}

impl QuotaWrite<'_> {
    /// Whether the write can change what quotas are charged: every create, and updates of
    /// services and claims (`Handles`).
    fn is_charged(&self) -> bool {
        let kind = self.rt.group_resource();
        let updated_kinds = ["services", "persistentvolumeclaims"];
        !self.namespace.is_empty()
            && (self.old.is_none()
                || (kind.group.is_empty() && updated_kinds.contains(&kind.resource.as_str())))
    }
}

/// The namespace's quotas, by name.
fn quotas_in(state: &State, cluster: &str, namespace: &str) -> Vec<Value> {
    state
        .clusters
        .get(cluster)
        .map(|c| {
            c.in_namespace(&quota_kind(), namespace)
                .filter_map(|stored| stored.value().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn quota_kind() -> GroupResource {
    GroupResource::new("", "resourcequotas")
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Checks `write` against the quotas of its namespace and charges them (ResourceQuota
/// admission): refused with `403 Forbidden` as kube words it.
pub(crate) fn admit(state: &mut State, cluster: &str, write: &QuotaWrite) -> ApiResult<()> {
    if !write.is_charged() {
        return Ok(());
    }
    let kind = write.rt.group_resource();
    let refuse = |reason: String| {
        ApiError::forbidden_object(&write.rt.group, &write.rt.plural, write.name, &reason)
    };
    let mut covering = Vec::new();
    for quota in quotas_in(state, cluster, write.namespace) {
        let hard = usage::list_at(&quota, "/status/hard");
        let restricted = usage::matching(state.flavor, kind, hard.keys());
        if restricted.is_empty() || !scopes::cover(&quota, kind, write.object) {
            continue;
        }
        let name = text(&quota, "/metadata/name").to_string();
        if let Some(unnamed) = usage::unnamed_requests(kind, write.object, &restricted) {
            return Err(refuse(format!("failed quota: {name}: {unnamed}")));
        }
        let used = usage::list_at(&quota, "/status/used");
        if restricted.iter().any(|r| !used.contains_key(r)) {
            let resources = restricted.join(",");
            return Err(refuse(format!(
                "status unknown for quota: {name}, resources: {resources}"
            )));
        }
        covering.push((quota, name, hard, used));
    }
    let delta = charge_of(state.flavor, kind, write);
    if delta.is_empty() {
        return Ok(());
    }
    let mut charged = Vec::new();
    for (quota, name, hard, used) in covering {
        let requested: ResourceList = delta
            .iter()
            .filter(|(r, _)| hard.contains_key(*r))
            .map(|(r, q)| (r.clone(), q.clone()))
            .collect();
        let mut new_used = used.clone();
        usage::add_all(&mut new_used, &requested);
        let exceeded: Vec<&String> = requested
            .keys()
            .filter(|r| matches!((new_used.get(*r), hard.get(*r)), (Some(u), Some(h)) if u.compare(h).is_gt()))
            .collect();
        if !exceeded.is_empty() {
            let listed = |list: &ResourceList| pairs(list, &exceeded);
            return Err(refuse(format!(
                "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                listed(&requested),
                listed(&used),
                listed(&hard)
            )));
        }
        if !same(&new_used, &used) {
            charged.push((quota, new_used));
        }
    }
    if !write.dry_run {
        for (quota, used) in charged {
            let mut status = quota.get("status").cloned().unwrap_or_else(|| json!({}));
            status["used"] = Value::Object(as_json(&used));
            write_status(state, cluster, &quota, status, admission(state.flavor))?;
        }
    }
    Ok(())
}

/// What the write adds to quotas: the new object's usage, less the old one's on update (never
/// below zero), without zeros.
fn charge_of(flavor: Flavor, kind: &GroupResource, write: &QuotaWrite) -> ResourceList {
    let mut delta = usage::of_object(flavor, kind, write.object);
    if let Some(old) = write.old {
        let before = usage::of_object(flavor, kind, old);
        for (name, amount) in delta.iter_mut() {
            if let Some(old_amount) = before.get(name) {
                amount.sub(old_amount);
                if amount.compare(&crate::quantity::Quantity::zero()).is_lt() {
                    *amount = crate::quantity::Quantity::zero();
                }
            }
        }
    }
    delta.retain(|_, amount| !amount.is_zero());
    delta
}

/// `name=amount` of `list`'s entries among `names`, comma-separated (`prettyPrint`).
fn pairs(list: &ResourceList, names: &[&String]) -> String {
    names
        .iter()
        .filter_map(|name| list.get(*name).map(|q| format!("{name}={}", q.to_text())))
        .collect::<Vec<_>>()
        .join(",")
}

/// Same names with equal amounts (`quota.Equals`).
fn same(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(name, q)| b.get(name).is_some_and(|other| q.compare(other).is_eq()))
}

fn as_json(list: &ResourceList) -> Map<String, Value> {
    list.iter()
        .map(|(name, q)| (name.clone(), Value::String(q.to_text())))
        .collect()
}

/// Stores `quota` with `status`, recorded as `manager`'s write of the status subresource.
fn write_status(
    state: &mut State,
    cluster: &str,
    quota: &Value,
    status: Value,
    manager: &str,
) -> ApiResult<()> {
    let mut updated = quota.clone();
    updated["status"] = status;
    let time = now();
    let who = FieldManager {
        manager,
        subresource: Some("status"),
        time: &time,
        api_version: "v1",
    };
    managed_fields::record_update(Some(quota), &mut updated, &who);
    let (namespace, name) = (
        text(quota, "/metadata/namespace"),
        text(quota, "/metadata/name"),
    );
    state.store(cluster, &quota_kind(), namespace, name, &mut updated)?;
    Ok(())
}

/// The quota controller's pass over a namespace: each quota whose status is missing, whose
/// `hard` no longer matches its spec, or whose `used` differs from what the namespace now uses
/// gets its status written.
pub(crate) fn sync_namespace(state: &mut State, cluster: &str, namespace: &str) -> ApiResult<()> {
    if namespace.is_empty() {
        return Ok(());
    }
    for quota in quotas_in(state, cluster, namespace) {
        if quota.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let hard = usage::list_at(&quota, "/spec/hard");
        let previous = usage::list_at(&quota, "/status/used");
        let mut used = previous.clone();
        used.extend(usage_in(state, cluster, namespace, &quota, &hard));
        used.retain(|name, _| hard.contains_key(name));
        let has_status =
            quota.pointer("/status/hard").is_some() && quota.pointer("/status/used").is_some();
        let dirty = !has_status
            || !same(&hard, &usage::list_at(&quota, "/status/hard"))
            || !same(&used, &previous);
        if dirty {
            let spec_hard = quota
                .pointer("/spec/hard")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let status = json!({"hard": spec_hard, "used": as_json(&used)});
            write_status(state, cluster, &quota, status, controller(state.flavor))?;
        }
    }
    Ok(())
}

/// What the namespace's objects use of the resources `hard` names (`CalculateUsage`): each
/// resource starts at zero; a kind the cluster does not serve is not measured.
fn usage_in(
    state: &State,
    cluster: &str,
    namespace: &str,
    quota: &Value,
    hard: &ResourceList,
) -> ResourceList {
    let mut by_kind: std::collections::BTreeMap<GroupResource, Vec<String>> = Default::default();
    for name in hard.keys() {
        let kind = usage::measured_kind(name);
        if usage::matching(state.flavor, &kind, std::iter::once(name)).is_empty() {
            continue;
        }
        by_kind.entry(kind).or_default().push(name.clone());
    }
    let mut total = ResourceList::new();
    for (kind, names) in by_kind {
        let Some(data) = state
            .clusters
            .get(cluster)
            .filter(|c| c.registry.get(&kind).is_some())
        else {
            continue;
        };
        let mut measured: ResourceList = names
            .iter()
            .map(|n| (n.clone(), crate::quantity::Quantity::zero()))
            .collect();
        let in_namespace = data
            .in_namespace(&kind, namespace)
            .filter_map(|stored| stored.value().ok());
        for object in in_namespace.filter(|o| scopes::cover(quota, &kind, o)) {
            usage::add_all(
                &mut measured,
                &usage::of_object(state.flavor, &kind, &object),
            );
        }
        measured.retain(|name, _| names.contains(name));
        total.extend(measured);
    }
    total
}

#[cfg(test)]
mod tests;
