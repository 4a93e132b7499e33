//! What a kind's schema declares about the shape of its values, as kube-apiserver's
//! structured-merge-diff reads it: for a builtin kind from its Go types (`proto/fields.txt`:
//! `+listType`, `+listMapKey`, a merge `patchStrategy` and its `patchMergeKey`, `+mapType`,
//! `+default`), for a custom resource from its CRD's structural schema. A list is atomic unless
//! its type makes it a `set` or a `map` (keyed by its map keys; a key field an item leaves out
//! is taken from its default), a map is granular unless declared `atomic`, and a value that no
//! schema types (below `x-kubernetes-preserve-unknown-fields`, an embedded `RawExtension`) has
//! the *deduced* type (maps granular, lists atomic). A map entry that is not a declared property
//! (an `additionalProperties` value, a Go map's value, a preserved unknown field) is owned
//! itself as well as its contents. A custom resource's `metadata` is ObjectMeta, typed by its
//! Go type.
//!
//! The CRD schemas are registered for the duration of a write ([`with_custom_schemas`]) and read
//! by the traversals of [`super`] through [`Declared`], which a [`super::Place`] carries.

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::canonical_json;
use crate::protobuf::go_type::GoType;
use crate::protobuf::schema::{FieldPlan, GoListType, Schema as GoTypes};
use crate::schema::CrdSchemas;
use crate::schema::structural::{Additional, Node};

/// The schemas of the custom resource kind being written on this thread.
struct Registered {
    group: String,
    kind: String,
    schemas: Arc<CrdSchemas>,
}

thread_local! {
    static REGISTERED: RefCell<Option<Registered>> = const { RefCell::new(None) };
    /// The structural schema of the object whose fields are being owned on this thread.
    static ROOT: RefCell<Option<Arc<Node>>> = const { RefCell::new(None) };
}

/// Runs `f` with `schemas` as the CRD schemas of the custom resources of `group` and `kind`:
/// field ownership of such an object written inside `f` follows the schema of its version.
/// `None` runs `f` as it is (the kind is no custom resource).
pub fn with_custom_schemas<T>(
    group: &str,
    kind: &str,
    schemas: Option<Arc<CrdSchemas>>,
    f: impl FnOnce() -> T,
) -> T {
    let registered = schemas.map(|schemas| Registered {
        group: group.to_owned(),
        kind: kind.to_owned(),
        schemas,
    });
    let previous = REGISTERED.with(|r| r.replace(registered));
    let out = f();
    REGISTERED.with(|r| r.replace(previous));
    out
}

/// The registered schema of `object`'s version, when `object` is of the registered kind.
pub(super) fn schema_of(object: &Value) -> Option<Arc<Node>> {
    let text = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
    let (group, version) = text("apiVersion").rsplit_once('/')?;
    REGISTERED.with(|r| {
        let registered = r.borrow();
        let registered = registered.as_ref()?;
        if registered.group != group || registered.kind != text("kind") {
            return None;
        }
        registered.schemas.versions.get(version).cloned()
    })
}

/// Runs `f` with `root` as the schema of the object being owned.
pub(super) fn scope<T>(root: Option<Arc<Node>>, f: impl FnOnce() -> T) -> T {
    let previous = ROOT.with(|r| r.replace(root));
    let out = f();
    ROOT.with(|r| r.replace(previous));
    out
}

/// The schema of the object being owned, when it is a custom resource whose schema is known.
pub(super) fn current_root() -> Option<Arc<Node>> {
    ROOT.with(|r| r.borrow().clone())
}

/// What the schema declares of the value at some place.
#[derive(Debug, Clone, Copy, Default)]
pub(super) enum Declared<'a> {
    /// Nothing: a kind without a schema here (kcp's kinds); shapes are guessed.
    #[default]
    Unknown,
    /// The root of a custom resource, whose `metadata` is ObjectMeta.
    Root(&'a Node),
    /// A node of the structural schema; `true` when the value is a map entry that no property
    /// declares (an `additionalProperties` value).
    Node(&'a Node, bool),
    /// A value of a builtin Go type (a struct, slice or map); `true` when it is a Go map's
    /// value.
    Go(GoType, bool),
    /// structured-merge-diff's deduced type, for a value that no schema types (always a map
    /// entry that no property declares, unless a list item).
    Deduced(bool),
}

/// The list type a schema declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DeclaredList<'a> {
    /// Owned and replaced as a whole: no list type, `atomic`, or a deduced list.
    Atomic,
    /// `set`: items are their own keys.
    Set,
    /// `map`: items keyed by these fields.
    Map(&'a [String]),
}

impl<'a> Declared<'a> {
    /// The root of an object with this structural schema, or of this Go type (neither: shapes
    /// are guessed).
    pub(super) fn root(schema: Option<&'a Node>, go_type: Option<GoType>) -> Self {
        match schema {
            Some(node) => Declared::Root(node),
            None => go(go_type, false),
        }
    }

    /// What is declared of the field `name` of the map sitting here.
    pub(super) fn child(self, name: &str) -> Self {
        match self {
            Declared::Unknown => Declared::Unknown,
            Declared::Root(_) if name == "metadata" => go(GoType::object_meta(), false),
            Declared::Node(node, _) if node.embedded && name == "metadata" => {
                go(GoType::object_meta(), false)
            }
            Declared::Root(node) | Declared::Node(node, _) => property(node, name),
            Declared::Go(value, _) => go(value.child(name), value.is_map()),
            Declared::Deduced(_) => Declared::Deduced(true),
        }
    }

    /// What is declared of an item of the list sitting here.
    pub(super) fn item(self) -> Self {
        match self {
            Declared::Node(node, _) => match &node.items {
                Some(items) => Declared::Node(items, false),
                None => Declared::Deduced(false),
            },
            Declared::Go(value, _) => match value.item() {
                Some(item) => go(Some(item), false),
                None => Declared::Deduced(false),
            },
            Declared::Deduced(_) => Declared::Deduced(false),
            Declared::Unknown | Declared::Root(_) => Declared::Unknown,
        }
    }

    /// The list type declared here; `None` where the schema says nothing (shapes are guessed).
    pub(super) fn list(self) -> Option<DeclaredList<'a>> {
        match self {
            Declared::Node(node, _) => Some(match node.list_type.as_deref() {
                Some("set") => DeclaredList::Set,
                Some("map") => DeclaredList::Map(&node.map_keys),
                _ => DeclaredList::Atomic,
            }),
            Declared::Go(value, _) => Some(match value.collection().map(|f| &f.list_type) {
                Some(Some(GoListType::Set)) => DeclaredList::Set,
                Some(Some(GoListType::Map(keys))) => DeclaredList::Map(keys),
                _ => DeclaredList::Atomic,
            }),
            Declared::Deduced(_) => Some(DeclaredList::Atomic),
            Declared::Unknown | Declared::Root(_) => None,
        }
    }

    /// Whether the list sitting here is declared a set or a map (owned by its items).
    pub(super) fn is_granular_list(self) -> bool {
        matches!(self.list(), Some(DeclaredList::Set | DeclaredList::Map(_)))
    }

    /// Whether the map sitting here is declared atomic (`x-kubernetes-map-type: atomic`,
    /// `+mapType=atomic`).
    pub(super) fn is_atomic_map(self) -> bool {
        match self {
            Declared::Node(node, _) => node.map_type.as_deref() == Some("atomic"),
            Declared::Go(value, _) => value.collection().is_some_and(|f| f.atomic_map),
            _ => false,
        }
    }

    /// Whether the value sitting here is a map entry no property declares: structured-merge-diff
    /// owns such an entry itself as well as what is inside it.
    pub(super) fn is_undeclared_entry(self) -> bool {
        matches!(
            self,
            Declared::Node(_, true) | Declared::Go(_, true) | Declared::Deduced(true)
        )
    }

    /// The default of the field `name` of the map sitting here, when its schema declares one.
    fn default_of(self, name: &str) -> Option<&'a Value> {
        match self {
            Declared::Node(node, _) => node.properties.get(name)?.default.as_ref(),
            Declared::Go(GoType::Struct(plan), _) => GoTypes::get()
                .ok()?
                .json_field(plan, name)?
                .default
                .as_ref(),
            _ => None,
        }
    }
}

/// What the Go types say of a value (`None`: nothing, a field they do not have); `entry` when
/// the value is a Go map's.
fn go(value: Option<GoType>, entry: bool) -> Declared<'static> {
    match value {
        None => Declared::Unknown,
        Some(GoType::Untyped) => Declared::Deduced(entry),
        Some(value) => Declared::Go(value, entry),
    }
}

/// What the Go types declare of the value `field` holds.
pub(super) fn go_field(field: &'static FieldPlan) -> Declared<'static> {
    go(Some(GoType::of_field(field)), false)
}

/// What `node` declares of its field `name`.
fn property<'a>(node: &'a Node, name: &str) -> Declared<'a> {
    if let Some(child) = node.properties.get(name) {
        return Declared::Node(child, false);
    }
    match &node.additional {
        Some(Additional::Schema(value)) => Declared::Node(value, true),
        // `additionalProperties: true` and preserved unknown fields hold untyped values.
        Some(Additional::Any) | None => Declared::Deduced(true),
    }
}

/// The key of `item` in a map list keyed by `keys`, as canonical JSON, whose items are declared
/// `declared_item`: a key field the item leaves out is taken from its default, and left out of
/// the key when it has none, as structured-merge-diff keys it. `None` when the item is no
/// object, or a key field is no scalar (the list is then owned as a whole).
pub(super) fn map_key(
    keys: &[String],
    item: &Value,
    declared_item: Declared<'_>,
) -> Option<String> {
    let Value::Object(fields) = item else {
        return None;
    };
    let mut key = Map::new();
    for name in keys {
        let value = match fields.get(name) {
            Some(value) if value.is_object() || value.is_array() => return None,
            Some(value) if !value.is_null() => value,
            _ => match declared_item.default_of(name) {
                Some(default) => default,
                None => continue,
            },
        };
        key.insert(name.clone(), value.clone());
    }
    Some(canonical_json(&Value::Object(key)))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::managed_fields::{FieldManager, apply};
    use crate::schema::structural;

    fn rack_schemas() -> Arc<CrdSchemas> {
        let schema = json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "shelves": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}}}},
                "slots": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"}, "size": {"type": "integer"}}}},
                "labels": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}}
            }}}
        });
        let root = structural::parse(&schema, "openAPIV3Schema").expect("a structural schema");
        Arc::new(CrdSchemas {
            uid: "u".into(),
            generation: 1,
            versions: HashMap::from([("v1".to_owned(), Arc::new(root))]),
            printer_columns: HashMap::new(),
        })
    }

    fn who(name: &str) -> FieldManager<'_> {
        FieldManager {
            manager: name,
            subresource: None,
            time: "2026-12-02T10:00:00Z",
            api_version: "example.com/v1",
        }
    }

    fn rack(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Rack", "metadata": {"name": "r"},
            "spec": spec})
    }

    fn applied_fields(object: &Value) -> Value {
        object["metadata"]["managedFields"][0]["fieldsV1"].clone()
    }

    #[test]
    fn a_list_without_a_list_type_is_owned_whole_though_its_items_have_names() {
        let config = rack(json!({"shelves": [{"name": "a"}, {"name": "b"}]}));
        let object = with_custom_schemas("example.com", "Rack", Some(rack_schemas()), || {
            apply(None, &config, &who("alice"), false)
        })
        .expect("no conflict");
        assert_eq!(
            applied_fields(&object),
            json!({"f:spec": {"f:shelves": {}}})
        );
    }

    #[test]
    fn a_map_list_is_keyed_by_its_declared_keys() {
        let config = rack(json!({"slots": [{"name": "a", "size": 1}]}));
        let object = with_custom_schemas("example.com", "Rack", Some(rack_schemas()), || {
            apply(None, &config, &who("alice"), false)
        })
        .expect("no conflict");
        assert_eq!(
            applied_fields(&object),
            json!({"f:spec": {"f:slots": {"k:{\"name\":\"a\"}": {
                ".": {}, "f:name": {}, "f:size": {}}}}})
        );
    }

    #[test]
    fn two_appliers_of_an_atomic_map_conflict() {
        let schemas = rack_schemas();
        let result = with_custom_schemas("example.com", "Rack", Some(schemas), || {
            let first = apply(
                None,
                &rack(json!({"labels": {"team": "a"}})),
                &who("alice"),
                false,
            )
            .expect("no conflict");
            apply(
                Some(&first),
                &rack(json!({"labels": {"tier": "b"}})),
                &who("bob"),
                false,
            )
        });
        let conflicts = result.expect_err("the map is alice's as a whole");
        assert_eq!(conflicts.conflicts.len(), 1);
    }

    #[test]
    fn another_kind_than_the_registered_one_is_guessed() {
        let mut config = rack(json!({"shelves": [{"name": "a"}]}));
        config["kind"] = json!("Cabinet");
        let object = with_custom_schemas("example.com", "Rack", Some(rack_schemas()), || {
            apply(None, &config, &who("alice"), false)
        })
        .expect("no conflict");
        assert_eq!(
            applied_fields(&object),
            json!({"f:spec": {"f:shelves": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}}})
        );
    }
}
