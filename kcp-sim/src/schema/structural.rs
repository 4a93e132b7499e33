//! Structural schemas: the `openAPIV3Schema` of a CRD version read into a [`Node`] tree, and the
//! rules apiextensions-apiserver's `ValidateStructural` checks before it accepts a v1 CRD
//! (every field typed, `items` for arrays, no `additionalProperties` at the root, metadata
//! restricted to `name`/`generateName`, value validations inside `allOf`/`anyOf`/`oneOf`/`not`
//! free of types and defaults, no `uniqueItems`, `additionalProperties` not next to
//! `properties`, list-type/map-keys consistent, patterns that compile).

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

use super::cel::{self, Rule, RuleScope};
use super::cel_budget::{Estimated, RuleCosts, SchemaBudget, child_cardinality};
use super::cel_size::Sizes;
use super::cel_type::CelType;
use super::field::FieldError;

/// The JSON type of a schema node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// `object`.
    Object,
    /// `array`.
    Array,
    /// `string`.
    String,
    /// `integer`.
    Integer,
    /// `number`.
    Number,
    /// `boolean`.
    Boolean,
}

impl Type {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "object" => Self::Object,
            "array" => Self::Array,
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            _ => return None,
        })
    }

    /// The name in the schema.
    pub fn name(self) -> &'static str {
        match self {
            Self::Object => "object",
            Self::Array => "array",
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
        }
    }
}

/// `additionalProperties`: a schema for map values, or `true` (anything).
#[derive(Debug)]
pub enum Additional {
    /// `additionalProperties: true`.
    Any,
    /// `additionalProperties: {schema}`.
    Schema(Box<Node>),
}

/// The value validations of a node (also the content of `allOf`/`anyOf`/`oneOf`/`not`).
#[derive(Debug, Default)]
pub struct Checks {
    /// `enum`.
    pub enumeration: Option<Vec<Value>>,
    /// `maximum` and whether it is exclusive.
    pub maximum: Option<(f64, bool)>,
    /// `minimum` and whether it is exclusive.
    pub minimum: Option<(f64, bool)>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `maxLength` (in characters).
    pub max_length: Option<u64>,
    /// `minLength` (in characters).
    pub min_length: Option<u64>,
    /// `pattern`, as written and compiled.
    pub pattern: Option<(String, Regex)>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `minProperties`.
    pub min_properties: Option<u64>,
    /// `required`.
    pub required: Vec<String>,
    /// `format`, when it is one kube-apiserver checks.
    pub format: Option<String>,
    /// `allOf`.
    pub all_of: Vec<Checks>,
    /// `anyOf`.
    pub any_of: Vec<Checks>,
    /// `oneOf`.
    pub one_of: Vec<Checks>,
    /// `not`.
    pub not: Option<Box<Checks>>,
    /// `properties` of a junctor (value validations of fields).
    pub properties: BTreeMap<String, Checks>,
    /// `items` of a junctor.
    pub items: Option<Box<Checks>>,
}

/// One node of a structural schema.
#[derive(Debug, Default)]
pub struct Node {
    /// `type`; `None` with `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`.
    pub type_: Option<Type>,
    /// `nullable`.
    pub nullable: bool,
    /// `properties`.
    pub properties: BTreeMap<String, Node>,
    /// `additionalProperties`.
    pub additional: Option<Additional>,
    /// `items`.
    pub items: Option<Box<Node>>,
    /// `default`.
    pub default: Option<Value>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub map_keys: Vec<String>,
    /// `x-kubernetes-map-type` is `atomic` (maps correlate old and new values unless it is).
    pub map_type: Option<String>,
    /// Value validations.
    pub checks: Checks,
    /// Compiled `x-kubernetes-validations`.
    pub rules: Vec<Rule>,
    /// Whether this node or any below it has rules (to skip CEL walks of plain subtrees).
    pub has_rules: bool,
    /// Whether this node or any below it has defaults.
    pub has_defaults: bool,
    /// The CEL type `self` has in this node's rules (set when it has rules).
    pub rule_type: Option<CelType>,
}

/// Where a node sits: the root, an array's items, or an object's field (kube words its
/// "type must not be empty" errors by this).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The formats kube-apiserver validates (others are accepted as any string).
const CHECKED_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "date-time",
    "k8s-short-name",
    "k8s-long-name",
];

/// Reads a schema, checking the structural rules; the errors name fields under `path` (e.g.
/// `spec.versions[0].schema.openAPIV3Schema`).
pub fn parse(schema: &Value, path: &str) -> Result<Node, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut budget = SchemaBudget::default();
    let node = parse_node(schema, path, Walk::root(), &mut budget, &mut errors);
    errors.extend(budget.errors(path));
    if errors.is_empty() {
        Ok(node)
    } else {
        Err(errors)
    }
}

/// The estimated costs of every rule of `schema` that compiles, whether or not the schema is
/// within its budget (kube's `cel.Compile` estimates, for comparing with kube's own).
pub fn estimate_costs(schema: &Value, path: &str) -> Vec<Estimated> {
    let mut budget = SchemaBudget::default();
    parse_node(schema, path, Walk::root(), &mut budget, &mut Vec::new());
    budget.estimates
}

/// Where the walk of a schema is: the node's level, how many of its values one object holds
/// at most (`None`: unbounded), and the highest node above whose values kube cannot correlate
/// between revisions (an array that is not a map-list).
#[derive(Debug, Clone)]
struct Walk {
    level: Level,
    cardinality: Option<u64>,
    uncorrelatable: Option<String>,
}

impl Walk {
    fn root() -> Self {
        Walk {
            level: Level::Root,
            cardinality: Some(1),
            uncorrelatable: None,
        }
    }
}

fn parse_node(
    v: &Value,
    path: &str,
    walk: Walk,
    budget: &mut SchemaBudget,
    errors: &mut Vec<FieldError>,
) -> Node {
    let level = walk.level;
    let Some(m) = v.as_object() else {
        errors.push(FieldError::invalid(path, v.clone(), "must be an object"));
        return Node::default();
    };
    let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    let mut node = Node {
        nullable: flag("nullable"),
        preserve_unknown: flag("x-kubernetes-preserve-unknown-fields"),
        embedded: flag("x-kubernetes-embedded-resource"),
        int_or_string: flag("x-kubernetes-int-or-string"),
        default: m.get("default").cloned(),
        list_type: m
            .get("x-kubernetes-list-type")
            .and_then(Value::as_str)
            .map(String::from),
        map_keys: strings(m.get("x-kubernetes-list-map-keys")),
        map_type: m
            .get("x-kubernetes-map-type")
            .and_then(Value::as_str)
            .map(String::from),
        ..Node::default()
    };
    match m.get("type").and_then(Value::as_str) {
        None | Some("") => {}
        Some(t) => match Type::parse(t) {
            Some(t) => node.type_ = Some(t),
            None => errors.push(FieldError::new(
                super::field::ErrorType::NotSupported,
                format!("{path}.type"),
                Some(Value::String(t.into())),
                "supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            )),
        },
    }
    let cardinality = child_cardinality(walk.cardinality, m);
    let within = |correlates: bool| match (&walk.uncorrelatable, correlates) {
        (Some(above), _) => Some(above.clone()),
        (None, false) => Some(path.to_string()),
        (None, true) => None,
    };
    let child = |level, uncorrelatable| Walk {
        level,
        cardinality,
        uncorrelatable,
    };
    let map_list = m.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            let at = format!("{path}.properties[{k}]");
            // kube correlates the fields of every object (its map types both correlate).
            let walk = child(Level::Field, within(true));
            let child = parse_node(p, &at, walk, budget, errors);
            node.properties.insert(k.clone(), child);
        }
    }
    match m.get("additionalProperties") {
        Some(Value::Bool(true)) => node.additional = Some(Additional::Any),
        Some(a @ Value::Object(_)) => {
            let at = format!("{path}.additionalProperties");
            let walk = child(Level::Field, within(true));
            let child = parse_node(a, &at, walk, budget, errors);
            node.additional = Some(Additional::Schema(Box::new(child)));
        }
        _ => {}
    }
    if let Some(items) = m.get("items") {
        let at = format!("{path}.items");
        let walk = child(Level::Item, within(map_list));
        let child = parse_node(items, &at, walk, budget, errors);
        node.items = Some(Box::new(child));
    }
    node.checks = parse_checks(m, path, errors);
    if m.contains_key("x-kubernetes-validations") {
        let resource_root = level == Level::Root || node.embedded;
        let self_type =
            CelType::of_node(&node, resource_root, &self_type_name()).unwrap_or(CelType::Dyn);
        let sizes = Sizes::of_node(&node, resource_root);
        let mut scope = RuleScope {
            self_type: &self_type,
            uncorrelatable: walk.uncorrelatable.as_deref(),
            costs: RuleCosts {
                sizes: sizes.as_ref(),
                cardinality: walk.cardinality,
                budget,
            },
        };
        let rules = m.get("x-kubernetes-validations");
        node.rules = cel::compile_rules(rules, &mut scope, path, errors);
        node.rule_type = Some(self_type);
    }
    check_invariants(&node, m, path, level, errors);
    let has_rules = !node.rules.is_empty() || children(&node).any(|c| c.has_rules);
    let has_defaults = children(&node).any(|c| c.default.is_some() || c.has_defaults);
    node.has_rules = has_rules;
    node.has_defaults = has_defaults;
    node
}

/// The name of the type of a node with rules: kube names it `selfType` and the nanoseconds of
/// the clock, so that no rule can depend on it.
fn self_type_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("selfType{nanos}")
}

/// The child nodes of a node: properties, additionalProperties and items.
pub fn children(node: &Node) -> impl Iterator<Item = &Node> {
    let additional = match &node.additional {
        Some(Additional::Schema(s)) => Some(s.as_ref()),
        _ => None,
    };
    node.properties
        .values()
        .chain(additional)
        .chain(node.items.as_deref())
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn parse_checks(m: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) -> Checks {
    let uint = |k: &str| m.get(k).and_then(Value::as_u64);
    let float = |k: &str| m.get(k).and_then(Value::as_f64);
    let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    let mut checks = Checks {
        enumeration: m.get("enum").and_then(Value::as_array).cloned(),
        maximum: float("maximum").map(|f| (f, flag("exclusiveMaximum"))),
        minimum: float("minimum").map(|f| (f, flag("exclusiveMinimum"))),
        multiple_of: float("multipleOf"),
        max_length: uint("maxLength"),
        min_length: uint("minLength"),
        max_items: uint("maxItems"),
        min_items: uint("minItems"),
        max_properties: uint("maxProperties"),
        min_properties: uint("minProperties"),
        required: strings(m.get("required")),
        format: m
            .get("format")
            .and_then(Value::as_str)
            .filter(|f| CHECKED_FORMATS.contains(f))
            .map(String::from),
        ..Checks::default()
    };
    if let Some(p) = m.get("pattern").and_then(Value::as_str) {
        match Regex::new(p) {
            Ok(re) => checks.pattern = Some((p.to_string(), re)),
            Err(e) => errors.push(FieldError::invalid(
                format!("{path}.pattern"),
                Value::String(p.into()),
                format!("must be a valid regular expression, but isn't: {e}"),
            )),
        }
    }
    for (key, list) in [
        ("allOf", &mut checks.all_of),
        ("anyOf", &mut checks.any_of),
        ("oneOf", &mut checks.one_of),
    ] {
        for (i, sub) in m
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            list.push(parse_junctor(sub, &format!("{path}.{key}[{i}]"), errors));
        }
    }
    if let Some(sub) = m.get("not") {
        checks.not = Some(Box::new(parse_junctor(sub, &format!("{path}.not"), errors)));
    }
    checks
}

/// A schema inside `allOf`/`anyOf`/`oneOf`/`not`: value validations only (structural rule).
fn parse_junctor(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Checks {
    let Some(m) = v.as_object() else {
        return Checks::default();
    };
    let forbidden: [(&str, &str); 11] = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for (key, why) in forbidden {
        let set = match m.get(key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) => true,
        };
        // The int-or-string pattern (`anyOf: [{type: integer}, {type: string}]`) may name types.
        let int_or_string = key == "type" && path.contains(".anyOf[");
        if set && !int_or_string {
            errors.push(FieldError::forbidden(format!("{path}.{key}"), why));
        }
    }
    let mut checks = parse_checks(m, path, errors);
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            let sub = parse_junctor(p, &format!("{path}.properties[{k}]"), errors);
            checks.properties.insert(k.clone(), sub);
        }
    }
    if let Some(items) = m.get("items") {
        checks.items = Some(Box::new(parse_junctor(
            items,
            &format!("{path}.items"),
            errors,
        )));
    }
    checks
}

fn check_invariants(
    node: &Node,
    m: &Map<String, Value>,
    path: &str,
    level: Level,
    errors: &mut Vec<FieldError>,
) {
    let at = |field: &str| format!("{path}.{field}");
    if node.type_ == Some(Type::Array) && node.items.is_none() {
        errors.push(FieldError::required(at("items"), "must be specified"));
    }
    if node.additional.is_some() && level == Level::Root {
        errors.push(FieldError::forbidden(
            at("additionalProperties"),
            "must not be used at the root",
        ));
    }
    if node.additional.is_some() && !node.properties.is_empty() {
        errors.push(FieldError::forbidden(
            at("additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    if node.int_or_string && node.preserve_unknown {
        errors.push(FieldError::invalid(
            at("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    check_type(node, path, level, errors);
    if m.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        errors.push(FieldError::forbidden(
            at("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if node.embedded && !node.preserve_unknown && node.properties.is_empty() {
        errors.push(FieldError::required(
            at("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
    check_list_type(node, path, errors);
    if level == Level::Root || node.embedded {
        check_resource(node, path, level, errors);
    }
}

/// The `type` rules: every node typed (unless int-or-string or preserving unknown fields), an
/// object at the root and for embedded resources, and a root that is not nullable.
fn check_type(node: &Node, path: &str, level: Level, errors: &mut Vec<FieldError>) {
    let at = |field: &str| format!("{path}.{field}");
    let type_value = || Value::String(node.type_.map(Type::name).unwrap_or("").into());
    if node.embedded && node.type_ != Some(Type::Object) {
        if node.type_.is_none() {
            errors.push(FieldError::required(
                at("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errors.push(FieldError::invalid(
                at("type"),
                type_value(),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if node.type_.is_none() && !node.int_or_string && !node.preserve_unknown {
        let why = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(FieldError::required(at("type"), why));
    }
    if level == Level::Root && node.type_.is_some_and(|t| t != Type::Object) {
        errors.push(FieldError::invalid(
            at("type"),
            type_value(),
            "must be object at the root",
        ));
    }
    if level == Level::Root && node.nullable {
        errors.push(FieldError::forbidden(
            at("nullable"),
            "nullable cannot be true at the root",
        ));
    }
}

/// The rules of a resource (the root or an embedded one): its metadata, and string `apiVersion`
/// and `kind`.
fn check_resource(node: &Node, path: &str, level: Level, errors: &mut Vec<FieldError>) {
    check_metadata(node, path, level, errors);
    for key in ["apiVersion", "kind"] {
        if let Some(p) = node.properties.get(key)
            && p.type_ != Some(Type::String)
        {
            errors.push(FieldError::invalid(
                format!("{path}.properties[{key}].type"),
                Value::String(p.type_.map(Type::name).unwrap_or("").into()),
                "must be string",
            ));
        }
    }
}

fn check_list_type(node: &Node, path: &str, errors: &mut Vec<FieldError>) {
    let at = |field: &str| format!("{path}.{field}");
    match node.list_type.as_deref() {
        None => {
            if !node.map_keys.is_empty() {
                errors.push(FieldError::required(
                    at("x-kubernetes-list-type"),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                ));
            }
        }
        Some(t @ ("atomic" | "set" | "map")) => {
            if t != "map" && !node.map_keys.is_empty() {
                errors.push(FieldError::invalid(
                    at("x-kubernetes-list-type"),
                    Value::String(t.into()),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                ));
            }
            if t == "map" && node.map_keys.is_empty() {
                errors.push(FieldError::required(
                    at("x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            if t == "map"
                && let Some(items) = &node.items
                && node
                    .map_keys
                    .iter()
                    .any(|k| !items.properties.contains_key(k))
            {
                errors.push(FieldError::invalid(
                    at("x-kubernetes-list-map-keys"),
                    Value::from(node.map_keys.clone()),
                    "entries must all be names of item properties",
                ));
            }
        }
        Some(other) => errors.push(FieldError::new(
            super::field::ErrorType::NotSupported,
            at("x-kubernetes-list-type"),
            Some(Value::String(other.into())),
            "supported values: \"atomic\", \"map\", \"set\"",
        )),
    }
}

/// The metadata of a resource (root or embedded) may only constrain `name` and `generateName`.
fn check_metadata(node: &Node, path: &str, level: Level, errors: &mut Vec<FieldError>) {
    let Some(meta) = node.properties.get("metadata") else {
        return;
    };
    let meta_path = format!("{path}.properties[metadata]");
    if meta.type_ != Some(Type::Object) {
        errors.push(FieldError::invalid(
            format!("{meta_path}.type"),
            Value::String(meta.type_.map(Type::name).unwrap_or("").into()),
            "must be object",
        ));
    }
    if level == Level::Root
        && meta
            .properties
            .keys()
            .any(|k| k != "name" && k != "generateName")
    {
        errors.push(FieldError::forbidden(
            meta_path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}
