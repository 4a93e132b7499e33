//! From a service-cluster CRD to the APIResourceSchema published in kcp (upstream §3.1).
//!
//! [`prepare_source_crd`] cleans the CRD read from the service cluster the way upstream does,
//! [`project_crd`] applies a PublishedResource's version selection and projection,
//! [`schema_name`] names the result `v<hash>.<plural>.<group>` with upstream's hash (SHA-1
//! of the Go JSON of the spec without `conversion`, see [`gojson`] for the canonical form),
//! and [`render_api_resource_schema`] builds the APIResourceSchema. CRDs are handled as JSON
//! so that every field the server returned takes part in the hash. [`builtin`] synthesises
//! the CRD of a builtin (non-CRD) kind.

pub mod builtin;
pub mod gojson;
pub mod openapi_v2;

use std::cmp::Ordering;
use std::collections::BTreeMap;

use kcp_core::kcp::types::{APIResourceSchema, APIResourceSchemaSpec, APIResourceVersion};
use kube::api::ObjectMeta;
use serde_json::{Value, json};

use crate::api::{
    AGENT_NAME_ANNOTATION, AGENT_NAME_LABEL, PublishedResource, SOURCE_GENERATION_ANNOTATION,
};
use crate::error::{Error, Result};
use crate::hash::sha1_hex;

/// The GVK of CustomResourceDefinitions.
pub fn crd_gvk() -> kcp_core::kube::api::GroupVersionKind {
    kcp_core::kube::api::GroupVersionKind::gvk(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    )
}

/// The annotation upstream keeps on the source CRD (it matters for `*.k8s.io` groups).
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// A group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    /// API group (empty for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// The CRD as upstream hashes and converts it: metadata reduced to `name`, `generation` and
/// the `api-approved.kubernetes.io` annotation; no status conditions;
/// `spec.conversion.strategy: None`; versions without a schema of a non-structural CRD get
/// `{type: object, x-kubernetes-preserve-unknown-fields: true}`.
pub fn prepare_source_crd(crd: &Value) -> Value {
    let metadata = crd.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut kept = json!({});
    for field in ["name", "generation"] {
        if let Some(v) = metadata.get(field) {
            kept[field] = v.clone();
        }
    }
    if let Some(v) = metadata
        .get("annotations")
        .and_then(|a| a.get(API_APPROVED_ANNOTATION))
    {
        kept["annotations"] = json!({ API_APPROVED_ANNOTATION: v });
    }
    let mut spec = crd.get("spec").cloned().unwrap_or_else(|| json!({}));
    spec["conversion"] = json!({"strategy": "None"});
    if is_non_structural(crd)
        && let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut)
    {
        for version in versions.iter_mut().filter(|v| v.get("schema").is_none()) {
            version["schema"] = json!({"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            }});
        }
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": kept,
        "spec": spec,
    })
}

fn is_non_structural(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("NonStructuralSchema")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Applies `pr`'s version selection and projection to `crd` (upstream's `ProjectCRD`):
/// drop unselected versions, make the last served version the storage version when none is,
/// rename versions (sorted by Kube version priority after a map rename), then group, kind
/// (list kind, singular, plural), plural, scope, categories and short names, and
/// `metadata.name = <plural>.<group>`.
pub fn project_crd(pr: &PublishedResource, crd: &Value) -> Result<Value> {
    let mut result = crd.clone();
    let invalid = |field: &str, reason: String| Error::InvalidSpec {
        published_resource: pr.name().to_owned(),
        field: field.to_owned(),
        reason,
    };
    let mut versions = spec_versions(crd);
    select_versions(pr, &mut versions).map_err(|r| invalid("spec.resource.versions", r))?;
    adjust_storage(&mut versions).map_err(|r| invalid("spec.resource.versions", r))?;
    project_versions(pr, &mut versions).map_err(|r| invalid("spec.projection.versions", r))?;
    result["spec"]["versions"] = Value::Array(versions);
    project_names(pr, &mut result);
    Ok(result)
}

fn spec_versions(crd: &Value) -> Vec<Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn version_name(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or_default()
}

fn flag(v: &Value, field: &str) -> bool {
    v.get(field).and_then(Value::as_bool).unwrap_or(false)
}

fn select_versions(pr: &PublishedResource, versions: &mut Vec<Value>) -> Result<(), String> {
    let src = &pr.spec.resource;
    if !src.version.is_empty() && !src.versions.is_empty() {
        return Err("cannot configure both .version and .versions".into());
    }
    if !src.version.is_empty() {
        versions.retain(|v| version_name(v) == src.version);
    } else if !src.versions.is_empty() {
        versions.retain(|v| src.versions.iter().any(|s| s == version_name(v)));
    }
    if !versions.is_empty() {
        return Ok(());
    }
    Err(if !src.version.is_empty() {
        format!("CRD does not contain version {}", src.version)
    } else if !src.versions.is_empty() {
        format!("CRD does not contain any of versions {:?}", src.versions)
    } else {
        "CRD contains no versions".into()
    })
}

/// When no selected version is the storage version, the last served one in list order
/// becomes it (upstream's code; its docs say "highest").
fn adjust_storage(versions: &mut [Value]) -> Result<(), String> {
    let latest_served = versions
        .iter()
        .rposition(|v| flag(v, "served"))
        .ok_or("no selected CRD version is served")?;
    if !versions.iter().any(|v| flag(v, "storage")) {
        versions[latest_served]["storage"] = json!(true);
    }
    Ok(())
}

fn project_versions(pr: &PublishedResource, versions: &mut [Value]) -> Result<(), String> {
    let Some(projection) = &pr.spec.projection else {
        return Ok(());
    };
    if !projection.version.is_empty() {
        if versions.len() != 1 {
            return Err(format!(
                "cannot project to the single version {:?}: {} versions are selected",
                projection.version,
                versions.len()
            ));
        }
        versions[0]["name"] = json!(projection.version);
    } else if !projection.versions.is_empty() {
        for v in versions.iter_mut() {
            if let Some(new) = projection
                .versions
                .get(version_name(v))
                .filter(|n| !n.is_empty())
            {
                v["name"] = json!(new);
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for v in versions.iter() {
            if !seen.insert(version_name(v).to_owned()) {
                return Err(format!(
                    "two versions are named {:?} after the projection",
                    version_name(v)
                ));
            }
        }
        versions.sort_by(|a, b| compare_kube_versions(version_name(a), version_name(b)));
    }
    Ok(())
}

fn project_names(pr: &PublishedResource, crd: &mut Value) {
    if let Some(p) = &pr.spec.projection {
        let spec = &mut crd["spec"];
        if !p.group.is_empty() {
            spec["group"] = json!(p.group);
        }
        if !p.kind.is_empty() {
            let singular = p.kind.to_lowercase();
            spec["names"]["kind"] = json!(p.kind);
            spec["names"]["listKind"] = json!(format!("{}List", p.kind));
            spec["names"]["plural"] = json!(format!("{singular}s"));
            spec["names"]["singular"] = json!(singular);
        }
        if !p.plural.is_empty() {
            spec["names"]["plural"] = json!(p.plural);
        }
        if let Some(scope) = p.scope {
            spec["scope"] = json!(scope.as_str());
        }
        if let Some(categories) = &p.categories {
            spec["names"]["categories"] = json!(categories);
        }
        if let Some(short_names) = &p.short_names {
            spec["names"]["shortNames"] = json!(short_names);
        }
    }
    let name = format!(
        "{}.{}",
        str_at(crd, "/spec/names/plural"),
        str_at(crd, "/spec/group")
    );
    crd["metadata"]["name"] = json!(name);
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Kubernetes' version priority order (`CompareKubeAwareVersionStrings`), ascending:
/// non-Kube strings first (in reverse lexical order), then alpha, beta and GA versions, each
/// by major and then minor number: `foo < v1alpha1 < v2alpha1 < v1beta1 < v1 < v2`.
pub fn compare_kube_versions(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((ma, ta, na)), Some((mb, tb, nb))) => ta.cmp(&tb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
    }
}

/// `v<major>[(alpha|beta)<minor>]` as (major, type: 0 alpha / 1 beta / 2 GA, minor).
fn parse_kube_version(v: &str) -> Option<(u64, u8, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let major = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((major, 2, 0));
    }
    let (kind, minor) = if let Some(m) = tail.strip_prefix("alpha") {
        (0, m)
    } else if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((major, kind, minor.parse().ok()?))
}

/// The APIResourceSchema name for a projected CRD: `v` + the first 8 hex characters of SHA-1
/// over the Go JSON of its spec without `conversion` (plus a newline) + `.<plural>.<group>`.
pub fn schema_name(projected_crd: &Value) -> String {
    let mut spec = projected_crd
        .get("spec")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(map) = spec.as_object_mut() {
        map.remove("conversion");
    }
    let mut text = gojson::crd_spec_json(&spec);
    text.push('\n');
    let hash = sha1_hex(text);
    format!(
        "v{}.{}.{}",
        &hash[..8],
        str_at(projected_crd, "/spec/names/plural"),
        str_at(projected_crd, "/spec/group")
    )
}

/// The storage version's GVK of a CRD (`None` when no version is the storage version).
pub fn storage_gvk(crd: &Value) -> Option<Gvk> {
    let version = spec_versions(crd)
        .into_iter()
        .find(|v| flag(v, "storage"))?;
    Some(Gvk {
        group: str_at(crd, "/spec/group").to_owned(),
        version: version_name(&version).to_owned(),
        kind: str_at(crd, "/spec/names/kind").to_owned(),
    })
}

/// The APIResourceSchema `name` for `projected_crd` (kcp's CRD-to-schema conversion): group,
/// names, scope and versions (schema, subresources, printer columns, deprecation),
/// `conversion: {strategy: None}` with more than one version; labelled and annotated with
/// the agent name and annotated with the source CRD's generation.
pub fn render_api_resource_schema(
    projected_crd: &Value,
    name: &str,
    agent: &str,
    source_generation: i64,
) -> Result<APIResourceSchema> {
    let crd_name = str_at(projected_crd, "/metadata/name").to_owned();
    let names = serde_json::from_value(
        projected_crd
            .pointer("/spec/names")
            .cloned()
            .unwrap_or_else(|| json!({})),
    )
    .map_err(|err| Error::InvalidCrd {
        crd: crd_name.clone(),
        field: "spec.names".into(),
        reason: err.to_string(),
    })?;
    let versions = spec_versions(projected_crd)
        .iter()
        .map(|v| resource_version(&crd_name, v))
        .collect::<Result<Vec<_>>>()?;
    let conversion = (versions.len() > 1).then(|| json!({"strategy": "None"}));
    let mut schema = APIResourceSchema::new(
        name,
        APIResourceSchemaSpec {
            group: str_at(projected_crd, "/spec/group").to_owned(),
            names,
            scope: str_at(projected_crd, "/spec/scope").to_owned(),
            versions,
            conversion,
        },
    );
    schema.metadata = ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(BTreeMap::from([(
            AGENT_NAME_LABEL.to_owned(),
            agent.to_owned(),
        )])),
        annotations: Some(BTreeMap::from([
            (AGENT_NAME_ANNOTATION.to_owned(), agent.to_owned()),
            (
                SOURCE_GENERATION_ANNOTATION.to_owned(),
                source_generation.to_string(),
            ),
        ])),
        ..ObjectMeta::default()
    };
    Ok(schema)
}

fn resource_version(crd: &str, v: &Value) -> Result<APIResourceVersion> {
    let schema = v
        .pointer("/schema/openAPIV3Schema")
        .cloned()
        .ok_or_else(|| Error::InvalidCrd {
            crd: crd.to_owned(),
            field: format!("spec.versions[{}].schema.openAPIV3Schema", version_name(v)),
            reason: "a published version needs a schema".into(),
        })?;
    Ok(APIResourceVersion {
        name: version_name(v).to_owned(),
        served: flag(v, "served"),
        storage: flag(v, "storage"),
        deprecated: v.get("deprecated").and_then(Value::as_bool),
        deprecation_warning: v
            .get("deprecationWarning")
            .and_then(Value::as_str)
            .map(str::to_owned),
        schema,
        subresources: v.get("subresources").cloned(),
        additional_printer_columns: v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .cloned(),
    })
}

#[cfg(test)]
mod tests;
