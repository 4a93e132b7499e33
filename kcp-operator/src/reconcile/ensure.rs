//! Create-or-update of child objects: created if absent, updated only when the desired state
//! is not already contained in the live object (so server defaults, a Service's clusterIP and
//! nodePorts, and fields other controllers add never cause a write), owned by their source.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kcp_core::ObjectClient;
use kcp_core::client::{ObjectRef, Subresource};
use kcp_core::kube::api::DynamicObject;
use kcp_core::runtime::owner::set_controller;
use kcp_core::typed::{from_dynamic, to_dynamic};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// What [`ensure`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ensured {
    /// The object did not exist and was created.
    Created,
    /// The live object differed and was updated.
    Updated,
    /// The live object already had the desired state; nothing was sent.
    Unchanged,
}

/// Whether every field of `desired` is present with the same value in `live` (objects are
/// compared key by key, lists element by element and must have the same length).
pub fn contained_in(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => d.iter().all(|(k, v)| match l.get(k) {
            Some(lv) => contained_in(v, lv),
            None => {
                v.is_null()
                    || v.as_object().is_some_and(|o| o.is_empty())
                    || v.as_array().is_some_and(|a| a.is_empty())
            }
        }),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(a, b)| contained_in(a, b))
        }
        (d, l) => d == l,
    }
}

/// `desired` merged over `live`: objects merged recursively, lists of equal length merged
/// element by element (keeping e.g. a Service port's nodePort), everything else replaced.
pub fn merge_over(live: &mut Value, desired: &Value) {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => {
            for (k, v) in d {
                match l.get_mut(k) {
                    Some(lv) => merge_over(lv, v),
                    None => {
                        l.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(l), Value::Array(d)) if l.len() == d.len() => {
            for (lv, dv) in l.iter_mut().zip(d) {
                merge_over(lv, dv);
            }
        }
        (l, d) => *l = d.clone(),
    }
}

fn core(context: String) -> impl FnOnce(kcp_core::Error) -> Error {
    move |source| Error::Core { context, source }
}

/// Makes `desired` exist as its controller-owned child of `owner` (when given). Returns what
/// was done and the object as it is now on the server. A write that conflicts (the object was
/// read from a cache that had not seen its latest version) is tried once more: a caching
/// client reads such an object from the server next (see [`super::reads`]).
pub async fn ensure<K>(
    client: &dyn ObjectClient,
    desired: &K,
    owner: Option<&OwnerReference>,
) -> Result<(Ensured, K)>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync,
{
    match ensure_once(client, desired, owner).await {
        Err(Error::Core { source, .. }) if source.is_conflict() => {
            ensure_once(client, desired, owner).await
        }
        other => other,
    }
}

async fn ensure_once<K>(
    client: &dyn ObjectClient,
    desired: &K,
    owner: Option<&OwnerReference>,
) -> Result<(Ensured, K)>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync,
{
    let mut object = desired.clone();
    if let Some(owner) = owner {
        set_controller(object.meta_mut(), owner.clone())
            .map_err(core("setting the owner".into()))?;
    }
    let dynamic = to_dynamic(&object).map_err(core("serializing a child".into()))?;
    let target = ObjectRef::from_object(&dynamic).map_err(core("naming a child".into()))?;
    let Some(live) = client
        .get(&target)
        .await
        .map_err(core(format!("reading {target}")))?
    else {
        let created = client
            .create(&dynamic)
            .await
            .map_err(core(format!("creating {target}")))?;
        return Ok((
            Ensured::Created,
            from_dynamic(created).map_err(core(format!("reading {target}")))?,
        ));
    };
    let want = serde_json::to_value(&dynamic).map_err(|e| serialization(&target, e))?;
    let mut have = serde_json::to_value(&live).map_err(|e| serialization(&target, e))?;
    let mut want_cmp = want.clone();
    strip_volatile(&mut want_cmp);
    if contained_in(&want_cmp, &have) {
        return Ok((
            Ensured::Unchanged,
            from_dynamic(live).map_err(core(format!("reading {target}")))?,
        ));
    }
    merge_over(&mut have, &want_cmp);
    let merged: DynamicObject =
        serde_json::from_value(have).map_err(|e| serialization(&target, e))?;
    let updated = client
        .replace(&merged, Subresource::Main)
        .await
        .map_err(core(format!("updating {target}")))?;
    Ok((
        Ensured::Updated,
        from_dynamic(updated).map_err(core(format!("reading {target}")))?,
    ))
}

/// Drops what the desired object never decides: status, resourceVersion, uid, timestamps.
fn strip_volatile(value: &mut Value) {
    if let Some(obj) = value.as_object_mut() {
        obj.remove("status");
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "generation",
                "managedFields",
            ] {
                meta.remove(key);
            }
        }
    }
}

fn serialization(target: &ObjectRef, err: serde_json::Error) -> Error {
    Error::Serialization {
        context: format!("comparing {target}"),
        message: err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn desired_state_contained_in_a_defaulted_live_object_needs_no_write() {
        let desired = json!({"spec": {"ports": [{"port": 6443}], "selector": {"a": "b"}}});
        let live = json!({"spec": {"ports": [{"port": 6443, "nodePort": 31000}], "selector": {"a": "b"}, "clusterIP": "10.0.0.1"}});
        assert!(contained_in(&desired, &live));
    }

    #[test]
    fn a_changed_or_missing_field_needs_a_write() {
        assert!(!contained_in(&json!({"a": 1}), &json!({"a": 2})));
        assert!(!contained_in(&json!({"a": [1, 2]}), &json!({"a": [1]})));
        assert!(!contained_in(&json!({"a": "x"}), &json!({})));
        assert!(contained_in(&json!({"a": []}), &json!({})));
    }

    #[test]
    fn merge_keeps_live_only_fields_and_takes_desired_ones() {
        let mut live =
            json!({"spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 1, "nodePort": 3}]}});
        merge_over(&mut live, &json!({"spec": {"ports": [{"port": 2}]}}));
        assert_eq!(
            live,
            json!({"spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 2, "nodePort": 3}]}})
        );
    }
}
