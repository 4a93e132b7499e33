//! A client's body read as kube-apiserver's decoder reads it, and what its encoder writes back:
//! the builtin kinds through their Go types ([`crate::builtin_decoding`]), `fieldValidation`
//! judging unknown and duplicate fields ([`crate::field_validation`]), and the zero fields Go
//! writes of a stored object.

use prost_reflect::MessageDescriptor;
use serde_json::Value;

use super::{WriteOptions, Written, meta_str};
use crate::field_validation::{self, FieldValidation, Findings};
use crate::resource::ResourceType;
use crate::schema;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// Reads a client's body as kube-apiserver's decoder does: a builtin kind through its Go type
/// (unknown fields dropped, zero `omitempty` fields dropped, a value of a wrong type refused
/// with Go's words); a custom resource's (or a kcp kind's) unknown fields are found here only under `Strict`
/// (pruning drops and warns of them later). Answers what field validation judges, with the
/// request's duplicate keys.
fn decode_as_go(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    obj: &mut Value,
    opts: &WriteOptions,
) -> Result<Findings, String> {
    let mut findings = Findings {
        unknown: Vec::new(),
        duplicates: opts.duplicates.clone(),
    };
    if let Some(schemas) = super::admission_schemas(state, cluster, rt) {
        if opts.field_validation == Some(FieldValidation::Strict) {
            findings.unknown = schema::unknown_fields(schemas, obj);
        }
        return Ok(findings);
    }
    let Ok(proto) = crate::protobuf::schema::Schema::get() else {
        return Ok(findings);
    };
    if let Some(desc) = proto.message_for(&rt.api_version(version), &rt.kind) {
        findings.unknown = crate::builtin_decoding::decode(proto, &desc, obj)?;
    }
    Ok(findings)
}

/// A server-side apply body's fields must all be declared by the kind's schema, whatever the
/// `fieldValidation` (structured-merge-diff refuses the rest with a `500`). A value its Go type
/// cannot hold (an int-or-string that is a list, a quantity or time its parser refuses; the
/// typed check has refused every other) fails the applied object's conversion to that type:
/// kube-apiserver's `500`, without a reason.
pub(super) fn check_declared(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    url_name: &str,
    applied: &Value,
    opts: &WriteOptions,
) -> ApiResult<()> {
    let mut copy = applied.clone();
    let strict = WriteOptions {
        field_validation: Some(FieldValidation::Strict),
        duplicates: Vec::new(),
        ..opts.clone()
    };
    let findings = decode_as_go(state, cluster, rt, version, &mut copy, &strict)
        .map_err(|why| conversion_failure(applied, &why))?;
    if findings.unknown.is_empty() {
        return Ok(());
    }
    let mut paths: Vec<String> = findings
        .unknown
        .iter()
        .map(|p| field_validation::apply_path(p, applied))
        .collect();
    // structured-merge-diff names what it finds inside a map's fields before the map's own
    // unknown fields: the deeper first.
    paths.sort_by_key(|p| std::cmp::Reverse(p.matches('.').count()));
    let object = format!(
        "{}/{}",
        meta_str(applied, "namespace").unwrap_or_default(),
        meta_str(applied, "name").unwrap_or(url_name)
    );
    Err(field_validation::undeclared_in_apply(
        &object,
        &rt.api_version(version),
        &rt.kind,
        &paths,
    ))
}

/// kube-apiserver's failure to convert an applied object into its Go type. The value is read
/// alone (an int-or-string's own decoder reads it), so Go's error names no struct field.
fn conversion_failure(applied: &Value, why: &str) -> ApiError {
    let gvk = super::group_version_kind(applied);
    let why = match (why.find(" into Go struct field "), why.rfind(" of type ")) {
        (Some(start), Some(end)) if start < end => {
            format!("{} into Go value{}", &why[..start], &why[end..])
        }
        _ => why.to_owned(),
    };
    ApiError::new(
        500,
        "",
        format!(
            "failed to convert new object ({}/{}; {gvk}) to proper version: unable to convert unstructured object to {gvk}: {why}",
            meta_str(applied, "namespace").unwrap_or_default(),
            meta_str(applied, "name").unwrap_or_default(),
        ),
    )
}

/// An applied object of a builtin kind as its Go type stores it (quantities in Go's text,
/// zero `omitempty` fields left out), as kube-apiserver converts the merged object.
pub(super) fn as_go_stores(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    obj: &mut Value,
) {
    if let Some((proto, desc)) = go_type(state, cluster, rt, &rt.api_version(version)) {
        // The configuration decoded already (`check_declared`); the merged object can only
        // hold what the live one and it held.
        let _ = crate::builtin_decoding::decode(proto, &desc, obj);
    }
}

/// The Go type of a builtin kind at `api_version`, with the schema that reads it; `None` for
/// a custom resource, or a CRD or bound schema of a builtin kind's name.
fn go_type(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    api_version: &str,
) -> Option<(&'static crate::protobuf::schema::Schema, MessageDescriptor)> {
    if state.is_custom(cluster, rt.group_resource()) {
        return None;
    }
    let proto = crate::protobuf::schema::Schema::get().ok()?;
    Some((proto, proto.message_for(api_version, &rt.kind)?))
}

/// [`decode_as_go`] for a create or update body: the warnings of the write, or its `400`.
pub(super) fn decode_body_as_go(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    obj: &mut Value,
    opts: &WriteOptions,
) -> ApiResult<Vec<String>> {
    let Some(mode) = opts.field_validation else {
        return Ok(Vec::new());
    };
    decode_as_go(state, cluster, rt, version, obj, opts)
        .map_err(|why| field_validation::cannot_be_handled(&rt.kind, version, &why))?
        .judge_body(mode, &rt.kind, version)
}

/// [`decode_as_go`] for a patched object: the warnings of the write, or the `422` about the
/// patch, showing `shown` (the patched object as JSON, or a strategic patch as Go prints it).
pub(super) fn decode_patched_as_go(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    version: &str,
    obj: &mut Value,
    opts: &WriteOptions,
    shown: impl FnOnce(&Value) -> String,
) -> ApiResult<Vec<String>> {
    let Some(mode) = opts.field_validation else {
        return Ok(Vec::new());
    };
    let before = (mode == FieldValidation::Strict).then(|| obj.clone());
    let shown_of = |obj: &Value| shown(before.as_ref().unwrap_or(obj));
    match decode_as_go(state, cluster, rt, version, obj, opts) {
        Ok(findings) => findings.judge_patch(mode, || shown_of(obj)),
        Err(why) => Err(field_validation::invalid_patch(&shown_of(obj), &why)),
    }
}

/// Adds the fields Go's encoder writes of a builtin kind's stored object that its JSON left
/// out ([`crate::builtin_decoding::add_zero_fields`]); after the writer's fields are recorded,
/// which these are not.
pub(super) fn with_go_zero_fields(
    state: &State,
    cluster: &str,
    rt: &ResourceType,
    obj: &mut Value,
) {
    let Some(api_version) = obj.get("apiVersion").and_then(Value::as_str) else {
        return;
    };
    if let Some((proto, desc)) = go_type(state, cluster, rt, api_version) {
        crate::builtin_decoding::add_zero_fields(proto, &desc, obj);
    }
}

/// A write's answer with the warnings of decoding its body before its own.
pub(super) fn warned_first(mut warnings: Vec<String>, mut written: Written) -> Written {
    warnings.append(&mut written.warnings);
    written.warnings = warnings;
    written
}
