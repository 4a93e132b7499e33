//! APIBindings: a binding serves its export's resources in the consumer workspace (discovery,
//! CRUD, watch, status, as for a CRD) and reports it in its status (`phase: Bound`,
//! `boundResources`, `apiExportClusterName`, conditions, the export's and the accepted permission
//! claims). A resource already served in the workspace (builtin, CRD or another binding) is a
//! naming conflict: it is not bound and the binding is not Bound. Resources added to the export
//! later are bound when the export changes.
//!
//! Deleting a binding deletes the objects of its resources first (finalizers are honoured, the
//! binding waits in Terminating), then stops serving them.

use serde_json::{Value, json};

use super::audience::{self, bound_resources};
use super::conditions::{self, Condition};
use super::export::Export;
use super::{GROUP, bindings, endpoints, objects_of, schema, str_at};
use crate::kcp::system_apis;
use crate::resource::{GroupResource, ResourceType};
use crate::status::ApiResult;
use crate::store::State;

/// The condition saying whether the referenced export exists.
pub const APIEXPORT_VALID: &str = "APIExportValid";
/// The condition saying whether the first binding of every resource succeeded.
pub const INITIAL_BINDING_COMPLETED: &str = "InitialBindingCompleted";
/// The condition saying whether every resource of the export is bound.
pub const BINDING_UP_TO_DATE: &str = "BindingUpToDate";
/// The condition saying whether the accepted claims are claims of the export.
pub const PERMISSION_CLAIMS_VALID: &str = "PermissionClaimsValid";
/// The condition saying whether the accepted claims are in effect.
pub const PERMISSION_CLAIMS_APPLIED: &str = "PermissionClaimsApplied";

/// What kcp's APIBinding admission does to a new binding: a binding to an export in another
/// workspace that cannot be found is refused (kcp words it as missing permission, so as not to
/// tell whether the workspace exists); the binding is labelled with the export it binds
/// ([`super::labels::EXPORT_LABEL`]). A binding to an export of its own workspace, or of
/// `root`, is admitted whether the export exists or not, and waits for it.
pub fn admit(state: &State, cluster: &str, binding: &mut Value) -> ApiResult<()> {
    let path = str_at(binding, "/spec/reference/export/path").to_string();
    let name = str_at(binding, "/spec/reference/export/name").to_string();
    let export_cluster = match path.as_str() {
        "" => cluster.to_string(),
        crate::kcp::ROOT => crate::kcp::ROOT.to_string(),
        path => match Export::find(state, path, &name) {
            Some(export) => export.cluster,
            None => {
                return Err(crate::kcp::admission_forbidden(
                    GROUP,
                    "apibindings",
                    str_at(binding, "/metadata/name"),
                    &format!(
                        "unable to create APIBinding: no permission to bind to export {path}:{name}"
                    ),
                ));
            }
        },
    };
    if let Some(meta) = binding.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        labels[super::labels::EXPORT_LABEL] =
            json!(super::labels::export_label_value(&export_cluster, &name));
        // kcp's apibindingfinalizer admission: the binding's objects go before it does.
        let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut()
            && !list.iter().any(|f| f == crate::kcp::APIBINDING_FINALIZER)
        {
            list.push(json!(crate::kcp::APIBINDING_FINALIZER));
        }
    }
    Ok(())
}

/// The workspace (path or cluster name) of the export a binding in `cluster` refers to.
fn export_path(binding: &Value, cluster: &str) -> String {
    match str_at(binding, "/spec/reference/export/path") {
        "" => cluster.to_string(),
        path => path.to_string(),
    }
}

/// Brings a binding up to date with its export: serves the export's resources and writes the
/// status; then the audiences of the cluster and the endpoints of the export follow.
pub fn reconcile(state: &mut State, cluster: &str, name: &str) -> ApiResult<()> {
    let Some(stored) = state.lookup(cluster, &bindings(), "", name) else {
        return Ok(());
    };
    let mut binding = stored.value()?;
    if binding.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(());
    }
    let mut old = binding.clone();
    let before = binding.get("status").cloned();
    let labels_before = labels_of(&binding);
    // kcp's permission claim labeller writes labels without owning them: the reflexive label
    // while the export exists, none once it is gone (conformance
    // kcp-apis/a-binding-whose-export-is-deleted-says-so).
    let export_name = str_at(&binding, "/spec/reference/export/name").to_string();
    let bound_to = str_at(&binding, "/status/apiExportClusterName").to_string();
    match Export::find(state, &export_path(&binding, cluster), &export_name) {
        Some(export) => {
            for obj in [&mut binding, &mut old] {
                reflexive_label(obj, &export);
            }
        }
        None if !bound_to.is_empty() => {
            let (key, _) = super::labels::reflexive_binding_label(&bound_to, &export_name);
            for obj in [&mut binding, &mut old] {
                if let Some(labels) = obj
                    .pointer_mut("/metadata/labels")
                    .and_then(Value::as_object_mut)
                {
                    labels.remove(&key);
                }
            }
        }
        None => {}
    }
    if str_at(&binding, "/status/phase").is_empty() {
        binding["status"]["phase"] = json!("Binding");
    }
    let path = export_path(&binding, cluster);
    let previous_export = str_at(&binding, "/status/apiExportClusterName").to_string();
    match Export::find(state, &path, &export_name) {
        Some(export) => bind(state, cluster, &export, &mut binding),
        None => {
            let why = format!("APIExport {path}|{export_name} not found");
            conditions::set(
                &mut binding,
                Condition::failed(APIEXPORT_VALID, "APIExportNotFound", &why),
            );
        }
    }
    // Ready follows the first binding only, as kcp's summary: later conditions may turn.
    conditions::set_summary(&mut binding, Some(&[INITIAL_BINDING_COMPLETED]));
    if binding.get("status") != before.as_ref() || labels_before != labels_of(&binding) {
        let api_version = format!("{GROUP}/v1alpha2");
        crate::kcp::controller_write(
            state,
            cluster,
            &bindings(),
            &old,
            &mut binding,
            &api_version,
        )?;
    }
    audience::refresh(state, cluster)?;
    system_apis::record_resource_bindings(state, cluster)?;
    let export_cluster = str_at(&binding, "/status/apiExportClusterName").to_string();
    if !export_cluster.is_empty() {
        endpoints::refresh_for_export(state, &export_cluster, &export_name)?;
    }
    if !previous_export.is_empty() && previous_export != export_cluster {
        endpoints::refresh_for_export(state, &previous_export, &export_name)?;
    }
    Ok(())
}

fn labels_of(binding: &Value) -> Option<Value> {
    binding.pointer("/metadata/labels").cloned()
}

/// Binds every resource of the export that does not conflict, and sets phase and conditions.
/// kcp's permission claim labeller marks every binding of an existing export so that the
/// export's owner sees it (the "reflexive" claim label).
fn reflexive_label(binding: &mut Value, export: &Export) {
    let (key, value) = super::labels::reflexive_binding_label(&export.cluster, &export.name);
    if let Some(meta) = binding.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.entry(key).or_insert_with(|| json!(value));
        }
    }
}

fn bind(state: &mut State, cluster: &str, export: &Export, binding: &mut Value) {
    binding["status"]["apiExportClusterName"] = json!(export.cluster);
    conditions::set(binding, Condition::ok(APIEXPORT_VALID));
    let mut bound: Vec<Value> = binding
        .pointer("/status/boundResources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut conflicts = Vec::new();
    let mut missing = Vec::new();
    for r in &export.resources {
        let Some((schema, t)) = schema::load(state, &export.cluster, &r.schema)
            .and_then(|s| schema::type_of(&s).map(|t| (s, t)))
        else {
            missing.push(r.schema.clone());
            continue;
        };
        let gr = t.group_resource().clone();
        let mine = bound
            .iter()
            .any(|b| str_at(b, "/group") == gr.group && str_at(b, "/resource") == gr.resource);
        let served = state
            .clusters
            .get(cluster)
            .is_some_and(|c| c.registry.get(&gr).is_some());
        // kcp's own kinds are served by kcp-sim itself; root's exports of them bind them as
        // they are.
        let own_kind = served && system_apis::is_system_export(&export.cluster, &export.name);
        if served && !mine && !own_kind {
            conflicts.push(gr.clone());
            continue;
        }
        let entry = bound_entry(&schema, &t, &export.identity_hash);
        bound.retain(|b| str_at(b, "/group") != gr.group || str_at(b, "/resource") != gr.resource);
        bound.push(entry);
        if own_kind {
            continue;
        }
        // Schemas are checked when the APIResourceSchema is created, so this compiles.
        let compiled = schema::compiled_for_binding(state, cluster, &t, &schema).ok();
        if let Some(c) = state.clusters.get_mut(cluster) {
            match compiled {
                Some(compiled) => c.schemas.insert(gr.clone(), compiled),
                None => c.schemas.remove(&gr),
            };
            c.registry.insert(t);
        }
    }
    if !bound.is_empty() {
        binding["status"]["boundResources"] = Value::Array(bound);
    }
    super::binding_claims::write_status(export, binding);
    let locks = (!conflicts.is_empty()).then(|| go_locks(state, cluster, &conflicts));
    set_phase(binding, &missing, locks.as_deref());
}

/// kcp's `%v` of the locks that kept resources from being bound (a Go map from group and
/// resource to its holder, `{<binding> <is a CRD>}`), as its binding controller words them:
/// `map[widgets.example.com:{widgets false}]`, keys in Go's order (group, then resource). The
/// holders are the LogicalCluster's `internal.apis.kcp.io/resource-bindings` record.
fn go_locks(state: &State, cluster: &str, conflicts: &[GroupResource]) -> String {
    let record = system_apis::resource_locks(state, cluster);
    let mut keys: Vec<&GroupResource> = conflicts.iter().collect();
    keys.sort_by(|a, b| (&a.group, &a.resource).cmp(&(&b.group, &b.resource)));
    keys.dedup();
    let entries: Vec<String> = keys
        .into_iter()
        .map(|gr| {
            let key = match gr.group.as_str() {
                "" => gr.resource.clone(),
                group => format!("{}.{group}", gr.resource),
            };
            let lock = record.get(&key);
            let holder = lock.and_then(|l| l.get("n")).and_then(Value::as_str);
            let crd = lock.and_then(|l| l.get("c")).and_then(Value::as_bool);
            format!(
                "{key}:{{{} {}}}",
                holder.unwrap_or_default(),
                crd.unwrap_or(false)
            )
        })
        .collect();
    format!("map[{}]", entries.join(" "))
}

fn bound_entry(schema: &Value, t: &ResourceType, identity_hash: &str) -> Value {
    json!({
        "group": t.group,
        "resource": t.plural,
        "schema": {
            "name": str_at(schema, "/metadata/name"),
            "UID": str_at(schema, "/metadata/uid"),
            "identityHash": identity_hash,
        },
        "storageVersions": [t.versions.first().cloned().unwrap_or_default()],
    })
}

/// Phase and binding conditions from what could not be bound.
fn set_phase(binding: &mut Value, missing: &[String], locks: Option<&str>) {
    let initial_done = conditions::is_true(binding, INITIAL_BINDING_COMPLETED);
    let (reason, why) = if !missing.is_empty() {
        (
            "APIResourceSchemaInvalid",
            format!("APIResourceSchemas not found: {missing:?}"),
        )
    } else if let Some(locks) = locks {
        (
            "NamingConflicts",
            format!(
                "Unable to bind APIs because they are bound by other APIBindings or CRDs: {locks}"
            ),
        )
    } else {
        conditions::set(binding, Condition::ok(INITIAL_BINDING_COMPLETED));
        conditions::set(binding, Condition::ok(BINDING_UP_TO_DATE));
        binding["status"]["phase"] = json!("Bound");
        return;
    };
    conditions::set(binding, Condition::failed(BINDING_UP_TO_DATE, reason, &why));
    if !initial_done {
        conditions::set(
            binding,
            Condition::failed(INITIAL_BINDING_COMPLETED, reason, &why),
        );
    }
}

/// Reconciles every binding (in any cluster) that refers to the export `name` in `cluster`.
pub fn reconcile_bindings_of(state: &mut State, cluster: &str, name: &str) -> ApiResult<()> {
    let gr = bindings();
    let mut found = Vec::new();
    for (consumer, data) in &state.clusters {
        for obj in data.objects.get(&gr).into_iter().flat_map(|m| m.values()) {
            let Ok(binding) = obj.value() else { continue };
            if str_at(&binding, "/spec/reference/export/name") != name {
                continue;
            }
            let path = export_path(&binding, consumer);
            if state.resolve_cluster(&path) == Some(cluster) {
                found.push((
                    consumer.clone(),
                    str_at(&binding, "/metadata/name").to_string(),
                ));
            }
        }
    }
    for (consumer, binding) in found {
        reconcile(state, &consumer, &binding)?;
    }
    Ok(())
}

/// The terminating binding that bound a resource in a cluster, if one waits for its objects.
pub fn terminating_binding_of(state: &State, cluster: &str, gr: &GroupResource) -> Option<String> {
    objects_of(state, cluster, &bindings())
        .into_iter()
        .filter(|b| b.pointer("/metadata/deletionTimestamp").is_some())
        .find(|b| bound_resources(b).contains(gr))
        .map(|b| str_at(&b, "/metadata/name").to_string())
}

/// Whether objects of a binding's resources are left in the cluster.
pub fn has_bound_objects(state: &State, cluster: &str, binding: &Value) -> bool {
    let Some(data) = state.clusters.get(cluster) else {
        return false;
    };
    bound_resources(binding)
        .iter()
        .any(|gr| data.objects.get(gr).is_some_and(|m| !m.is_empty()))
}

/// Deletes every object of a terminating binding's resources (finalizers are honoured).
pub fn delete_bound_objects(state: &mut State, cluster: &str, binding: &Value) -> ApiResult<()> {
    for gr in bound_resources(binding) {
        let Some(rt) = state.served_type(cluster, &gr) else {
            continue;
        };
        crate::crd::delete_objects_of(state, cluster, &rt)?;
    }
    Ok(())
}

/// After a binding is gone: its resources are no longer served, and audiences and endpoints
/// follow.
pub fn removed(state: &mut State, cluster: &str, binding: &Value) -> ApiResult<()> {
    // kcp's own kinds stay served by kcp-sim.
    if let Some(data) = state.clusters.get_mut(cluster)
        && !system_apis::binds_system_export(binding)
    {
        for gr in bound_resources(binding) {
            data.registry.remove(&gr);
            data.schemas.remove(&gr);
            data.objects.remove(&gr);
        }
    }
    audience::refresh(state, cluster)?;
    system_apis::record_resource_bindings(state, cluster)?;
    let export_cluster = str_at(binding, "/status/apiExportClusterName");
    if !export_cluster.is_empty() {
        let name = str_at(binding, "/spec/reference/export/name");
        endpoints::refresh_for_export(state, export_cluster, name)?;
    }
    Ok(())
}
