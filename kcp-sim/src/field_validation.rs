//! `fieldValidation`: what a write does with the fields of its body that the kind does not
//! have (unknown fields) and with keys a JSON object repeats (duplicate fields), as
//! kube-apiserver does it:
//! - `Strict`: the write fails, naming every one (`400 BadRequest` for a create or update
//!   body, `422 Invalid` about `patch` for a patch);
//! - `Warn` (the default): the fields are dropped, and each is named in a `Warning` header;
//! - `Ignore`: the fields are dropped silently.
//!
//! Server-side apply is the exception: a field the schema does not declare fails the apply
//! with a `500` whatever the mode ([`undeclared_in_apply`]).

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::schema::field::invalid_object;
use crate::status::{ApiError, ApiResult, StatusCause};

/// The `fieldValidation` of a write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop unknown and duplicate fields silently.
    Ignore,
    /// Drop them and warn of each (the default).
    #[default]
    Warn,
    /// Fail the write.
    Strict,
}

impl FieldValidation {
    /// The mode a request asks for; any value but the three (or none) is refused as kube's
    /// `ValidateFieldValidation` refuses it, a 422 about the request's options (`options_kind`:
    /// `CreateOptions`, `UpdateOptions` or `PatchOptions`).
    pub fn parse(value: Option<&str>, options_kind: &str) -> ApiResult<Self> {
        if let Some(error) = crate::write_options::field_validation_error(value) {
            return Err(invalid_object("meta.k8s.io", options_kind, "", &[error]));
        }
        Ok(match value.unwrap_or_default() {
            "Ignore" => Self::Ignore,
            "Strict" => Self::Strict,
            _ => Self::Warn,
        })
    }
}

/// The fields of a body that field validation judges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Unknown fields, by path (`spec.replica`).
    pub unknown: Vec<String>,
    /// Duplicate fields, by path (`spec.size`).
    pub duplicates: Vec<String>,
}

impl Findings {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.unknown.is_empty() && self.duplicates.is_empty()
    }

    /// Each finding as the real server words it: `unknown field "x"`, `duplicate field "y"`.
    fn words(&self) -> Vec<String> {
        let unknown = self.unknown.iter().map(|f| format!("unknown field {f:?}"));
        let duplicates = self
            .duplicates
            .iter()
            .map(|f| format!("duplicate field {f:?}"));
        unknown.chain(duplicates).collect()
    }

    /// `strict decoding error: unknown field "x", duplicate field "y"`.
    fn strict_text(&self) -> String {
        format!("strict decoding error: {}", self.words().join(", "))
    }

    /// The warnings of a write under `mode`, or the error of a create or update body under
    /// `Strict` (`kind` and `version` name the type the body could not be read as).
    pub fn judge_body(
        self,
        mode: FieldValidation,
        kind: &str,
        version: &str,
    ) -> ApiResult<Vec<String>> {
        match mode {
            FieldValidation::Strict if !self.is_empty() => {
                Err(cannot_be_handled(kind, version, &self.strict_text()))
            }
            FieldValidation::Warn => Ok(self.words()),
            _ => Ok(Vec::new()),
        }
    }

    /// As [`Findings::judge_body`], for a patch: under `Strict`, the `422 Invalid` about
    /// `patch` whose value is `shown()` (the patched object, or the strategic patch).
    pub fn judge_patch(
        self,
        mode: FieldValidation,
        shown: impl FnOnce() -> String,
    ) -> ApiResult<Vec<String>> {
        match mode {
            FieldValidation::Strict if !self.is_empty() => {
                Err(invalid_patch(&shown(), &self.strict_text()))
            }
            FieldValidation::Warn => Ok(self.words()),
            _ => Ok(Vec::new()),
        }
    }
}

/// The `400` of a body that is no valid object of its kind:
/// `<Kind> in version "<version>" cannot be handled as a <Kind>: <why>`.
pub fn cannot_be_handled(kind: &str, version: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {why}"
    ))
}

/// The `422` of a patch whose result is refused: ` "" is invalid: patch: Invalid value:
/// "<shown>": <why>`, with that one cause and no kind or name.
pub fn invalid_patch(shown: &str, why: &str) -> ApiError {
    let message = format!("Invalid value: {shown:?}: {why}");
    ApiError::new(
        422,
        "Invalid",
        format!(" \"\" is invalid: patch: {message}"),
    )
    .with_causes(vec![StatusCause {
        reason: "FieldValueInvalid".to_string(),
        message,
        field: "patch".to_string(),
    }])
}

/// The `500` of a server-side apply whose body has fields the schema does not declare
/// (structured-merge-diff's words): `failed to create typed patch object (<namespace>/<name>;
/// <apiVersion>, Kind=<Kind>): .spec.extra: field not declared in schema`; several are listed
/// under `errors:`. `paths` are in structured-merge-diff's form (`.spec.containers[name="c"].x`).
pub fn undeclared_in_apply(
    object: &str,
    api_version: &str,
    kind: &str,
    paths: &[String],
) -> ApiError {
    let gv = if api_version.contains('/') {
        api_version.to_string()
    } else {
        format!("/{api_version}")
    };
    let errors: Vec<String> = paths
        .iter()
        .map(|p| format!("{p}: field not declared in schema"))
        .collect();
    let listed = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    ApiError::new(
        500,
        "",
        format!("failed to create typed patch object ({object}; {gv}, Kind={kind}): {listed}"),
    )
}

/// An unknown field's path (`spec.template.spec.containers[0].extra`) in structured-merge-diff's
/// form, read against the applied object: a list item by its `name` when it has one
/// (`.spec.template.spec.containers[name="c"].extra`), else by its index.
pub fn apply_path(path: &str, object: &Value) -> String {
    let mut out = String::new();
    let mut here = Some(object);
    for part in path.split('.') {
        let (field, indices) = match part.split_once('[') {
            Some((field, rest)) => (field, Some(rest)),
            None => (part, None),
        };
        out.push('.');
        out.push_str(field);
        here = here.and_then(|v| v.get(field));
        let Some(indices) = indices else { continue };
        for index in indices.split('[').map(|i| i.trim_end_matches(']')) {
            let item = match here {
                Some(Value::Array(items)) => index.parse::<usize>().ok().and_then(|i| items.get(i)),
                Some(Value::Object(entries)) => entries.get(index),
                _ => None,
            };
            match (
                here,
                item.and_then(|i| i.get("name")).and_then(Value::as_str),
            ) {
                (Some(Value::Array(_)), Some(name)) => out.push_str(&format!("[name={name:?}]")),
                (Some(Value::Object(_)), _) => out.push_str(&format!(".{index}")),
                _ => out.push_str(&format!("[{index}]")),
            }
            here = item;
        }
    }
    out
}

/// The keys a JSON body repeats within one object, by path (`data`, `spec.size`); empty for a
/// body that is not JSON.
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let seed = Duplicates {
        path: String::new(),
        found: &found,
    };
    if seed.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    found.into_inner()
}

/// Walks a JSON document, noting each key an object repeats.
struct Duplicates<'a> {
    path: String,
    found: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Duplicates<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Duplicates<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Duplicates {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Duplicates {
                path: format!("{}[{i}]", self.path),
                found: self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A JSON value as Go's `fmt` prints the `map[string]interface{}` it decodes to (`%v`):
/// `map[data:map[x:y] extra:1]`, keys sorted, lists as `[a b]`, `<nil>` for null. The value a
/// strict strategic merge patch's error shows.
pub fn go_fmt(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => go_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_fmt).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(map) => go_fmt_map(map),
    }
}

fn go_fmt_map(map: &Map<String, Value>) -> String {
    let entries: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}:{}", go_fmt(v)))
        .collect();
    format!("map[{}]", entries.join(" "))
}

/// A float64 as `%v` prints it: the shortest form, an exponent from 1e21 on.
fn go_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_unsupported_mode_is_refused_naming_the_options_kind() {
        let error = FieldValidation::parse(Some("strict"), "CreateOptions").unwrap_err();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        );
    }

    #[test]
    fn strict_names_unknown_then_duplicate_fields() {
        let findings = Findings {
            unknown: vec!["extra".into(), "metadata2".into()],
            duplicates: vec![],
        };
        let error = findings
            .judge_body(FieldValidation::Strict, "ConfigMap", "v1")
            .unwrap_err();
        assert_eq!(error.code, 400);
        assert_eq!(
            error.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"extra\", unknown field \"metadata2\""
        );
    }

    #[test]
    fn warn_words_each_finding_and_ignore_says_nothing() {
        let findings = Findings {
            unknown: vec!["metadata.extra".into()],
            duplicates: vec!["data".into()],
        };
        assert_eq!(
            findings
                .clone()
                .judge_body(FieldValidation::Warn, "ConfigMap", "v1")
                .unwrap(),
            [
                "unknown field \"metadata.extra\"",
                "duplicate field \"data\""
            ]
        );
        assert!(
            findings
                .judge_body(FieldValidation::Ignore, "ConfigMap", "v1")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn duplicate_keys_are_found_at_any_depth() {
        let body = br#"{"data":{"a":"b"},"data":{"c":"d"},"spec":{"items":[{"x":1,"x":2}]}}"#;
        assert_eq!(duplicate_fields(body), ["data", "spec.items[0].x"]);
        assert!(duplicate_fields(b"{\"a\":1}").is_empty());
    }

    #[test]
    fn a_strategic_patch_is_shown_as_go_prints_its_map() {
        assert_eq!(go_fmt(&json!({"extra": 1})), "map[extra:1]");
        assert_eq!(
            go_fmt(&json!({"extra": 1, "data": {"x": "y"}, "l": [1, "a", null], "f": 1.5})),
            "map[data:map[x:y] extra:1 f:1.5 l:[1 a <nil>]]"
        );
    }

    #[test]
    fn apply_paths_key_list_items_by_name() {
        let applied =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "extra": 1}]}}}});
        assert_eq!(
            apply_path("spec.template.spec.containers[0].extra", &applied),
            ".spec.template.spec.containers[name=\"c\"].extra"
        );
        assert_eq!(apply_path("extra", &json!({"extra": 1})), ".extra");
    }

    #[test]
    fn an_undeclared_field_fails_the_apply_with_a_500() {
        let error = undeclared_in_apply("default/ap9", "v1", "ConfigMap", &[".extra".into()]);
        assert_eq!(error.code, 500);
        assert_eq!(
            error.message,
            "failed to create typed patch object (default/ap9; /v1, Kind=ConfigMap): .extra: field not declared in schema"
        );
        let two = undeclared_in_apply(
            "/ap3",
            "fv.example.com/v1",
            "Widget",
            &[".a".into(), ".b".into()],
        );
        assert_eq!(
            two.message,
            "failed to create typed patch object (/ap3; fv.example.com/v1, Kind=Widget): errors:\n  .a: field not declared in schema\n  .b: field not declared in schema"
        );
    }
}
