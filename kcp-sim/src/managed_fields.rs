//! Server-side apply field ownership (`metadata.managedFields`) over plain JSON objects.
//!
//! The real API server tracks, for every object, which *field manager* owns which fields: a
//! server-side apply records the fields its configuration specifies under operation `Apply`, and
//! every other write (create, update, patch) records the fields it changed under operation
//! `Update`. Ownership decides two things: an apply that changes a field another manager owns
//! fails with a conflict (409) unless forced, and a field an applier stops specifying is removed
//! from the object unless somebody else still owns it.
//!
//! A custom resource's lists and maps are owned as its CRD's structural schema declares them
//! (`x-kubernetes-list-type`, `-list-map-keys`, `-map-type`; see [`declared`], registered for a
//! write with [`with_custom_schemas`]). Elsewhere this module reproduces those semantics without
//! OpenAPI schemas, so the shape of lists is guessed from their contents and field names (and
//! from the Go types of the builtin kinds where kcp-sim has them):
//!
//! - a list of objects that all carry a distinct `name` is a map keyed by name; `conditions` are
//!   keyed by `type`, container `ports` by `containerPort` (plus `protocol` when present),
//!   `ownerReferences` by `uid` and `volumeMounts` by `mountPath`;
//! - `finalizers` (a list of distinct scalars) is a set;
//! - every other list is atomic: it is owned, merged and replaced as a whole.
//!
//! Field sets are stored in the FieldsV1 format of the real server (see [`FieldSet`]), so
//! `kubectl` and kube-rs clients see familiar `managedFields` entries. Null values in an applied
//! configuration are ignored (neither merged nor owned).
//!
//! Entry points: [`apply`] for server-side apply requests, [`record_update`] for every other
//! write.

use std::collections::BTreeMap;

use prost_reflect::{Kind, MessageDescriptor};
use serde_json::{Map, Value};

mod atomic_structs;
mod declared;
mod typed_configuration;

pub use declared::with_custom_schemas;
use declared::{Declared, DeclaredList};

/// Metadata fields that are never owned by any manager.
const UNTRACKED_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "selfLink",
    "name",
    "namespace",
];

/// Metadata fields that an applied configuration can never set: the server owns them.
const SERVER_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "selfLink",
];

/// Top-level fields that are never owned by any manager.
const UNTRACKED_TOP_LEVEL: &[&str] = &["apiVersion", "kind"];

/// Top-level fields that an `Update` does not own as a whole when it creates them (the real
/// server sees them as always-present structs).
const TOP_LEVEL_STRUCTS: &[&str] = &["metadata", "spec", "status"];

/// The manager kube-apiserver claims an untracked object's fields for before its first apply
/// (its skipNonApplied manager), so that apply conflicts with it over values it changes.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Who is writing, for the bookkeeping in `metadata.managedFields`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldManager<'a> {
    /// The field manager name (`?fieldManager=`, or the user agent's default).
    pub manager: &'a str,
    /// The subresource written (`Some("status")`), or `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// The time of the write, RFC 3339 with seconds precision (`2026-11-22T10:00:00Z`).
    pub time: &'a str,
    /// The API version the request used (`apps/v1`).
    pub api_version: &'a str,
}

/// The operation recorded in a managed fields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// A server-side apply: the entry holds exactly the fields of the last applied configuration.
    Apply,
    /// Any other write: the entry accumulates the fields the manager changed.
    Update,
}

impl Operation {
    /// The wire name of the operation (`"Apply"` or `"Update"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "Apply" => Some(Operation::Apply),
            "Update" => Some(Operation::Update),
            _ => None,
        }
    }
}

/// One field an apply would change although another manager owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The manager owning the field.
    pub manager: String,
    /// The operation of the owning manager's entry.
    pub operation: Operation,
    /// The API version recorded in the owning manager's entry.
    pub api_version: String,
    /// The subresource of the owning manager's entry, if not the main resource.
    pub subresource: Option<String>,
    /// The field, formatted like the real server: `.spec.replicas`,
    /// `.spec.template.spec.containers[name="nginx"].image`.
    pub field: String,
}

impl Conflict {
    /// The owning manager as the real server prints it in conflict messages and status causes:
    /// `"kubectl"` for an applier, `"kubectl-edit" using apps/v1` for an updater, with
    /// ` with subresource "status"` after the name for a subresource entry.
    pub fn manager_description(&self) -> String {
        let mut text = format!("{:?}", self.manager);
        if let Some(subresource) = &self.subresource {
            text.push_str(&format!(" with subresource {subresource:?}"));
        }
        if self.operation == Operation::Update {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }

    fn group_key(&self) -> (&str, Operation, &str, Option<&str>) {
        (
            &self.manager,
            self.operation,
            &self.api_version,
            self.subresource.as_deref(),
        )
    }
}

/// The field ownership conflicts that make an apply fail (HTTP 409 on the server).
///
/// Displays like the real server's message, e.g. `Apply failed with 1 conflict: conflict with
/// "kubectl-client-side-apply" using apps/v1: .spec.replicas`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", conflict_message(&self.conflicts))]
pub struct ApplyConflicts {
    /// Every conflicting (manager, field) pair, in managed fields entry order.
    pub conflicts: Vec<Conflict>,
}

fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager_description(),
            only.field
        );
    }
    let mut groups: BTreeMap<_, (String, Vec<&str>)> = BTreeMap::new();
    for conflict in conflicts {
        groups
            .entry(conflict.group_key())
            .or_insert_with(|| (conflict.manager_description(), Vec::new()))
            .1
            .push(&conflict.field);
    }
    let mut lines = Vec::new();
    for (description, fields) in groups.values() {
        lines.push(format!("conflicts with {description}:"));
        lines.extend(fields.iter().map(|field| format!("- {field}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// One step of a field path, as in FieldsV1.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum PathElement {
    /// `f:<name>`: a field of a map.
    Field(String),
    /// `k:<json>`: an element of a keyed list, by the canonical JSON of its key fields.
    Key(String),
    /// `v:<json>`: an element of a set-like list, by its canonical JSON.
    Value(String),
    /// `i:<index>`: an element of a list by position.
    Index(usize),
}

impl PathElement {
    fn fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(json) => format!("k:{json}"),
            PathElement::Value(json) => format!("v:{json}"),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    fn parse_fields_v1_key(key: &str) -> Option<Self> {
        let (prefix, rest) = key.split_at_checked(2)?;
        match prefix {
            "f:" => Some(PathElement::Field(rest.to_owned())),
            "k:" => match serde_json::from_str::<Value>(rest).ok()? {
                key @ Value::Object(_) => Some(PathElement::Key(canonical_json(&key))),
                _ => None,
            },
            "v:" => {
                let value = serde_json::from_str::<Value>(rest).ok()?;
                Some(PathElement::Value(canonical_json(&value)))
            }
            "i:" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }

    /// The field name this element selects, which gives the context for guessing list shapes.
    fn field_name(&self) -> Option<&str> {
        match self {
            PathElement::Field(name) => Some(name),
            _ => None,
        }
    }

    fn write_display(&self, out: &mut String) {
        match self {
            PathElement::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            PathElement::Key(json) => {
                out.push('[');
                if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(json) {
                    let sorted: BTreeMap<_, _> = fields.iter().collect();
                    let parts: Vec<String> = sorted
                        .into_iter()
                        .map(|(name, value)| format!("{name}={}", canonical_json(value)))
                        .collect();
                    out.push_str(&parts.join(","));
                }
                out.push(']');
            }
            PathElement::Value(json) => {
                out.push_str("[=");
                out.push_str(json);
                out.push(']');
            }
            PathElement::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
}

type Path = Vec<PathElement>;

fn display_path(path: &[PathElement]) -> String {
    let mut out = String::new();
    for element in path {
        element.write_display(&mut out);
    }
    out
}

/// JSON with object keys sorted, compact: the form used inside `k:` and `v:` keys.
fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical_json(value, &mut out);
    out
}

fn write_canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            let sorted: BTreeMap<&String, &Value> = fields.iter().collect();
            out.push('{');
            for (position, (name, field)) in sorted.into_iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                write_canonical_json(field, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                write_canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// A node of the field set trie: `owned` when the path leading here is in the set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Node {
    owned: bool,
    children: BTreeMap<PathElement, Node>,
}

impl Node {
    fn is_empty(&self) -> bool {
        !self.owned && self.children.is_empty()
    }

    fn insert(&mut self, path: &[PathElement]) {
        match path.split_first() {
            None => self.owned = true,
            Some((head, rest)) => self.children.entry(head.clone()).or_default().insert(rest),
        }
    }

    fn get(&self, path: &[PathElement]) -> Option<&Node> {
        match path.split_first() {
            None => Some(self),
            Some((head, rest)) => self.children.get(head)?.get(rest),
        }
    }

    fn contains(&self, path: &[PathElement]) -> bool {
        self.get(path).is_some_and(|node| node.owned)
    }

    fn has_descendants(&self, path: &[PathElement]) -> bool {
        self.get(path).is_some_and(|node| !node.children.is_empty())
    }

    fn union_with(&mut self, other: &Node) {
        self.owned |= other.owned;
        for (element, child) in &other.children {
            self.children
                .entry(element.clone())
                .or_default()
                .union_with(child);
        }
    }

    fn subtract(&mut self, other: &Node) {
        if other.owned {
            self.owned = false;
        }
        for (element, other_child) in &other.children {
            if let Some(child) = self.children.get_mut(element) {
                child.subtract(other_child);
                if child.is_empty() {
                    self.children.remove(element);
                }
            }
        }
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        if self.owned {
            out.push(prefix.clone());
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    fn to_json(&self) -> Value {
        let mut fields = Map::new();
        if self.owned && !self.children.is_empty() {
            fields.insert(".".to_owned(), Value::Object(Map::new()));
        }
        for (element, child) in &self.children {
            fields.insert(element.fields_v1_key(), child.to_json());
        }
        Value::Object(fields)
    }

    fn from_json(fields: &Map<String, Value>) -> Node {
        let mut node = Node::default();
        for (key, value) in fields {
            if key == "." {
                node.owned = true;
                continue;
            }
            let Some(element) = PathElement::parse_fields_v1_key(key) else {
                continue;
            };
            let child = match value {
                Value::Object(grandchildren) if !grandchildren.is_empty() => {
                    Node::from_json(grandchildren)
                }
                _ => Node {
                    owned: true,
                    children: BTreeMap::new(),
                },
            };
            if !child.is_empty() {
                node.children.insert(element, child);
            }
        }
        node
    }

    /// Drops every path that does not exist in `value` (read with the list shapes guessed there).
    fn retain_existing(&mut self, value: &Value, place: Place<'_>) {
        let view = View::new(value, place);
        self.children
            .retain(|element, child| match view.get(element) {
                Some(child_value) => {
                    child.retain_existing(child_value, place.next(element));
                    !child.is_empty()
                }
                None => false,
            });
    }
}

/// A set of field paths, as stored in a managed fields entry's `fieldsV1`.
///
/// FieldsV1 is a trie of JSON objects: `f:<field>` for map fields, `k:<key json>` for elements
/// of keyed lists, `v:<value json>` for elements of set-like lists, `i:<index>` for other list
/// elements; a leaf is `{}` and `".": {}` marks a node that is itself in the set and also has
/// children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    root: Node,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a FieldsV1 trie; keys it does not understand are skipped, anything but an object
    /// reads as the empty set.
    pub fn from_fields_v1(fields_v1: &Value) -> Self {
        let root = match fields_v1 {
            Value::Object(fields) => {
                let mut root = Node::from_json(fields);
                root.owned = false;
                root
            }
            _ => Node::default(),
        };
        FieldSet { root }
    }

    /// The FieldsV1 JSON of this set.
    pub fn to_fields_v1(&self) -> Value {
        self.root.to_json()
    }

    /// Whether the set holds no field at all.
    pub fn is_empty(&self) -> bool {
        self.root.is_empty()
    }

    /// Every path of the set formatted like the real server's conflict messages
    /// (`.spec.containers[name="nginx"].image`), in FieldsV1 order, parents before children.
    pub fn paths(&self) -> Vec<String> {
        self.path_list()
            .iter()
            .map(|path| display_path(path))
            .collect()
    }

    fn path_list(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.root.collect_paths(&mut Vec::new(), &mut out);
        out
    }
}

/// How a kind's schema types a list (`x-kubernetes-list-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListType {
    Atomic,
    Set,
    Map(KeySpec),
}

/// What the schema of the kind being written says where the guesses of this module would be
/// wrong. kcp's kinds (`*.kcp.io`) are custom resources: a `spec` or `status` a write creates is
/// owned as a whole (not so for the builtin kinds, whose Go structs are always there); their
/// lists are atomic unless their CRDs make them sets or maps; a few of their fields are atomic
/// maps (an APIResourceSchema version's `schema`, a `secretRef`). Everywhere, an owner
/// reference is an atomic struct (`+structType=atomic`): owned with its list item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Schema {
    /// Guessed from contents and field names.
    #[default]
    Guessed,
    /// One of kcp's kinds (its name; `""` for another `*.kcp.io` kind), and whether it is
    /// written at an older version (`apis.kcp.io/v1alpha1` of a kind stored as v1alpha2).
    Kcp(&'static str, bool),
    /// Another custom resource: a created `spec` or `status` is owned as a whole; its lists
    /// are guessed.
    Custom,
    /// A CustomResourceDefinition: its lists are atomic but its conditions (keyed by type),
    /// and its `spec.names` and `spec.versions` are always there (a Go struct, a slice without
    /// omitempty).
    Crd,
    /// A Deployment, StatefulSet, ReplicaSet or DaemonSet: its pod template, the template's metadata, spec and
    /// containers, and the update strategy are always there (Go structs, a slice without
    /// omitempty); its label selector is atomic.
    Workload,
    /// A HorizontalPodAutoscaler, written at autoscaling/v1 (`true`) or v2: its scale target is
    /// always there (a Go struct), and atomic at v1 (`+structType=atomic`).
    Autoscaler(bool),
}

/// What [`Schema::scope`] makes current for an object's kind, read from the object before `f`
/// runs (so `f` may change the object).
struct KindScope {
    schema: Schema,
    go_type: Option<MessageDescriptor>,
    structural: Option<std::sync::Arc<crate::schema::structural::Node>>,
}

impl KindScope {
    fn of(object: &Value) -> Self {
        let schema = Schema::of(object);
        let (go_type, structural) = match schema {
            Schema::Custom => (None, declared::schema_of(object)),
            Schema::Kcp(..) => (None, None),
            _ => (go_type_of(object), None),
        };
        KindScope {
            schema,
            go_type,
            structural,
        }
    }

    fn run<T>(self, f: impl FnOnce() -> T) -> T {
        let KindScope {
            schema,
            go_type,
            structural,
        } = self;
        declared::scope(structural, || schema.scope_with(go_type, f))
    }
}

thread_local! {
    /// The schema of the object being written on this thread (set for the duration of a
    /// [`record_update`] or [`apply`], which run without yielding).
    static SCHEMA: std::cell::Cell<Schema> = const { std::cell::Cell::new(Schema::Guessed) };
    /// The Go type of the builtin kind being written on this thread, when it has one.
    static GO_TYPE: std::cell::RefCell<Option<MessageDescriptor>> =
        const { std::cell::RefCell::new(None) };
}

impl Schema {
    const KCP_KINDS: &'static [&'static str] = &[
        "APIResourceSchema",
        "APIExport",
        "APIBinding",
        "APIExportEndpointSlice",
        "Workspace",
        "WorkspaceType",
        "LogicalCluster",
    ];

    /// The schema of `object`'s kind, from its `apiVersion` and `kind`.
    fn of(object: &Value) -> Schema {
        let text = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
        let group = text("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
        if group == "apiextensions.k8s.io" && text("kind") == "CustomResourceDefinition" {
            return Schema::Crd;
        }
        if group == "apps"
            && matches!(
                text("kind"),
                "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet"
            )
        {
            return Schema::Workload;
        }
        if group == "autoscaling" && text("kind") == "HorizontalPodAutoscaler" {
            return Schema::Autoscaler(text("apiVersion") == "autoscaling/v1");
        }
        if !group.ends_with(".kcp.io") {
            return if crate::resource::is_typed_group(group) {
                Schema::Guessed
            } else {
                Schema::Custom
            };
        }
        let kind = text("kind");
        let name = Self::KCP_KINDS
            .iter()
            .find(|k| **k == kind)
            .copied()
            .unwrap_or("");
        Schema::Kcp(name, text("apiVersion") == "apis.kcp.io/v1alpha1")
    }

    fn current() -> Schema {
        SCHEMA.with(std::cell::Cell::get)
    }

    /// Runs `f` with the schema of `object`'s kind as the current one: this schema, the Go type
    /// of a builtin kind, the registered structural schema of a custom resource
    /// ([`with_custom_schemas`]).
    fn scope<T>(object: &Value, f: impl FnOnce() -> T) -> T {
        KindScope::of(object).run(f)
    }

    fn scope_with<T>(self, go_type: Option<MessageDescriptor>, f: impl FnOnce() -> T) -> T {
        let previous = SCHEMA.with(|s| s.replace(self));
        let previous_type = GO_TYPE.with(|t| t.replace(go_type));
        let out = f();
        SCHEMA.with(|s| s.set(previous));
        GO_TYPE.with(|t| t.replace(previous_type));
        out
    }

    fn is_custom_resource(self) -> bool {
        matches!(self, Schema::Kcp(..) | Schema::Custom)
    }

    /// Whether the node at `path` is always there in the kind's Go type, so creating it owns
    /// only what is inside.
    fn always_there(self, path: &[PathElement]) -> bool {
        // An atomic struct (`+structType=atomic`) is owned as a whole.
        let by_go_type = !self.is_atomic_map(path)
            && GO_TYPE.with(|t| {
                t.borrow()
                    .as_ref()
                    .is_some_and(|desc| go_always_there(desc, path))
            });
        if by_go_type {
            return true;
        }
        // Fields by name, list items as `*`.
        let names: Vec<&str> = path.iter().map(|e| e.field_name().unwrap_or("*")).collect();
        match self {
            Schema::Crd => matches!(
                names.as_slice(),
                ["spec", "names" | "versions"] | ["status", "acceptedNames" | "conditions"]
            ),
            Schema::Workload => matches!(
                names.as_slice(),
                ["spec", "template" | "strategy" | "updateStrategy"]
                    | ["spec", "template", "metadata" | "spec"]
                    | ["spec", "template", "spec", "containers"]
            ),
            Schema::Autoscaler(false) => names.as_slice() == ["spec", "scaleTargetRef"],
            _ => false,
        }
    }

    /// The list type the schema gives a list under `field`, when it says more than the guess.
    fn list_type(self, field: Option<&str>) -> Option<ListType> {
        const GROUP_RESOURCE: &[&str] = &["group", "resource"];
        let Schema::Kcp(kind, v1alpha1) = self else {
            return None;
        };
        let field = field?;
        match (kind, field) {
            // An APIBinding's claims are keyed lists from v1alpha2 on (and their verbs sets).
            ("APIBinding", "permissionClaims" | "appliedPermissionClaims") if !v1alpha1 => {
                Some(ListType::Map(KeySpec::Fields(&[
                    "group",
                    "resource",
                    "identityHash",
                ])))
            }
            (_, "verbs") => Some(ListType::Set),
            // ObjectMeta is the builtin one: guessed as for every kind.
            (_, "finalizers" | "ownerReferences" | "managedFields") => None,
            ("APIResourceSchema", "versions") => None,
            // An APIExport's resources, from v1alpha2 on, keyed by group and name.
            ("APIExport", "resources") if !v1alpha1 => {
                Some(ListType::Map(KeySpec::Fields(&["group", "name"])))
            }
            ("APIExport", "permissionClaims") => {
                Some(ListType::Map(KeySpec::Fields(GROUP_RESOURCE)))
            }
            ("APIBinding", "boundResources") => {
                Some(ListType::Map(KeySpec::Fields(GROUP_RESOURCE)))
            }
            ("APIExportEndpointSlice", "endpoints") => {
                Some(ListType::Map(KeySpec::Fields(&["url"])))
            }
            (_, "latestResourceSchemas" | "storageVersions") => Some(ListType::Set),
            _ => Some(ListType::Atomic),
        }
    }

    /// Whether the map at `path` is atomic: owned as a whole, without members.
    fn is_atomic_map(self, path: &[PathElement]) -> bool {
        let atomic_struct = !self.is_custom_resource()
            && GO_TYPE.with(|t| {
                t.borrow()
                    .as_ref()
                    .is_some_and(|desc| atomic_structs::is_atomic_struct(desc, path))
            });
        if atomic_struct {
            return true;
        }
        if let [
            PathElement::Field(metadata),
            PathElement::Field(owners),
            PathElement::Key(_),
        ] = path
            && metadata == "metadata"
            && owners == "ownerReferences"
        {
            return true;
        }
        if self == Schema::Autoscaler(true)
            && let [PathElement::Field(spec), PathElement::Field(target)] = path
        {
            return spec == "spec" && target == "scaleTargetRef";
        }
        if self == Schema::Workload
            && let [PathElement::Field(spec), PathElement::Field(selector)] = path
        {
            // A LabelSelector is `+structType=atomic`.
            return spec == "spec" && selector == "selector";
        }
        let Schema::Kcp(kind, _) = self else {
            return false;
        };
        match path.last().and_then(PathElement::field_name) {
            Some("secretRef") => true,
            Some("schema") => kind == "APIResourceSchema",
            // A claim's label selector (`+structType=atomic`).
            Some("selector") => kind == "APIBinding",
            _ => false,
        }
    }
}

/// The key fields a keyed list is identified by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeySpec {
    /// A guessed key: this one field, which every item must hold.
    Guessed(&'static str),
    /// The fields a kcp kind's schema names (`x-kubernetes-list-map-keys`), all of them
    /// required.
    Fields(&'static [&'static str]),
    /// The map keys its Go type or CRD declares, read at the list's place.
    Declared,
}

impl KeySpec {
    /// The key tried for a list under `field` of a kind kcp-sim has no schema of.
    fn guessed(field: Option<&str>) -> KeySpec {
        KeySpec::Guessed(match field {
            Some("conditions") => "type",
            Some("ownerReferences") => "uid",
            _ => "name",
        })
    }

    /// The canonical key JSON of `item`, or `None` when the item cannot be keyed this way.
    fn key_of(self, item: &Value) -> Option<String> {
        let Value::Object(fields) = item else {
            return None;
        };
        let names: &[&str] = match &self {
            KeySpec::Guessed(name) => std::slice::from_ref(name),
            KeySpec::Fields(names) => names,
            KeySpec::Declared => return None,
        };
        let mut key = Map::new();
        for name in names {
            let value = fields
                .get(*name)
                .filter(|value| !value.is_null() && !value.is_object() && !value.is_array())?;
            key.insert((*name).to_owned(), value.clone());
        }
        Some(canonical_json(&Value::Object(key)))
    }
}

/// Where a value sits: the name of the field holding it and of the field holding that one (a
/// list item and the root sit in no field), and what its kind's schema declares there.
#[derive(Debug, Clone, Copy, Default)]
struct Place<'a> {
    field: Option<&'a str>,
    parent: Option<&'a str>,
    declared: Declared<'a>,
}

impl<'a> Place<'a> {
    /// A place the schema says nothing of, in no field (a builtin object's root).
    const NONE: Place<'static> = Place {
        field: None,
        parent: None,
        declared: Declared::Unknown,
    };

    /// The root of an object whose structural schema is `schema` (none for a builtin kind, whose
    /// Go type is the current one).
    fn root(schema: Option<&'a crate::schema::structural::Node>) -> Place<'a> {
        let go_type = GO_TYPE.with(|t| {
            let types = crate::protobuf::schema::Schema::get().ok()?;
            types
                .plan(t.borrow().as_ref()?)
                .map(crate::protobuf::go_type::GoType::Struct)
        });
        Place {
            declared: Declared::root(schema, go_type),
            ..Place::NONE
        }
    }

    /// A value in the field `name` of the map sitting here.
    fn child(self, name: &'a str) -> Place<'a> {
        Place {
            field: Some(name),
            parent: self.field,
            declared: self.declared.child(name),
        }
    }

    /// An item of the list sitting here.
    fn item(self) -> Place<'a> {
        Place {
            declared: self.declared.item(),
            ..Place::NONE
        }
    }

    /// The place of the value at `element` under the value sitting here.
    fn next(self, element: &'a PathElement) -> Place<'a> {
        match element.field_name() {
            Some(name) => self.child(name),
            None => self.item(),
        }
    }

    /// The place of the value at the end of `path`, read from the root of an object whose
    /// structural schema is `schema`.
    fn at(
        schema: Option<&'a crate::schema::structural::Node>,
        path: &'a [PathElement],
    ) -> Place<'a> {
        path.iter().fold(Place::root(schema), Place::next)
    }

    /// Whether the list sitting here is a set or a map in its kind's schema, empty or not: as
    /// its Go type or CRD declares it, and ObjectMeta's finalizers (a set) of a kind kcp-sim
    /// has no schema of.
    fn is_granular_list(self) -> bool {
        self.declared.is_granular_list()
            || (self.field == Some("finalizers") && self.parent == Some("metadata"))
    }

    /// Whether the map sitting here is owned as a whole (the kind's schema, or the object's
    /// declares it atomic).
    fn is_atomic_map(self, path: &[PathElement]) -> bool {
        self.declared.is_atomic_map() || Schema::current().is_atomic_map(path)
    }
}

/// The guessed shape of a list, with the path element of each item.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    /// A map keyed by some fields of its items: the key JSON of each item.
    Keyed(KeySpec, Vec<String>),
    /// A set of scalars: the canonical JSON of each item.
    Set(Vec<String>),
    /// Owned and replaced as a whole (also every empty list).
    Atomic,
}

impl Shape {
    fn of(place: Place<'_>, items: &[Value]) -> Shape {
        let field = place.field;
        if items.is_empty() {
            return Shape::Atomic;
        }
        if let Some(declared) = place.declared.list() {
            return Shape::declared(declared, place.declared.item(), items);
        }
        match Schema::current().list_type(field) {
            Some(ListType::Atomic) => return Shape::Atomic,
            Some(ListType::Set) => {
                let values: Vec<String> = items.iter().map(canonical_json).collect();
                return if all_distinct(&values) {
                    Shape::Set(values)
                } else {
                    Shape::Atomic
                };
            }
            Some(ListType::Map(spec)) => {
                let keys: Option<Vec<String>> =
                    items.iter().map(|item| spec.key_of(item)).collect();
                return match keys {
                    Some(keys) if all_distinct(&keys) => Shape::Keyed(spec, keys),
                    _ => Shape::Atomic,
                };
            }
            None => {}
        }
        // Only ObjectMeta's finalizers are a set; a Namespace's `spec.finalizers` (or any other
        // list of that name) has no list type and is atomic, as kube's schemas leave it.
        if field == Some("finalizers") && place.parent == Some("metadata") {
            if items
                .iter()
                .all(|item| !item.is_object() && !item.is_array())
            {
                // A finalizer listed twice is owned once, as kube-apiserver records it.
                return Shape::Set(items.iter().map(canonical_json).collect());
            }
            return Shape::Atomic;
        }
        let spec = KeySpec::guessed(field);
        let keys: Option<Vec<String>> = items.iter().map(|item| spec.key_of(item)).collect();
        match keys {
            Some(keys) if all_distinct(&keys) => Shape::Keyed(spec, keys),
            _ => Shape::Atomic,
        }
    }

    /// The shape of a list its kind's schema declares, whose items are declared `item`.
    fn declared(declared: DeclaredList<'_>, item: Declared<'_>, items: &[Value]) -> Shape {
        let scalars = || {
            items
                .iter()
                .all(|value| !value.is_object() && !value.is_array())
        };
        let keys: Option<Vec<String>> = match declared {
            DeclaredList::Atomic => None,
            // A value listed twice is owned once, as kube-apiserver records a finalizer.
            DeclaredList::Set if scalars() => {
                return Shape::Set(items.iter().map(canonical_json).collect());
            }
            DeclaredList::Set => None,
            DeclaredList::Map(names) => items
                .iter()
                .map(|value| declared::map_key(names, value, item))
                .collect(),
        };
        match (declared, keys) {
            (DeclaredList::Map(_), Some(keys)) if all_distinct(&keys) => {
                Shape::Keyed(KeySpec::Declared, keys)
            }
            _ => Shape::Atomic,
        }
    }

    /// The path element of the item at `position`.
    fn element(&self, position: usize) -> PathElement {
        let keyed = match self {
            Shape::Keyed(_, keys) => keys.get(position).cloned().map(PathElement::Key),
            Shape::Set(values) => values.get(position).cloned().map(PathElement::Value),
            Shape::Atomic => None,
        };
        keyed.unwrap_or(PathElement::Index(position))
    }

    fn position(&self, element: &PathElement) -> Option<usize> {
        match (self, element) {
            (Shape::Keyed(_, keys), PathElement::Key(key)) => keys.iter().position(|k| k == key),
            (Shape::Set(values), PathElement::Value(value)) => {
                values.iter().position(|v| v == value)
            }
            _ => None,
        }
    }

    fn is_granular(&self) -> bool {
        !matches!(self, Shape::Atomic)
    }
}

fn all_distinct(keys: &[String]) -> bool {
    let mut sorted: Vec<&String> = keys.iter().collect();
    sorted.sort();
    sorted.windows(2).all(|pair| pair[0] != pair[1])
}

/// A value read through path elements, with the shape of a list computed once.
enum View<'v> {
    Map(&'v Map<String, Value>),
    List(&'v [Value], Shape),
    Leaf,
}

impl<'v> View<'v> {
    fn new(value: &'v Value, place: Place<'_>) -> Self {
        match value {
            Value::Object(fields) => View::Map(fields),
            Value::Array(items) => View::List(items, Shape::of(place, items)),
            _ => View::Leaf,
        }
    }

    fn get(&self, element: &PathElement) -> Option<&'v Value> {
        match (self, element) {
            (View::Map(fields), PathElement::Field(name)) => fields.get(name),
            (View::List(items, shape), element) => items.get(shape.position(element)?),
            _ => None,
        }
    }
}

fn resolve<'v>(value: &'v Value, path: &[PathElement]) -> Option<&'v Value> {
    let schema = declared::current_root();
    let mut place = Place::root(schema.as_deref());
    let mut current = value;
    for element in path {
        current = View::new(current, place).get(element)?;
        place = place.next(element);
    }
    Some(current)
}

fn resolve_mut<'v>(value: &'v mut Value, path: &[PathElement]) -> Option<&'v mut Value> {
    let schema = declared::current_root();
    let mut place = Place::root(schema.as_deref());
    let mut current = value;
    for element in path {
        current = child_mut(current, place, element)?;
        place = place.next(element);
    }
    Some(current)
}

fn child_mut<'v>(
    value: &'v mut Value,
    place: Place<'_>,
    element: &PathElement,
) -> Option<&'v mut Value> {
    match value {
        Value::Object(fields) => match element {
            PathElement::Field(name) => fields.get_mut(name),
            _ => None,
        },
        Value::Array(items) => {
            let position = Shape::of(place, items).position(element)?;
            items.get_mut(position)
        }
        _ => None,
    }
}

/// Removes the value at `path`; returns whether something was removed.
fn remove_at(value: &mut Value, path: &[PathElement]) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        return false;
    };
    let schema = declared::current_root();
    let place = Place::at(schema.as_deref(), parent_path);
    match resolve_mut(value, parent_path) {
        Some(Value::Object(fields)) => match last {
            PathElement::Field(name) => fields.remove(name).is_some(),
            _ => false,
        },
        Some(Value::Array(items)) => match Shape::of(place, items).position(last) {
            Some(position) => {
                items.remove(position);
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// Whether the field `key` under `path` is ever owned.
fn is_tracked(path: &[PathElement], key: &str) -> bool {
    match path {
        [] => !UNTRACKED_TOP_LEVEL.contains(&key),
        [PathElement::Field(metadata)] if metadata == "metadata" => {
            !UNTRACKED_METADATA.contains(&key)
        }
        _ => true,
    }
}

/// Whether the node at `path` itself can be owned (the root and `metadata` cannot).
fn is_ownable(path: &[PathElement]) -> bool {
    match path {
        [] => false,
        [PathElement::Field(name)] => name != "metadata",
        _ => true,
    }
}

/// Whether `path` names a key field of a keyed list item, which goes only with the item.
fn is_key_field(path: &[PathElement]) -> bool {
    match path {
        [.., PathElement::Key(key), PathElement::Field(name)] => {
            matches!(serde_json::from_str::<Value>(key), Ok(Value::Object(fields)) if fields.contains_key(name))
        }
        _ => false,
    }
}

/// The field set an applied configuration specifies: every leaf it sets, plus each item of a
/// keyed list it mentions. Untracked metadata (`name`, `namespace`, `resourceVersion`,
/// `managedFields`, ...) and the top-level `apiVersion` and `kind` are left out, and so are
/// null values.
pub fn field_set_of(value: &Value) -> FieldSet {
    let mut root = Node::default();
    let schema = declared::current_root();
    collect_specified(
        value,
        Place::root(schema.as_deref()),
        &mut Vec::new(),
        &mut root,
    );
    FieldSet { root }
}

/// The fields of an applied `configuration` that still hold, in `live`, the value the
/// configuration gave them: structured-merge-diff's comparison of the two, the configuration's
/// fields less those modified, added or removed. As conflict paths (`.data.a`); a map or list
/// item counts as unchanged while it is there.
pub fn fields_unchanged_since(configuration: &Value, live: &Value) -> Vec<String> {
    Schema::scope(live, || {
        let configuration = applied_configuration(configuration, None);
        let unchanged =
            |path: &[PathElement]| match (resolve(&configuration, path), resolve(live, path)) {
                (Some(Value::Object(_)), Some(Value::Object(_))) => true,
                (Some(then), Some(now)) => then == now,
                _ => false,
            };
        field_set_of(&configuration)
            .path_list()
            .iter()
            .filter(|path| unchanged(path))
            .map(|path| display_path(path))
            .collect()
    })
}

fn collect_specified(value: &Value, place: Place<'_>, path: &mut Path, set: &mut Node) {
    match value {
        Value::Null => {}
        Value::Object(_) if place.is_atomic_map(path) => set.insert(path),
        Value::Object(fields) if fields.is_empty() => {
            if is_ownable(path) {
                set.insert(path);
            }
        }
        Value::Object(fields) => {
            if place.declared.is_undeclared_entry() && is_ownable(path) {
                set.insert(path);
            }
            for (name, child) in fields {
                if child.is_null() || !is_tracked(path, name) {
                    continue;
                }
                path.push(PathElement::Field(name.clone()));
                collect_specified(child, place.child(name), path, set);
                path.pop();
            }
        }
        Value::Array(items) => {
            let shape = Shape::of(place, items);
            match shape {
                // An empty list its schema makes a set or map specifies no item, so nothing.
                Shape::Atomic if items.is_empty() && place.is_granular_list() => {}
                Shape::Atomic => {
                    if is_ownable(path) {
                        set.insert(path);
                    }
                }
                Shape::Keyed(..) => {
                    for (position, item) in items.iter().enumerate() {
                        path.push(shape.element(position));
                        set.insert(path);
                        collect_specified(item, place.item(), path, set);
                        path.pop();
                    }
                }
                Shape::Set(_) => {
                    for position in 0..items.len() {
                        path.push(shape.element(position));
                        set.insert(path);
                        path.pop();
                    }
                }
            }
        }
        _ => {
            if is_ownable(path) {
                set.insert(path);
            }
        }
    }
}

/// The fields a non-apply write sets: values that differ from `old`, with newly created maps and
/// list items owned as a whole too.
fn collect_changed(
    old: Option<&Value>,
    new: &Value,
    place: Place<'_>,
    path: &mut Path,
    set: &mut Node,
) {
    match (old, new) {
        (Some(Value::Object(old_fields)), Value::Object(new_fields))
            if !place.is_atomic_map(path) =>
        {
            for (name, child) in new_fields {
                if !is_tracked(path, name) {
                    continue;
                }
                path.push(PathElement::Field(name.clone()));
                collect_changed(old_fields.get(name), child, place.child(name), path, set);
                path.pop();
            }
        }
        (Some(Value::Array(old_items)), Value::Array(new_items))
            if collect_changed_items(old_items, new_items, place, path, set) => {}
        // A field that was there as null (a Go slice or struct without omitempty, written
        // empty) and gets a value: only what is inside it is new, as kube-apiserver compares.
        (Some(Value::Null), Value::Array(new_items))
            if collect_changed_items(&[], new_items, place, path, set) => {}
        (Some(Value::Null), Value::Object(new_fields)) if !place.is_atomic_map(path) => {
            for (name, child) in new_fields {
                if !is_tracked(path, name) {
                    continue;
                }
                path.push(PathElement::Field(name.clone()));
                collect_changed(None, child, place.child(name), path, set);
                path.pop();
            }
        }
        _ => {
            if old != Some(new) {
                collect_created(new, place, path, set);
            }
        }
    }
}

/// Compares two lists item by item when their shapes allow it; returns `false` (having recorded
/// nothing) when they must be compared as a whole.
fn collect_changed_items(
    old_items: &[Value],
    new_items: &[Value],
    place: Place<'_>,
    path: &mut Path,
    set: &mut Node,
) -> bool {
    let new_shape = Shape::of(place, new_items);
    let old_shape = Shape::of(place, old_items);
    let comparable = match (&new_shape, &old_shape) {
        (Shape::Keyed(new_spec, _), Shape::Keyed(old_spec, _)) => new_spec == old_spec,
        (Shape::Set(_), Shape::Set(_)) => true,
        (Shape::Keyed(..) | Shape::Set(_), Shape::Atomic) => old_items.is_empty(),
        _ => false,
    };
    if !comparable {
        return false;
    }
    for (position, item) in new_items.iter().enumerate() {
        let element = new_shape.element(position);
        let old_item = old_shape
            .position(&element)
            .and_then(|old_position| old_items.get(old_position));
        path.push(element);
        match (&new_shape, old_item) {
            (Shape::Keyed(..), Some(old_item)) => {
                collect_changed(Some(old_item), item, place.item(), path, set)
            }
            (_, Some(_)) => {}
            (_, None) => collect_created(item, place.item(), path, set),
        }
        path.pop();
    }
    true
}

/// Records `value` at `path` as newly set: the node itself and everything below it.
fn collect_created(value: &Value, place: Place<'_>, path: &mut Path, set: &mut Node) {
    let top_level_struct = matches!(
        path.as_slice(),
        [PathElement::Field(name)] if TOP_LEVEL_STRUCTS.contains(&name.as_str())
    );
    let schema = Schema::current();
    let struct_always_there =
        (top_level_struct && !schema.is_custom_resource()) || schema.always_there(path);
    // What is always there owns only its contents: a struct's fields, a granular list's items
    // (an atomic list is a leaf).
    let granular_list = match value {
        Value::Array(items) => Shape::of(place, items).is_granular(),
        _ => false,
    };
    if is_ownable(path) && !(struct_always_there && (value.is_object() || granular_list)) {
        set.insert(path);
    }
    match value {
        Value::Object(_) if place.is_atomic_map(path) => {}
        Value::Object(fields) => {
            for (name, child) in fields {
                if !is_tracked(path, name) {
                    continue;
                }
                path.push(PathElement::Field(name.clone()));
                collect_created(child, place.child(name), path, set);
                path.pop();
            }
        }
        Value::Array(items) => {
            let shape = Shape::of(place, items);
            if shape.is_granular() {
                for (position, item) in items.iter().enumerate() {
                    path.push(shape.element(position));
                    collect_created(item, place.item(), path, set);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// Whether a node counts as unchanged between `live` and `merged` for ownership: maps and
/// keyed or set lists are granular (only their members change), anything else compares by value.
fn is_same_node(live: &Value, merged: &Value, place: Place<'_>) -> bool {
    match (live, merged) {
        (Value::Object(_), Value::Object(_)) if place.declared.is_atomic_map() => live == merged,
        (Value::Object(_), Value::Object(_)) => true,
        (Value::Array(live_items), Value::Array(merged_items)) => {
            let granular =
                |items: &[Value]| items.is_empty() || Shape::of(place, items).is_granular();
            (granular(live_items) && granular(merged_items)) || live == merged
        }
        _ => live == merged,
    }
}

/// The paths of `node` whose value is added or modified between `live` and `merged`.
fn collect_modified(
    node: &Node,
    live: Option<&Value>,
    merged: Option<&Value>,
    place: Place<'_>,
    path: &mut Path,
    out: &mut Vec<Path>,
) {
    if node.owned {
        let modified = match (live, merged) {
            (None, Some(_)) => true,
            (Some(live), Some(merged)) => !is_same_node(live, merged, place),
            _ => false,
        };
        if modified {
            out.push(path.clone());
        }
    }
    if node.children.is_empty() {
        return;
    }
    let live_view = live.map(|value| View::new(value, place));
    let merged_view = merged.map(|value| View::new(value, place));
    for (element, child) in &node.children {
        path.push(element.clone());
        collect_modified(
            child,
            live_view.as_ref().and_then(|view| view.get(element)),
            merged_view.as_ref().and_then(|view| view.get(element)),
            place.next(element),
            path,
            out,
        );
        path.pop();
    }
}

/// Merges an applied configuration into the live value: maps recursively, keyed and set lists by
/// key, everything else replaced.
fn merge(live: &Value, applied: &Value, place: Place<'_>) -> Value {
    match (live, applied) {
        (Value::Object(_), Value::Object(_)) if place.declared.is_atomic_map() => applied.clone(),
        (Value::Object(live_fields), Value::Object(applied_fields)) => {
            let mut out = live_fields.clone();
            for (name, applied_child) in applied_fields {
                let merged = match live_fields.get(name) {
                    Some(live_child) => merge(live_child, applied_child, place.child(name)),
                    None => applied_child.clone(),
                };
                out.insert(name.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(live_items), Value::Array(applied_items)) => {
            Value::Array(merge_lists(live_items, applied_items, place))
        }
        _ => applied.clone(),
    }
}

fn merge_lists(live: &[Value], applied: &[Value], place: Place<'_>) -> Vec<Value> {
    let live_shape = Shape::of(place, live);
    if applied.is_empty() {
        return if live_shape.is_granular() {
            live.to_vec()
        } else {
            Vec::new()
        };
    }
    let applied_shape = Shape::of(place, applied);
    let (live_keys, applied_keys) = match (&live_shape, &applied_shape) {
        (Shape::Keyed(live_spec, live_keys), Shape::Keyed(applied_spec, applied_keys))
            if live_spec == applied_spec =>
        {
            (live_keys.as_slice(), applied_keys.as_slice())
        }
        (Shape::Set(live_keys), Shape::Set(applied_keys)) => {
            (live_keys.as_slice(), applied_keys.as_slice())
        }
        _ => return applied.to_vec(),
    };
    merge_by_key(live, live_keys, applied, applied_keys, place.item())
}

/// Merges two keyed lists: items in both are merged, the applied order wins for them, and live
/// items the configuration does not mention keep their place relative to their neighbours.
fn merge_by_key(
    live: &[Value],
    live_keys: &[String],
    applied: &[Value],
    applied_keys: &[String],
    item: Place<'_>,
) -> Vec<Value> {
    let live_positions: BTreeMap<&str, usize> = live_keys
        .iter()
        .enumerate()
        .map(|(position, key)| (key.as_str(), position))
        .collect();
    let applied_positions: BTreeMap<&str, usize> = applied_keys
        .iter()
        .enumerate()
        .map(|(position, key)| (key.as_str(), position))
        .collect();
    let mut emitted = vec![false; live.len()];
    let mut out = Vec::with_capacity(live.len() + applied.len());
    let merge_applied = |position: usize, emitted: &mut [bool]| {
        let applied_item = &applied[position];
        match live_positions.get(applied_keys[position].as_str()) {
            Some(&live_position) => {
                emitted[live_position] = true;
                merge(&live[live_position], applied_item, item)
            }
            None => applied_item.clone(),
        }
    };
    let (mut next_live, mut next_applied) = (0, 0);
    loop {
        while next_live < live.len() && emitted[next_live] {
            next_live += 1;
        }
        let live_left = next_live < live.len();
        let applied_left = next_applied < applied.len();
        if !applied_left && !live_left {
            break;
        }
        if live_left
            && (!applied_left || !applied_positions.contains_key(live_keys[next_live].as_str()))
        {
            out.push(live[next_live].clone());
            emitted[next_live] = true;
        } else {
            out.push(merge_applied(next_applied, &mut emitted));
            next_applied += 1;
        }
    }
    out
}

/// The applied configuration as merged and owned: nulls dropped, server-owned metadata and the
/// request's `managedFields` removed, only `status` for the status subresource.
fn applied_configuration(applied: &Value, subresource: Option<&str>) -> Value {
    let Value::Object(fields) = applied else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (name, value) in fields {
        if subresource == Some("status") && name != "status" {
            continue;
        }
        if name == "metadata"
            && let Value::Object(metadata) = value
        {
            let kept: Map<String, Value> = metadata
                .iter()
                .filter(|(key, _)| !SERVER_METADATA.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            out.insert(name.clone(), without_nulls(&Value::Object(kept)));
            continue;
        }
        if !value.is_null() {
            out.insert(name.clone(), without_nulls(value));
        }
    }
    Value::Object(out)
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, child)| !child.is_null())
                .map(|(name, child)| (name.clone(), without_nulls(child)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        scalar => scalar.clone(),
    }
}

/// One parsed `metadata.managedFields` entry.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    time: Option<String>,
    subresource: Option<String>,
    fields: FieldSet,
}

impl Entry {
    fn parse(value: &Value) -> Option<Entry> {
        let text = |name: &str| value.get(name).and_then(Value::as_str);
        Some(Entry {
            manager: text("manager").unwrap_or_default().to_owned(),
            operation: Operation::parse(text("operation")?)?,
            api_version: text("apiVersion").unwrap_or_default().to_owned(),
            time: text("time").map(str::to_owned),
            subresource: text("subresource")
                .filter(|subresource| !subresource.is_empty())
                .map(str::to_owned),
            fields: value
                .get("fieldsV1")
                .map(FieldSet::from_fields_v1)
                .unwrap_or_default(),
        })
    }

    /// An entry a client sent, when it decodes as kube-apiserver's `DecodeManagedFields` decodes
    /// one: an operation of `Apply` or `Update`, an API version, `fieldsType: FieldsV1` and
    /// field paths that parse.
    fn decode_sent(value: &Value) -> Option<Entry> {
        let text = |name: &str| value.get(name).and_then(Value::as_str);
        if text("fieldsType") != Some("FieldsV1")
            || text("apiVersion").unwrap_or_default().is_empty()
        {
            return None;
        }
        let fields_decode = value.get("fieldsV1").is_none_or(fields_v1_decodes);
        fields_decode.then(|| Entry::parse(value)).flatten()
    }

    /// The order kube-apiserver stores entries in: by operation (`Apply` first), time, manager,
    /// API version and subresource.
    fn storage_order_key(&self) -> (Operation, &str, &str, &str, &str) {
        (
            self.operation,
            self.time.as_deref().unwrap_or_default(),
            &self.manager,
            &self.api_version,
            self.subresource.as_deref().unwrap_or_default(),
        )
    }

    fn new(who: &FieldManager, operation: Operation, fields: FieldSet) -> Entry {
        Entry {
            manager: who.manager.to_owned(),
            operation,
            api_version: who.api_version.to_owned(),
            time: Some(who.time.to_owned()),
            subresource: who.subresource.map(str::to_owned),
            fields,
        }
    }

    /// Whether this entry is `who`'s for `operation`: kube-apiserver tells an updater's entries
    /// apart by the API version they were written at too, an applier's not
    /// (`BuildManagerIdentifier`).
    fn is_for(&self, who: &FieldManager, operation: Operation) -> bool {
        self.manager == who.manager
            && self.operation == operation
            && self.subresource.as_deref() == who.subresource
            && (operation == Operation::Apply || self.api_version == who.api_version)
    }

    fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("manager".to_owned(), Value::from(self.manager.clone()));
        out.insert("operation".to_owned(), Value::from(self.operation.as_str()));
        out.insert(
            "apiVersion".to_owned(),
            Value::from(self.api_version.clone()),
        );
        if let Some(time) = &self.time {
            out.insert("time".to_owned(), Value::from(time.clone()));
        }
        out.insert("fieldsType".to_owned(), Value::from("FieldsV1"));
        out.insert("fieldsV1".to_owned(), self.fields.to_fields_v1());
        if let Some(subresource) = &self.subresource {
            out.insert("subresource".to_owned(), Value::from(subresource.clone()));
        }
        Value::Object(out)
    }

    fn conflict(&self, path: &[PathElement]) -> Conflict {
        Conflict {
            manager: self.manager.clone(),
            operation: self.operation,
            api_version: self.api_version.clone(),
            subresource: self.subresource.clone(),
            field: display_path(path),
        }
    }
}

/// Whether a FieldsV1 trie decodes: objects all the way down, every key `.` or a path element.
fn fields_v1_decodes(fields: &Value) -> bool {
    let Value::Object(fields) = fields else {
        return false;
    };
    fields.iter().all(|(key, value)| {
        (key == "." || PathElement::parse_fields_v1_key(key).is_some()) && fields_v1_decodes(value)
    })
}

fn read_entries(object: Option<&Value>) -> Vec<Entry> {
    parse_entries(object.and_then(|object| object.pointer("/metadata/managedFields")))
}

/// The entries of a `metadata.managedFields` list that parse.
fn parse_entries(list: Option<&Value>) -> Vec<Entry> {
    list.and_then(Value::as_array)
        .map(|entries| entries.iter().filter_map(Entry::parse).collect())
        .unwrap_or_default()
}

/// The entries of a live object that a write by `who` keeps: structured-merge-diff converts
/// the object to each entry's version and drops the entries it cannot convert to, those of
/// another API group (an Event's written through the other Event API).
fn entries_for_writer(object: Option<&Value>, who: &FieldManager) -> Vec<Entry> {
    of_writers_group(read_entries(object), who)
}

fn of_writers_group(mut entries: Vec<Entry>, who: &FieldManager) -> Vec<Entry> {
    let group = |api_version: &str| {
        api_version
            .rsplit_once('/')
            .map(|(group, _)| group.to_owned())
    };
    let writer = group(who.api_version);
    entries.retain(|entry| group(&entry.api_version) == writer);
    entries
}

/// The `metadata.managedFields` a non-apply write to the main resource starts from, as
/// kube-apiserver's `decodeLiveOrNew` chooses them: a client may set them itself (kubectl moves
/// a client-side applier's fields to its server-side applier so). An empty list, or one empty
/// entry, resets them (`None`); entries that all decode replace the live ones (sorted as the
/// server stores them); anything else (none sent, or one that does not decode) keeps `live`.
pub fn entries_to_update(live: Option<&Value>, sent: Option<&Value>) -> Option<Value> {
    let live = || {
        live.filter(|entries| entries.as_array().is_some_and(|e| !e.is_empty()))
            .cloned()
    };
    let Some(Value::Array(sent)) = sent else {
        return live();
    };
    let is_empty_entry = |entry: &Value| entry.as_object().is_some_and(Map::is_empty);
    if sent.is_empty() || (sent.len() == 1 && sent.iter().all(is_empty_entry)) {
        return None;
    }
    match sent
        .iter()
        .map(Entry::decode_sent)
        .collect::<Option<Vec<_>>>()
    {
        Some(mut entries) => {
            entries.sort_by(|a, b| a.storage_order_key().cmp(&b.storage_order_key()));
            Some(Value::Array(entries.iter().map(Entry::to_json).collect()))
        }
        None => live(),
    }
}

/// Drops paths that no longer exist and empty entries, then stores the entries in `object`.
fn write_entries(object: &mut Value, mut entries: Vec<Entry>) {
    let schema = declared::current_root();
    let object_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    for entry in &mut entries {
        // An APIExport or APIBinding is stored in another version than v1alpha1 writers wrote:
        // their fields are kept as written (kcp-sim does not convert the object to check them).
        if matches!(
            Schema::current(),
            Schema::Kcp("APIExport" | "APIBinding", _)
        ) && entry.api_version != object_version
        {
            continue;
        }
        // An Event's writers at the other Event API own fields under that API's names.
        if entry.api_version != object_version
            && let Some(view) = crate::event_apis::as_read_at(object, &entry.api_version)
        {
            entry.fields.root.retain_existing(&view, Place::NONE);
            continue;
        }
        entry
            .fields
            .root
            .retain_existing(object, Place::root(schema.as_deref()));
    }
    entries.retain(|entry| !entry.fields.is_empty());
    let Value::Object(fields) = object else {
        return;
    };
    if entries.is_empty() {
        if let Some(Value::Object(metadata)) = fields.get_mut("metadata") {
            metadata.remove("managedFields");
        }
        return;
    }
    let metadata = fields
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(metadata) = metadata {
        metadata.insert(
            "managedFields".to_owned(),
            Value::Array(entries.iter().map(Entry::to_json).collect()),
        );
    }
}

/// Server-side apply.
///
/// `live` is the stored object (`None` when the apply creates it) and `applied` the object in
/// the request. Returns the new object: the live object with the applied configuration merged in
/// (maps recursively, keyed lists by key, anything else replaced), the fields `who` applied last
/// time but no longer specifies removed unless another manager owns them, and
/// `metadata.managedFields` updated, `who`'s `Apply` entry holding exactly the applied fields.
///
/// Fails with the fields whose value would change although another manager owns them, unless
/// `force`, in which case those fields move to `who`. For `who.subresource == Some("status")`
/// only the `status` of `applied` is considered. The `metadata.managedFields` of `applied` and
/// other server-owned metadata in it are ignored. An apply that changes nothing keeps the live
/// object and the entry times (a new entry has no time).
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    who: &FieldManager,
    force: bool,
) -> Result<Value, ApplyConflicts> {
    Schema::scope(applied, || apply_guessed(live, applied, who, force))
}

fn apply_guessed(
    live: Option<&Value>,
    applied: &Value,
    who: &FieldManager,
    force: bool,
) -> Result<Value, ApplyConflicts> {
    let configuration = applied_configuration(applied, who.subresource);
    let applied_set = field_set_of(&configuration);
    let empty = Value::Object(Map::new());
    let base = live.unwrap_or(&empty);
    let schema = declared::current_root();
    let root = Place::root(schema.as_deref());
    let mut merged = merge(base, &configuration, root);

    let mut entries = entries_for_writer(live, who);
    let own = entries
        .iter()
        .position(|entry| entry.is_for(who, Operation::Apply));

    let mut conflicts = Vec::new();
    let mut taken: Vec<(usize, Vec<Path>)> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        if Some(index) == own {
            continue;
        }
        let mut modified = Vec::new();
        collect_modified(
            &entry.fields.root,
            live,
            Some(&merged),
            root,
            &mut Vec::new(),
            &mut modified,
        );
        conflicts.extend(modified.iter().map(|path| entry.conflict(path)));
        if !modified.is_empty() {
            taken.push((index, modified));
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(ApplyConflicts { conflicts });
    }
    for (index, paths) in taken {
        if let Some(entry) = entries.get_mut(index) {
            for path in paths {
                let mut lost = Node::default();
                lost.insert(&path);
                entry.fields.root.subtract(&lost);
            }
        }
    }

    let previous = own
        .and_then(|index| entries.get(index))
        .map(|entry| entry.fields.clone())
        .unwrap_or_default();
    let mut disowned = previous.clone();
    disowned.root.subtract(&applied_set.root);
    let mut still_owned: Vec<&Node> = entries
        .iter()
        .enumerate()
        .filter(|(index, _)| Some(*index) != own)
        .map(|(_, entry)| &entry.fields.root)
        .collect();
    still_owned.push(&applied_set.root);
    for path in disowned.path_list().iter().rev() {
        remove_disowned(&mut merged, path, &still_owned);
    }

    // As the real server: the entry's time is the time of the last apply that changed the
    // object; a first apply that changes nothing has none.
    let object_changed = live != Some(&merged);
    match own.and_then(|index| entries.get_mut(index)) {
        Some(entry) => {
            if object_changed {
                entry.time = Some(who.time.to_owned());
            }
            entry.api_version = who.api_version.to_owned();
            entry.fields = applied_set;
        }
        None => {
            let mut entry = Entry::new(who, Operation::Apply, applied_set);
            if !object_changed {
                entry.time = None;
            }
            entries.push(entry);
        }
    }
    write_entries(&mut merged, entries);
    Ok(merged)
}

/// Removes a field the applier no longer specifies, unless somebody still owns it or something
/// below it, then removes the maps and lists left empty above it that nobody owns.
fn remove_disowned(object: &mut Value, path: &[PathElement], owners: &[&Node]) {
    let kept = |path: &[PathElement]| {
        owners
            .iter()
            .any(|owner| owner.contains(path) || owner.has_descendants(path))
    };
    if kept(path) || is_key_field(path) || !remove_at(object, path) {
        return;
    }
    for depth in (1..path.len()).rev() {
        let ancestor = &path[..depth];
        if !is_ownable(ancestor) || owners.iter().any(|owner| owner.contains(ancestor)) {
            return;
        }
        let empty = match resolve(object, ancestor) {
            Some(Value::Object(fields)) => fields.is_empty(),
            Some(Value::Array(items)) => items.is_empty(),
            _ => false,
        };
        if !empty || !remove_at(object, ancestor) {
            return;
        }
    }
}

/// Ownership bookkeeping for a non-apply write (create, update, merge/JSON/strategic patch).
///
/// The fields whose value differs between `old` (`None` on create) and `new` become owned by
/// `who` under operation `Update` (newly created maps and list items as a whole as well) and
/// leave every other manager's entry; fields that no longer exist leave every entry. The
/// `metadata.managedFields` of `new` is replaced by the result: the old object's entries plus
/// this update, whatever the request tried to set there. A write that changes nothing leaves
/// the entries, times included, as they were.
pub fn record_update(old: Option<&Value>, new: &mut Value, who: &FieldManager) {
    record_over(entries_for_writer(old, who), old, new, who);
}

/// [`record_update`] starting from the entries `base` (a `metadata.managedFields` list, see
/// [`entries_to_update`]) in place of the old object's.
pub fn record_update_over(
    base: Option<&Value>,
    old: Option<&Value>,
    new: &mut Value,
    who: &FieldManager,
) {
    record_over(of_writers_group(parse_entries(base), who), old, new, who);
}

fn record_over(entries: Vec<Entry>, old: Option<&Value>, new: &mut Value, who: &FieldManager) {
    KindScope::of(new).run(|| record_update_guessed(entries, old, new, who));
}

/// Records a create whose strategy resets the top-level fields `reset` (kube-apiserver's
/// `GetResetFields`, such as a CertificateSigningRequest's `spec` and `status`): its writer owns
/// none of them, so a create that set nothing else leaves the object untracked.
pub fn record_created_with_reset(obj: &mut Value, who: &FieldManager, reset: &[&str]) {
    let mut written = obj.clone();
    if let Some(root) = written.as_object_mut() {
        root.retain(|key, _| !reset.contains(&key.as_str()));
    }
    record_update(None, &mut written, who);
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    match written.pointer("/metadata/managedFields") {
        Some(entries) => meta.insert("managedFields".into(), entries.clone()),
        None => meta.remove("managedFields"),
    };
}

fn record_update_guessed(
    mut entries: Vec<Entry>,
    old: Option<&Value>,
    new: &mut Value,
    who: &FieldManager,
) {
    let mut changed = Node::default();
    let schema = declared::current_root();
    let root = Place::root(schema.as_deref());
    collect_changed(old, new, root, &mut Vec::new(), &mut changed);
    if !changed.is_empty() {
        let mut own = None;
        for (index, entry) in entries.iter_mut().enumerate() {
            if entry.is_for(who, Operation::Update) {
                own = Some(index);
            } else {
                entry.fields.root.subtract(&changed);
            }
        }
        match own.and_then(|index| entries.get_mut(index)) {
            Some(entry) => {
                entry.fields.root.union_with(&changed);
                entry.time = Some(who.time.to_owned());
                entry.api_version = who.api_version.to_owned();
            }
            None => entries.push(Entry::new(
                who,
                Operation::Update,
                FieldSet { root: changed },
            )),
        }
    }
    write_entries(new, entries);
}

/// structured-merge-diff's check of an applied configuration of a builtin kind against the
/// kind's schema: its errors, joined as it joins them, when a value has the wrong type (see
/// [`typed_configuration`]). `None` for a well-typed configuration and for kinds without a Go
/// type here (custom resources).
pub fn typed_configuration_errors(applied: &Value) -> Option<String> {
    let schema = crate::protobuf::schema::Schema::get().ok()?;
    let desc = go_type_of(applied)?;
    typed_configuration::errors(schema, &desc, applied)
}

/// The same check of an applied custom resource against `root`, its CRD's structural schema
/// for the applied version.
pub fn typed_custom_configuration_errors(
    root: &crate::schema::structural::Node,
    applied: &Value,
) -> Option<String> {
    let schema = crate::protobuf::schema::Schema::get().ok()?;
    typed_configuration::custom_errors(schema, root, applied)
}

/// The Go type of a builtin object's kind, from its `apiVersion` and `kind`.
fn go_type_of(object: &Value) -> Option<MessageDescriptor> {
    let text = |k: &str| object.get(k).and_then(Value::as_str);
    let schema = crate::protobuf::schema::Schema::get().ok()?;
    schema.message_for(text("apiVersion")?, text("kind")?)
}

/// Whether the node at `path` is there in the zero value of the Go type `root` (through structs
/// that are no pointers: a struct that is no pointer, or a slice or map without `omitempty`):
/// then creating it owns only what is inside, as structured-merge-diff records a typed object.
/// Below a list item or map entry nothing is: the item is created with all it holds.
fn go_always_there(root: &MessageDescriptor, path: &[PathElement]) -> bool {
    let Ok(schema) = crate::protobuf::schema::Schema::get() else {
        return false;
    };
    let mut desc = root.clone();
    let mut elements = path.iter().peekable();
    while let Some(element) = elements.next() {
        let PathElement::Field(name) = element else {
            return false;
        };
        let Some(fp) = crate::builtin_decoding::field_of(schema, &desc, name) else {
            return false;
        };
        let last = elements.peek().is_none();
        if last {
            return crate::builtin_decoding::in_zero_value(fp);
        }
        // Inside a list item or a map entry, which is new when created, everything is owned
        // with it.
        match fp.field.kind() {
            Kind::Message(inner)
                if crate::builtin_decoding::in_zero_value(fp)
                    && !fp.field.is_list()
                    && !fp.field.is_map() =>
            {
                desc = inner
            }
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: &str = "2026-11-22T10:00:00Z";
    const T1: &str = "2026-11-22T11:00:00Z";
    const T2: &str = "2026-11-22T12:00:00Z";

    fn manager<'a>(name: &'a str, time: &'a str) -> FieldManager<'a> {
        FieldManager {
            manager: name,
            subresource: None,
            time,
            api_version: "apps/v1",
        }
    }

    fn entries_of(object: &Value) -> Vec<Value> {
        object["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn fields_of(object: &Value, name: &str, operation: &str) -> Value {
        entries_of(object)
            .into_iter()
            .find(|entry| entry["manager"] == name && entry["operation"] == operation)
            .map(|entry| entry["fieldsV1"].clone())
            .unwrap_or(Value::Null)
    }

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [
                        {"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}
                    ]}
                }
            }
        })
    }

    fn applied(live: Option<&Value>, config: &Value, who: &FieldManager) -> Value {
        apply(live, config, who, false).expect("apply without conflicts")
    }

    #[test]
    fn create_by_apply_records_the_configmap_fields_in_an_apply_entry() {
        let config = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "default", "labels": {"team": "a"}},
            "data": {"color": "blue", "size": "m"}
        });
        let who = FieldManager {
            api_version: "v1",
            ..manager("kubectl", T0)
        };
        let object = applied(None, &config, &who);
        assert_eq!(
            entries_of(&object),
            vec![json!({
                "manager": "kubectl",
                "operation": "Apply",
                "apiVersion": "v1",
                "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": {"f:color": {}, "f:size": {}},
                    "f:metadata": {"f:labels": {"f:team": {}}}
                }
            })]
        );
        assert_eq!(object["data"], json!({"color": "blue", "size": "m"}));
        assert_eq!(object["metadata"]["name"], "settings");
    }

    #[test]
    fn create_by_apply_keys_containers_by_name_and_ports_by_container_port() {
        let object = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        assert_eq!(
            fields_of(&object, "kubectl", "Apply"),
            json!({
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    // A label selector is atomic, as kube-apiserver owns it.
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {
                            "k:{\"name\":\"nginx\"}": {
                                ".": {},
                                "f:image": {},
                                "f:name": {},
                                // The key names the protocol's default, as kube-apiserver
                                // keys it (`+default="TCP"`).
                                "f:ports": {
                                    "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                        ".": {}, "f:containerPort": {}
                                    }
                                }
                            }
                        }}
                    }
                }
            })
        );
    }

    #[test]
    fn reapplying_the_same_configuration_changes_nothing() {
        let config = deployment(1, "nginx:1");
        let first = applied(None, &config, &manager("kubectl", T0));
        let second = applied(Some(&first), &config, &manager("kubectl", T1));
        assert_eq!(second, first);
    }

    #[test]
    fn applying_a_changed_value_updates_the_object_and_the_entry_time() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let second = applied(
            Some(&first),
            &deployment(2, "nginx:1"),
            &manager("kubectl", T1),
        );
        assert_eq!(second["spec"]["replicas"], 2);
        assert_eq!(entries_of(&second)[0]["time"], T1);
    }

    #[test]
    fn two_managers_applying_the_same_value_share_the_field() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let other = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 1}
        });
        let second = applied(Some(&first), &other, &manager("autoscaler", T1));
        assert_eq!(
            fields_of(&second, "autoscaler", "Apply"),
            json!({"f:spec": {"f:replicas": {}}})
        );
        assert_eq!(
            fields_of(&second, "kubectl", "Apply"),
            fields_of(&first, "kubectl", "Apply")
        );
    }

    #[test]
    fn applying_a_different_value_owned_by_another_manager_conflicts() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let error = apply(
            Some(&first),
            &deployment(3, "nginx:2"),
            &manager("other", T1),
            false,
        )
        .expect_err("conflict");
        let fields: Vec<(&str, &str)> = error
            .conflicts
            .iter()
            .map(|conflict| (conflict.manager.as_str(), conflict.field.as_str()))
            .collect();
        assert_eq!(
            fields,
            vec![
                ("kubectl", ".spec.replicas"),
                (
                    "kubectl",
                    ".spec.template.spec.containers[name=\"nginx\"].image"
                ),
            ]
        );
        assert_eq!(
            error.to_string(),
            "Apply failed with 2 conflicts: conflicts with \"kubectl\":\n- .spec.replicas\n\
             - .spec.template.spec.containers[name=\"nginx\"].image"
        );
    }

    #[test]
    fn a_single_conflict_with_an_updater_names_its_api_version() {
        let mut created = deployment(1, "nginx:1");
        record_update(
            None,
            &mut created,
            &manager("kubectl-client-side-apply", T0),
        );
        let error = apply(
            Some(&created),
            &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web"}, "spec": {"replicas": 2}}),
            &manager("kubectl", T1),
            false,
        )
        .expect_err("conflict");
        assert_eq!(
            error.to_string(),
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" \
             using apps/v1: .spec.replicas"
        );
    }

    #[test]
    fn forced_apply_takes_the_field_from_the_other_manager() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let config = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "spec": {"replicas": 5}
        });
        let second =
            apply(Some(&first), &config, &manager("autoscaler", T1), true).expect("forced apply");
        assert_eq!(second["spec"]["replicas"], 5);
        assert_eq!(
            fields_of(&second, "autoscaler", "Apply"),
            json!({"f:spec": {"f:replicas": {}}})
        );
        let kubectl = FieldSet::from_fields_v1(&fields_of(&second, "kubectl", "Apply"));
        assert!(!kubectl.paths().contains(&".spec.replicas".to_owned()));
        assert!(kubectl.paths().contains(&".spec.selector".to_owned()));
    }

    #[test]
    fn a_field_dropped_from_the_next_apply_is_removed() {
        let mut config = deployment(1, "nginx:1");
        let first = applied(None, &config, &manager("kubectl", T0));
        if let Some(spec) = config["spec"].as_object_mut() {
            spec.remove("replicas");
        }
        let second = applied(Some(&first), &config, &manager("kubectl", T1));
        assert_eq!(second["spec"].get("replicas"), None);
        assert!(
            !FieldSet::from_fields_v1(&fields_of(&second, "kubectl", "Apply"))
                .paths()
                .contains(&".spec.replicas".to_owned())
        );
    }

    #[test]
    fn a_dropped_field_another_manager_owns_stays() {
        let mut config = deployment(1, "nginx:1");
        let first = applied(None, &config, &manager("kubectl", T0));
        let other = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web"}, "spec": {"replicas": 1}});
        let shared = applied(Some(&first), &other, &manager("autoscaler", T1));
        if let Some(spec) = config["spec"].as_object_mut() {
            spec.remove("replicas");
        }
        let third = applied(Some(&shared), &config, &manager("kubectl", T2));
        assert_eq!(third["spec"]["replicas"], 1);
        assert_eq!(
            fields_of(&third, "autoscaler", "Apply"),
            json!({"f:spec": {"f:replicas": {}}})
        );
    }

    #[test]
    fn a_dropped_keyed_list_element_is_removed() {
        let config = |names: &[&str]| {
            let containers: Vec<Value> = names
                .iter()
                .map(|name| json!({"name": name, "image": format!("{name}:1")}))
                .collect();
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": containers}})
        };
        let first = applied(None, &config(&["a", "b"]), &manager("kubectl", T0));
        let second = applied(Some(&first), &config(&["b"]), &manager("kubectl", T1));
        assert_eq!(
            second["spec"]["containers"],
            json!([{"name": "b", "image": "b:1"}])
        );
        assert_eq!(
            fields_of(&second, "kubectl", "Apply"),
            json!({"f:spec": {"f:containers": {
                "k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}
            }}})
        );
    }

    #[test]
    fn dropping_the_last_keyed_list_element_removes_the_list() {
        let first = applied(
            None,
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"restartPolicy": "Never",
                             "containers": [{"name": "a", "image": "a:1"}]}}),
            &manager("kubectl", T0),
        );
        let second = applied(
            Some(&first),
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"restartPolicy": "Never"}}),
            &manager("kubectl", T1),
        );
        assert_eq!(second["spec"], json!({"restartPolicy": "Never"}));
    }

    #[test]
    fn dropping_the_last_label_removes_the_labels_map() {
        let first = applied(
            None,
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"k": "v"}}),
            &manager("kubectl", T0),
        );
        let second = applied(
            Some(&first),
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c"}, "data": {"k": "v"}}),
            &manager("kubectl", T1),
        );
        assert_eq!(second["metadata"].get("labels"), None);
        assert_eq!(second["metadata"]["name"], "c");
    }

    #[test]
    fn a_kept_list_element_keeps_fields_nobody_owns() {
        let first = applied(
            None,
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"containers": [{"name": "a", "image": "a:1"}]}}),
            &manager("kubectl", T0),
        );
        let mut defaulted = first.clone();
        defaulted["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
        let second = applied(
            Some(&defaulted),
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"containers": [{"name": "a", "image": "a:2"}]}}),
            &manager("kubectl", T1),
        );
        assert_eq!(
            second["spec"]["containers"],
            json!([{"name": "a", "image": "a:2", "imagePullPolicy": "IfNotPresent"}])
        );
    }

    #[test]
    fn record_update_gives_changed_fields_to_the_updater_and_takes_them_from_the_applier() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let mut edited = first.clone();
        edited["spec"]["replicas"] = json!(3);
        record_update(Some(&first), &mut edited, &manager("kubectl-edit", T1));
        assert_eq!(
            fields_of(&edited, "kubectl-edit", "Update"),
            json!({"f:spec": {"f:replicas": {}}})
        );
        let applier = FieldSet::from_fields_v1(&fields_of(&edited, "kubectl", "Apply"));
        assert!(!applier.paths().contains(&".spec.replicas".to_owned()));
        assert_eq!(entries_of(&edited)[1]["time"], T1);
        assert_eq!(entries_of(&edited)[1]["apiVersion"], "apps/v1");
    }

    #[test]
    fn apply_after_an_edit_of_its_field_conflicts_with_the_editor() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let mut edited = first.clone();
        edited["spec"]["replicas"] = json!(3);
        record_update(Some(&first), &mut edited, &manager("kubectl-edit", T1));
        let error = apply(
            Some(&edited),
            &deployment(1, "nginx:1"),
            &manager("kubectl", T2),
            false,
        )
        .expect_err("conflict");
        assert_eq!(
            error.conflicts,
            vec![Conflict {
                manager: "kubectl-edit".to_owned(),
                operation: Operation::Update,
                api_version: "apps/v1".to_owned(),
                subresource: None,
                field: ".spec.replicas".to_owned(),
            }]
        );
    }

    #[test]
    fn forced_apply_after_an_edit_drops_the_editor_entry_it_empties() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let mut edited = first.clone();
        edited["spec"]["replicas"] = json!(3);
        record_update(Some(&first), &mut edited, &manager("kubectl-edit", T1));
        let reapplied = apply(
            Some(&edited),
            &deployment(1, "nginx:1"),
            &manager("kubectl", T2),
            true,
        )
        .expect("forced apply");
        assert_eq!(reapplied["spec"]["replicas"], 1);
        assert_eq!(entries_of(&reapplied).len(), 1);
        assert_eq!(
            fields_of(&reapplied, "kubectl", "Apply"),
            fields_of(&first, "kubectl", "Apply")
        );
    }

    #[test]
    fn a_dropped_list_element_with_a_field_another_manager_owns_stays() {
        let pod = |containers: Value| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": containers}})
        };
        let first = applied(
            None,
            &pod(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])),
            &manager("one", T0),
        );
        let second = applied(
            Some(&first),
            &pod(json!([{"name": "b", "tty": true}])),
            &manager("two", T1),
        );
        let third = applied(
            Some(&second),
            &pod(json!([{"name": "a", "image": "a:1"}])),
            &manager("one", T2),
        );
        assert_eq!(
            third["spec"]["containers"],
            json!([{"name": "a", "image": "a:1"}, {"name": "b", "tty": true}])
        );
    }

    #[test]
    fn record_update_on_create_owns_new_maps_and_items_as_a_whole() {
        let mut object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "1"}, "finalizers": ["x/y"]},
            "data": {"k": "v"}
        });
        record_update(None, &mut object, &manager("kubectl-create", T0));
        assert_eq!(
            fields_of(&object, "kubectl-create", "Update"),
            json!({
                "f:data": {".": {}, "f:k": {}},
                "f:metadata": {
                    "f:finalizers": {".": {}, "v:\"x/y\"": {}},
                    "f:labels": {".": {}, "f:a": {}}
                }
            })
        );
    }

    #[test]
    fn record_update_replaces_managed_fields_sent_by_the_client() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let mut put = first.clone();
        put["metadata"]["managedFields"] = json!([{"manager": "forged", "operation": "Apply"}]);
        record_update(Some(&first), &mut put, &manager("client", T1));
        assert_eq!(put, first);
    }

    #[test]
    fn record_update_drops_fields_removed_from_the_object() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let mut patched = first.clone();
        if let Some(labels) = patched["metadata"]["labels"].as_object_mut() {
            labels.remove("app");
        }
        record_update(Some(&first), &mut patched, &manager("patcher", T1));
        let applier = FieldSet::from_fields_v1(&fields_of(&patched, "kubectl", "Apply"));
        assert!(!applier.paths().contains(&".metadata.labels.app".to_owned()));
        assert_eq!(fields_of(&patched, "patcher", "Update"), Value::Null);
    }

    #[test]
    fn labels_are_owned_per_key() {
        let config = |labels: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "labels": labels}})
        };
        let first = applied(None, &config(json!({"a": "1"})), &manager("one", T0));
        let second = applied(
            Some(&first),
            &config(json!({"b": "2"})),
            &manager("two", T1),
        );
        assert_eq!(second["metadata"]["labels"], json!({"a": "1", "b": "2"}));
        assert_eq!(
            fields_of(&second, "one", "Apply"),
            json!({"f:metadata": {"f:labels": {"f:a": {}}}})
        );
        assert_eq!(
            fields_of(&second, "two", "Apply"),
            json!({"f:metadata": {"f:labels": {"f:b": {}}}})
        );
        let third = applied(Some(&second), &config(json!({})), &manager("two", T2));
        assert_eq!(third["metadata"]["labels"], json!({"a": "1"}));
    }

    #[test]
    fn status_subresource_applies_are_recorded_in_their_own_entry() {
        let first = applied(None, &deployment(1, "nginx:1"), &manager("kubectl", T0));
        let status_writer = FieldManager {
            subresource: Some("status"),
            ..manager("kubectl", T1)
        };
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 9},
        "status": {"replicas": 1, "conditions": [
            {"type": "Available", "status": "True"}
        ]}});
        let second = applied(Some(&first), &config, &status_writer);
        assert_eq!(second["spec"]["replicas"], 1);
        assert_eq!(second["status"]["replicas"], 1);
        let entries = entries_of(&second);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["subresource"], "status");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:status": {
                "f:conditions": {"k:{\"type\":\"Available\"}": {
                    ".": {}, "f:status": {}, "f:type": {}
                }},
                "f:replicas": {}
            }})
        );
        assert_eq!(
            entries[0]["fieldsV1"],
            fields_of(&first, "kubectl", "Apply")
        );
    }

    #[test]
    fn managed_fields_in_the_applied_body_are_ignored() {
        let mut config = deployment(1, "nginx:1");
        config["metadata"]["managedFields"] =
            json!([{"manager": "forged", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]);
        config["metadata"]["resourceVersion"] = json!("42");
        let object = applied(None, &config, &manager("kubectl", T0));
        assert_eq!(entries_of(&object).len(), 1);
        assert_eq!(entries_of(&object)[0]["manager"], "kubectl");
        assert_eq!(object["metadata"].get("resourceVersion"), None);
    }

    #[test]
    fn finalizers_are_owned_per_value() {
        let config = |finalizers: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "finalizers": finalizers}})
        };
        let first = applied(None, &config(json!(["a/x"])), &manager("one", T0));
        let second = applied(Some(&first), &config(json!(["b/y"])), &manager("two", T1));
        assert_eq!(second["metadata"]["finalizers"], json!(["a/x", "b/y"]));
        assert_eq!(
            fields_of(&second, "two", "Apply"),
            json!({"f:metadata": {"f:finalizers": {"v:\"b/y\"": {}}}})
        );
    }

    #[test]
    fn a_namespaces_spec_finalizers_are_replaced_and_owned_as_a_whole() {
        let config = |finalizers: Value| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"},
                   "spec": {"finalizers": finalizers}})
        };
        let first = applied(None, &config(json!(["a/x"])), &manager("one", T0));
        let second = applied(Some(&first), &config(json!(["b/y"])), &manager("one", T1));
        assert_eq!(second["spec"]["finalizers"], json!(["b/y"]));
        assert_eq!(
            fields_of(&second, "one", "Apply"),
            json!({"f:spec": {"f:finalizers": {}}})
        );
    }

    #[test]
    fn atomic_lists_are_replaced_and_owned_as_a_whole() {
        let config = |args: Value| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "a", "args": args}]}})
        };
        let first = applied(None, &config(json!(["x", "y"])), &manager("one", T0));
        let second = applied(Some(&first), &config(json!(["z"])), &manager("one", T1));
        assert_eq!(second["spec"]["containers"][0]["args"], json!(["z"]));
        assert!(
            FieldSet::from_fields_v1(&fields_of(&second, "one", "Apply"))
                .paths()
                .contains(&".spec.containers[name=\"a\"].args".to_owned())
        );
    }

    #[test]
    fn fields_v1_round_trips_through_field_set() {
        let fields_v1 = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:ports": {"k:{\"protocol\":\"TCP\",\"containerPort\":80}": {
                ".": {}, "f:containerPort": {}
            }}, "f:args": {"i:0": {}}}
        });
        let set = FieldSet::from_fields_v1(&fields_v1);
        let expected = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                ".": {}, "f:containerPort": {}
            }}, "f:args": {"i:0": {}}}
        });
        assert_eq!(set.to_fields_v1(), expected);
        assert_eq!(
            set.paths(),
            vec![
                ".metadata.labels",
                ".metadata.labels.app",
                ".spec.args[0]",
                ".spec.ports[containerPort=80,protocol=\"TCP\"]",
                ".spec.ports[containerPort=80,protocol=\"TCP\"].containerPort",
            ]
        );
    }

    #[test]
    fn an_empty_keyed_list_in_an_apply_owns_nothing_and_an_empty_atomic_one_is_owned() {
        let mut config = deployment(1, "nginx");
        config["spec"]["template"]["spec"]["volumes"] = json!([]);
        config["spec"]["template"]["spec"]["tolerations"] = json!([]);
        let object = applied(None, &config, &manager("alice", T0));
        let pod_spec = &fields_of(&object, "alice", "Apply")["f:spec"]["f:template"]["f:spec"];
        assert_eq!(pod_spec.get("f:volumes"), None);
        assert_eq!(pod_spec.get("f:tolerations"), Some(&json!({})));
    }

    #[test]
    fn keyed_list_merge_keeps_unmentioned_live_items_in_place() {
        let live = json!([{"name": "a"}, {"name": "b", "x": 1}, {"name": "c"}]);
        let config = json!([{"name": "b", "y": 2}, {"name": "d"}]);
        assert_eq!(
            merge(
                &live,
                &config,
                Place::NONE.child("spec").child("containers")
            ),
            json!([{"name": "a"}, {"name": "b", "x": 1, "y": 2}, {"name": "c"}, {"name": "d"}])
        );
    }

    #[test]
    fn sent_entries_that_decode_replace_the_live_ones_in_storage_order() {
        let live = json!([{"manager": "alice", "operation": "Apply", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
        let sent = json!([
            {"manager": "zed", "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
            {"manager": "bob", "operation": "Apply", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}}
        ]);
        let base = entries_to_update(Some(&live), Some(&sent)).unwrap();
        let managers: Vec<&str> = base
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e.get("manager").and_then(Value::as_str))
            .collect();
        assert_eq!(managers, ["bob", "zed"]);
    }

    #[test]
    fn an_empty_list_or_one_empty_entry_resets_the_entries() {
        let live = json!([{"manager": "alice", "operation": "Apply", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
        assert_eq!(entries_to_update(Some(&live), Some(&json!([]))), None);
        assert_eq!(entries_to_update(Some(&live), Some(&json!([{}]))), None);
    }

    #[test]
    fn sent_entries_that_do_not_decode_keep_the_live_ones() {
        let live = json!([{"manager": "alice", "operation": "Apply", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
        for sent in [
            json!([{"manager": "m", "operation": "Delete", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
            json!([{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"x:data": {}}}]),
        ] {
            assert_eq!(
                entries_to_update(Some(&live), Some(&sent)),
                Some(live.clone()),
                "{sent}"
            );
        }
        assert_eq!(entries_to_update(Some(&live), None), Some(live.clone()));
    }
}
