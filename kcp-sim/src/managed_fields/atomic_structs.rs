//! The Go structs that structured-merge-diff owns as a whole (`+structType=atomic` in the Go
//! types of Kubernetes 1.34): a writer that sets one owns the struct, not its fields, so its
//! managed fields read `f:selector: {}` and another writer's change to one of its fields is a
//! conflict over the whole struct.

use prost_reflect::{Kind, MessageDescriptor};

use super::PathElement;

/// The protobuf messages of the `+structType=atomic` Go structs of `k8s.io/api` and
/// `k8s.io/apimachinery` at v0.34.2, in the packages kcp-sim has the protos of (`proto/`; not
/// admissionregistration's `MatchResources`, `ParamRef` and friends, nor discovery's
/// `EndpointPort`, whose kinds kcp-sim does not decode as Go types).
const ATOMIC_STRUCTS: &[&str] = &[
    "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "k8s.io.api.autoscaling.v1.CrossVersionObjectReference",
    "k8s.io.api.core.v1.ConfigMapKeySelector",
    "k8s.io.api.core.v1.EndpointAddress",
    "k8s.io.api.core.v1.EndpointPort",
    "k8s.io.api.core.v1.FileKeySelector",
    "k8s.io.api.core.v1.LocalObjectReference",
    "k8s.io.api.core.v1.NodeSelector",
    "k8s.io.api.core.v1.NodeSelectorTerm",
    "k8s.io.api.core.v1.ObjectFieldSelector",
    "k8s.io.api.core.v1.ObjectReference",
    "k8s.io.api.core.v1.ResourceFieldSelector",
    "k8s.io.api.core.v1.ScopeSelector",
    "k8s.io.api.core.v1.SecretKeySelector",
    "k8s.io.api.core.v1.SecretReference",
    "k8s.io.api.core.v1.TopologySelectorTerm",
    "k8s.io.api.core.v1.TypedLocalObjectReference",
    "k8s.io.api.networking.v1.ServiceBackendPort",
    "k8s.io.api.rbac.v1.RoleRef",
    "k8s.io.api.rbac.v1.Subject",
];

/// Whether the node at `path` of an object of Go type `root` is an atomic struct.
pub(super) fn is_atomic_struct(root: &MessageDescriptor, path: &[PathElement]) -> bool {
    message_at(root, path).is_some_and(|m| ATOMIC_STRUCTS.contains(&m.full_name()))
}

/// The message of the struct at `path` (through fields, list items and map entries), if the
/// node there is a struct.
fn message_at(root: &MessageDescriptor, path: &[PathElement]) -> Option<MessageDescriptor> {
    let schema = crate::protobuf::schema::Schema::get().ok()?;
    let mut desc = root.clone();
    let mut elements = path.iter();
    while let Some(element) = elements.next() {
        let PathElement::Field(name) = element else {
            return None;
        };
        let fp = crate::builtin_decoding::field_of(schema, &desc, name)?;
        let Kind::Message(inner) = fp.field.kind() else {
            return None;
        };
        desc = if fp.field.is_map() {
            // The entry, named by its key.
            elements.next()?;
            match inner.map_entry_value_field().kind() {
                Kind::Message(value) => value,
                _ => return None,
            }
        } else if fp.field.is_list() {
            // The item, by key, value or position.
            match elements.next()? {
                PathElement::Field(_) => return None,
                _ => inner,
            }
        } else {
            inner
        };
    }
    Some(desc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(name: &str) -> MessageDescriptor {
        let schema = crate::protobuf::schema::Schema::get().unwrap();
        let (api_version, kind) = name.rsplit_once(' ').unwrap();
        schema.message_for(api_version, kind).unwrap()
    }

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn every_atomic_struct_is_a_known_message() {
        let schema = crate::protobuf::schema::Schema::get().unwrap();
        for name in ATOMIC_STRUCTS {
            assert!(schema.message(name).is_some(), "{name}");
        }
    }

    #[test]
    fn a_budgets_label_selector_is_atomic() {
        let budget = message("policy/v1 PodDisruptionBudget");
        assert!(is_atomic_struct(
            &budget,
            &[field("spec"), field("selector")]
        ));
        assert!(!is_atomic_struct(&budget, &[field("spec")]));
    }

    #[test]
    fn a_role_bindings_subjects_and_role_are_atomic() {
        let binding = message("rbac.authorization.k8s.io/v1 RoleBinding");
        assert!(is_atomic_struct(&binding, &[field("roleRef")]));
        assert!(is_atomic_struct(
            &binding,
            &[field("subjects"), PathElement::Index(0)]
        ));
    }

    #[test]
    fn a_pods_containers_are_not() {
        let pod = message("v1 Pod");
        let container = [
            field("spec"),
            field("containers"),
            PathElement::Key(r#"{"name":"web"}"#.into()),
        ];
        assert!(!is_atomic_struct(&pod, &container));
    }
}
