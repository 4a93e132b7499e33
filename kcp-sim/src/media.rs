//! What an answer about objects is written as, from the request's `Accept`, negotiated as
//! kube-apiserver negotiates it:
//!
//! - JSON, YAML or protobuf (`*/*` and `application/*` are JSON); a header naming none of them
//!   is refused by the route itself with go-restful's `406`;
//! - `as=Table`, `as=PartialObjectMetadata` and `as=PartialObjectMetadataList` with
//!   `g=meta.k8s.io` and `v=v1` or `v1beta1`: objects as a Table, or their metadata alone
//!   (kube-rs's `get_metadata` and `metadata_watcher`, controller-runtime's metadata-only
//!   caches); an entry asking for another form is passed over, and when every entry is, the
//!   answer is kube-apiserver's own `406`;
//! - entries are tried by their `q`, highest first, then in the order written.
//!
//! A metadata form of the wrong shape (a list read as `PartialObjectMetadata`, an object as
//! `PartialObjectMetadataList`) is a `406` naming the object's Go type.

use serde_json::{Map, Value, json};

use crate::status::ApiError;

/// The media types kube-apiserver serves objects in.
const SERVED: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// What the client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// JSON (the default).
    Json,
    /// YAML text.
    Yaml,
    /// Protobuf (see [`crate::protobuf`]).
    Protobuf,
    /// A Table (see [`crate::table`]).
    Table,
    /// An object's metadata alone, as a `PartialObjectMetadata` of `meta.k8s.io/<version>`.
    Metadata(&'static str),
    /// A list's items' metadata alone, as a `PartialObjectMetadataList`.
    MetadataList(&'static str),
}

/// The form `accept` asks for, or the `406` kube-apiserver answers it with.
pub fn negotiate(accept: Option<&str>) -> Result<Wanted, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Wanted::Json);
    };
    let mut entries: Vec<(f32, usize, Entry)> = accept
        .split(',')
        .filter_map(Entry::parse)
        .enumerate()
        .map(|(order, entry)| (entry.quality, order, entry))
        .filter(|(quality, _, _)| *quality > 0.0)
        .collect();
    entries.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if !entries.iter().any(|(_, _, entry)| entry.base().is_some()) {
        return Err(ApiError::not_acceptable_by_route(SERVED));
    }
    entries
        .iter()
        .find_map(|(_, _, entry)| entry.wanted())
        .ok_or_else(|| {
            ApiError::new(
                406,
                "NotAcceptable",
                format!("only the following media types are accepted: {SERVED}"),
            )
        })
}

/// One media range of `Accept`.
#[derive(Debug)]
struct Entry {
    media_type: String,
    params: Vec<(String, String)>,
    quality: f32,
}

impl Entry {
    fn parse(text: &str) -> Option<Entry> {
        let mut parts = text.split(';').map(str::trim);
        let media_type = parts.next().filter(|t| !t.is_empty())?.to_ascii_lowercase();
        let mut params = Vec::new();
        let mut quality = 1.0;
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim().trim_matches('"'));
            if key == "q" {
                quality = value.parse().unwrap_or(0.0);
            } else {
                params.push((key.to_owned(), value.to_owned()));
            }
        }
        Some(Entry {
            media_type,
            params,
            quality,
        })
    }

    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The plain form this entry's type names, before its parameters are looked at.
    fn base(&self) -> Option<Wanted> {
        match self.media_type.as_str() {
            "application/json" | "*/*" | "application/*" => Some(Wanted::Json),
            "application/yaml" => Some(Wanted::Yaml),
            "application/vnd.kubernetes.protobuf" => Some(Wanted::Protobuf),
            _ => None,
        }
    }

    /// What the entry asks for, when kube-apiserver serves it.
    fn wanted(&self) -> Option<Wanted> {
        let base = self.base()?;
        let Some(form) = self.param("as") else {
            return Some(base);
        };
        let version = match self.param("v") {
            Some("v1") => "v1",
            Some("v1beta1") => "v1beta1",
            _ => return None,
        };
        if self.param("g") != Some("meta.k8s.io") {
            return None;
        }
        match form {
            "Table" => Some(Wanted::Table),
            "PartialObjectMetadata" => Some(Wanted::Metadata(version)),
            "PartialObjectMetadataList" => Some(Wanted::MetadataList(version)),
            _ => None,
        }
    }
}

/// An answer's object in the metadata form asked for; a Status is left as it is.
pub fn as_metadata(wanted: &Wanted, answer: Value) -> Result<Value, ApiError> {
    let kind = answer
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let is_list = answer.get("items").is_some_and(Value::is_array);
    match wanted {
        _ if kind == "Status" => Ok(answer),
        Wanted::Metadata(version) if !is_list => Ok(partial(&answer, version)),
        Wanted::Metadata(_) => Err(wrong_shape(
            "you requested PartialObjectMetadata, but the requested object is a list",
            &answer,
        )),
        Wanted::MetadataList(version) if is_list => {
            let items: Vec<Value> = answer
                .get("items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|item| partial(item, version))
                .collect();
            Ok(json!({
                "apiVersion": format!("meta.k8s.io/{version}"),
                "kind": "PartialObjectMetadataList",
                "metadata": answer.get("metadata").cloned().unwrap_or_else(|| json!({})),
                "items": items,
            }))
        }
        Wanted::MetadataList(_) => Err(wrong_shape(
            "you requested PartialObjectMetadataList, but the requested object is not a list",
            &answer,
        )),
        _ => Ok(answer),
    }
}

/// One object's `PartialObjectMetadata`.
pub fn partial(object: &Value, version: &str) -> Value {
    json!({
        "apiVersion": format!("meta.k8s.io/{version}"),
        "kind": "PartialObjectMetadata",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| Value::Object(Map::new())),
    })
}

fn wrong_shape(why: &str, answer: &Value) -> ApiError {
    ApiError::new(
        406,
        "NotAcceptable",
        format!("{why} (*{})", go_type_name(answer)),
    )
}

/// The Go type kube-apiserver holds an answer's object in: its internal type for a builtin kind
/// (`core.ConfigMapList`), `unstructured.Unstructured` (or `...List`) for a custom resource.
fn go_type_name(answer: &Value) -> String {
    let text = |key: &str| answer.get(key).and_then(Value::as_str).unwrap_or_default();
    let group = text("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
    let kind = text("kind");
    match crate::semantics::internal_package(group) {
        Some(package) => format!("{package}.{kind}"),
        None if kind.ends_with("List") => "unstructured.UnstructuredList".to_owned(),
        None => "unstructured.Unstructured".to_owned(),
    }
}

/// An answer as YAML text, as kube-apiserver writes it (its JSON converted).
pub fn as_yaml(answer: &Value) -> String {
    serde_saphyr::to_string(answer).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_accept_and_wildcards_are_json() {
        assert_eq!(negotiate(None).unwrap(), Wanted::Json);
        assert_eq!(negotiate(Some("*/*")).unwrap(), Wanted::Json);
        assert_eq!(negotiate(Some("application/*")).unwrap(), Wanted::Json);
    }

    #[test]
    fn metadata_forms_need_meta_k8s_io_and_a_known_version() {
        let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        assert_eq!(negotiate(Some(accept)).unwrap(), Wanted::Metadata("v1"));
        let unknown = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v9";
        let error = negotiate(Some(unknown)).unwrap_err();
        assert_eq!(error.code, 406);
        assert!(error.message.starts_with("only the following media types"));
        let fallback = format!("{unknown}, application/json");
        assert_eq!(negotiate(Some(&fallback)).unwrap(), Wanted::Json);
    }

    #[test]
    fn a_type_not_served_is_go_restfuls_406() {
        let error = negotiate(Some("text/plain")).unwrap_err();
        assert_eq!(error.code, 406);
        assert!(error.message.starts_with("406: Not Acceptable"));
    }

    #[test]
    fn quality_orders_the_entries() {
        let accept = "application/json;q=0.5, application/yaml";
        assert_eq!(negotiate(Some(accept)).unwrap(), Wanted::Yaml);
    }

    #[test]
    fn a_list_read_as_one_objects_metadata_names_its_go_type() {
        let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": []});
        let error = as_metadata(&Wanted::Metadata("v1"), list).unwrap_err();
        assert_eq!(
            error.message,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
        );
    }
}
