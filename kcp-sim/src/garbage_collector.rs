//! The garbage collector, as kube-controller-manager's runs beside a real kube-apiserver (and
//! inside kcp): dependents of a deleted owner are deleted (background), waited for (foreground)
//! or lose their reference (orphan), and a dependent whose every owner is gone is deleted. The
//! real collector acts a moment after the write that set it off; kcp-sim acts inside it, so the
//! next request already sees the outcome.
//!
//! A dependent's owners are looked up in its own logical cluster (and namespace, for a namespaced
//! owner kind) by name, then compared by uid, as the real collector looks them up.

use serde_json::Value;

use crate::managed_fields::{self, FieldManager};
use crate::resource::ResourceType;
use crate::semantics::{DeleteRequest, delete, now};
use crate::status::ApiResult;
use crate::store::State;

/// The field manager the real collector's writes are recorded under.
const COLLECTOR: &str = "kube-controller-manager";

/// Deletes `object` (just written) when it has owner references and none of its owners exists,
/// as the real collector does with a dependent it finds with only absent owners. An owner of a
/// kind the cluster does not serve is not absent: the real collector cannot look it up and
/// retries, leaving the dependent alone.
pub(crate) fn collect_if_every_owner_is_gone(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    object: &Value,
) -> ApiResult<()> {
    let Some(owners) = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .filter(|owners| !owners.is_empty())
    else {
        return Ok(());
    };
    let text = |value: &Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let ns = text(object, "/metadata/namespace");
    let every_owner_gone = owners
        .iter()
        .all(|owner| is_absent(state, cluster, &ns, owner));
    if !every_owner_gone || object.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(());
    }
    let name = text(object, "/metadata/name");
    match delete(state, cluster, rt, &ns, &name, &DeleteRequest::default()) {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether an owner reference names no object, as the real collector decides it: the owner's
/// kind is served, and no object of it has the reference's name (in the dependent's namespace,
/// for a namespaced kind) and uid.
fn is_absent(state: &State, cluster: &str, namespace: &str, owner: &Value) -> bool {
    let field = |name: &str| owner.get(name).and_then(Value::as_str).unwrap_or_default();
    let (group, version) = match field("apiVersion").split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", field("apiVersion")),
    };
    let Some(data) = state.clusters.get(cluster) else {
        return false;
    };
    let Some(owner_type) = data.registry.by_kind(group, version, field("kind")) else {
        return false;
    };
    let owner_namespace = if owner_type.namespaced { namespace } else { "" };
    data.get(owner_type.group_resource(), owner_namespace, field("name"))
        .is_none_or(|stored| &*stored.uid != field("uid"))
}

/// Every object in the cluster that lists `uid` as an owner.
fn dependents(state: &State, cluster: &str, uid: &str) -> Vec<(ResourceType, String, String)> {
    let Some(data) = state.clusters.get(cluster) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (gr, objects) in &data.objects {
        let Some(rt) = data.registry.get(gr) else {
            continue;
        };
        for (key, obj) in objects {
            if obj.owners.iter().any(|o| &**o == uid) {
                let (ns, name) = key.split_once('/').unwrap_or(("", key));
                found.push(((**rt).clone(), ns.to_string(), name.to_string()));
            }
        }
    }
    found
}

pub(crate) fn has_dependents(state: &State, cluster: &str, uid: &str) -> bool {
    state.clusters.get(cluster).is_some_and(|c| {
        c.objects.values().any(|objects| {
            objects
                .values()
                .any(|o| o.owners.iter().any(|x| &**x == uid))
        })
    })
}

pub(crate) fn find_by_uid(
    state: &State,
    cluster: &str,
    uid: &str,
) -> Option<(ResourceType, String, String)> {
    let data = state.clusters.get(cluster)?;
    for (gr, objects) in &data.objects {
        for (key, obj) in objects {
            if &*obj.uid == uid {
                let rt = data.registry.get(gr)?;
                let (ns, name) = key.split_once('/').unwrap_or(("", key));
                return Some(((**rt).clone(), ns.to_string(), name.to_string()));
            }
        }
    }
    None
}

/// Background garbage collection: dependents whose every owner is gone are deleted; dependents
/// with another owner left only lose the reference.
pub(crate) fn collect_dependents(state: &mut State, cluster: &str, uid: &str) -> ApiResult<()> {
    for (rt, ns, name) in dependents(state, cluster, uid) {
        let Some(dep) = state.lookup(cluster, rt.group_resource(), &ns, &name) else {
            continue;
        };
        let others_alive = dep
            .owners
            .iter()
            .filter(|o| &***o != uid)
            .any(|o| !is_gone_or_terminating(state, cluster, o));
        if others_alive {
            drop_owner_reference(state, cluster, &rt, &ns, &name, uid)?;
        } else {
            match delete(state, cluster, &rt, &ns, &name, &DeleteRequest::default()) {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

fn is_gone_or_terminating(state: &State, cluster: &str, uid: &str) -> bool {
    let Some((rt, ns, name)) = find_by_uid(state, cluster, uid) else {
        return true;
    };
    state
        .clusters
        .get(cluster)
        .and_then(|c| c.get(rt.group_resource(), &ns, &name))
        .is_none_or(|s| s.terminating)
}

pub(crate) fn orphan_dependents(state: &mut State, cluster: &str, uid: &str) -> ApiResult<()> {
    for (rt, ns, name) in dependents(state, cluster, uid) {
        drop_owner_reference(state, cluster, &rt, &ns, &name, uid)?;
    }
    Ok(())
}

/// Removes the reference to `uid` from a dependent, as the collector's patch does: the fields
/// it took away leave every manager's entry (an entry left owning nothing goes).
fn drop_owner_reference(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    uid: &str,
) -> ApiResult<()> {
    let Some(dep) = state.lookup(cluster, rt.group_resource(), ns, name) else {
        return Ok(());
    };
    let old = dep.value()?;
    let mut value = old.clone();
    if let Some(refs) = value
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
        if refs.is_empty()
            && let Some(m) = value.get_mut("metadata").and_then(Value::as_object_mut)
        {
            m.remove("ownerReferences");
        }
    }
    if value
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_some_and(|entries| !entries.is_empty())
    {
        let time = now();
        let api_version = rt.api_version(rt.versions.first().map_or("v1", String::as_str));
        let collector = FieldManager {
            manager: COLLECTOR,
            subresource: None,
            time: &time,
            api_version: &api_version,
        };
        managed_fields::record_update(Some(&old), &mut value, &collector);
    }
    state.store(cluster, rt.group_resource(), ns, name, &mut value)?;
    Ok(())
}
