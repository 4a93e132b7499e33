//! The Kubernetes protobuf schema kcp-sim knows: the message descriptors compiled at build time
//! from the vendored `generated.proto` files (`proto/`, `build.rs`), the kind each message
//! encodes, and what the Go types add that the `.proto` files do not say (`proto/fields.txt`):
//! JSON names that differ from protobuf names, pointer and non-`omitempty` fields whose zero
//! value JSON keeps, slices and maps without `omitempty`, embedded structs JSON inlines, each
//! field's Go type as decoding errors name it, and how structured-merge-diff owns each slice and
//! map (its list type and map keys, atomic maps) and the `+default` of each field.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, FieldDescriptor, MessageDescriptor};

use crate::status::ApiError;

/// The serialized `FileDescriptorSet` of the vendored Kubernetes `.proto` files.
const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.fds"));

/// What `proto/vendor.sh` derived from the Go types.
const FIELDS: &str = include_str!("../../proto/fields.txt");

/// The protobuf package of `meta.k8s.io/v1` (Status, DeleteOptions, WatchEvent, discovery).
pub const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// The protobuf package of each API group and version kcp-sim can encode.
const PACKAGES: &[(&str, &str)] = &[
    ("v1", "k8s.io.api.core.v1"),
    ("apps/v1", "k8s.io.api.apps.v1"),
    ("batch/v1", "k8s.io.api.batch.v1"),
    ("policy/v1", "k8s.io.api.policy.v1"),
    ("authorization.k8s.io/v1", "k8s.io.api.authorization.v1"),
    ("authentication.k8s.io/v1", "k8s.io.api.authentication.v1"),
    ("certificates.k8s.io/v1", "k8s.io.api.certificates.v1"),
    ("rbac.authorization.k8s.io/v1", "k8s.io.api.rbac.v1"),
    ("coordination.k8s.io/v1", "k8s.io.api.coordination.v1"),
    ("events.k8s.io/v1", "k8s.io.api.events.v1"),
    ("networking.k8s.io/v1", "k8s.io.api.networking.v1"),
    ("autoscaling/v1", "k8s.io.api.autoscaling.v1"),
    ("autoscaling/v2", "k8s.io.api.autoscaling.v2"),
    ("scheduling.k8s.io/v1", "k8s.io.api.scheduling.v1"),
    ("storage.k8s.io/v1", "k8s.io.api.storage.v1"),
    (
        "apiextensions.k8s.io/v1",
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1",
    ),
    ("meta.k8s.io/v1", META),
];

/// How one field of a message maps to JSON.
#[derive(Debug, Clone)]
pub struct FieldPlan {
    /// The protobuf field.
    pub field: FieldDescriptor,
    /// Its key in the JSON object.
    pub json: String,
    /// Whether JSON keeps the field's zero value (a Go pointer, or no `omitempty`).
    pub keep_zero: bool,
    /// Whether an empty slice or map stays (a slice or map without `omitempty`).
    pub keep_empty: bool,
    /// Whether JSON lifts the fields of this embedded message into the parent object.
    pub inline: bool,
    /// Whether the Go field is a pointer (`*T`).
    pub pointer: bool,
    /// Whether the Go field's JSON tag has `omitempty`.
    pub omitempty: bool,
    /// Whether the Go field's JSON tag has `omitzero` (a zero struct is left out).
    pub omitzero: bool,
    /// The Go type as Go's decoder names it (`int32`, `[]v1.Container`, `v1.Protocol`); empty
    /// for a field the Go types do not list.
    pub go_type: String,
    /// How structured-merge-diff owns a slice field's items; `None` for a field that is no
    /// slice (or that the Go types do not list).
    pub list_type: Option<GoListType>,
    /// Whether a map field is `+mapType=atomic`: owned and replaced as a whole.
    pub atomic_map: bool,
    /// The field's `+default`, as JSON (`"TCP"`); structured-merge-diff keys a map-list item
    /// that leaves out a key field by it.
    pub default: Option<serde_json::Value>,
    /// The Go field's `patchStrategy` (`merge`, `merge,retainKeys`, `retainKeys`, `replace`);
    /// empty when it has none.
    pub patch_strategy: String,
    /// The Go field's `patchMergeKey`: what strategic merge patch matches a list's items by.
    pub patch_merge_key: Option<String>,
}

/// The list type of a Go slice field as kube-openapi's schemaconv derives it: `+listType` (and
/// `+listMapKey`), else a `merge` patch strategy (keyed by its `patchMergeKey`, a set without
/// one), else atomic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoListType {
    /// Owned and replaced as a whole.
    Atomic,
    /// Items are their own keys.
    Set,
    /// Items keyed by these fields.
    Map(Vec<String>),
}

impl GoListType {
    /// The list type of a `fields.txt` flag's value (`atomic`, `set`, `map:port+protocol`).
    fn parse(text: &str) -> Option<GoListType> {
        match text {
            "atomic" => Some(GoListType::Atomic),
            "set" => Some(GoListType::Set),
            _ => {
                let keys = text.strip_prefix("map:")?;
                Some(GoListType::Map(
                    keys.split('+').map(str::to_owned).collect(),
                ))
            }
        }
    }
}

/// The JSON mapping of one message.
#[derive(Debug, Default)]
pub struct MessagePlan {
    /// Every field, in field-number order.
    pub fields: Vec<FieldPlan>,
    /// Index into `fields` by JSON name.
    by_json: HashMap<String, usize>,
    /// Index into `fields` by field number.
    by_number: HashMap<u32, usize>,
}

impl MessagePlan {
    /// The field with this JSON name.
    pub fn field(&self, json: &str) -> Option<&FieldPlan> {
        self.by_json.get(json).map(|&i| &self.fields[i])
    }

    /// The field with this number.
    pub fn field_by_number(&self, number: u32) -> Option<&FieldPlan> {
        self.by_number.get(&number).map(|&i| &self.fields[i])
    }

    /// The inline fields, whose messages take the JSON keys the message itself lacks.
    pub fn inline_fields(&self) -> impl Iterator<Item = &FieldPlan> {
        self.fields.iter().filter(|f| f.inline)
    }
}

/// The descriptor pool with the JSON mapping of every message in it.
#[derive(Debug)]
pub struct Schema {
    pool: DescriptorPool,
    plans: HashMap<String, MessagePlan>,
}

/// Flags of one `fields.txt` line.
#[derive(Debug, Default, Clone)]
struct Derived {
    json: Option<String>,
    keep_zero: bool,
    keep_empty: bool,
    inline: bool,
    pointer: bool,
    omitempty: bool,
    omitzero: bool,
    go_type: String,
    list_type: Option<GoListType>,
    atomic_map: bool,
    default: Option<serde_json::Value>,
    patch_strategy: String,
    patch_merge_key: Option<String>,
}

fn parse_fields(text: &str) -> HashMap<&str, Derived> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(path), Some(json), Some(flags)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let flag = |name: &str| flags.split(',').any(|f| f == name);
        let valued = |name: &str| {
            flags
                .split(',')
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
        };
        out.insert(
            path,
            Derived {
                json: (json != "-").then(|| json.to_string()),
                keep_zero: flag("keep-zero"),
                keep_empty: flag("keep-empty"),
                inline: flag("inline"),
                pointer: flag("pointer"),
                omitempty: flag("omitempty"),
                omitzero: flag("omitzero"),
                go_type: parts.next().unwrap_or_default().to_string(),
                list_type: valued("list").and_then(GoListType::parse),
                atomic_map: valued("map") == Some("atomic"),
                default: valued("default").and_then(|v| serde_json::from_str(v).ok()),
                patch_strategy: valued("patch").unwrap_or_default().replace('+', ","),
                patch_merge_key: valued("merge-key").map(str::to_owned),
            },
        );
    }
    out
}

impl Schema {
    /// The schema, built once per process from the descriptors compiled into the crate.
    pub fn get() -> Result<&'static Schema, ApiError> {
        static SCHEMA: OnceLock<Result<Schema, String>> = OnceLock::new();
        SCHEMA
            .get_or_init(Schema::load)
            .as_ref()
            .map_err(|e| ApiError::internal(format!("loading the protobuf descriptors: {e}")))
    }

    fn load() -> Result<Schema, String> {
        let pool = DescriptorPool::decode(DESCRIPTORS).map_err(|e| e.to_string())?;
        let derived = parse_fields(FIELDS);
        let mut plans = HashMap::new();
        for message in pool.all_messages() {
            let mut plan = MessagePlan::default();
            for field in message.fields() {
                let d = derived.get(field.full_name()).cloned().unwrap_or_default();
                let json = d.json.unwrap_or_else(|| field.name().to_string());
                plan.by_json.insert(json.clone(), plan.fields.len());
                plan.by_number.insert(field.number(), plan.fields.len());
                plan.fields.push(FieldPlan {
                    field,
                    json,
                    keep_zero: d.keep_zero,
                    keep_empty: d.keep_empty,
                    inline: d.inline,
                    pointer: d.pointer,
                    omitempty: d.omitempty,
                    omitzero: d.omitzero,
                    go_type: d.go_type,
                    list_type: d.list_type,
                    atomic_map: d.atomic_map,
                    default: d.default,
                    patch_strategy: d.patch_strategy,
                    patch_merge_key: d.patch_merge_key,
                });
            }
            plans.insert(message.full_name().to_string(), plan);
        }
        Ok(Schema { pool, plans })
    }

    /// The JSON mapping of a message of this schema.
    pub fn plan(&self, message: &MessageDescriptor) -> Option<&MessagePlan> {
        self.plans.get(message.full_name())
    }

    /// The field a JSON key names in a message, or in a struct it embeds (`inline`).
    pub fn json_field<'s>(&'s self, plan: &'s MessagePlan, key: &str) -> Option<&'s FieldPlan> {
        if let Some(field) = plan.field(key).filter(|f| !f.inline) {
            return Some(field);
        }
        plan.inline_fields().find_map(|inline| {
            let prost_reflect::Kind::Message(inner) = inline.field.kind() else {
                return None;
            };
            self.json_field(self.plan(&inner)?, key)
        })
    }

    /// A message by its full protobuf name.
    pub fn message(&self, full_name: &str) -> Option<MessageDescriptor> {
        self.pool.get_message_by_name(full_name)
    }

    /// The message that encodes `kind` of `apiVersion`; `meta.k8s.io/v1` kinds (Status,
    /// DeleteOptions, discovery documents) are found under any apiVersion, as the real server
    /// accepts them.
    pub fn message_for(&self, api_version: &str, kind: &str) -> Option<MessageDescriptor> {
        let in_package = PACKAGES
            .iter()
            .find(|(v, _)| *v == api_version)
            .and_then(|(_, package)| self.message(&format!("{package}.{kind}")));
        in_package.or_else(|| self.message(&format!("{META}.{kind}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_kind_has_a_message() {
        let schema = Schema::get().unwrap();
        for (api_version, kind) in [
            ("v1", "Namespace"),
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "ServiceAccount"),
            ("v1", "Service"),
            ("v1", "Event"),
            ("v1", "Node"),
            ("v1", "Pod"),
            ("apps/v1", "ReplicaSet"),
            ("batch/v1", "Job"),
            ("batch/v1", "CronJob"),
            ("policy/v1", "PodDisruptionBudget"),
            ("v1", "ResourceQuota"),
            ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
            ("authentication.k8s.io/v1", "SelfSubjectReview"),
            ("events.k8s.io/v1", "Event"),
            ("coordination.k8s.io/v1", "Lease"),
            ("apps/v1", "Deployment"),
            ("apps/v1", "StatefulSet"),
            ("apps/v1", "DaemonSet"),
            ("apps/v1", "ControllerRevision"),
            ("networking.k8s.io/v1", "Ingress"),
            ("networking.k8s.io/v1", "IngressClass"),
            ("networking.k8s.io/v1", "NetworkPolicy"),
            ("autoscaling/v2", "HorizontalPodAutoscaler"),
            ("scheduling.k8s.io/v1", "PriorityClass"),
            ("v1", "PersistentVolumeClaim"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("v1", "Status"),
        ] {
            assert!(
                schema.message_for(api_version, kind).is_some(),
                "{api_version} {kind}"
            );
        }
    }

    #[test]
    fn custom_kinds_have_none() {
        let schema = Schema::get().unwrap();
        assert!(schema.message_for("example.io/v1", "Widget").is_none());
        assert!(
            schema
                .message_for("tenancy.kcp.io/v1alpha1", "Workspace")
                .is_none()
        );
    }

    #[test]
    fn json_names_and_pointer_fields_come_from_the_go_types() {
        let schema = Schema::get().unwrap();
        let props = schema
            .message("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
            .unwrap();
        let plan = schema.plan(&props).unwrap();
        assert_eq!(plan.field("$ref").unwrap().field.name(), "ref");
        let spec = schema.message("k8s.io.api.apps.v1.DeploymentSpec").unwrap();
        let plan = schema.plan(&spec).unwrap();
        assert!(plan.field("replicas").unwrap().keep_zero);
        assert!(!plan.field("minReadySeconds").unwrap().keep_zero);
        let volume = schema.message("k8s.io.api.core.v1.Volume").unwrap();
        assert!(schema.plan(&volume).unwrap().inline_fields().count() == 1);
    }

    #[test]
    fn list_and_map_types_and_key_defaults_come_from_the_go_markers() {
        let schema = Schema::get().unwrap();
        let field = |message: &str, json: &str| {
            let message = schema.message(message).unwrap();
            schema.plan(&message).unwrap().field(json).unwrap().clone()
        };
        let keys = |names: &[&str]| GoListType::Map(names.iter().map(|n| n.to_string()).collect());
        // `+listType=map` with two `+listMapKey`s, and the key's `+default="TCP"`.
        assert_eq!(
            field("k8s.io.api.core.v1.Container", "ports").list_type,
            Some(keys(&["containerPort", "protocol"]))
        );
        assert_eq!(
            field("k8s.io.api.core.v1.ContainerPort", "protocol").default,
            Some(serde_json::json!("TCP"))
        );
        // No list type: atomic, though each subject has a name.
        assert_eq!(
            field("k8s.io.api.rbac.v1.RoleBinding", "subjects").list_type,
            Some(GoListType::Atomic)
        );
        assert_eq!(
            field(&format!("{META}.ObjectMeta"), "finalizers").list_type,
            Some(GoListType::Set)
        );
        assert!(field("k8s.io.api.core.v1.ServiceSpec", "selector").atomic_map);
        assert!(!field("k8s.io.api.core.v1.PodSpec", "containers").atomic_map);
        assert_eq!(
            field("k8s.io.api.core.v1.PodSpec", "nodeName").list_type,
            None
        );
    }

    #[test]
    fn slices_without_omitempty_and_go_type_names_come_from_the_go_types() {
        let schema = Schema::get().unwrap();
        let rule = schema.message("k8s.io.api.rbac.v1.PolicyRule").unwrap();
        let plan = schema.plan(&rule).unwrap();
        assert!(plan.field("verbs").unwrap().keep_empty);
        assert!(!plan.field("resources").unwrap().keep_empty);
        assert_eq!(plan.field("verbs").unwrap().go_type, "[]string");
        let port = schema.message("k8s.io.api.core.v1.ContainerPort").unwrap();
        let plan = schema.plan(&port).unwrap();
        assert_eq!(plan.field("protocol").unwrap().go_type, "v1.Protocol");
        assert_eq!(plan.field("containerPort").unwrap().go_type, "int32");
        let spec = schema.message("k8s.io.api.core.v1.PodSpec").unwrap();
        let plan = schema.plan(&spec).unwrap();
        assert_eq!(plan.field("containers").unwrap().go_type, "[]v1.Container");
        let meta = schema.message(&format!("{META}.ObjectMeta")).unwrap();
        let plan = schema.plan(&meta).unwrap();
        assert_eq!(plan.field("creationTimestamp").unwrap().go_type, "v1.Time");
    }
}
