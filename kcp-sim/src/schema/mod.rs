//! CRD structural schemas, as kube-apiserver applies them to custom resources.
//!
//! A CRD's `spec.versions[*].schema.openAPIV3Schema` is read once per CRD generation into a
//! [`structural::Node`] tree with its CEL rules compiled ([`compile_crd`]); a schema that is not
//! structural, or a rule that does not compile, makes the CRD invalid (`422`, as
//! `apiextensions.k8s.io/v1` refuses it). Every write of a custom resource (create, update,
//! patch, apply; main resource and `/status`) then goes through [`admit`]: pruning of unknown
//! fields ([`prune`]), defaulting ([`default`]), validation ([`validate`]) and the
//! `x-kubernetes-validations` rules ([`cel`]); errors are the `422 Invalid` kube-apiserver
//! answers ([`field`]). Objects stored before their CRD gained a default get it when the new
//! schema is served, as kube-apiserver defaults them when reading them from etcd
//! ([`default_stored`]).

pub mod cel;
pub mod cel_budget;
pub mod cel_check;
pub mod cel_conversions;
pub mod cel_cost;
pub mod cel_errors;
pub mod cel_library;
pub mod cel_literals;
pub mod cel_overloads;
pub mod cel_size;
pub mod cel_type;
pub mod default;
pub mod field;
pub mod format;
pub mod prune;
pub mod structural;
pub mod validate;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::resource::ResourceType;
use crate::status::ApiResult;
use crate::store::Stored;
use field::{ErrorType, FieldError, invalid_object, refuse_if_invalid};
use structural::Node;
use validate::Path;

/// The compiled schemas of one CRD generation, by version.
#[derive(Debug)]
pub struct CrdSchemas {
    /// The CRD's uid.
    pub uid: String,
    /// The CRD's `metadata.generation` they were compiled from.
    pub generation: i64,
    /// The schema of each version that has one.
    pub versions: HashMap<String, Arc<Node>>,
    /// The `additionalPrinterColumns` of each version that lists any (a CRD's, or a bound
    /// APIResourceSchema's, whose Tables show them).
    pub printer_columns: HashMap<String, Vec<Value>>,
}

impl CrdSchemas {
    /// Whether these schemas were compiled from this CRD object (same uid and generation).
    pub fn compiled_from(&self, crd: &Value) -> bool {
        let (uid, generation) = identity(crd);
        self.uid == uid && self.generation == generation
    }

    /// The schema of the version an object is written at (by its `apiVersion`).
    pub fn for_object(&self, obj: &Value) -> Option<&Node> {
        let api_version = obj.get("apiVersion").and_then(Value::as_str)?;
        let version = api_version.rsplit('/').next()?;
        self.versions.get(version).map(Arc::as_ref)
    }
}

fn identity(crd: &Value) -> (&str, i64) {
    let uid = crd
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let generation = crd
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    (uid, generation)
}

/// Compiles the schemas of every version of a CRD, or the `422` that refuses the CRD.
pub fn compile_crd(crd: &Value) -> ApiResult<CrdSchemas> {
    let mut versions = listed_versions(crd, "schema/openAPIV3Schema", "schema.openAPIV3Schema");
    // kube-apiserver validates a schema every version shares once, as the internal CRD's
    // `spec.validation` it converts it to, and names that field in its errors.
    let all = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let shared = versions.len() == all
        && versions
            .first()
            .is_some_and(|(_, first, _)| versions.iter().all(|(_, s, _)| s == first));
    if shared {
        for (_, _, path) in &mut versions {
            *path = "spec.validation.openAPIV3Schema".to_string();
        }
    }
    compile_versions(
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        crd,
        &versions,
    )
}

/// Compiles the schemas of every version of a kcp APIResourceSchema (whose
/// `spec.versions[*].schema` is the OpenAPI v3 schema itself), or the `422` that refuses it.
pub fn compile_resource_schema(schema: &Value) -> ApiResult<CrdSchemas> {
    let versions = listed_versions(schema, "schema", "schema");
    compile_versions(("apis.kcp.io", "APIResourceSchema"), schema, &versions)
}

/// `(version, schema, field path)` of every version of `object` with a schema at `pointer`
/// (relative to the version entry); `field` names it in errors.
fn listed_versions<'a>(
    object: &'a Value,
    pointer: &str,
    field: &str,
) -> Vec<(&'a str, &'a Value, String)> {
    let listed = object.pointer("/spec/versions").and_then(Value::as_array);
    let pointer = format!("/{pointer}");
    listed
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            let name = v.get("name").and_then(Value::as_str)?;
            let schema = v.pointer(&pointer)?;
            Some((name, schema, format!("spec.versions[{i}].{field}")))
        })
        .collect()
}

fn compile_versions(
    (group, kind): (&str, &str),
    owner: &Value,
    listed: &[(&str, &Value, String)],
) -> ApiResult<CrdSchemas> {
    let (uid, generation) = identity(owner);
    let mut versions = HashMap::new();
    let mut errors: Vec<FieldError> = Vec::new();
    let mut reported = Vec::new();
    for (name, schema, path) in listed {
        match structural::parse(schema, path) {
            Ok(node) => {
                versions.insert(name.to_string(), Arc::new(node));
            }
            // A shared schema's errors are told once.
            Err(_) if reported.contains(&path) => {}
            Err(mut e) => {
                reported.push(path);
                errors.append(&mut e);
            }
        }
    }
    if !errors.is_empty() {
        let name = owner
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(invalid_object(group, kind, name, &errors));
    }
    Ok(CrdSchemas {
        uid: uid.to_string(),
        generation,
        versions,
        printer_columns: printer_columns(owner),
    })
}

/// The `additionalPrinterColumns` of each version of a CRD or APIResourceSchema that lists any.
fn printer_columns(owner: &Value) -> HashMap<String, Vec<Value>> {
    let listed = owner.pointer("/spec/versions").and_then(Value::as_array);
    listed
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let name = v.get("name").and_then(Value::as_str)?;
            let columns = v.get("additionalPrinterColumns")?.as_array()?;
            Some((name.to_string(), columns.clone()))
        })
        .collect()
}

/// Which part of an object a write changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource (everything but the status when the status subresource is on).
    Main,
    /// The `/status` subresource.
    Status,
}

/// Prunes, defaults and validates a custom resource being written: `old` is the stored object
/// on update. Only the status is looked at for [`Part::Status`].
pub fn admit(
    schemas: &CrdSchemas,
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    part: Part,
) -> ApiResult<()> {
    admit_reporting(schemas, rt, obj, old, part).map(|_| ())
}

/// The fields pruning would drop from a custom resource (`spec.extra`, `metadata.extra`),
/// leaving it as it is: what strict field validation refuses before anything else is checked.
pub fn unknown_fields(schemas: &CrdSchemas, obj: &Value) -> Vec<String> {
    let Some(node) = schemas.for_object(obj) else {
        return Vec::new();
    };
    let mut copy = obj.clone();
    prune::prune_reporting(node, &mut copy, true)
}

/// [`admit`], telling the fields pruning dropped (`spec.extra`), sorted.
pub fn admit_reporting(
    schemas: &CrdSchemas,
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    part: Part,
) -> ApiResult<Vec<String>> {
    let Some(node) = schemas.for_object(obj) else {
        return Ok(Vec::new());
    };
    let pruned = prune_and_default(node, obj, part);
    let errors = match part {
        Part::Main => validation_errors(node, obj, old),
        Part::Status => status_validation_errors(node, obj, old),
    };
    refuse_if_invalid(&rt.group, &rt.kind, obj, &errors).map(|()| pruned)
}

/// The pruning and defaulting of [`admit`] alone, for a kind whose validation is checked
/// elsewhere: the fields pruning dropped, sorted.
pub fn prune_and_default_reporting(
    schemas: &CrdSchemas,
    obj: &mut Value,
    part: Part,
) -> Vec<String> {
    match schemas.for_object(obj) {
        Some(node) => prune_and_default(node, obj, part),
        None => Vec::new(),
    }
}

/// Prunes and defaults the part of `obj` a write changes, as kube-apiserver's decoder does to
/// a custom resource: the fields pruning dropped, sorted.
fn prune_and_default(node: &Node, obj: &mut Value, part: Part) -> Vec<String> {
    match part {
        Part::Main => {
            let pruned = prune::prune_reporting(node, obj, true);
            default::apply(node, obj);
            pruned
        }
        Part::Status => {
            let Some(status_node) = node.properties.get("status") else {
                return Vec::new();
            };
            let Some(status) = obj.get_mut("status") else {
                return Vec::new();
            };
            let pruned = prune::prune_reporting(status_node, status, false)
                .into_iter()
                .map(|p| format!("status.{p}"))
                .collect();
            default::apply(status_node, status);
            pruned
        }
    }
}

/// What validating a status write finds: the status against the schema's `status`, its
/// rules unless a blocking error was found.
fn status_validation_errors(node: &Node, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let (Some(status_node), Some(status)) = (node.properties.get("status"), obj.get("status"))
    else {
        return errors;
    };
    let old_status = old.and_then(|o| o.get("status"));
    let mut path = Path::start(Some("status"));
    validate::validate(status_node, status, old_status, &mut path, &mut errors);
    rules_unless_blocked(status_node, status, old_status, &mut path, &mut errors);
    errors
}

/// What validating `obj` (`old` on update) against `node` finds, as kube-apiserver validates a
/// custom resource already pruned and defaulted: the schema's checks, then the CEL rules unless
/// a blocking error was found.
pub fn validation_errors(node: &Node, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut path = Path::start(None);
    validate::validate(node, obj, old, &mut path, &mut errors);
    rules_unless_blocked(node, obj, old, &mut path, &mut errors);
    errors
}

/// Runs the CEL rules after the schema's validation, as apiextensions-apiserver does: unless
/// a blocking error (a required, unsupported, too long, too many or wrongly typed value) was
/// found, in which case one more error says the rules were not checked.
fn rules_unless_blocked<'a>(
    node: &Node,
    value: &'a Value,
    old: Option<&'a Value>,
    path: &mut Path<'a>,
    errors: &mut Vec<FieldError>,
) {
    if !node.has_rules {
        return;
    }
    let blocking = errors.iter().any(|e| {
        matches!(
            e.kind,
            ErrorType::NotSupported
                | ErrorType::Required
                | ErrorType::TooLong
                | ErrorType::TooMany
                | ErrorType::TypeInvalid
        )
    });
    if blocking {
        errors.push(FieldError::invalid(
            "<nil>",
            Value::Null,
            "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ));
        return;
    }
    validate::run_rules(node, value, old, path, errors);
}

/// A stored custom resource with the defaults of its (new) schema applied, or `None` when it
/// needs none: what a read from etcd returns after the CRD gained a default.
pub fn default_stored(schemas: &CrdSchemas, stored: &Stored) -> Option<ApiResult<Stored>> {
    let mut obj = stored.value().ok()?;
    let node = schemas.for_object(&obj)?;
    if !node.has_defaults || !default::apply(node, &mut obj) {
        return None;
    }
    Some(Stored::encode(&obj, stored.rv).map(|mut s| {
        s.audience = stored.audience.clone();
        s
    }))
}
