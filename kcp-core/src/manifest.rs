//! Manifest streams: YAML or JSON text in, Kubernetes objects out (and back to YAML).
//!
//! [`parse_manifests`] turns the text of a manifest file or a rendered template into
//! [`DynamicObject`]s, in input order. The rules follow what `kubectl` and kcp's init-agent
//! accept, with two additions (`kind: List` expansion and top-level JSON arrays):
//!
//! * **Format.** When the first non-whitespace character is `{` or `[`, the text is a stream of
//!   concatenated JSON values. Otherwise it is a YAML stream.
//! * **YAML documents** are split at lines that start at column 0 with `---`, followed only by
//!   whitespace or a `# comment`. Any other line starting with `---` (`---x`, `----`,
//!   `--- {a: 1}`) is an error naming that line. A `...` line (again optionally followed by
//!   whitespace or a comment) ends the current document. Text before the first `---` or after a
//!   `...` that holds only whitespace and comments is not a document; every other piece of the
//!   stream is one, including empty ones.
//! * **Documents are numbered** from 0 in stream order. Empty documents (nothing, only
//!   comments, `null`, `{}`) are skipped but keep their number, so an error in "document 3"
//!   is the fourth piece of the stream, whatever came before it.
//! * **Each document must be a mapping.** A list or a scalar is an error.
//! * **Lists are expanded.** A document of kind `List`, or of a kind ending in `List` that has an
//!   `items` array (e.g. `ConfigMapList`), stands for its items, in order. A top-level JSON array
//!   is treated the same way: each element is one object.
//! * **Every object needs `apiVersion` and `kind`.** Nothing is defaulted, in particular no
//!   namespace is filled in.
//!
//! Every failure is an [`Error::Manifest`] naming the source, the 0-based document index and a
//! 1-based line: the precise line of a YAML or JSON syntax error, otherwise the first line of
//! the document's content.
//!
//! YAML scalars are resolved with the YAML 1.1 rules Kubernetes uses (`sigs.k8s.io/yaml`, i.e.
//! go-yaml v2): `yes`/`no`/`on`/`off`/`y`/`n` are booleans, `0644` is the octal 420, `0x1F`
//! is 31, `1_000` is 1000, dates stay strings. As in Go's YAML-to-JSON conversion, a float with
//! no fractional part (`1e3`) becomes the integer `1000`. Quote such values when a string is
//! meant. Mapping keys always stay strings (go-yaml would turn a key `y:` or `on:` into
//! `"true"`), and `Yes`-style spellings are matched without regard to case.

use kube::api::DynamicObject;
use serde_json::Value;
use serde_saphyr::{MessageFormatter, UserMessageFormatter};

use crate::client::gvk_of;
use crate::error::{Error, Result};

/// Parses a YAML or JSON manifest stream into objects, in input order.
///
/// `source_name` (a file or template name) only appears in error messages. See the
/// [module documentation](self) for the exact rules.
pub fn parse_manifests(source_name: &str, text: &str) -> Result<Vec<DynamicObject>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let documents = if is_json(text) {
        split_json(source_name, text)?
    } else {
        split_yaml(source_name, text)?
    };
    let mut objects = Vec::new();
    for document in documents {
        document.collect_objects(source_name, &mut objects)?;
    }
    Ok(objects)
}

/// Writes objects as one YAML stream, documents separated by `---` lines.
///
/// The result parses back with [`parse_manifests`] into the same objects.
pub fn to_yaml_stream(objects: &[DynamicObject]) -> Result<String> {
    serde_saphyr::to_string_multiple(objects).map_err(|err| Error::InvalidObject {
        object: format!("stream of {} objects", objects.len()),
        field: "(root)".into(),
        reason: format!("cannot be written as YAML: {err}"),
    })
}

/// One document of the stream, decoded to JSON.
struct Document {
    /// 0-based position in the stream.
    index: usize,
    /// 1-based line of the document's first content.
    line: usize,
    value: Value,
}

impl Document {
    fn error(&self, source_name: &str, message: impl Into<String>) -> Error {
        manifest_error(source_name, self.index, self.line, message)
    }

    /// Appends the document's objects (none when empty, the items of a list) to `out`.
    fn collect_objects(self, source_name: &str, out: &mut Vec<DynamicObject>) -> Result<()> {
        match &self.value {
            Value::Null => Ok(()),
            Value::Object(map) if map.is_empty() => Ok(()),
            Value::Object(map) => match list_items(map) {
                Some((kind, items)) => {
                    for (position, item) in items.iter().enumerate() {
                        let object = self.object(source_name, item, Some((kind, position)))?;
                        out.push(object);
                    }
                    Ok(())
                }
                None => {
                    out.push(self.object(source_name, &self.value, None)?);
                    Ok(())
                }
            },
            Value::Array(items) => {
                // Only a top-level JSON array gets here: YAML sequences are rejected earlier.
                for (position, item) in items.iter().enumerate() {
                    out.push(self.object(source_name, item, Some(("JSON array", position)))?);
                }
                Ok(())
            }
            other => Err(self.error(
                source_name,
                format!("expected a mapping (an object), found {}", describe(other)),
            )),
        }
    }

    /// Converts one mapping into an object, checking that it has `apiVersion` and `kind`.
    ///
    /// `item` names the enclosing list and the position when the value is a list item.
    fn object(
        &self,
        source_name: &str,
        value: &Value,
        item: Option<(&str, usize)>,
    ) -> Result<DynamicObject> {
        let prefix = match item {
            Some((list, position)) => format!("item {position} of {list}: "),
            None => String::new(),
        };
        if !value.is_object() {
            return Err(self.error(
                source_name,
                format!(
                    "{prefix}expected a mapping (an object), found {}",
                    describe(value)
                ),
            ));
        }
        let object: DynamicObject = serde_json::from_value(value.clone())
            .map_err(|err| self.error(source_name, format!("{prefix}{err}")))?;
        gvk_of(&object).map_err(|err| self.error(source_name, format!("{prefix}{err}")))?;
        Ok(object)
    }
}

/// The kind and items of a list document, or `None` for an ordinary object.
fn list_items(map: &serde_json::Map<String, Value>) -> Option<(&str, &[Value])> {
    let kind = map.get("kind")?.as_str()?;
    match map.get("items") {
        Some(Value::Array(items)) if kind.ends_with("List") => Some((kind, items.as_slice())),
        None | Some(Value::Null) if kind == "List" => Some((kind, &[])),
        _ => None,
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn manifest_error(
    source_name: &str,
    document: usize,
    line: usize,
    message: impl Into<String>,
) -> Error {
    Error::Manifest {
        source_name: source_name.to_string(),
        document,
        line,
        message: message.into(),
    }
}

fn is_json(text: &str) -> bool {
    matches!(text.trim_start().chars().next(), Some('{' | '['))
}

/// 1-based line number of a byte offset.
fn line_at(text: &str, offset: usize) -> usize {
    text.as_bytes()
        .iter()
        .take(offset)
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Splits a stream of concatenated JSON values.
fn split_json(source_name: &str, text: &str) -> Result<Vec<Document>> {
    let mut documents = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let consumed = stream.byte_offset();
        let rest = &text[consumed..];
        let start = consumed + (rest.len() - rest.trim_start().len());
        match stream.next() {
            None => return Ok(documents),
            Some(Ok(value)) => documents.push(Document {
                index: documents.len(),
                line: line_at(text, start),
                value,
            }),
            Some(Err(err)) => {
                return Err(manifest_error(
                    source_name,
                    documents.len(),
                    err.line().max(1),
                    format!("invalid JSON: {err}"),
                ));
            }
        }
    }
}

/// One piece of a YAML stream, between separators.
struct YamlChunk<'a> {
    /// 1-based line of the chunk's first line.
    first_line: usize,
    text: &'a str,
    /// Whether the chunk was opened by a `---` line (and so is a document even when empty).
    explicit: bool,
}

impl YamlChunk<'_> {
    /// 1-based line of the first line that is neither blank nor a comment.
    fn content_line(&self) -> Option<usize> {
        self.text
            .lines()
            .position(|line| !is_blank_or_comment(line))
            .map(|offset| self.first_line + offset)
    }
}

fn is_blank_or_comment(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.is_empty() || trimmed.starts_with('#')
}

/// How the YAML splitter reads one line.
enum LineKind {
    /// Part of the current document.
    Content,
    /// `---`: a new document starts after this line.
    DocumentStart,
    /// `...`: the current document ends at this line.
    DocumentEnd,
    /// `---` followed by something other than whitespace or a comment.
    BadSeparator,
}

fn classify(line: &str) -> LineKind {
    let only_comment_follows = |rest: &str| {
        let rest = rest.trim();
        rest.is_empty() || rest.starts_with('#')
    };
    if let Some(rest) = line.strip_prefix("---") {
        if only_comment_follows(rest) {
            LineKind::DocumentStart
        } else {
            LineKind::BadSeparator
        }
    } else if line.strip_prefix("...").is_some_and(only_comment_follows) {
        LineKind::DocumentEnd
    } else {
        // Including `...x`: not a marker, left to the YAML parser.
        LineKind::Content
    }
}

/// Splits a YAML stream at its `---` and `...` lines and decodes each document.
fn split_yaml(source_name: &str, text: &str) -> Result<Vec<Document>> {
    let mut chunks: Vec<YamlChunk<'_>> = Vec::new();
    let mut chunk_start = 0usize;
    let mut chunk_first_line = 1usize;
    let mut explicit = false;
    let mut offset = 0usize;
    for (line_number, line) in (1usize..).zip(text.split_inclusive('\n')) {
        let next_offset = offset + line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        match classify(content) {
            LineKind::Content => {}
            kind @ (LineKind::DocumentStart | LineKind::DocumentEnd) => {
                chunks.push(YamlChunk {
                    first_line: chunk_first_line,
                    text: &text[chunk_start..offset],
                    explicit,
                });
                explicit = matches!(kind, LineKind::DocumentStart);
                chunk_start = next_offset;
                chunk_first_line = line_number + 1;
            }
            LineKind::BadSeparator => {
                let document = chunks.iter().filter(|c| is_document(c)).count();
                return Err(manifest_error(
                    source_name,
                    document,
                    line_number,
                    format!(
                        "invalid document separator {content:?}: `---` may only be followed by \
                         whitespace or a comment"
                    ),
                ));
            }
        }
        offset = next_offset;
    }
    chunks.push(YamlChunk {
        first_line: chunk_first_line,
        text: &text[chunk_start..],
        explicit,
    });

    let mut documents = Vec::new();
    for chunk in chunks.into_iter().filter(is_document) {
        let index = documents.len();
        let Some(line) = chunk.content_line() else {
            documents.push(Document {
                index,
                line: chunk.first_line,
                value: Value::Null,
            });
            continue;
        };
        let value: Value = serde_saphyr::from_str_with_options(chunk.text, yaml11_options())
            .map(integral_floats_as_integers)
            .map_err(|err| yaml_error(source_name, index, &chunk, line, &err))?;
        if value.is_array() {
            return Err(manifest_error(
                source_name,
                index,
                line,
                "expected a mapping (an object), found a list",
            ));
        }
        documents.push(Document { index, line, value });
    }
    Ok(documents)
}

/// serde-saphyr's options for YAML 1.1 scalars (its booleans already include `yes`/`on`).
fn yaml11_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.legacy_octal_numbers = true;
    options
}

/// Go's JSON encoder writes a float without a fractional part (below 1e21) as an integer, so
/// YAML read by Kubernetes never yields `1000.0` where `1e3` was written.
fn integral_floats_as_integers(value: Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() < 9.2e18 {
                Value::from(f as i64)
            } else {
                Value::Number(n)
            }
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(integral_floats_as_integers).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, integral_floats_as_integers(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Whether a chunk counts as a document: anything opened by `---`, otherwise only when it has
/// content (so a leading `---` or a trailing comment after `...` adds no document).
fn is_document(chunk: &YamlChunk<'_>) -> bool {
    chunk.explicit || chunk.content_line().is_some()
}

fn yaml_error(
    source_name: &str,
    index: usize,
    chunk: &YamlChunk<'_>,
    content_line: usize,
    err: &serde_saphyr::Error,
) -> Error {
    let err = err.without_snippet();
    let message = UserMessageFormatter.format_message(err);
    let location = err.location().filter(|l| l.line() > 0);
    match location {
        Some(location) => {
            let line = chunk.first_line + usize::try_from(location.line()).unwrap_or(1) - 1;
            manifest_error(
                source_name,
                index,
                line,
                format!("invalid YAML at column {}: {message}", location.column()),
            )
        }
        None => manifest_error(
            source_name,
            index,
            content_line,
            format!("invalid YAML: {message}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<DynamicObject> {
        parse_manifests("test.yaml", text).unwrap()
    }

    fn parse_err(text: &str) -> String {
        parse_manifests("test.yaml", text).unwrap_err().to_string()
    }

    fn names(objects: &[DynamicObject]) -> Vec<String> {
        objects
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn documents_are_split_at_separator_lines_and_keep_input_order() {
        let objects = parse(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: a}\n",
        );
        assert_eq!(names(&objects), ["a", "b"]);
    }

    #[test]
    fn comments_and_blank_lines_are_ignored() {
        let objects = parse(
            "# header\n\napiVersion: v1 # the core group\nkind: Namespace\n# inside\nmetadata:\n  name: a\n",
        );
        assert_eq!(names(&objects), ["a"]);
    }

    #[test]
    fn empty_documents_are_skipped_but_keep_their_number() {
        let text = "---\n---\n# only a comment\n---\n{}\n---\nnull\n---\nkind: ConfigMap\n";
        let err = parse_manifests("test.yaml", text).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Manifest {
                    document: 4,
                    line: 9,
                    ..
                }
            ),
            "{err}"
        );
        assert!(parse("---\n\n---\n# c\n---\n{}\n---\n~\n").is_empty());
    }

    #[test]
    fn leading_separator_and_comment_preamble_add_no_document() {
        let err = parse_err("# Source: chart/x.yaml\n---\nkind: ConfigMap\n");
        assert!(
            err.starts_with("manifest test.yaml document 0 (line 3)"),
            "{err}"
        );
    }

    #[test]
    fn separator_may_carry_a_trailing_comment() {
        let objects = parse(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n--- # next\t\n\
             apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
        );
        assert_eq!(names(&objects), ["a", "b"]);
    }

    #[test]
    fn separator_followed_by_other_text_is_an_error_naming_the_line() {
        let err = parse_err("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---x\n");
        assert_eq!(
            err,
            "manifest test.yaml document 0 (line 4): invalid document separator \"---x\": \
             `---` may only be followed by whitespace or a comment"
        );
    }

    #[test]
    fn document_end_marker_ends_a_document() {
        let objects = parse(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n...\n# trailing\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n...\n",
        );
        assert_eq!(names(&objects), ["a", "b"]);
    }

    #[test]
    fn windows_line_endings_are_accepted() {
        let objects = parse(
            "apiVersion: v1\r\nkind: Namespace\r\nmetadata: {name: a}\r\n---\r\n\
             apiVersion: v1\r\nkind: Namespace\r\nmetadata: {name: b}\r\n",
        );
        assert_eq!(names(&objects), ["a", "b"]);
    }

    #[test]
    fn kind_list_is_expanded_into_its_items_in_order() {
        let objects = parse(
            "apiVersion: v1\nkind: List\nitems:\n\
             - {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n\
             - {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: a}}\n",
        );
        assert_eq!(names(&objects), ["a", "b"]);
    }

    #[test]
    fn typed_list_kinds_with_items_are_expanded() {
        let objects = parse(
            "apiVersion: v1\nkind: ConfigMapList\nmetadata: {resourceVersion: \"7\"}\nitems:\n\
             - {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: d}}\n",
        );
        assert_eq!(names(&objects), ["x"]);
    }

    #[test]
    fn list_items_without_kind_are_errors_naming_the_item() {
        let err = parse_err(
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, metadata: {name: a}}\n",
        );
        assert_eq!(
            err,
            "manifest test.yaml document 0 (line 1): item 0 of List: invalid object \"a\": \
             field apiVersion: apiVersion and kind are required"
        );
    }

    #[test]
    fn json_input_is_a_stream_of_concatenated_objects() {
        let objects = parse(
            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a\"}}\n\
             {\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"b\"}}",
        );
        assert_eq!(names(&objects), ["a", "b"]);
    }

    #[test]
    fn top_level_json_array_is_a_list_of_objects() {
        let objects = parse(
            "  [{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a\"}},\n\
             {\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"b\"}}]",
        );
        assert_eq!(names(&objects), ["a", "b"]);
    }

    #[test]
    fn json_documents_are_numbered_with_their_starting_line() {
        let err = parse_err(
            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a\"}}\n\n{\"kind\":\"X\"}\n",
        );
        assert!(
            err.starts_with("manifest test.yaml document 1 (line 3): "),
            "{err}"
        );
    }

    #[test]
    fn json_syntax_error_names_its_line() {
        let err = parse_manifests("t.json", "{\"kind\": \"A\"}\n{\"kind\":\n  ]").unwrap_err();
        assert!(
            matches!(
                err,
                Error::Manifest {
                    document: 1,
                    line: 3,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn yaml_syntax_error_names_the_absolute_line_and_column() {
        let err = parse_err(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n   namespace: c\n",
        );
        assert_eq!(
            err,
            "manifest test.yaml document 1 (line 9): invalid YAML at column 13: \
             mapping values are not allowed in this context"
        );
    }

    #[test]
    fn scalar_document_is_an_error() {
        let err = parse_err("# a comment\nhello\n");
        assert_eq!(
            err,
            "manifest test.yaml document 0 (line 2): expected a mapping (an object), found a string"
        );
    }

    #[test]
    fn yaml_sequence_document_is_an_error() {
        let err = parse_err("- apiVersion: v1\n  kind: Namespace\n");
        assert_eq!(
            err,
            "manifest test.yaml document 0 (line 1): expected a mapping (an object), found a list"
        );
    }

    #[test]
    fn missing_kind_is_an_error_naming_document_and_line() {
        let err = parse_err(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\n\
             apiVersion: v1\nmetadata:\n  name: b\n",
        );
        assert_eq!(
            err,
            "manifest test.yaml document 1 (line 6): invalid object \"b\": \
             field apiVersion: apiVersion and kind are required"
        );
    }

    #[test]
    fn malformed_api_version_is_an_error() {
        let err = parse_err("apiVersion: a/b/c\nkind: Thing\n");
        assert!(err.contains("\"a/b/c\" is not of the form"), "{err}");
    }

    #[test]
    fn namespace_is_not_defaulted() {
        let objects = parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n");
        assert_eq!(objects[0].metadata.namespace, None);
        assert_eq!(objects[0].data["data"]["k"], "v");
    }

    #[test]
    fn yaml_stream_output_parses_back_to_the_same_objects() {
        let objects = parse(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: a}\ndata: {k: \"yes\"}\n",
        );
        let text = to_yaml_stream(&objects).unwrap();
        assert_eq!(text.matches("\n---\n").count(), 1, "{text}");
        assert_eq!(parse_manifests("out.yaml", &text).unwrap(), objects);
    }
}
