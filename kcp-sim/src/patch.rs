//! Applying the bodies of PATCH requests: pure functions over [`serde_json::Value`].
//!
//! Three patch types are supported, chosen by the request's `Content-Type`:
//!
//! - [`merge_patch`]: `application/merge-patch+json`, RFC 7386 JSON merge patch.
//! - [`json_patch`]: `application/json-patch+json`, RFC 6902 JSON patch.
//! - [`strategic_merge_patch`]: `application/strategic-merge-patch+json`, the subset of Kubernetes
//!   strategic merge patch described below.
//!
//! Every function leaves the target untouched when it returns an error.
//!
//! # Strategic merge patch
//!
//! The real API server reads the merge strategy of every field from the Go types (their
//! `patchStrategy` and `patchMergeKey` tags), and so does this one for every kind it has the Go
//! type of (`proto/fields.txt`, through [`crate::protobuf::go_type`]): a list whose strategy is
//! `merge` merges on its merge key (a list of scalars without one as a set), every other list is
//! replaced. For a kind without a Go type here it derives the strategy from field names and
//! list contents, as below. The subset is what `kubectl apply` (client-side), `kubectl patch`
//! (whose default type is strategic), `kubectl edit`, `kubectl label` and `kubectl annotate`
//! send:
//!
//! - The patch must be a JSON object.
//! - Objects merge recursively, like a JSON merge patch; a `null` value deletes the field. A value
//!   of a different type (an object where the target has a list, ...) replaces the field.
//! - Lists of objects merge element by element on a *merge key*: an element of the patch whose key
//!   value equals that of a target element is merged into it (recursively, with these same
//!   rules); other patch elements are appended in patch order. The merge key is:
//!   - `name` for `containers`, `initContainers`, `ephemeralContainers`, `env`, `volumes` and
//!     `imagePullSecrets`; `mountPath` for `volumeMounts`; `devicePath` for `volumeDevices`;
//!     `type` for `conditions`; `uid` for `ownerReferences`;
//!   - for `ports`: `containerPort` inside an element of a container list, `port` directly under
//!     the top-level `spec` (a Service);
//!   - otherwise `name`, when every element of the target list and every element of the
//!     (non-empty) patch list is an object with a `name` field.
//!
//!   A known merge list only merges when all its elements are objects; a patch element without
//!   the merge key is an error. An empty patch list leaves a known merge list unchanged (merging
//!   nothing), as on the real server.
//! - `metadata.finalizers`, the one list of strings Kubernetes declares with the merge strategy,
//!   merges as a set: target values first, then new patch values.
//! - Every other list (strings, numbers, objects without a merge key) is replaced by the patch.
//! - Directives:
//!   - `$patch: delete` in a list element deletes the target elements with the same merge key;
//!     in an object it deletes that object (the field disappears; the real server leaves `{}`).
//!     At the top level it empties the whole object.
//!   - `$patch: replace` in an object replaces it with the rest of the patch object instead of
//!     merging; a list element `{"$patch": "replace"}` replaces the list with the other patch
//!     elements. Any other `$patch` value is an error.
//!   - `$retainKeys: [..]` in an object first drops the target fields it does not list (the patch
//!     itself may only set listed fields, else it is an error).
//!   - `$deleteFromPrimitiveList/<field>: [..]` removes those values from the target list
//!     `<field>` before the patch's own `<field>` (if any) is merged.
//!   - `$setElementOrder/<field>: [..]` orders the merged list `<field>` after merging as the
//!     patch list itself would (below), by its entries (for objects: the merge key,
//!     `{"name": "app"}`; for scalars: the values). It applies even when the patch does not set
//!     `<field>` itself.
//!   - Any other key starting with `$` is ignored.
//!
//!   Directives never end up in the result: objects and list elements that the patch adds are
//!   stripped of them (and of `null` fields) too.
//!
//! A merged list is ordered as the API server orders it: the elements the patch names in the
//! patch's order, each element only the live list has put back before the first named element
//! that follows it there (so a new container goes first, and a patched one keeps its place).
//!
//! Differences from the real server worth knowing: there is no validation that
//! `$setElementOrder` agrees with the patch list; and the real server refuses strategic merge
//! patches for custom resources (415), which is the caller's decision here.

use serde_json::{Map, Value};

use crate::protobuf::go_type::GoType;

/// Why a patch could not be applied; the message is written for a 422 `Status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document is malformed: not the shape its patch type requires, or a directive
    /// used wrongly.
    #[error("invalid patch: {0}")]
    Invalid(String),
    /// A well-formed JSON patch operation could not be applied to the object (a `test` failed, a
    /// path does not exist, ...).
    #[error("the JSON patch could not be applied: {0}")]
    JsonPatchFailed(String),
}

/// Applies an RFC 7386 JSON merge patch: objects merge recursively, `null` deletes a field, and
/// any non-object patch replaces the target.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    ::json_patch::merge(target, patch);
}

/// Applies an RFC 6902 JSON patch (a JSON array of operations). The operations apply all or
/// nothing: on error the target is unchanged and the message names the failing operation. As
/// kube-apiserver's JSON patch library reads them, a `replace` of a key an object does not have
/// adds it, and an operation RFC 6902 does not know fails when it is reached.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let operations = match patch {
        Value::Null => return Ok(()),
        Value::Array(operations) => operations,
        other => {
            return Err(PatchError::Invalid(format!(
                "not an RFC 6902 JSON patch (an array of operations): {}",
                type_name(other)
            )));
        }
    };
    let mut work = target.clone();
    for (index, operation) in operations.iter().enumerate() {
        let operation: ::json_patch::PatchOperation = serde_json::from_value(operation.clone())
            .map_err(|e| {
                PatchError::JsonPatchFailed(format!("operation #{index} is not one: {e}"))
            })?;
        let operation = replace_of_a_missing_key_as_add(&work, operation);
        ::json_patch::patch(&mut work, std::slice::from_ref(&operation)).map_err(|e| {
            PatchError::JsonPatchFailed(format!(
                "operation #{index} ({}) failed: {}",
                describe_operation(&operation),
                describe_failure(Some(&operation), &e.kind)
            ))
        })?;
    }
    *target = work;
    Ok(())
}

/// A `replace` at a key its parent object does not have, as the `add` it amounts to.
fn replace_of_a_missing_key_as_add(
    doc: &Value,
    operation: ::json_patch::PatchOperation,
) -> ::json_patch::PatchOperation {
    use ::json_patch::{AddOperation, PatchOperation as Op};
    let Op::Replace(replace) = operation else {
        return operation;
    };
    let missing = replace
        .path
        .as_str()
        .rsplit_once('/')
        .and_then(|(parent, key)| {
            let key = key.replace("~1", "/").replace("~0", "~");
            doc.pointer(parent)
                .and_then(Value::as_object)
                .map(|fields| !fields.contains_key(&key))
        })
        .unwrap_or(false);
    if missing {
        Op::Add(AddOperation {
            path: replace.path,
            value: replace.value,
        })
    } else {
        Op::Replace(replace)
    }
}

/// `test at "/spec/replicas"`, `move from "/a" to "/b"`, ...
fn describe_operation(operation: &::json_patch::PatchOperation) -> String {
    use ::json_patch::PatchOperation as Op;
    match operation {
        Op::Add(op) => format!("add at {:?}", op.path.as_str()),
        Op::Remove(op) => format!("remove at {:?}", op.path.as_str()),
        Op::Replace(op) => format!("replace at {:?}", op.path.as_str()),
        Op::Move(op) => format!("move from {:?} to {:?}", op.from.as_str(), op.path.as_str()),
        Op::Copy(op) => format!("copy from {:?} to {:?}", op.from.as_str(), op.path.as_str()),
        Op::Test(op) => format!("test at {:?}", op.path.as_str()),
    }
}

/// Why one JSON patch operation failed, in words.
fn describe_failure(
    operation: Option<&::json_patch::PatchOperation>,
    kind: &::json_patch::PatchErrorKind,
) -> String {
    use ::json_patch::{PatchErrorKind as Kind, PatchOperation as Op};
    match (kind, operation) {
        (Kind::TestFailed, Some(Op::Test(op))) => {
            format!("the value is not the expected {}", op.value)
        }
        (Kind::TestFailed, _) => "the value is not the expected one".to_owned(),
        (Kind::InvalidFromPointer, _) => "the \"from\" path does not exist".to_owned(),
        (Kind::InvalidPointer, Some(Op::Add(_) | Op::Move(_) | Op::Copy(_))) => {
            "the path's parent does not exist or the array index is out of range".to_owned()
        }
        (Kind::InvalidPointer, _) => "the path does not exist".to_owned(),
        (Kind::CannotMoveInsideItself, _) => "cannot move a value inside itself".to_owned(),
        (other, _) => other.to_string(),
    }
}

/// The `$patch` directive key.
const DIRECTIVE: &str = "$patch";
/// The `$retainKeys` directive key.
const RETAIN_KEYS: &str = "$retainKeys";
/// The prefix of `$deleteFromPrimitiveList/<field>` directive keys.
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
/// The prefix of `$setElementOrder/<field>` directive keys.
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
/// The path segment standing for "an element of the list" in [`Path`].
const ELEMENT: &str = "[]";

/// Applies the strategic merge patch subset described in the module documentation.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::Invalid(format!(
            "a strategic merge patch must be a JSON object, not {}",
            type_name(patch)
        )));
    };
    let text = |key: &str| target.get(key).and_then(Value::as_str).unwrap_or_default();
    let root = GoType::of_kind(text("apiVersion"), text("kind"));
    let original = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let merged = merge_map(original, patch, None, root)?.unwrap_or_default();
    *target = Value::Object(merged);
    Ok(())
}

/// Where in the object a merge happens: a field name or [`ELEMENT`], the enclosing path, and
/// what the kind's Go types say of the value there (none for a kind kcp-sim has no Go type of).
/// `None` stands for the top level.
#[derive(Debug, Clone, Copy)]
struct Path<'a> {
    segment: &'a str,
    parent: Option<&'a Path<'a>>,
    go: Option<GoType>,
}

impl Path<'_> {
    fn parent_segment(&self) -> Option<&str> {
        self.parent.map(|p| p.segment)
    }
}

/// `spec.template.spec.containers[].ports`, or `the top level`.
fn describe_path(path: Option<&Path<'_>>) -> String {
    let mut segments = Vec::new();
    let mut current = path;
    while let Some(p) = current {
        segments.push(p.segment);
        current = p.parent;
    }
    if segments.is_empty() {
        return "the top level".to_owned();
    }
    let mut text = String::new();
    for segment in segments.into_iter().rev() {
        if segment != ELEMENT && !text.is_empty() {
            text.push('.');
        }
        text.push_str(segment);
    }
    text
}

/// The JSON type of a value, for error messages.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Merges a patch object into a target object at `at`, of Go type `here`; `None` means the
/// object was deleted with `$patch: delete`.
fn merge_map(
    original: Map<String, Value>,
    patch: &Map<String, Value>,
    at: Option<&Path<'_>>,
    here: Option<GoType>,
) -> Result<Option<Map<String, Value>>, PatchError> {
    match patch.get(DIRECTIVE) {
        None => merge_fields(original, patch, at, here).map(Some),
        Some(Value::String(directive)) if directive == "replace" => {
            merge_fields(Map::new(), patch, at, here).map(Some)
        }
        Some(Value::String(directive)) if directive == "delete" => Ok(None),
        Some(other) => Err(PatchError::Invalid(format!(
            "unknown $patch directive {other} in {}: expected \"replace\" or \"delete\"",
            describe_path(at)
        ))),
    }
}

/// Merges the fields of a patch object (ignoring its `$patch`) into a target object.
fn merge_fields(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    at: Option<&Path<'_>>,
    here: Option<GoType>,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        apply_retain_keys(&mut original, patch, retain, at)?;
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let Value::Array(remove) = value else {
                return Err(PatchError::Invalid(format!(
                    "{key} in {} must be a list, not {}",
                    describe_path(at),
                    type_name(value)
                )));
            };
            if let Some(Value::Array(list)) = original.get_mut(field) {
                list.retain(|item| !remove.contains(item));
            }
        }
    }
    // The live lists `$setElementOrder` orders by: the server order of their elements.
    let live_lists: Vec<(&str, Vec<Value>)> = patch
        .keys()
        .filter_map(|key| key.strip_prefix(SET_ELEMENT_ORDER))
        .filter_map(|field| match original.get(field) {
            Some(Value::Array(list)) => Some((field, list.clone())),
            _ => None,
        })
        .collect();
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            original.remove(key);
            continue;
        }
        let path = Path {
            segment: key,
            parent: at,
            go: here.and_then(|go| go.child(key)),
        };
        match original.get_mut(key) {
            Some(slot) => {
                let old = std::mem::take(slot);
                match merge_value(Some(old), value, &path)? {
                    Some(new) => *slot = new,
                    None => {
                        original.remove(key);
                    }
                }
            }
            None => {
                if let Some(new) = merge_value(None, value, &path)? {
                    original.insert(key.clone(), new);
                }
            }
        }
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
            let Value::Array(order) = value else {
                return Err(PatchError::Invalid(format!(
                    "{key} in {} must be a list, not {}",
                    describe_path(at),
                    type_name(value)
                )));
            };
            if let Some(Value::Array(list)) = original.get_mut(field) {
                let live = live_lists
                    .iter()
                    .find(|(name, _)| *name == field)
                    .map_or(&[][..], |(_, list)| list.as_slice());
                let key = order_entry_key(order);
                *list = in_server_order(std::mem::take(list), order, live, key);
            }
        }
    }
    Ok(original)
}

/// Checks a `$retainKeys` list against the patch and drops the target fields it does not list.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retain: &Value,
    at: Option<&Path<'_>>,
) -> Result<(), PatchError> {
    let not_a_list = || {
        PatchError::Invalid(format!(
            "{RETAIN_KEYS} in {} must be a list of field names",
            describe_path(at)
        ))
    };
    let Value::Array(list) = retain else {
        return Err(not_a_list());
    };
    let keys = list
        .iter()
        .map(|key| key.as_str().ok_or_else(not_a_list))
        .collect::<Result<Vec<&str>, _>>()?;
    if let Some(unlisted) = patch
        .iter()
        .find(|(key, value)| {
            !key.starts_with('$') && !value.is_null() && !keys.contains(&key.as_str())
        })
        .map(|(key, _)| key)
    {
        return Err(PatchError::Invalid(format!(
            "the patch sets {unlisted:?} in {} but {RETAIN_KEYS} does not list it",
            describe_path(at)
        )));
    }
    original.retain(|key, _| keys.contains(&key.as_str()));
    Ok(())
}

/// Merges a patch value into an optional target value at `path`; `None` means "no value" (a
/// deleted object or a `null`).
fn merge_value(
    original: Option<Value>,
    patch: &Value,
    path: &Path<'_>,
) -> Result<Option<Value>, PatchError> {
    match patch {
        Value::Object(patch) => {
            let base = match original {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            };
            Ok(merge_map(base, patch, Some(path), path.go)?.map(Value::Object))
        }
        Value::Array(patch) => match original {
            Some(Value::Array(list)) => {
                merge_list(list, patch, path).map(|list| Some(Value::Array(list)))
            }
            // A list the target does not hold is the patch's, as it is (kube's `mergeMap`):
            // elements with the same merge key are not merged, validation finds them.
            _ if !patch.iter().any(|e| e.get(DIRECTIVE).is_some()) => {
                let element_path = Path {
                    segment: ELEMENT,
                    parent: Some(path),
                    go: path.go.and_then(GoType::item),
                };
                cleaned(&patch.iter().collect::<Vec<_>>(), &element_path)
                    .map(|list| Some(Value::Array(list)))
            }
            _ => merge_list(Vec::new(), patch, path).map(|list| Some(Value::Array(list))),
        },
        Value::Null => Ok(None),
        scalar => Ok(Some(scalar.clone())),
    }
}

/// A patch list element taken as a new value: objects lose their directives and `null` fields.
fn clean_element(element: &Value, path: &Path<'_>) -> Result<Option<Value>, PatchError> {
    match element {
        Value::Null => Ok(Some(Value::Null)),
        other => merge_value(None, other, path),
    }
}

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListStrategy {
    /// Elements are objects matched on this field.
    MergeKey(&'static str),
    /// Scalars merged as a set (`metadata.finalizers`).
    Union,
    /// The patch list replaces the target list.
    Replace,
}

/// The merge key Kubernetes declares for a list field, by field name (and, for `ports`, by
/// where it is).
fn known_merge_key(path: &Path<'_>) -> Option<&'static str> {
    match path.segment {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        "ports" => {
            let element = path.parent.filter(|p| p.segment == ELEMENT);
            let in_container = element.and_then(Path::parent_segment).is_some_and(|list| {
                matches!(
                    list,
                    "containers" | "initContainers" | "ephemeralContainers"
                )
            });
            let in_top_level_spec = path
                .parent
                .is_some_and(|p| p.segment == "spec" && p.parent.is_none());
            if in_container {
                Some("containerPort")
            } else if in_top_level_spec {
                Some("port")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Picks the strategy for a list field: from its Go type's `patchStrategy` and `patchMergeKey`,
/// or from its name and contents when kcp-sim has no Go type of the kind (see the module docs).
fn list_strategy(
    path: &Path<'_>,
    original: &[Value],
    items: &[&Value],
    deletions: &[&Map<String, Value>],
) -> ListStrategy {
    let all_objects =
        original.iter().all(Value::is_object) && items.iter().all(|item| item.is_object());
    if let Some(field) = path.go.and_then(GoType::collection) {
        let merge = field.patch_strategy.split(',').any(|s| s == "merge");
        let no_objects =
            !original.iter().any(Value::is_object) && !items.iter().any(|item| item.is_object());
        return match (merge, field.patch_merge_key.as_deref()) {
            (true, Some(key)) if all_objects => ListStrategy::MergeKey(key),
            (true, None) if no_objects => ListStrategy::Union,
            _ => ListStrategy::Replace,
        };
    }
    if path.segment == "finalizers" && path.parent_segment() == Some("metadata") {
        if !items.iter().any(|item| item.is_object()) {
            return ListStrategy::Union;
        }
        return ListStrategy::Replace;
    }
    if let Some(key) = known_merge_key(path) {
        if all_objects {
            return ListStrategy::MergeKey(key);
        }
        return ListStrategy::Replace;
    }
    let has_name = |value: &Value| value.get("name").is_some();
    let named = (!items.is_empty() || !deletions.is_empty())
        && original.iter().all(has_name)
        && items.iter().all(|item| has_name(item))
        && deletions.iter().all(|d| d.contains_key("name"));
    if named {
        ListStrategy::MergeKey("name")
    } else {
        ListStrategy::Replace
    }
}

/// Merges a patch list into a target list at `path`.
fn merge_list(
    mut original: Vec<Value>,
    patch: &[Value],
    path: &Path<'_>,
) -> Result<Vec<Value>, PatchError> {
    let mut replace = false;
    let mut deletions = Vec::new();
    let mut items = Vec::new();
    for element in patch {
        let directive = element
            .as_object()
            .and_then(|map| map.get(DIRECTIVE).map(|directive| (map, directive)));
        match directive {
            None => items.push(element),
            Some((_, Value::String(d))) if d == "replace" => replace = true,
            Some((map, Value::String(d))) if d == "delete" => deletions.push(map),
            Some((_, other)) => {
                return Err(PatchError::Invalid(format!(
                    "unknown $patch directive {other} in an element of {}: expected \"replace\" \
                     or \"delete\"",
                    describe_path(Some(path))
                )));
            }
        }
    }
    let element_path = Path {
        segment: ELEMENT,
        parent: Some(path),
        go: path.go.and_then(GoType::item),
    };
    let strategy = list_strategy(path, &original, &items, &deletions);
    let ListStrategy::MergeKey(key) = strategy else {
        if !deletions.is_empty() {
            return Err(PatchError::Invalid(format!(
                "{} has no merge key, so its \"$patch: delete\" elements match nothing",
                describe_path(Some(path))
            )));
        }
        if strategy == ListStrategy::Union && !replace {
            let live = original.clone();
            for item in items {
                if !original.contains(item) {
                    original.push(item.clone());
                }
            }
            return Ok(in_server_order(original, patch, &live, None));
        }
        return cleaned(&items, &element_path);
    };

    let missing_key = |index: usize| {
        PatchError::Invalid(format!(
            "element {index} of {} has no merge key {key:?}",
            describe_path(Some(path))
        ))
    };
    let mut deleted_keys = Vec::with_capacity(deletions.len());
    for (index, deletion) in deletions.iter().enumerate() {
        deleted_keys.push(deletion.get(key).ok_or_else(|| missing_key(index))?);
    }
    for (index, item) in items.iter().enumerate() {
        if item.get(key).is_none() {
            return Err(missing_key(index));
        }
    }
    if replace {
        return cleaned(&items, &element_path);
    }

    original.retain(|element| {
        element
            .get(key)
            .is_none_or(|value| !deleted_keys.contains(&value))
    });
    let live = original.clone();
    let named: Vec<Value> = items.iter().map(|item| (*item).clone()).collect();
    for item in items {
        let Value::Object(item_map) = item else {
            continue;
        };
        let item_key = item_map.get(key);
        let position = original
            .iter()
            .position(|element| element.get(key).is_some() && element.get(key) == item_key);
        match position {
            Some(index) => {
                let old = match std::mem::take(&mut original[index]) {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                match merge_map(old, item_map, Some(&element_path), element_path.go)? {
                    Some(merged) => original[index] = Value::Object(merged),
                    None => {
                        original.remove(index);
                    }
                }
            }
            None => {
                if let Some(new) = clean_element(item, &element_path)? {
                    original.push(new);
                }
            }
        }
    }
    Ok(in_server_order(original, &named, &live, Some(key)))
}

/// The patch elements as a new list, stripped of directives.
fn cleaned(items: &[&Value], element_path: &Path<'_>) -> Result<Vec<Value>, PatchError> {
    let mut list = Vec::with_capacity(items.len());
    for item in items {
        if let Some(value) = clean_element(item, element_path)? {
            list.push(value);
        }
    }
    Ok(list)
}

/// The merge key `$setElementOrder` entries name (`{"name": "app"}`: `name`); none for scalars.
fn order_entry_key(order: &[Value]) -> Option<&str> {
    order
        .first()
        .and_then(Value::as_object)
        .and_then(|entry| entry.keys().find(|key| !key.starts_with('$')))
        .map(String::as_str)
}

/// Orders a merged list as the API server's strategic merge does: the elements `order` names
/// (the patch list, or its `$setElementOrder`) come in that order, and every other element is
/// put back before the first named element that comes after it in the `live` list. Elements
/// are the same when their `key` fields are equal (scalars: when they are equal).
fn in_server_order(
    merged: Vec<Value>,
    order: &[Value],
    live: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let same = |a: &Value, b: &Value| match key {
        Some(key) => a.get(key).is_some_and(|value| b.get(key) == Some(value)),
        None => a == b,
    };
    let position = |list: &[Value], element: &Value| list.iter().position(|e| same(e, element));
    let (mut named, mut others): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|element| position(order, element).is_some());
    named.sort_by_key(|element| position(order, element));
    others.sort_by_key(|element| position(live, element).unwrap_or(usize::MAX));
    let mut ordered = Vec::with_capacity(named.len() + others.len());
    let mut named = named.into_iter().peekable();
    let mut others = others.into_iter().peekable();
    loop {
        let other_first = match (others.peek(), named.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(other), Some(next)) => matches!(
                (position(live, other), position(live, next)),
                (Some(o), Some(n)) if o < n
            ),
        };
        let source = if other_first { &mut others } else { &mut named };
        ordered.extend(source.next());
    }
    ordered
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn smp(mut target: Value, patch: Value) -> Value {
        strategic_merge_patch(&mut target, &patch).unwrap();
        target
    }

    fn smp_err(target: Value, patch: Value) -> PatchError {
        let mut patched = target.clone();
        let err = strategic_merge_patch(&mut patched, &patch).unwrap_err();
        assert_eq!(
            patched, target,
            "a failed patch must leave the target unchanged"
        );
        err
    }

    /// True when no key starting with `$` appears anywhere in the value.
    fn has_no_directives(value: &Value) -> bool {
        match value {
            Value::Object(map) => map
                .iter()
                .all(|(key, value)| !key.starts_with('$') && has_no_directives(value)),
            Value::Array(list) => list.iter().all(has_no_directives),
            _ => true,
        }
    }

    // ---- JSON merge patch ---------------------------------------------------------------

    #[test]
    fn merge_patch_merges_objects_recursively() {
        let mut target = json!({"metadata": {"labels": {"a": "1"}, "name": "x"}});
        merge_patch(&mut target, &json!({"metadata": {"labels": {"b": "2"}}}));
        assert_eq!(
            target,
            json!({"metadata": {"labels": {"a": "1", "b": "2"}, "name": "x"}})
        );
    }

    #[test]
    fn merge_patch_null_deletes_a_field() {
        let mut target = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        merge_patch(&mut target, &json!({"metadata": {"labels": {"a": null}}}));
        assert_eq!(target, json!({"metadata": {"labels": {"b": "2"}}}));
    }

    #[test]
    fn merge_patch_replaces_lists() {
        let mut target = json!({"spec": {"args": ["a", "b"]}});
        merge_patch(&mut target, &json!({"spec": {"args": ["c"]}}));
        assert_eq!(target, json!({"spec": {"args": ["c"]}}));
    }

    #[test]
    fn merge_patch_with_non_object_replaces_the_target() {
        let mut target = json!({"a": 1});
        merge_patch(&mut target, &json!([1, 2]));
        assert_eq!(target, json!([1, 2]));
    }

    // ---- JSON patch ---------------------------------------------------------------------

    #[test]
    fn json_patch_applies_operations_in_order() {
        let mut target = json!({"spec": {"replicas": 1}, "metadata": {}});
        json_patch(
            &mut target,
            &json!([
                {"op": "test", "path": "/spec/replicas", "value": 1},
                {"op": "replace", "path": "/spec/replicas", "value": 3},
                {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
                {"op": "remove", "path": "/metadata/labels/a"}
            ]),
        )
        .unwrap();
        assert_eq!(
            target,
            json!({"spec": {"replicas": 3}, "metadata": {"labels": {}}})
        );
    }

    #[test]
    fn json_patch_failed_test_names_the_operation() {
        let mut target = json!({"spec": {"replicas": 1}});
        let err = json_patch(
            &mut target,
            &json!([
                {"op": "replace", "path": "/spec/replicas", "value": 5},
                {"op": "test", "path": "/spec/replicas", "value": 2}
            ]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the JSON patch could not be applied: operation #1 (test at \"/spec/replicas\") \
             failed: the value is not the expected 2"
        );
        assert_eq!(target, json!({"spec": {"replicas": 1}}), "all or nothing");
    }

    #[test]
    fn json_patch_missing_path_is_reported() {
        let mut target = json!({"metadata": {}});
        let err = json_patch(
            &mut target,
            &json!([{"op": "remove", "path": "/metadata/labels/app"}]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the JSON patch could not be applied: operation #0 (remove at \
             \"/metadata/labels/app\") failed: the path does not exist"
        );
    }

    #[test]
    fn json_patch_that_is_not_an_operation_list_is_invalid() {
        let mut target = json!({});
        let err = json_patch(&mut target, &json!({"op": "add"})).unwrap_err();
        assert!(matches!(err, PatchError::Invalid(_)), "{err}");
        assert!(
            err.to_string()
                .starts_with("invalid patch: not an RFC 6902 JSON patch")
        );
    }

    // ---- strategic merge patch: objects -------------------------------------------------

    #[test]
    fn strategic_objects_merge_recursively() {
        let patched = smp(
            json!({"spec": {"replicas": 1, "paused": false}}),
            json!({"spec": {"replicas": 3}}),
        );
        assert_eq!(patched, json!({"spec": {"replicas": 3, "paused": false}}));
    }

    #[test]
    fn strategic_null_deletes_a_field() {
        let patched = smp(
            json!({"spec": {"replicas": 1, "paused": false}}),
            json!({"spec": {"paused": null}}),
        );
        assert_eq!(patched, json!({"spec": {"replicas": 1}}));
    }

    #[test]
    fn strategic_value_of_another_type_replaces_the_field() {
        let patched = smp(
            json!({"spec": {"x": [1]}}),
            json!({"spec": {"x": {"a": 1}}}),
        );
        assert_eq!(patched, json!({"spec": {"x": {"a": 1}}}));
    }

    #[test]
    fn strategic_patch_must_be_an_object() {
        let err = smp_err(json!({}), json!([1]));
        assert_eq!(
            err.to_string(),
            "invalid patch: a strategic merge patch must be a JSON object, not an array"
        );
    }

    #[test]
    fn kubectl_label_patch_sets_and_removes_labels() {
        let patched = smp(
            json!({"metadata": {"name": "web", "labels": {"app": "web", "old": "x"}}}),
            json!({"metadata": {"labels": {"tier": "frontend", "old": null}}}),
        );
        assert_eq!(
            patched,
            json!({"metadata": {"name": "web", "labels": {"app": "web", "tier": "frontend"}}})
        );
    }

    #[test]
    fn kubectl_annotate_patch_adds_annotations_to_an_object_without_any() {
        let patched = smp(
            json!({"metadata": {"name": "web"}}),
            json!({"metadata": {"annotations": {"owner": "team-a"}}}),
        );
        assert_eq!(
            patched,
            json!({"metadata": {"name": "web", "annotations": {"owner": "team-a"}}})
        );
    }

    // ---- strategic merge patch: lists ---------------------------------------------------

    #[test]
    fn containers_merge_by_name() {
        let patched = smp(
            json!({"spec": {"containers": [
                {"name": "app", "image": "app:1", "args": ["serve"]},
                {"name": "sidecar", "image": "proxy:1"}
            ]}}),
            json!({"spec": {"containers": [
                {"name": "sidecar", "image": "proxy:2"},
                {"name": "debug", "image": "busybox"}
            ]}}),
        );
        assert_eq!(
            patched,
            json!({"spec": {"containers": [
                {"name": "app", "image": "app:1", "args": ["serve"]},
                {"name": "sidecar", "image": "proxy:2"},
                {"name": "debug", "image": "busybox"}
            ]}})
        );
    }

    #[test]
    fn env_merges_by_name() {
        let patched = smp(
            json!({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}),
            json!({"env": [{"name": "B", "value": "3"}]}),
        );
        assert_eq!(
            patched,
            json!({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]})
        );
    }

    #[test]
    fn container_ports_merge_on_container_port() {
        let patched = smp(
            json!({"spec": {"containers": [{"name": "app", "ports": [
                {"containerPort": 80, "protocol": "TCP"}
            ]}]}}),
            json!({"spec": {"containers": [{"name": "app", "ports": [
                {"containerPort": 80, "name": "http"},
                {"containerPort": 443}
            ]}]}}),
        );
        assert_eq!(
            patched["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443}])
        );
    }

    #[test]
    fn service_ports_merge_on_port() {
        let patched = smp(
            json!({"kind": "Service", "spec": {"ports": [
                {"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}
            ]}}),
            json!({"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}),
        );
        assert_eq!(
            patched["spec"]["ports"],
            json!([{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 9443}])
        );
    }

    #[test]
    fn conditions_merge_on_type() {
        let patched = smp(
            json!({"status": {"conditions": [
                {"type": "Ready", "status": "False"}, {"type": "Scheduled", "status": "True"}
            ]}}),
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        );
        assert_eq!(
            patched["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}, {"type": "Scheduled", "status": "True"}])
        );
    }

    #[test]
    fn owner_references_merge_on_uid() {
        let patched = smp(
            json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a", "kind": "X"}]}}),
            json!({"metadata": {"ownerReferences": [
                {"uid": "1", "name": "a", "controller": true}, {"uid": "2", "name": "a"}
            ]}}),
        );
        assert_eq!(
            patched["metadata"]["ownerReferences"],
            json!([
                {"uid": "1", "name": "a", "kind": "X", "controller": true},
                {"uid": "2", "name": "a"}
            ])
        );
    }

    #[test]
    fn volume_mounts_merge_on_mount_path() {
        let patched = smp(
            json!({"volumeMounts": [{"name": "data", "mountPath": "/data"}]}),
            json!({"volumeMounts": [{"name": "data", "mountPath": "/srv", "readOnly": true}]}),
        );
        assert_eq!(
            patched["volumeMounts"],
            json!([
                {"name": "data", "mountPath": "/srv", "readOnly": true},
                {"name": "data", "mountPath": "/data"}
            ])
        );
    }

    #[test]
    fn unknown_lists_of_named_objects_merge_by_name() {
        let patched = smp(
            json!({"spec": {"rules": [{"name": "a", "x": 1}, {"name": "b", "x": 2}]}}),
            json!({"spec": {"rules": [{"name": "b", "y": 3}]}}),
        );
        assert_eq!(
            patched["spec"]["rules"],
            json!([{"name": "a", "x": 1}, {"name": "b", "x": 2, "y": 3}])
        );
    }

    #[test]
    fn lists_without_a_merge_key_are_replaced() {
        let patched = smp(
            json!({"spec": {
                "args": ["a", "b"],
                "tolerations": [{"key": "x", "operator": "Exists"}]
            }}),
            json!({"spec": {"args": ["c"], "tolerations": [{"key": "y", "operator": "Exists"}]}}),
        );
        assert_eq!(
            patched["spec"],
            json!({"args": ["c"], "tolerations": [{"key": "y", "operator": "Exists"}]})
        );
    }

    #[test]
    fn a_list_its_go_type_gives_no_merge_strategy_is_replaced_though_its_items_have_names() {
        let binding = |subjects: Value| {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "readers"}, "subjects": subjects})
        };
        let patched = smp(
            binding(json!([{"kind": "User", "name": "one"}])),
            json!({"subjects": [{"kind": "User", "name": "two"}]}),
        );
        assert_eq!(
            patched["subjects"],
            json!([{"kind": "User", "name": "two"}])
        );
    }

    #[test]
    fn a_list_its_go_type_merges_is_merged_on_its_merge_key() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "status": {"hostIPs": [{"ip": "10.0.0.1"}]}});
        let patched = smp(pod, json!({"status": {"hostIPs": [{"ip": "10.0.0.2"}]}}));
        assert_eq!(
            patched["status"]["hostIPs"],
            json!([{"ip": "10.0.0.2"}, {"ip": "10.0.0.1"}])
        );
    }

    #[test]
    fn empty_patch_list_replaces_an_unknown_list() {
        let patched = smp(
            json!({"spec": {"rules": [{"name": "a"}]}}),
            json!({"spec": {"rules": []}}),
        );
        assert_eq!(patched["spec"]["rules"], json!([]));
    }

    #[test]
    fn empty_patch_list_leaves_a_known_merge_list_unchanged() {
        let target = json!({"spec": {"containers": [{"name": "app"}]}});
        assert_eq!(
            smp(target.clone(), json!({"spec": {"containers": []}})),
            target
        );
    }

    #[test]
    fn finalizers_merge_as_a_set() {
        let patched = smp(
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
        );
        assert_eq!(patched["metadata"]["finalizers"], json!(["a", "b", "c"]));
    }

    #[test]
    fn patch_element_without_the_merge_key_is_an_error() {
        let err = smp_err(
            json!({"spec": {"containers": [{"name": "app"}]}}),
            json!({"spec": {"containers": [{"image": "x"}]}}),
        );
        assert_eq!(
            err.to_string(),
            "invalid patch: element 0 of spec.containers has no merge key \"name\""
        );
    }

    // ---- strategic merge patch: directives ----------------------------------------------

    #[test]
    fn patch_delete_element_removes_it_from_the_list() {
        let patched = smp(
            json!({"spec": {"containers": [{"name": "app"}, {"name": "sidecar"}]}}),
            json!({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}),
        );
        assert_eq!(patched, json!({"spec": {"containers": [{"name": "app"}]}}));
    }

    #[test]
    fn patch_delete_in_an_object_removes_the_field() {
        let patched = smp(
            json!({"spec": {"strategy": {"type": "Recreate"}, "replicas": 1}}),
            json!({"spec": {"strategy": {"$patch": "delete"}}}),
        );
        assert_eq!(patched, json!({"spec": {"replicas": 1}}));
    }

    #[test]
    fn patch_replace_in_an_object_replaces_it() {
        let patched = smp(
            json!({"data": {"a": "1", "b": "2"}}),
            json!({"data": {"$patch": "replace", "c": "3"}}),
        );
        assert_eq!(patched, json!({"data": {"c": "3"}}));
    }

    #[test]
    fn patch_replace_element_replaces_the_list() {
        let patched = smp(
            json!({"spec": {"containers": [{"name": "app", "image": "a"}, {"name": "b"}]}}),
            json!({"spec": {"containers": [{"name": "new"}, {"$patch": "replace"}]}}),
        );
        assert_eq!(patched, json!({"spec": {"containers": [{"name": "new"}]}}));
    }

    #[test]
    fn unknown_patch_directive_is_an_error() {
        let err = smp_err(json!({"spec": {}}), json!({"spec": {"$patch": "merge"}}));
        assert_eq!(
            err.to_string(),
            "invalid patch: unknown $patch directive \"merge\" in spec: expected \"replace\" or \
             \"delete\""
        );
    }

    #[test]
    fn retain_keys_drops_unlisted_fields() {
        let patched = smp(
            json!({"spec": {"strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1}
            }}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(patched, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }

    #[test]
    fn retain_keys_rejects_a_patch_setting_unlisted_fields() {
        let err = smp_err(
            json!({"spec": {"strategy": {}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
        );
        assert_eq!(
            err.to_string(),
            "invalid patch: the patch sets \"rollingUpdate\" in spec.strategy but $retainKeys \
             does not list it"
        );
    }

    #[test]
    fn delete_from_primitive_list_removes_values() {
        let patched = smp(
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
        );
        assert_eq!(patched, json!({"metadata": {"finalizers": ["a", "c"]}}));
    }

    #[test]
    fn delete_from_primitive_list_happens_before_additions() {
        let patched = smp(
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {
                "$deleteFromPrimitiveList/finalizers": ["a"],
                "finalizers": ["c"]
            }}),
        );
        // The server puts what the patch names first (conformance: kubectl-kinds/patches-...).
        assert_eq!(patched, json!({"metadata": {"finalizers": ["c", "b"]}}));
    }

    #[test]
    fn set_element_order_reorders_the_merged_list() {
        let patched = smp(
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "c"}, {"name": "d"}, {"name": "a"}],
                "containers": [{"name": "d"}]
            }}),
        );
        assert_eq!(
            patched,
            json!({"spec": {"containers": [
                {"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "a"}
            ]}})
        );
    }

    #[test]
    fn set_element_order_applies_without_the_list_in_the_patch() {
        let patched = smp(
            json!({"args": ["x", "y", "z"]}),
            json!({"$setElementOrder/args": ["z", "x"]}),
        );
        assert_eq!(patched, json!({"args": ["y", "z", "x"]}));
    }

    #[test]
    fn other_dollar_keys_are_ignored() {
        let patched = smp(json!({"a": 1}), json!({"$unknown": {"b": 2}, "a": 2}));
        assert_eq!(patched, json!({"a": 2}));
    }

    #[test]
    fn directives_in_added_values_are_not_stored() {
        let patched = smp(
            json!({}),
            json!({"spec": {
                "strategy": {"$retainKeys": ["type"], "type": "Recreate", "x": null},
                "containers": [{"name": "a", "env": [{"name": "E", "$patch": "delete"}]}],
                "$setElementOrder/containers": [{"name": "a"}],
                "template": {"$patch": "replace", "metadata": {"$foo": 1}}
            }}),
        );
        assert!(has_no_directives(&patched), "{patched}");
        assert_eq!(
            patched,
            json!({"spec": {
                "strategy": {"type": "Recreate"},
                "containers": [{"name": "a", "env": []}],
                "template": {"metadata": {}}
            }})
        );
    }

    #[test]
    fn kubectl_apply_patch_updates_a_deployment() {
        let live = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"old\":true}\n"
                },
                "labels": {"app": "web"}
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "web",
                                "image": "nginx:1.25",
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                "env": [{"name": "MODE", "value": "a"}, {"name": "OLD", "value": "x"}]
                            },
                            {"name": "metrics", "image": "exporter:1"}
                        ]
                    }
                }
            },
            "status": {"replicas": 2}
        });
        // What `kubectl apply` computes when the manifest bumps the image, drops the OLD env var
        // and the metrics container, adds a log shipper in first position and switches the
        // strategy to Recreate.
        let patch = json!({
            "metadata": {
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"new\":true}\n"
                }
            },
            "spec": {
                "strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null},
                "template": {
                    "spec": {
                        "$setElementOrder/containers": [{"name": "logs"}, {"name": "web"}],
                        "containers": [
                            {"name": "logs", "image": "fluent-bit:3"},
                            {
                                "name": "web",
                                "image": "nginx:1.27",
                                "$setElementOrder/env": [{"name": "MODE"}],
                                "env": [{"name": "OLD", "$patch": "delete"}]
                            },
                            {"name": "metrics", "$patch": "delete"}
                        ]
                    }
                }
            }
        });
        let patched = smp(live, patch);
        assert_eq!(
            patched,
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "web",
                    "namespace": "default",
                    "annotations": {
                        "kubectl.kubernetes.io/last-applied-configuration": "{\"new\":true}\n"
                    },
                    "labels": {"app": "web"}
                },
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "strategy": {"type": "Recreate"},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {
                            "containers": [
                                {"name": "logs", "image": "fluent-bit:3"},
                                {
                                    "name": "web",
                                    "image": "nginx:1.27",
                                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                    "env": [{"name": "MODE", "value": "a"}]
                                }
                            ]
                        }
                    }
                },
                "status": {"replicas": 2}
            })
        );
    }
}
