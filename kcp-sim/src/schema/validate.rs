//! Validation of a custom resource against its structural schema, with kube-apiserver's
//! messages (kube-openapi's `<path> in body should ...` details wrapped in field errors), list
//! type uniqueness (`x-kubernetes-list-type: set|map`), embedded resources, and the CEL rules.
//!
//! On update, validation ratchets as kube-apiserver's does (`CRDValidationRatcheting`, on by
//! default): a value equal to its old value is not re-validated, so an object stored before its
//! CRD got stricter can still be updated elsewhere. Transition rules (`oldSelf`) still run.

use serde_json::{Map, Value};

use super::cel::{self, Outcome};
use super::field::{ErrorType, FieldError, go_float, go_value};
use super::format;
use super::structural::{Additional, Checks, Node, Type};

/// One step of a path.
#[derive(Debug, Clone, Copy)]
enum Seg<'a> {
    Field(&'a str),
    Index(usize),
    Key(&'a str),
}

/// A path into the object, rendered only when an error is reported.
#[derive(Debug, Default)]
pub struct Path<'a> {
    segs: Vec<Seg<'a>>,
}

impl<'a> Path<'a> {
    /// A path starting at `field` (e.g. `status` for the status subresource), or the root.
    pub fn start(field: Option<&'a str>) -> Self {
        Self {
            segs: field.map(Seg::Field).into_iter().collect(),
        }
    }

    /// As kube-openapi writes it (map keys as `.key`).
    fn openapi(&self) -> String {
        self.render(false)
    }

    /// As `field.Path` writes it (map keys as `[key]`).
    fn field(&self) -> String {
        self.render(true)
    }

    fn render(&self, bracket_keys: bool) -> String {
        let mut s = String::new();
        for seg in &self.segs {
            match seg {
                Seg::Key(k) if bracket_keys => {
                    s.push('[');
                    s.push_str(k);
                    s.push(']');
                }
                Seg::Field(f) | Seg::Key(f) => {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(f);
                }
                Seg::Index(i) => {
                    s.push('[');
                    s.push_str(&i.to_string());
                    s.push(']');
                }
            }
        }
        s
    }

    fn child(&self, seg: Seg<'a>) -> String {
        let mut p = Path {
            segs: self.segs.clone(),
        };
        p.segs.push(seg);
        p.openapi()
    }
}

/// Validates `value` (at `path`) against `node`; `old` is the stored value when updating.
pub fn validate<'a>(
    node: &Node,
    value: &'a Value,
    old: Option<&'a Value>,
    path: &mut Path<'a>,
    out: &mut Vec<FieldError>,
) {
    if old == Some(value) {
        return;
    }
    if value.is_null() {
        if !node.nullable && node.type_.is_some() {
            out.push(type_error(path, node_type_name(node), "null"));
        }
        return;
    }
    if let Some(t) = node.type_ {
        if !has_type(t, value) {
            out.push(type_error(path, t.name(), json_type(value)));
            return;
        }
    } else if node.int_or_string && !(value.is_i64() || value.is_u64() || value.is_string()) {
        out.push(type_error(path, "integer,string", json_type(value)));
        return;
    }
    check_values(&node.checks, value, path, out, false);
    match value {
        Value::Object(m) => {
            validate_object(node, m, old.and_then(Value::as_object), path, out);
            check_required(&node.checks, m, path, out);
        }
        Value::Array(a) => validate_array(node, a, old.and_then(Value::as_array), path, out),
        _ => {}
    }
}

fn node_type_name(node: &Node) -> &'static str {
    node.type_.map(Type::name).unwrap_or("")
}

fn validate_object<'a>(
    node: &Node,
    m: &'a Map<String, Value>,
    old: Option<&'a Map<String, Value>>,
    path: &mut Path<'a>,
    out: &mut Vec<FieldError>,
) {
    if node.embedded {
        check_embedded(m, path, out);
    }
    for (k, v) in m {
        let (child, seg) = match (node.properties.get(k), &node.additional) {
            (Some(child), _) => (child, Seg::Field(k.as_str())),
            (None, Some(Additional::Schema(child))) => (child.as_ref(), Seg::Key(k.as_str())),
            _ => continue,
        };
        path.segs.push(seg);
        validate(child, v, old.and_then(|o| o.get(k)), path, out);
        path.segs.pop();
    }
}

fn validate_array<'a>(
    node: &Node,
    a: &'a [Value],
    old: Option<&'a Vec<Value>>,
    path: &mut Path<'a>,
    out: &mut Vec<FieldError>,
) {
    match node.list_type.as_deref() {
        Some("set") => duplicates(a, path, out),
        Some("map") => check_list_map(node, a, path, out),
        _ => {}
    }
    let Some(items) = &node.items else {
        return;
    };
    for (i, v) in a.iter().enumerate() {
        let old_item = old.and_then(|o| correlated_item(node, o, v));
        path.segs.push(Seg::Index(i));
        validate(items, v, old_item, path, out);
        path.segs.pop();
    }
}

/// The old item of a list-type map with the same keys (other lists do not correlate).
pub fn correlated_item<'a>(node: &Node, old: &'a [Value], item: &Value) -> Option<&'a Value> {
    if node.list_type.as_deref() != Some("map") || node.map_keys.is_empty() {
        return None;
    }
    old.iter()
        .find(|o| node.map_keys.iter().all(|k| o.get(k) == item.get(k)))
}

fn check_list_map(node: &Node, a: &[Value], path: &Path, out: &mut Vec<FieldError>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_object() && !x.is_null() {
            let field = path.child(Seg::Index(i));
            out.push(FieldError::invalid(
                field,
                x.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    let key_of = |x: &Value| -> Value {
        let mut key = Map::new();
        for k in &node.map_keys {
            if let Some(v) = x.get(k) {
                key.insert(k.clone(), v.clone());
            }
        }
        Value::Object(key)
    };
    let keys: Vec<Value> = a.iter().map(key_of).collect();
    duplicates(&keys, path, out);
}

/// Reports the second occurrence of every repeated value, as kube's list-set check does.
fn duplicates(all: &[Value], path: &Path, out: &mut Vec<FieldError>) {
    for (i, v) in all.iter().enumerate() {
        if all[..i].iter().filter(|o| *o == v).count() == 1 {
            let field = path.child(Seg::Index(i));
            out.push(FieldError::new(
                ErrorType::Duplicate,
                field,
                Some(v.clone()),
                "",
            ));
        }
    }
}

fn check_embedded(m: &Map<String, Value>, path: &Path, out: &mut Vec<FieldError>) {
    let empty = |k: &str| m.get(k).and_then(Value::as_str).is_none_or(str::is_empty);
    if empty("kind") {
        out.push(FieldError::required(
            path.child(Seg::Field("kind")),
            "must not be empty",
        ));
    }
    if empty("apiVersion") {
        out.push(FieldError::required(
            path.child(Seg::Field("apiVersion")),
            "must not be empty",
        ));
    }
}

fn has_type(t: Type, v: &Value) -> bool {
    match t {
        Type::Object => v.is_object(),
        Type::Array => v.is_array(),
        Type::String => v.is_string(),
        Type::Boolean => v.is_boolean(),
        Type::Number => v.is_number(),
        Type::Integer => {
            v.is_i64()
                || v.is_u64()
                || v.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
        }
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `<path>: Invalid value: "<found>": <path> in body must be of type <want>: "<found>"`.
fn type_error(path: &Path, want: &str, found: &str) -> FieldError {
    let p = path.openapi();
    let detail = format!("{p} in body must be of type {want}: \"{found}\"");
    FieldError::new(
        ErrorType::TypeInvalid,
        p,
        Some(Value::String(found.into())),
        detail,
    )
}

/// `<path>: Invalid value: <value>: <path> in body <why>`.
fn invalid(path: &Path, value: &Value, why: String) -> FieldError {
    let p = path.openapi();
    let detail = format!("{p} in body {why}");
    FieldError::invalid(p, value.clone(), detail)
}

/// Reports the `required` fields missing from an object.
fn check_required(c: &Checks, m: &Map<String, Value>, path: &Path, out: &mut Vec<FieldError>) {
    for k in &c.required {
        if !m.contains_key(k) {
            out.push(FieldError::required(path.child(Seg::Field(k)), ""));
        }
    }
}

/// The value validations of `c` on `v`; `required` is checked here only when asked (a node's
/// own required fields are checked after its properties, in kube-openapi's order).
fn check_values(c: &Checks, v: &Value, path: &Path, out: &mut Vec<FieldError>, required: bool) {
    check_junctors(c, v, path, out);
    match v {
        Value::String(s) => check_string(c, s, v, path, out),
        Value::Number(n) => check_number(c, n.as_f64().unwrap_or_default(), v, path, out),
        Value::Array(a) => check_count(c.min_items, c.max_items, a.len(), "items", path, out),
        Value::Object(m) => {
            check_count(
                c.min_properties,
                c.max_properties,
                m.len(),
                "properties",
                path,
                out,
            );
            if required {
                check_required(c, m, path, out);
            }
            for (k, sub) in &c.properties {
                if let Some(fv) = m.get(k) {
                    let mut p = Path {
                        segs: path.segs.clone(),
                    };
                    p.segs.push(Seg::Field(k));
                    check_values(sub, fv, &p, out, true);
                }
            }
        }
        _ => {}
    }
    if let (Some(items), Value::Array(a)) = (&c.items, v) {
        for (i, item) in a.iter().enumerate() {
            let mut p = Path {
                segs: path.segs.clone(),
            };
            p.segs.push(Seg::Index(i));
            check_values(items, item, &p, out, true);
        }
    }
    if let Some(allowed) = &c.enumeration
        && !allowed.contains(v)
    {
        let supported: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => Value::String(s.clone()).to_string(),
                other => Value::String(other.to_string()).to_string(),
            })
            .collect();
        out.push(FieldError::new(
            ErrorType::NotSupported,
            path.openapi(),
            Some(v.clone()),
            format!("supported values: {}", supported.join(", ")),
        ));
    }
}

/// A string's checks: of `maxLength`, `minLength` and `pattern` only the first that fails is
/// reported (kube-openapi's string validator returns at it), then its format.
fn check_string(c: &Checks, s: &str, v: &Value, path: &Path, out: &mut Vec<FieldError>) {
    let len = if c.max_length.is_some() || c.min_length.is_some() {
        s.chars().count() as u64
    } else {
        0
    };
    if let Some(max) = c.max_length.filter(|max| len > *max) {
        let unit = if max == 1 { "byte" } else { "bytes" };
        out.push(FieldError::new(
            ErrorType::TooLong,
            path.openapi(),
            None,
            format!("may not be more than {max} {unit}"),
        ));
    } else if let Some(min) = c.min_length.filter(|min| len < *min) {
        out.push(invalid(
            path,
            v,
            format!("should be at least {min} chars long"),
        ));
    } else if let Some((source, _)) = c.pattern.as_ref().filter(|(_, re)| !re.is_match(s)) {
        out.push(invalid(path, v, format!("should match '{source}'")));
    }
    if let Some(f) = &c.format
        && !format::is_valid(f, s)
    {
        let p = path.openapi();
        let detail = format!("{p} in body must be of type {f}: {}", go_value(v));
        out.push(FieldError::new(
            ErrorType::TypeInvalid,
            p,
            Some(v.clone()),
            detail,
        ));
    }
}

fn check_number(c: &Checks, f: f64, v: &Value, path: &Path, out: &mut Vec<FieldError>) {
    if let Some((max, exclusive)) = c.maximum {
        if exclusive && f >= max {
            out.push(invalid(
                path,
                v,
                format!("should be less than {}", go_float(max)),
            ));
        } else if !exclusive && f > max {
            out.push(invalid(
                path,
                v,
                format!("should be less than or equal to {}", go_float(max)),
            ));
        }
    }
    if let Some((min, exclusive)) = c.minimum {
        if exclusive && f <= min {
            out.push(invalid(
                path,
                v,
                format!("should be greater than {}", go_float(min)),
            ));
        } else if !exclusive && f < min {
            out.push(invalid(
                path,
                v,
                format!("should be greater than or equal to {}", go_float(min)),
            ));
        }
    }
    if let Some(factor) = c.multiple_of
        && factor > 0.0
    {
        let q = f / factor;
        if (q - q.round()).abs() > 1e-9 {
            out.push(invalid(
                path,
                v,
                format!("should be a multiple of {}", go_float(factor)),
            ));
        }
    }
}

fn check_count(
    min: Option<u64>,
    max: Option<u64>,
    n: usize,
    what: &str,
    path: &Path,
    out: &mut Vec<FieldError>,
) {
    let n = n as u64;
    if let Some(max) = max
        && n > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        out.push(FieldError::new(
            ErrorType::TooMany,
            path.openapi(),
            Some(Value::from(n)),
            format!("must have at most {max} {unit}"),
        ));
    }
    if let Some(min) = min
        && n < min
    {
        out.push(invalid(
            path,
            &Value::from(n),
            format!("should have at least {min} {what}"),
        ));
    }
}

fn check_junctors(c: &Checks, v: &Value, path: &Path, out: &mut Vec<FieldError>) {
    let passes = |sub: &Checks| {
        let mut errs = Vec::new();
        check_values(sub, v, path, &mut errs, true);
        errs
    };
    // kube-openapi names the path quoted (Go's `%q`).
    let composite = |why: &str| {
        FieldError::invalid(
            "<nil>",
            Value::String(String::new()),
            format!("{} {why}", Value::String(path.openapi())),
        )
    };
    for sub in &c.all_of {
        out.extend(passes(sub));
    }
    if !c.any_of.is_empty() {
        let results: Vec<Vec<FieldError>> = c.any_of.iter().map(passes).collect();
        if results.iter().all(|r| !r.is_empty()) {
            out.push(composite("must validate at least one schema (anyOf)"));
            out.extend(results.into_iter().flatten());
        }
    }
    if !c.one_of.is_empty() {
        let results: Vec<Vec<FieldError>> = c.one_of.iter().map(passes).collect();
        match results.iter().filter(|r| r.is_empty()).count() {
            1 => {}
            // None holds: the first alternative's errors follow (kube-openapi keeps those of
            // the one that matched most, the first of equals).
            0 => {
                out.push(composite(
                    "must validate one and only one schema (oneOf). Found none valid",
                ));
                out.extend(results.into_iter().next().unwrap_or_default());
            }
            valid => out.push(composite(&format!(
                "must validate one and only one schema (oneOf). Found {valid} valid alternatives"
            ))),
        }
    }
    if let Some(not) = &c.not
        && passes(not).is_empty()
    {
        out.push(composite("must not validate the schema (not)"));
    }
}

/// Runs the CEL rules of `node` and below on `value`; `old` is the correlated old value.
pub fn run_rules<'a>(
    node: &Node,
    value: &'a Value,
    old: Option<&'a Value>,
    path: &mut Path<'a>,
    out: &mut Vec<FieldError>,
) {
    if !node.has_rules || value.is_null() {
        return;
    }
    run_node_rules(node, value, old, path, out);
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                let (child, seg) = match (node.properties.get(k), &node.additional) {
                    (Some(child), _) => (child, Seg::Field(k.as_str())),
                    (None, Some(Additional::Schema(child))) => {
                        (child.as_ref(), Seg::Key(k.as_str()))
                    }
                    _ => continue,
                };
                if child.has_rules {
                    path.segs.push(seg);
                    run_rules(child, v, old.and_then(|o| o.get(k)), path, out);
                    path.segs.pop();
                }
            }
        }
        Value::Array(a) => {
            let Some(items) = node.items.as_deref().filter(|i| i.has_rules) else {
                return;
            };
            for (i, v) in a.iter().enumerate() {
                let old_item = old
                    .and_then(Value::as_array)
                    .and_then(|o| correlated_item(node, o, v));
                path.segs.push(Seg::Index(i));
                run_rules(items, v, old_item, path, out);
                path.segs.pop();
            }
        }
        _ => {}
    }
}

/// Runs the rules of `node` itself. On an unchanged value only transition rules run (the others
/// ratchet).
fn run_node_rules(
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    path: &Path,
    out: &mut Vec<FieldError>,
) {
    let unchanged = old == Some(value);
    let any_to_run = node.rules.iter().any(|r| !unchanged || r.uses_old_self);
    if any_to_run {
        let this = rule_self(node, value, path);
        let before = old.map(|o| rule_self(node, o, path));
        let optional = node.rules.iter().any(|r| r.optional_old_self);
        let optional_ctx =
            optional.then(|| cel::context_for(&node.rules, this.clone(), before.clone(), true));
        let ctx = cel::context_for(&node.rules, this, before, false);
        for rule in &node.rules {
            if unchanged && !rule.uses_old_self {
                continue;
            }
            let ctx = match &optional_ctx {
                Some(optional) if rule.optional_old_self => optional,
                _ => &ctx,
            };
            let at = || match &rule.field_path {
                Some(fp) if path.segs.is_empty() => fp.clone(),
                Some(fp) if fp.starts_with('[') => format!("{}{fp}", path.field()),
                Some(fp) => format!("{}.{fp}", path.field()),
                None => path.field(),
            };
            match rule.evaluate(ctx, old.is_some()) {
                Outcome::Passed => {}
                Outcome::Failed(detail) => out.push(rule_error(node, rule, at(), detail)),
                Outcome::Error(detail) => out.push(FieldError::invalid(
                    path.field(),
                    Value::String(node_type_name(node).into()),
                    detail,
                )),
            }
        }
    }
}

/// `self` of the rules of a node, as CEL sees it: at a resource root (the object or an embedded
/// resource) `metadata` is reduced to `name` and `generateName`, the only metadata rules read.
fn rule_self(node: &Node, value: &Value, path: &Path) -> cel::Cel {
    let root = path.segs.is_empty() || node.embedded;
    let typed = |v: &Value| match &node.rule_type {
        Some(t) => cel::to_cel_typed(v, t),
        None => cel::to_cel(v),
    };
    match value {
        Value::Object(m) if root && m.contains_key("metadata") => {
            let mut visible = Map::new();
            for (k, v) in m {
                let v = match (k.as_str(), v) {
                    ("metadata", Value::Object(meta)) => Value::Object(
                        meta.iter()
                            .filter(|(k, _)| *k == "name" || *k == "generateName")
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                    ),
                    _ => v.clone(),
                };
                visible.insert(k.clone(), v);
            }
            typed(&Value::Object(visible))
        }
        other => typed(other),
    }
}

fn rule_error(node: &Node, rule: &cel::Rule, at: String, detail: String) -> FieldError {
    // The value is shown by its schema type, as apiextensions-apiserver shows it (`sts.Type`).
    let shown = Some(Value::String(node_type_name(node).into()));
    match rule.reason {
        Some(ErrorType::Forbidden) => FieldError::forbidden(at, detail),
        Some(ErrorType::Required) => FieldError::required(at, detail),
        Some(ErrorType::Duplicate) => FieldError::new(ErrorType::Duplicate, at, shown, ""),
        _ => FieldError::new(ErrorType::Invalid, at, shown, detail),
    }
}
