//! CustomResourceDefinitions: validation, the `Established` condition, and serving (or no longer
//! serving) the resource a CRD defines in its cluster.
//!
//! A valid CRD is stored as kube-apiserver stores it (no accepted names, no conditions), and
//! accepted and established by a status write of "its controllers" inside the same request, so
//! a client that created it can use the new resource on its next request, and discovery lists
//! it. Its schemas are compiled when it is
//! validated (a schema that is not structural, or a CEL rule that does not compile, refuses the
//! CRD) and kept per generation, so serving it and writing its objects compile nothing.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::managed_fields::{self, FieldManager};
use crate::resource::{GroupResource, ResourceType, type_of_crd};
use crate::schema::{self, CrdSchemas};
use crate::semantics::now;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// The compiled schemas of a CRD: the ones kept for its uid and generation, or compiled now
/// (and kept). A schema that is not structural or a rule that does not compile is a `422`.
fn compiled(state: &mut State, cluster: &str, crd: &Value) -> ApiResult<Arc<CrdSchemas>> {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(kept) = state
        .clusters
        .get(cluster)
        .and_then(|c| c.compiled_crds.get(name))
        .filter(|s| s.compiled_from(crd))
    {
        return Ok(kept.clone());
    }
    let schemas = Arc::new(schema::compile_crd(crd)?);
    if let Some(c) = state.clusters.get_mut(cluster) {
        c.compiled_crds.insert(name.to_string(), schemas.clone());
    }
    Ok(schemas)
}

/// Validates a CRD and sets the status of an accepted one: `NamesAccepted` and `Established`
/// conditions, `acceptedNames`, `storedVersions`.
pub fn establish(state: &mut State, cluster: &str, crd: &mut Value) -> ApiResult<()> {
    check(state, cluster, crd)?;
    crd["status"] = status_of(state, cluster, crd);
    Ok(())
}

/// The status the naming and establishing controllers give `crd`: established, or, when some of
/// its names are held already, its names refused and not established.
fn status_of(state: &State, cluster: &str, crd: &Value) -> Value {
    let naming = crate::crd_names::naming(state, cluster, crd);
    let Some((reason, message)) = naming.conflict else {
        return established_status(crd);
    };
    let established = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Established").cloned())
        .unwrap_or_else(|| {
            json!({"type": "Established", "status": "False", "reason": "NotAccepted",
                   "message": "not all names are accepted", "lastTransitionTime": now()})
        });
    let mut status = initial_status(crd);
    status["acceptedNames"] = naming.accepted;
    status["conditions"] = json!([
        {"type": "NamesAccepted", "status": "False", "reason": reason, "message": message,
         "lastTransitionTime": now()},
        established,
    ]);
    if let Some(stored) = crd.pointer("/status/storedVersions") {
        status["storedVersions"] = stored.clone();
    }
    status
}

/// Whether `crd` is established (and so serves its resource).
pub fn is_established(crd: &Value) -> bool {
    crate::apiexport::conditions::is_true(crd, "Established")
}

/// The status kube-apiserver gives a CRD it creates, before its controllers accept the names:
/// no accepted names, no conditions, the storage version stored.
pub fn initial_status(crd: &Value) -> Value {
    let stored: Vec<String> = type_of_crd(crd)
        .ok()
        .and_then(|t| t.versions.first().cloned())
        .into_iter()
        .collect();
    json!({
        "acceptedNames": {"kind": "", "plural": ""},
        "conditions": null,
        "storedVersions": stored,
    })
}

/// What kube-apiserver's naming and establishing controllers write right after a CRD is
/// created: the accepted names and the `NamesAccepted` and `Established` conditions, a status
/// write of its own (manager `kube-apiserver`, or `kcp` in kcp); then an established CRD is
/// served.
pub fn accept(state: &mut State, cluster: &str, crd: &Value) -> ApiResult<()> {
    let gr = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut accepted = crd.clone();
    accepted["status"] = status_of(state, cluster, crd);
    let time = now();
    // kcp runs the CRD controllers in its own process, whose writes are kcp's.
    let manager = match state.flavor {
        crate::resource::Flavor::Kcp => crate::kcp::CONTROLLER_MANAGER,
        _ => "kube-apiserver",
    };
    let who = FieldManager {
        manager,
        subresource: Some("status"),
        time: &time,
        api_version: "apiextensions.k8s.io/v1",
    };
    managed_fields::record_update(Some(crd), &mut accepted, &who);
    state.store(cluster, &gr, "", &name, &mut accepted)?;
    serve(state, cluster, &accepted)
}

/// Validates a CRD: its names and scope, that it does not take over a served resource, its
/// schemas (compiled and kept).
pub fn check(state: &mut State, cluster: &str, crd: &Value) -> ApiResult<()> {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let t = type_of_crd(crd).map_err(|(field, why)| {
        ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            &name,
            &field,
            &why,
        )
    })?;
    // A CRD may not take over a builtin resource (a CRD's own resource is keyed by its name).
    let cluster_data = state.clusters.get(cluster);
    let served = cluster_data.is_some_and(|c| c.registry.get(t.group_resource()).is_some());
    let own = cluster_data.is_some_and(|c| {
        c.get(
            &GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions"),
            "",
            &name,
        )
        .is_some()
    });
    // A resource bound by an APIBinding is kcp's: the CRD is stored, and the naming controller
    // refuses its names (crate::crd_names).
    let bound = state.flavor == crate::resource::Flavor::Kcp
        && crate::crd_names::bound_here(state, cluster, t.group_resource());
    if served && !own && !bound {
        return Err(ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            &name,
            "spec.names.plural",
            &format!(
                "Invalid value: \"{}\": is already served by the server",
                t.plural
            ),
        ));
    }
    compiled(state, cluster, crd)?;
    Ok(())
}

/// The status of an accepted CRD: `NamesAccepted` and `Established` (keeping the times of
/// conditions already true), `acceptedNames`, `storedVersions`.
fn established_status(crd: &Value) -> Value {
    let storage = type_of_crd(crd)
        .ok()
        .and_then(|t| t.versions.first().cloned())
        .unwrap_or_default();
    let time = now();
    let keep_time = |type_: &str| -> String {
        crd.pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c["type"] == type_ && c["status"] == "True")
                    .and_then(|c| c["lastTransitionTime"].as_str())
            })
            .map(String::from)
            .unwrap_or_else(|| time.clone())
    };
    let names_time = keep_time("NamesAccepted");
    let established_time = keep_time("Established");
    let mut stored_versions = crate::object_meta::strings_at(crd, "/status/storedVersions");
    if !stored_versions.contains(&storage) {
        stored_versions.push(storage);
    }
    let accepted = crd.pointer("/spec/names").cloned().unwrap_or(Value::Null);
    json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": names_time},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": established_time},
        ],
        "acceptedNames": accepted,
        "storedVersions": stored_versions,
    })
}

/// Serves (or re-serves, after a change) the resource of a stored, established CRD.
pub fn serve(state: &mut State, cluster: &str, crd: &Value) -> ApiResult<()> {
    if crd.pointer("/metadata/deletionTimestamp").is_some() || !is_established(crd) {
        return Ok(());
    }
    let Ok(t) = type_of_crd(crd) else {
        return Ok(());
    };
    let schemas = compiled(state, cluster, crd)?;
    if let Some(c) = state.clusters.get_mut(cluster) {
        let gr = t.group_resource().clone();
        c.registry.insert(t);
        let unchanged = c.schemas.get(&gr).is_some_and(|s| Arc::ptr_eq(s, &schemas));
        if !unchanged {
            default_stored_objects(c, &gr, &schemas)?;
            c.schemas.insert(gr, schemas);
        }
    }
    Ok(())
}

/// Applies the defaults of a new schema to the objects already stored, without a new
/// resourceVersion: kube-apiserver defaults them whenever it reads them from etcd.
fn default_stored_objects(
    c: &mut crate::store::ClusterData,
    gr: &GroupResource,
    schemas: &CrdSchemas,
) -> ApiResult<()> {
    if !schemas.versions.values().any(|n| n.has_defaults) {
        return Ok(());
    }
    let Some(objects) = c.objects.get_mut(gr) else {
        return Ok(());
    };
    for stored in objects.values_mut() {
        if let Some(defaulted) = schema::default_stored(schemas, stored) {
            *stored = Arc::new(defaulted?);
        }
    }
    Ok(())
}

/// Stops serving the resource of a CRD that is going away, and drops what is left of it.
pub fn unserve(state: &mut State, cluster: &str, crd: &Value) {
    // A CRD that was never established served nothing (its resource may be a binding's).
    if !is_established(crd) {
        return;
    }
    let Ok(t) = type_of_crd(crd) else {
        return;
    };
    if let Some(c) = state.clusters.get_mut(cluster) {
        let gr = t.group_resource();
        c.registry.remove(gr);
        c.objects.remove(gr);
        c.schemas.remove(gr);
        if let Some(name) = crd.pointer("/metadata/name").and_then(Value::as_str) {
            c.compiled_crds.remove(name);
        }
    }
}

/// Whether custom resources of this CRD still exist.
pub fn has_custom_resources(state: &State, cluster: &str, crd: &Value) -> bool {
    let Ok(t) = type_of_crd(crd) else {
        return false;
    };
    if !is_established(crd) {
        return false;
    }
    state
        .clusters
        .get(cluster)
        .and_then(|c| c.objects.get(t.group_resource()))
        .is_some_and(|m| !m.is_empty())
}

/// Deletes every custom resource of a CRD being deleted (finalizers are honoured).
pub fn delete_custom_resources(state: &mut State, cluster: &str, crd: &Value) -> ApiResult<()> {
    let Ok(t) = type_of_crd(crd) else {
        return Ok(());
    };
    if !is_established(crd) {
        return Ok(());
    }
    delete_objects_of(state, cluster, &t)
}

/// Deletes every object of a resource in a cluster (finalizers are honoured): what a CRD or an
/// APIBinding going away does to the resource it served.
pub fn delete_objects_of(state: &mut State, cluster: &str, t: &ResourceType) -> ApiResult<()> {
    let keys: Vec<String> = state
        .clusters
        .get(cluster)
        .and_then(|c| c.objects.get(t.group_resource()))
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for key in keys {
        let (ns, name) = key.split_once('/').unwrap_or(("", key.as_str()));
        match crate::semantics::delete(
            state,
            cluster,
            t,
            ns,
            name,
            &crate::semantics::DeleteRequest::default(),
        ) {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The warning every request for a CRD's version marked `deprecated` gets: its
/// `deprecationWarning`, or apiextensions-apiserver's default, which names the newest served
/// version that is not deprecated and newer than this one (in Kubernetes' version order).
pub fn deprecation_warning(crd: &Value, version: &str) -> Option<String> {
    use kube::core::Version;
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array)?;
    let this = versions
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
    if this.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if let Some(warning) = this.get("deprecationWarning").and_then(Value::as_str) {
        return Some(warning.to_string());
    }
    let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let (group, kind) = (text("/spec/group"), text("/spec/names/kind"));
    let priority = |v: &str| Version::parse(v).priority();
    let newer = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter(|v| v.get("deprecated").and_then(Value::as_bool) != Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .filter(|name| priority(name) > priority(version))
        .max_by_key(|name| priority(name));
    let mut message = format!("{group}/{version} {kind} is deprecated");
    if let Some(newer) = newer {
        message.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    Some(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::deprecation_warning;

    fn crd(versions: serde_json::Value) -> serde_json::Value {
        json!({"spec": {"group": "example.com", "names": {"kind": "Widget"}, "versions": versions}})
    }

    #[test]
    fn a_deprecated_version_points_to_the_newest_served_one() {
        let crd = crd(json!([
            {"name": "v1", "served": true, "deprecated": true},
            {"name": "v2", "served": true},
            {"name": "v1beta1", "served": true},
        ]));
        assert_eq!(
            deprecation_warning(&crd, "v1").as_deref(),
            Some("example.com/v1 Widget is deprecated; use example.com/v2 Widget")
        );
    }

    #[test]
    fn a_deprecated_newest_version_names_no_other() {
        let crd = crd(json!([
            {"name": "v1", "served": true},
            {"name": "v2", "served": true, "deprecated": true},
        ]));
        assert_eq!(
            deprecation_warning(&crd, "v2").as_deref(),
            Some("example.com/v2 Widget is deprecated")
        );
        assert_eq!(deprecation_warning(&crd, "v1"), None);
    }
}
