//! What an answer about objects is written as, from the request's `Accept`, negotiated as
//! kube-apiserver negotiates it:
//!
//! - encoded as JSON, YAML or protobuf (`*/*` and `application/*` are JSON); a header naming
//!   none of them is refused by the route itself with go-restful's `406`;
//! - holding the object, or (`as=Table`, `as=PartialObjectMetadata`,
//!   `as=PartialObjectMetadataList` with `g=meta.k8s.io` and `v=v1` or `v1beta1`) the objects as
//!   a Table or their metadata alone (kube-rs's `get_metadata` and `metadata_watcher`,
//!   client-go's metadata client and controller-runtime's metadata-only caches, which ask for
//!   it in protobuf first); a Table is served in JSON and YAML only, as kube's request scope
//!   allows it; an entry asking for another form is passed over, and when every entry is, the
//!   answer is kube-apiserver's own `406`;
//! - entries are tried by their `q`, highest first, then in the order written; an object
//!   without a protobuf form (a custom resource, a kcp kind) passes over a protobuf entry for
//!   the next one, and is refused with a `406` in protobuf when none is left.
//!
//! A metadata form of the wrong shape (a list read as `PartialObjectMetadata`, an object as
//! `PartialObjectMetadataList`) is a `406` naming the object's Go type.

use serde_json::{Map, Value, json};

use crate::status::ApiError;

/// The media types kube-apiserver serves objects in.
const SERVED: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// How an answer is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// JSON (the default).
    Json,
    /// YAML text.
    Yaml,
    /// Kubernetes protobuf (see [`crate::protobuf`]).
    Protobuf,
}

/// What an answer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The object (or list) itself.
    Object,
    /// A Table of `meta.k8s.io/<version>` (see [`crate::table`]).
    Table(&'static str),
    /// An object's metadata alone, as a `PartialObjectMetadata` of `meta.k8s.io/<version>`.
    Metadata(&'static str),
    /// A list's items' metadata alone, as a `PartialObjectMetadataList`.
    MetadataList(&'static str),
}

/// One acceptable answer: what it holds, encoded how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    /// What the answer holds.
    pub form: Form,
    /// How it is encoded.
    pub encoding: Encoding,
}

impl Wanted {
    /// The object in JSON: what a client that names no preference gets.
    pub const JSON: Wanted = Wanted {
        form: Form::Object,
        encoding: Encoding::Json,
    };

    /// Whether this answer can carry `answer` (a JSON object or Status): only kinds with a
    /// protobuf form are encoded as themselves in protobuf; metadata and Statuses always are.
    pub fn carries(&self, answer: &Value) -> bool {
        if self.encoding != Encoding::Protobuf || self.form != Form::Object {
            return true;
        }
        let text = |key: &str| answer.get(key).and_then(Value::as_str).unwrap_or_default();
        crate::protobuf::response::check_encodable(text("apiVersion"), text("kind")).is_ok()
    }
}

/// The acceptable answers of one request, best first (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated(Vec<Wanted>);

impl Negotiated {
    /// JSON alone: what paths that are not objects' answer in.
    pub fn json() -> Negotiated {
        Negotiated(vec![Wanted::JSON])
    }

    /// The most wanted answer.
    pub fn first(&self) -> Wanted {
        self.0.first().copied().unwrap_or(Wanted::JSON)
    }

    /// The most wanted answer that can carry `answer`, or `None` when only protobuf forms were
    /// acceptable and the object has none.
    pub fn for_answer(&self, answer: &Value) -> Option<Wanted> {
        self.0.iter().copied().find(|w| w.carries(answer))
    }

    /// The most wanted answer for the objects of `api_version`/`kind` (a watch's, fixed before
    /// its first event).
    pub fn for_kind(&self, api_version: &str, kind: &str) -> Option<Wanted> {
        self.for_answer(&json!({"apiVersion": api_version, "kind": kind}))
    }
}

/// The answers `accept` asks for, or the `406` kube-apiserver answers it with.
pub fn negotiate(accept: Option<&str>) -> Result<Negotiated, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Negotiated::json());
    };
    let mut entries: Vec<(f32, usize, Entry)> = accept
        .split(',')
        .filter_map(Entry::parse)
        .enumerate()
        .map(|(order, entry)| (entry.quality, order, entry))
        .filter(|(quality, _, _)| *quality > 0.0)
        .collect();
    entries.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if !entries
        .iter()
        .any(|(_, _, entry)| entry.encoding().is_some())
    {
        return Err(ApiError::not_acceptable_by_route(SERVED));
    }
    let wanted: Vec<Wanted> = entries
        .iter()
        .filter_map(|(_, _, entry)| entry.wanted())
        .collect();
    if wanted.is_empty() {
        return Err(ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: {SERVED}"),
        ));
    }
    Ok(Negotiated(wanted))
}

/// What a discovery document is answered as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryForm {
    /// The document of the path (`APIGroupList`, `APIGroup`, `APIResourceList`, ...).
    Document,
    /// One `APIGroupDiscoveryList` of `apidiscovery.k8s.io/v2` (served at `/api` and `/apis`).
    Aggregated,
}

/// What a discovery path answers `accept` with, entries tried by `q` then in order: an entry of
/// a served encoding without `as` is the path's document; one asking for `apidiscovery.k8s.io`
/// `v2` `APIGroupDiscoveryList` is the aggregated list where `aggregated` serves it; any other
/// form is passed over, and when every entry of a served encoding is, the answer is
/// kube-apiserver's `406` (discovery converts nothing: a Table is not acceptable either).
/// A header naming no served encoding at all is answered with the document.
pub fn negotiate_discovery(
    accept: Option<&str>,
    aggregated: bool,
) -> Result<DiscoveryForm, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(DiscoveryForm::Document);
    };
    let mut entries: Vec<(f32, usize, Entry)> = accept
        .split(',')
        .filter_map(Entry::parse)
        .enumerate()
        .map(|(order, entry)| (entry.quality, order, entry))
        .filter(|(quality, _, entry)| *quality > 0.0 && entry.encoding().is_some())
        .collect();
    if entries.is_empty() {
        return Ok(DiscoveryForm::Document);
    }
    entries.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let form_of = |entry: &Entry| match entry.param("as") {
        None => Some(DiscoveryForm::Document),
        Some("APIGroupDiscoveryList")
            if aggregated
                && entry.param("g") == Some("apidiscovery.k8s.io")
                && entry.param("v") == Some("v2") =>
        {
            Some(DiscoveryForm::Aggregated)
        }
        Some(_) => None,
    };
    entries
        .iter()
        .find_map(|(_, _, entry)| form_of(entry))
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

    /// The encoding this entry's type names, before its parameters are looked at.
    fn encoding(&self) -> Option<Encoding> {
        match self.media_type.as_str() {
            "application/json" | "*/*" | "application/*" => Some(Encoding::Json),
            "application/yaml" => Some(Encoding::Yaml),
            "application/vnd.kubernetes.protobuf" => Some(Encoding::Protobuf),
            _ => None,
        }
    }

    /// What the entry asks for, when kube-apiserver serves it.
    fn wanted(&self) -> Option<Wanted> {
        let encoding = self.encoding()?;
        let Some(form) = self.param("as") else {
            return Some(Wanted {
                form: Form::Object,
                encoding,
            });
        };
        let version = match self.param("v") {
            Some("v1") => "v1",
            Some("v1beta1") => "v1beta1",
            _ => return None,
        };
        if self.param("g") != Some("meta.k8s.io") {
            return None;
        }
        let form = match form {
            "Table" if encoding != Encoding::Protobuf => Form::Table(version),
            "PartialObjectMetadata" => Form::Metadata(version),
            "PartialObjectMetadataList" => Form::MetadataList(version),
            _ => return None,
        };
        Some(Wanted { form, encoding })
    }
}

/// An answer's object in the metadata form asked for; a Status is left as it is.
pub fn as_metadata(form: Form, answer: Value) -> Result<Value, ApiError> {
    let kind = answer
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let is_list = answer.get("items").is_some_and(Value::is_array);
    match form {
        _ if kind == "Status" => Ok(answer),
        Form::Metadata(version) if !is_list => Ok(partial(&answer, version)),
        Form::Metadata(_) => Err(wrong_shape(
            "you requested PartialObjectMetadata, but the requested object is a list",
            &answer,
        )),
        Form::MetadataList(version) if is_list => {
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
        Form::MetadataList(_) => Err(wrong_shape(
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

    const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

    #[test]
    fn discovery_without_an_accept_is_the_document() {
        assert_eq!(
            negotiate_discovery(None, true).unwrap(),
            DiscoveryForm::Document
        );
    }

    #[test]
    fn aggregated_discovery_is_answered_where_it_is_served() {
        let accept = format!("{AGGREGATED},application/json");
        assert_eq!(
            negotiate_discovery(Some(&accept), true).unwrap(),
            DiscoveryForm::Aggregated
        );
        assert_eq!(
            negotiate_discovery(Some(&accept), false).unwrap(),
            DiscoveryForm::Document
        );
    }

    #[test]
    fn aggregated_discovery_alone_where_it_is_not_served_is_not_acceptable() {
        let error = negotiate_discovery(Some(AGGREGATED), false).unwrap_err();
        assert_eq!(error.code, 406);
        assert!(error.message.starts_with("only the following media types"));
    }

    #[test]
    fn an_unknown_aggregated_version_falls_back_to_the_document() {
        let accept = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate_discovery(Some(accept), true).unwrap(),
            DiscoveryForm::Document
        );
    }

    #[test]
    fn a_table_of_discovery_is_not_acceptable() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io";
        assert_eq!(
            negotiate_discovery(Some(accept), true).unwrap_err().code,
            406
        );
    }

    fn first(accept: &str) -> Wanted {
        negotiate(Some(accept)).unwrap().first()
    }

    fn protobuf(form: Form) -> Wanted {
        Wanted {
            form,
            encoding: Encoding::Protobuf,
        }
    }

    #[test]
    fn no_accept_and_wildcards_are_json() {
        assert_eq!(negotiate(None).unwrap().first(), Wanted::JSON);
        assert_eq!(first("*/*"), Wanted::JSON);
        assert_eq!(first("application/*"), Wanted::JSON);
    }

    #[test]
    fn metadata_forms_need_meta_k8s_io_and_a_known_version() {
        let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        assert_eq!(first(accept).form, Form::Metadata("v1"));
        let unknown = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v9";
        let error = negotiate(Some(unknown)).unwrap_err();
        assert_eq!(error.code, 406);
        assert!(error.message.starts_with("only the following media types"));
        let fallback = format!("{unknown}, application/json");
        assert_eq!(first(&fallback), Wanted::JSON);
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
        assert_eq!(first(accept).encoding, Encoding::Yaml);
    }

    #[test]
    fn protobuf_first_is_protobuf_for_a_builtin_kind_and_json_for_a_custom_resource() {
        let negotiated = negotiate(Some("application/vnd.kubernetes.protobuf,application/json"));
        let negotiated = negotiated.unwrap();
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        let gizmo = json!({"apiVersion": "example.com/v1", "kind": "Gizmo"});
        let status = json!({"apiVersion": "v1", "kind": "Status"});
        assert_eq!(
            negotiated.for_answer(&configmap),
            Some(protobuf(Form::Object))
        );
        assert_eq!(negotiated.for_answer(&gizmo), Some(Wanted::JSON));
        assert_eq!(negotiated.for_answer(&status), Some(protobuf(Form::Object)));
    }

    #[test]
    fn a_custom_resource_asked_for_only_in_protobuf_has_no_answer() {
        let negotiated = negotiate(Some("application/vnd.kubernetes.protobuf")).unwrap();
        assert_eq!(negotiated.for_kind("example.com/v1", "Gizmo"), None);
    }

    #[test]
    fn metadata_is_served_in_protobuf_whatever_the_kind() {
        let accept =
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        let negotiated = negotiate(Some(accept)).unwrap();
        assert_eq!(
            negotiated.for_kind("example.com/v1", "Gizmo"),
            Some(protobuf(Form::Metadata("v1")))
        );
    }

    #[test]
    fn kubectl_get_asks_for_a_table_first() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(first(kubectl).form, Form::Table("v1"));
        let json_first = "application/json, application/json;as=Table;v=v1;g=meta.k8s.io";
        assert_eq!(first(json_first), Wanted::JSON);
    }

    #[test]
    fn a_table_in_protobuf_is_passed_over() {
        let accept = "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1";
        assert_eq!(negotiate(Some(accept)).unwrap_err().code, 406);
        let fallback = format!("{accept},application/json");
        assert_eq!(first(&fallback), Wanted::JSON);
    }

    #[test]
    fn a_list_read_as_one_objects_metadata_names_its_go_type() {
        let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": []});
        let error = as_metadata(Form::Metadata("v1"), list).unwrap_err();
        assert_eq!(
            error.message,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
        );
    }
}
