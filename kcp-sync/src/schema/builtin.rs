//! A CustomResourceDefinition for a builtin (non-CRD) kind, synthesised from discovery and
//! OpenAPI v3 documents (upstream §3.1 step 1, which reads OpenAPI v2 models instead).
//!
//! [`synthesize_crd`] is pure: what discovery said about the kind ([`Discovered`]) and the
//! OpenAPI v3 document of each of its versions in, the CRD value out, as upstream builds it:
//! named `<plural>.<group>` (`<plural>.core` for the core group), one version per discovered
//! version sorted by Kube version priority, `storage` on the preferred version, status and
//! scale subresources from discovery, CRD defaulting applied (`listKind`, `singular`,
//! `conversion: None`), and `api-approved.kubernetes.io` for `*.k8s.io` and
//! `*.kubernetes.io` groups.
//!
//! Each version's `openAPIV3Schema` is [`structural_schema`]: self-contained and structural,
//! as a CRD must be:
//! - every `$ref` (bare or as the single entry of an `allOf`) is inlined, the referring node's
//!   description winning; a reference back into a definition being inlined (a cycle, as
//!   apiextensions' `JSONSchemaProps`) becomes `x-kubernetes-preserve-unknown-fields: true`
//!   at the recursion point;
//! - int-or-string nodes (IntOrString, and Quantity, which is a string or a number on the
//!   wire) become `x-kubernetes-int-or-string: true` with `anyOf: [integer, string]`; Time and
//!   MicroTime are `string`/`date-time`; RawExtension and untyped nodes preserve unknown
//!   fields;
//! - the root keeps `apiVersion` and `kind` as strings and `metadata` as `type: object`, as a
//!   CRD does; an embedded ObjectMeta (a pod template's) preserves unknown fields so labels
//!   and annotations survive pruning;
//! - only keywords a CRD schema accepts are kept: no `x-kubernetes-patch-*`,
//!   `x-kubernetes-group-version-kind`, `uniqueItems` or `x-kubernetes-validations` (CEL rules
//!   of builtin types are enforced by the builtin server, not re-checked in kcp); a
//!   `x-kubernetes-list-type: map` stays only where every key is required or defaulted (kube
//!   refuses it otherwise), else the list is atomic.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{API_APPROVED_ANNOTATION, compare_kube_versions};

/// The value upstream gives the api-approved annotation of a synthesised CRD.
pub const API_APPROVED_VALUE: &str = "https://github.com/kcp-dev/kubernetes/pull/4";

const REF_PREFIX: &str = "#/components/schemas/";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const TIMES: [&str; 2] = [
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
];
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

/// Keywords copied as they are.
const KEPT: [&str; 19] = [
    "description",
    "type",
    "format",
    "title",
    "default",
    "nullable",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "enum",
    "x-kubernetes-map-type",
];

/// One discovered version of a kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredVersion {
    /// The version, e.g. `v1`.
    pub name: String,
    /// Whether discovery lists `<plural>/status`.
    pub status: bool,
    /// Whether discovery lists `<plural>/scale`.
    pub scale: bool,
}

/// What discovery says about a builtin kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// API group (`""` for core).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
    /// Singular name (empty: defaulted from the kind).
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names.
    pub short_names: Vec<String>,
    /// Categories.
    pub categories: Vec<String>,
    /// Every version serving the kind.
    pub versions: Vec<DiscoveredVersion>,
    /// The preferred version (the storage version of the synthesised CRD).
    pub preferred: String,
}

impl Discovered {
    /// The name upstream gives the synthesised CRD: `<plural>.<group>`, `<plural>.core` for
    /// the core group.
    pub fn crd_name(&self) -> String {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        format!("{}.{group}", self.plural)
    }
}

/// Whether a group is one of Kubernetes' protected community groups (`k8s.io`,
/// `kubernetes.io` and their subdomains), whose CRDs need the api-approved annotation.
pub fn is_protected_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|d| group == *d || group.ends_with(&format!(".{d}")))
}

/// Where a builtin kind's schemas come from.
#[derive(Debug, Clone)]
pub enum OpenApiModels {
    /// The service cluster's OpenAPI v2 document, as upstream reads it: the schema upstream
    /// would give, hence the APIResourceSchema name upstream would give ([`super::openapi_v2`]).
    V2(Value),
    /// The OpenAPI v3 document of each version, where v2 is not served: a schema of the same
    /// meaning, but not upstream's (its name differs).
    V3(BTreeMap<String, Value>),
}

/// The CRD of a builtin kind from `models`. Errors say which version's model is missing.
///
/// [`openapi_v2`]: super::openapi_v2
pub fn synthesize_crd(discovered: &Discovered, models: &OpenApiModels) -> Result<Value, String> {
    let mut versions = discovered.versions.clone();
    versions.sort_by(|a, b| compare_kube_versions(&a.name, &b.name));
    let rendered: Vec<Value> = versions
        .iter()
        .map(|v| render_version(discovered, v, models))
        .collect::<Result<_, _>>()?;
    let kind = &discovered.kind;
    let singular = if discovered.singular.is_empty() {
        kind.to_ascii_lowercase()
    } else {
        discovered.singular.clone()
    };
    let mut names = json!({"kind": kind, "listKind": format!("{kind}List"),
        "plural": discovered.plural, "singular": singular});
    if !discovered.short_names.is_empty() {
        names["shortNames"] = json!(discovered.short_names);
    }
    if !discovered.categories.is_empty() {
        names["categories"] = json!(discovered.categories);
    }
    let mut metadata = json!({"name": discovered.crd_name()});
    if is_protected_group(&discovered.group) {
        metadata["annotations"] = json!({API_APPROVED_ANNOTATION: API_APPROVED_VALUE});
    }
    let scope = if discovered.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    };
    Ok(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {"group": discovered.group, "names": names, "scope": scope,
            "versions": rendered, "conversion": {"strategy": "None"}},
    }))
}

fn render_version(
    discovered: &Discovered,
    version: &DiscoveredVersion,
    models: &OpenApiModels,
) -> Result<Value, String> {
    // Upstream files a builtin kind's subresources under the empty version discovery gives
    // builtin resources and looks them up under the real one, so its CRD never has any; with
    // the v2 models (upstream's schema, upstream's name) kcp-sync gives none either.
    let (schema, discovered_subresources) = match models {
        OpenApiModels::V2(document) => (v2_schema(discovered, &version.name, document)?, false),
        OpenApiModels::V3(documents) => (v3_schema(discovered, &version.name, documents)?, true),
    };
    let mut subresources = Map::new();
    if discovered_subresources && version.status {
        subresources.insert("status".into(), json!({}));
    }
    if discovered_subresources && version.scale {
        subresources.insert(
            "scale".into(),
            json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}),
        );
    }
    Ok(json!({
        "name": version.name,
        "served": true,
        "storage": version.name == discovered.preferred,
        "schema": {"openAPIV3Schema": schema},
        "subresources": subresources,
    }))
}

fn v2_schema(discovered: &Discovered, version: &str, document: &Value) -> Result<Value, String> {
    let definitions = document
        .get("definitions")
        .and_then(Value::as_object)
        .ok_or("the OpenAPI v2 document has no definitions")?;
    let name = model_name(definitions, &discovered.group, version, &discovered.kind)
        .ok_or_else(|| no_model("v2 document", version, discovered))?;
    super::openapi_v2::schema_of(definitions, name)
}

fn v3_schema(
    discovered: &Discovered,
    version: &str,
    documents: &BTreeMap<String, Value>,
) -> Result<Value, String> {
    let doc = documents
        .get(version)
        .ok_or_else(|| format!("no OpenAPI document for version {version:?}"))?;
    let schemas = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            format!("the OpenAPI document of version {version:?} has no components.schemas")
        })?;
    let name =
        model_name(schemas, &discovered.group, version, &discovered.kind).ok_or_else(|| {
            no_model(
                &format!("document of version {version:?}"),
                version,
                discovered,
            )
        })?;
    Ok(structural_schema(schemas, name))
}

fn no_model(document: &str, version: &str, discovered: &Discovered) -> String {
    format!(
        "the OpenAPI {document} has no model with x-kubernetes-group-version-kind {}",
        gvk_text(&discovered.group, version, &discovered.kind)
    )
}

fn gvk_text(group: &str, version: &str, kind: &str) -> String {
    if group.is_empty() {
        format!("{version}, Kind={kind}")
    } else {
        format!("{group}/{version}, Kind={kind}")
    }
}

/// The name of the model marked with this group, version and kind.
/// The name of the model (a v2 definition or a v3 component schema) whose
/// `x-kubernetes-group-version-kind` lists the kind.
pub fn model_name<'a>(
    schemas: &'a Map<String, Value>,
    group: &str,
    version: &str,
    kind: &str,
) -> Option<&'a str> {
    let wanted = json!({"group": group, "version": version, "kind": kind});
    schemas
        .iter()
        .find(|(_, s)| {
            s.get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .is_some_and(|gvks| gvks.iter().any(|g| same_gvk(g, &wanted)))
        })
        .map(|(name, _)| name.as_str())
}

fn same_gvk(a: &Value, b: &Value) -> bool {
    ["group", "version", "kind"].iter().all(|k| {
        a.get(k).and_then(Value::as_str).unwrap_or_default()
            == b.get(k).and_then(Value::as_str).unwrap_or_default()
    })
}

/// The structural, self-contained schema of the model `name` (see the module docs).
pub fn structural_schema(schemas: &Map<String, Value>, name: &str) -> Value {
    let mut inliner = Inliner {
        schemas,
        stack: vec![name.to_owned()],
    };
    let model = schemas.get(name).cloned().unwrap_or_else(|| json!({}));
    let mut root = inliner.convert(&model);
    let Value::Object(root_map) = &mut root else {
        return root;
    };
    root_map.insert("type".into(), json!("object"));
    if let Some(Value::Object(props)) = root_map.get_mut("properties") {
        for key in ["apiVersion", "kind"] {
            if let Some(Value::Object(p)) = props.get_mut(key) {
                p.insert("type".into(), json!("string"));
            }
        }
        if props.contains_key("metadata") {
            props.insert("metadata".into(), json!({"type": "object"}));
        }
    }
    let drop_required = |r: &Value| {
        ["apiVersion", "kind", "metadata"]
            .iter()
            .any(|k| r.as_str() == Some(k))
    };
    if let Some(Value::Array(required)) = root_map.get_mut("required") {
        required.retain(|r| !drop_required(r));
        if required.is_empty() {
            root_map.remove("required");
        }
    }
    root
}

struct Inliner<'a> {
    schemas: &'a Map<String, Value>,
    /// The definitions being inlined, outermost first.
    stack: Vec<String>,
}

impl Inliner<'_> {
    /// One node, its references inlined.
    fn convert(&mut self, node: &Value) -> Value {
        let Value::Object(m) = node else {
            return json!({"x-kubernetes-preserve-unknown-fields": true});
        };
        match reference(m) {
            Some(name) => self.inline(m, name),
            None => self.convert_plain(m),
        }
    }

    fn inline(&mut self, m: &Map<String, Value>, name: &str) -> Value {
        let description = m.get("description").cloned();
        let mut out = match special(name) {
            Some(special) => special,
            None if self.stack.iter().any(|n| n == name) => recursion_point(self.schemas.get(name)),
            None => match self.schemas.get(name) {
                Some(target) => {
                    self.stack.push(name.to_owned());
                    let converted = self.convert(target);
                    self.stack.pop();
                    converted
                }
                None => json!({"x-kubernetes-preserve-unknown-fields": true}),
            },
        };
        if let (Value::Object(o), Some(d)) = (
            &mut out,
            description.or_else(|| {
                self.schemas
                    .get(name)
                    .and_then(|t| t.get("description"))
                    .cloned()
            }),
        ) {
            o.insert("description".into(), d);
        }
        out
    }

    fn convert_plain(&mut self, m: &Map<String, Value>) -> Value {
        if m.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
            let mut out = int_or_string();
            copy(m, &mut out, &["description", "default", "nullable"]);
            return Value::Object(out);
        }
        let mut out = Map::new();
        copy(m, &mut out, &KEPT);
        if let Some(Value::Object(props)) = m.get("properties") {
            let converted: Map<String, Value> = props
                .iter()
                .map(|(k, v)| (k.clone(), self.convert(v)))
                .collect();
            out.insert("properties".into(), Value::Object(converted));
        }
        match m.get("additionalProperties") {
            Some(Value::Object(a)) if !m.contains_key("properties") => {
                let converted = self.convert(&Value::Object(a.clone()));
                out.insert("additionalProperties".into(), converted);
            }
            Some(Value::Bool(b)) if !m.contains_key("properties") => {
                out.insert("additionalProperties".into(), json!(b));
            }
            _ => {}
        }
        if let Some(items) = m.get("items") {
            let converted = self.convert(items);
            out.insert("items".into(), converted);
        }
        copy(m, &mut out, &["required"]);
        for flag in [
            "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-embedded-resource",
        ] {
            copy(m, &mut out, &[flag]);
        }
        list_type(m, &mut out);
        if !out.contains_key("type")
            && out.get("x-kubernetes-preserve-unknown-fields") != Some(&json!(true))
        {
            out.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
        }
        if out.get("type") == Some(&json!("array")) && !out.contains_key("items") {
            out.insert(
                "items".into(),
                json!({"x-kubernetes-preserve-unknown-fields": true}),
            );
        }
        Value::Object(out)
    }
}

/// A `$ref`, bare or as the only entry of an `allOf`.
fn reference(m: &Map<String, Value>) -> Option<&str> {
    let r = m.get("$ref").or_else(|| match m.get("allOf") {
        Some(Value::Array(all)) if all.len() == 1 => all[0].get("$ref"),
        _ => None,
    })?;
    r.as_str()?
        .strip_prefix(REF_PREFIX)
        .or_else(|| r.as_str()?.strip_prefix("#/definitions/"))
}

/// The CRD form of Kubernetes' special definitions.
fn special(name: &str) -> Option<Value> {
    if name == INT_OR_STRING || name == QUANTITY {
        return Some(Value::Object(int_or_string()));
    }
    if TIMES.contains(&name) {
        return Some(json!({"type": "string", "format": "date-time"}));
    }
    if name == OBJECT_META || name == RAW_EXTENSION {
        return Some(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    }
    None
}

fn int_or_string() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("x-kubernetes-int-or-string".into(), json!(true));
    m.insert(
        "anyOf".into(),
        json!([{"type": "integer"}, {"type": "string"}]),
    );
    m
}

/// Where a definition refers back into itself: its type (object when unknown), preserving
/// unknown fields.
fn recursion_point(target: Option<&Value>) -> Value {
    let type_ = target
        .and_then(|t| t.get("type"))
        .cloned()
        .unwrap_or_else(|| json!("object"));
    if type_ == json!("array") {
        return json!({"type": "array", "items": {"x-kubernetes-preserve-unknown-fields": true}});
    }
    if type_ == json!("object") {
        return json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    }
    json!({ "type": type_ })
}

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = from.get(*k) {
            to.insert((*k).to_owned(), v.clone());
        }
    }
}

/// `x-kubernetes-list-type` (and map keys) where kube accepts them in a CRD: a map list only
/// when every key is a required or defaulted item property.
fn list_type(m: &Map<String, Value>, out: &mut Map<String, Value>) {
    let Some(list_type) = m.get("x-kubernetes-list-type").and_then(Value::as_str) else {
        return;
    };
    if list_type != "map" {
        out.insert("x-kubernetes-list-type".into(), json!(list_type));
        return;
    }
    let keys: Vec<&str> = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let items = out.get("items");
    let required: Vec<&str> = items
        .and_then(|i| i.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let usable = !keys.is_empty()
        && keys.iter().all(|k| {
            let prop = items.and_then(|i| i.pointer(&format!("/properties/{k}")));
            prop.is_some_and(|p| required.contains(k) || p.get("default").is_some())
        });
    if usable {
        out.insert("x-kubernetes-list-type".into(), json!("map"));
        out.insert("x-kubernetes-list-map-keys".into(), json!(keys));
    }
}

#[cfg(test)]
mod tests;
