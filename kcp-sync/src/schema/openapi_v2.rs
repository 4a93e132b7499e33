//! A builtin kind's schema from the service cluster's OpenAPI **v2** document, converted the way
//! upstream converts it, so that taking over from the Go agent yields the same
//! APIResourceSchema (its name is a hash of the schema).
//!
//! Upstream parses `/openapi/v2` into kube-openapi's model (every definition is a *kind* when it
//! has `properties`, a *map* when it is an object without them, an *array*, a *primitive*, a
//! *reference* or, with neither type nor properties, *arbitrary*) and walks it with kcp's
//! `crdpuller` schema converter. [`schema_of`] is that walk over the JSON document:
//! - only `description`, `type`, `format`, `required`, `properties`, `items`,
//!   `additionalProperties` and the list extensions survive; enums, patterns, bounds and
//!   defaults of the v2 document do not (the model has no place for them), except the `TCP`
//!   default of container and service port protocols;
//! - a property's own description wins over the referenced definition's;
//! - well-known references become fixed schemas (ObjectMeta preserves unknown fields, Time is a
//!   date-time string, Quantity and IntOrString are int-or-string, RawExtension an object, ...);
//! - the root's `metadata` is a bare object; an arbitrary node is an embedded resource;
//! - a list's type and keys come from `x-kubernetes-list-*`, else from the patch strategy and
//!   merge key, and a map-list's items require their keys unless defaulted;
//! - a recursive reference is an error (`JSONSchemaProps` alone is left empty), as upstream.

use serde_json::{Map, Value, json};

const REF_PREFIX: &str = "#/definitions/";
const JSON_SCHEMA_PROPS: &str =
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// The schema of definition `name` of the v2 document's `definitions`.
pub fn schema_of(definitions: &Map<String, Value>, name: &str) -> Result<Value, String> {
    let root = definitions
        .get(name)
        .ok_or_else(|| format!("the OpenAPI v2 document has no definition {name:?}"))?;
    let mut converter = Converter {
        definitions,
        root: name,
        visited: Vec::new(),
        errors: Vec::new(),
    };
    let mut props = Map::new();
    converter.visit(&mut props, root, name, "");
    if converter.errors.is_empty() {
        Ok(Value::Object(props))
    } else {
        Err(converter.errors.join("; "))
    }
}

/// What kube-openapi makes of a v2 schema node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape<'a> {
    Reference(&'a str),
    Kind,
    Map,
    Array,
    Primitive,
    Arbitrary,
}

fn shape(node: &Value) -> Shape<'_> {
    if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
        return Shape::Reference(reference.strip_prefix(REF_PREFIX).unwrap_or(reference));
    }
    let has_properties = node.get("properties").is_some_and(|p| !p.is_null());
    match node.get("type").and_then(Value::as_str) {
        None if has_properties => Shape::Kind,
        None => Shape::Arbitrary,
        Some("object") if has_properties => Shape::Kind,
        Some("object") => Shape::Map,
        Some("array") => Shape::Array,
        Some(_) => Shape::Primitive,
    }
}

fn text<'v>(node: &'v Value, key: &str) -> &'v str {
    node.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn set_text(props: &mut Map<String, Value>, key: &str, value: &str) {
    if value.is_empty() {
        props.remove(key);
    } else {
        props.insert(key.to_owned(), json!(value));
    }
}

/// The walk: the definitions, the root definition's name, the references being expanded.
struct Converter<'a> {
    definitions: &'a Map<String, Value>,
    root: &'a str,
    visited: Vec<String>,
    errors: Vec<String>,
}

impl<'a> Converter<'a> {
    /// Writes what `node` (at model path `path`) converts to into `props`; `inherited` is the
    /// description the parent handed down (a property's own).
    fn visit(
        &mut self,
        props: &mut Map<String, Value>,
        node: &'a Value,
        path: &str,
        inherited: &str,
    ) {
        match shape(node) {
            Shape::Reference(name) => self.reference(props, node, name, inherited),
            Shape::Kind => self.kind(props, node, path, inherited),
            Shape::Map => self.map(props, node, path, inherited),
            Shape::Array => self.array(props, node, path, inherited),
            Shape::Primitive => self.primitive(props, node, path, inherited),
            Shape::Arbitrary => arbitrary(props, node, inherited),
        }
    }

    /// The description of the node a map, array or reference stands for.
    fn sub_description(&self, node: &'a Value) -> &'a str {
        match shape(node) {
            Shape::Array => node
                .get("items")
                .map(|i| text(i, "description"))
                .unwrap_or_default(),
            Shape::Map => match node.get("additionalProperties").filter(|a| a.is_object()) {
                Some(sub) => text(sub, "description"),
                // A map without an item schema has an arbitrary item with the map's own base.
                None => text(node, "description"),
            },
            Shape::Reference(name) => self
                .definitions
                .get(name)
                .map(|d| text(d, "description"))
                .unwrap_or_default(),
            _ => "",
        }
    }

    fn describe(&self, props: &mut Map<String, Value>, node: &'a Value, inherited: &str) {
        let description = if !inherited.is_empty() {
            inherited
        } else {
            let sub = self.sub_description(node);
            if sub.is_empty() {
                text(node, "description")
            } else {
                sub
            }
        };
        set_text(props, "description", description);
    }

    fn reference(
        &mut self,
        props: &mut Map<String, Value>,
        node: &'a Value,
        name: &str,
        inherited: &str,
    ) {
        if name == JSON_SCHEMA_PROPS {
            return;
        }
        if self.visited.iter().any(|v| v == name) {
            self.errors
                .push(format!("recursive schema are not supported: {name}"));
            return;
        }
        if let Some(known) = known_schema(name) {
            *props = known;
            let description = if inherited.is_empty() {
                text(node, "description")
            } else {
                inherited
            };
            set_text(props, "description", description);
            return;
        }
        let Some(target) = self.definitions.get(name) else {
            self.errors
                .push(format!("unknown model in reference: {name:?}"));
            return;
        };
        self.describe(props, node, inherited);
        self.visited.push(name.to_owned());
        // A definition's model path is its own name.
        self.visit(props, target, name, inherited);
        self.visited.pop();
    }

    fn kind(
        &mut self,
        props: &mut Map<String, Value>,
        node: &'a Value,
        path: &str,
        inherited: &str,
    ) {
        self.describe(props, node, inherited);
        match node.get("required").and_then(Value::as_array) {
            Some(required) if !required.is_empty() => {
                props.insert("required".into(), Value::Array(required.clone()));
            }
            _ => {
                props.remove("required");
            }
        }
        let mut properties = Map::new();
        let fields = node.get("properties").and_then(Value::as_object);
        for (field, schema) in fields.into_iter().flatten() {
            let field_path = format!("{path}.{field}");
            let mut converted = Map::new();
            if field_path == format!("{}.metadata", self.root) {
                converted.insert("type".into(), json!("object"));
            } else {
                self.visit(
                    &mut converted,
                    schema,
                    &field_path,
                    text(schema, "description"),
                );
            }
            properties.insert(field.clone(), Value::Object(converted));
        }
        if properties.is_empty() {
            props.remove("properties");
        } else {
            props.insert("properties".into(), Value::Object(properties));
        }
        props.insert("type".into(), json!("object"));
        if let Some(key) = node
            .get("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str)
        {
            props.insert("x-kubernetes-list-map-keys".into(), json!([key]));
        }
        if let Some(keys) = node.get("x-kubernetes-list-map-keys") {
            props.insert("x-kubernetes-list-map-keys".into(), keys.clone());
        }
        if let Some(list_type) = node.get("x-kubernetes-list-type") {
            props.insert("x-kubernetes-list-type".into(), list_type.clone());
        }
    }

    fn map(
        &mut self,
        props: &mut Map<String, Value>,
        node: &'a Value,
        path: &str,
        inherited: &str,
    ) {
        self.describe(props, node, inherited);
        let mut sub = Map::new();
        match node.get("additionalProperties").filter(|a| a.is_object()) {
            Some(item) => self.visit(&mut sub, item, path, text(item, "description")),
            None => arbitrary(&mut sub, node, text(node, "description")),
        }
        props.insert("additionalProperties".into(), Value::Object(sub));
        props.insert("type".into(), json!("object"));
    }

    fn array(
        &mut self,
        props: &mut Map<String, Value>,
        node: &'a Value,
        path: &str,
        inherited: &str,
    ) {
        self.describe(props, node, inherited);
        props.insert("type".into(), json!("array"));
        let Some(items) = node.get("items") else {
            self.errors
                .push(format!("{path}: array should have exactly one sub-item"));
            return;
        };
        if has_extensions(node) {
            self.list_extensions(props, node, items);
        }
        let mut sub = Map::new();
        self.visit(&mut sub, items, path, text(items, "description"));
        if let Some(keys) = props
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
        {
            require_map_keys(&mut sub, keys);
        }
        props.insert("items".into(), Value::Object(sub));
    }

    /// `x-kubernetes-list-type` and `-map-keys` of an array: given, or from the patch strategy.
    fn list_extensions(&self, props: &mut Map<String, Value>, node: &Value, items: &'a Value) {
        let items_are_kind = match shape(items) {
            Shape::Reference(name) => self
                .definitions
                .get(name)
                .is_some_and(|d| shape(d) == Shape::Kind),
            Shape::Kind => true,
            _ => false,
        };
        let strategy = text(node, "x-kubernetes-patch-strategy");
        if let Some(list_type) = node.get("x-kubernetes-list-type") {
            props.insert("x-kubernetes-list-type".into(), list_type.clone());
        } else if !strategy.is_empty() {
            let merge = strategy == "merge"
                || strategy.starts_with("merge,")
                || strategy.ends_with(",merge");
            let list_type = match (merge, items_are_kind) {
                (false, _) => "atomic",
                (true, true) => "map",
                (true, false) => "set",
            };
            props.insert("x-kubernetes-list-type".into(), json!(list_type));
        }
        if let Some(keys) = node.get("x-kubernetes-list-map-keys") {
            props.insert("x-kubernetes-list-map-keys".into(), keys.clone());
        } else if let Some(key) = node
            .get("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str)
        {
            props.insert("x-kubernetes-list-map-keys".into(), json!([key]));
            if strategy.is_empty() {
                props.insert("x-kubernetes-list-type".into(), json!("map"));
            }
        }
    }

    fn primitive(
        &mut self,
        props: &mut Map<String, Value>,
        node: &'a Value,
        path: &str,
        inherited: &str,
    ) {
        self.describe(props, node, inherited);
        set_text(props, "type", text(node, "type"));
        set_text(props, "format", text(node, "format"));
        if known_default(path) {
            props.insert("default".into(), json!("TCP"));
        }
    }
}

/// The items of a map-list require its keys, unless defaulted (as upstream, only for items with
/// properties).
fn require_map_keys(items: &mut Map<String, Value>, keys: &[Value]) {
    let Some(fields) = items.get("properties").and_then(Value::as_object) else {
        return;
    };
    if fields.is_empty() || keys.is_empty() {
        return;
    }
    let required: std::collections::BTreeSet<&str> = items
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(keys)
        .filter_map(Value::as_str)
        .filter(|f| fields.get(*f).is_none_or(|s| s.get("default").is_none()))
        .collect();
    let required = json!(required);
    if required.as_array().is_some_and(Vec::is_empty) {
        items.remove("required");
    } else {
        items.insert("required".into(), required);
    }
}

/// An arbitrary node: an embedded resource, preserving unknown fields where the node says so.
fn arbitrary(props: &mut Map<String, Value>, node: &Value, inherited: &str) {
    let description = if inherited.is_empty() {
        text(node, "description")
    } else {
        inherited
    };
    set_text(props, "description", description);
    props.insert("x-kubernetes-embedded-resource".into(), json!(true));
    if let Some(preserve) = node
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
    {
        props.insert(
            "x-kubernetes-preserve-unknown-fields".into(),
            json!(preserve),
        );
    }
}

fn has_extensions(node: &Value) -> bool {
    node.as_object()
        .is_some_and(|m| m.keys().any(|k| k.starts_with("x-")))
}

/// The primitives upstream defaults: the protocol of container and service ports.
fn known_default(path: &str) -> bool {
    matches!(
        path,
        "io.k8s.api.core.v1.ContainerPort.protocol" | "io.k8s.api.core.v1.ServicePort.protocol"
    )
}

/// The fixed schemas of well-known referenced types (controller-tools' known types, as
/// upstream's converter has them).
fn known_schema(name: &str) -> Option<Map<String, Value>> {
    let int_or_string = || {
        json!({"x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}]})
    };
    let schema = match name {
        "io.k8s.api.core.v1.Protocol" => json!({"type": "string", "default": "TCP"}),
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" => {
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        }
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
        | "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" => {
            json!({"type": "string", "format": "date-time"})
        }
        "io.k8s.apimachinery.pkg.apis.meta.v1.Duration" => json!({"type": "string"}),
        "io.k8s.apimachinery.pkg.apis.meta.v1.Fields" => {
            json!({"type": "object", "additionalProperties": true})
        }
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
            let mut quantity = int_or_string();
            quantity["pattern"] = json!(QUANTITY_PATTERN);
            quantity
        }
        "io.k8s.apimachinery.pkg.runtime.RawExtension"
        | "io.k8s.apimachinery.pkg.apis.meta.v1.unstructured.Unstructured" => {
            json!({"type": "object"})
        }
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => int_or_string(),
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1beta1.JSON"
        | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON" => {
            json!({"x-kubernetes-preserve-unknown-fields": true})
        }
        _ => return None,
    };
    match schema {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
