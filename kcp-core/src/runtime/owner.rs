//! Owner references, for garbage collection of children with their owner.
//!
//! [`controller_reference`] makes the reference a controller sets on what it creates
//! (`controller: true`, `blockOwnerDeletion: true`); [`set_controller`] puts it on a child and
//! refuses to take over a child another owner controls, as controller-runtime's
//! `SetControllerReference` does.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use kube::api::DynamicObject;

use crate::client::ObjectRef;
use crate::error::{Error, Result};

/// The controller reference to `owner`: it must have been read from the server (uid set).
pub fn controller_reference(owner: &DynamicObject) -> Result<OwnerReference> {
    let target = ObjectRef::from_object(owner)?;
    let api_version = owner
        .types
        .as_ref()
        .map(|t| t.api_version.clone())
        .unwrap_or_default();
    reference(api_version, target, &owner.metadata)
}

/// [`controller_reference`] for a typed owner, without converting it first.
pub fn controller_reference_to<K>(owner: &K) -> Result<OwnerReference>
where
    K: Resource<DynamicType = ()>,
{
    let meta = owner.meta();
    let target = ObjectRef {
        gvk: crate::typed::gvk_for::<K>(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone().unwrap_or_default(),
    };
    reference(K::api_version(&()).into_owned(), target, meta)
}

fn reference(api_version: String, target: ObjectRef, meta: &ObjectMeta) -> Result<OwnerReference> {
    let uid = meta
        .uid
        .clone()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Error::InvalidObject {
            object: target.to_string(),
            field: "metadata.uid".into(),
            reason: "an owner must be read from the server before it can own anything".into(),
        })?;
    Ok(OwnerReference {
        api_version,
        kind: target.gvk.kind,
        name: target.name,
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// Makes `owner` the controller of `child`. An existing controller reference to the same owner
/// (by uid) is replaced; one to another owner is an error naming both.
pub fn set_controller(child: &mut ObjectMeta, owner: OwnerReference) -> Result<()> {
    let references = child.owner_references.get_or_insert_with(Vec::new);
    if let Some(other) = references
        .iter()
        .find(|r| r.controller == Some(true) && r.uid != owner.uid)
    {
        return Err(Error::InvalidObject {
            object: child.name.clone().unwrap_or_default(),
            field: "metadata.ownerReferences".into(),
            reason: format!(
                "already controlled by {} {:?}; refusing to make {} {:?} its controller",
                other.kind, other.name, owner.kind, owner.name
            ),
        });
    }
    references.retain(|r| r.uid != owner.uid);
    references.push(owner);
    Ok(())
}

/// Whether `child` is controlled by the object with `owner_uid`.
pub fn is_controlled_by(child: &ObjectMeta, owner_uid: &str) -> bool {
    child.owner_references.as_ref().is_some_and(|refs| {
        refs.iter()
            .any(|r| r.controller == Some(true) && r.uid == owner_uid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(uid: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "d", "uid": uid},
        }))
        .unwrap()
    }

    #[test]
    fn the_controller_reference_blocks_owner_deletion() {
        let r = controller_reference(&owner("u1")).unwrap();
        assert_eq!(
            (
                r.api_version.as_str(),
                r.kind.as_str(),
                r.name.as_str(),
                r.uid.as_str()
            ),
            ("example.com/v1", "Widget", "w", "u1")
        );
        assert_eq!(
            (r.controller, r.block_owner_deletion),
            (Some(true), Some(true))
        );
    }

    #[test]
    fn a_typed_owner_gives_the_same_reference_as_its_dynamic_form() {
        let mut cm = k8s_openapi::api::core::v1::ConfigMap::default();
        cm.metadata.name = Some("settings".into());
        cm.metadata.namespace = Some("d".into());
        cm.metadata.uid = Some("u2".into());
        let typed = controller_reference_to(&cm).unwrap();
        let dynamic = controller_reference(&crate::typed::to_dynamic(&cm).unwrap()).unwrap();
        assert_eq!(typed, dynamic);
        assert_eq!(
            (typed.api_version.as_str(), typed.kind.as_str()),
            ("v1", "ConfigMap")
        );
        cm.metadata.uid = None;
        let err = controller_reference_to(&cm).unwrap_err().to_string();
        assert!(err.contains("metadata.uid"), "{err}");
    }

    #[test]
    fn an_owner_without_uid_is_refused_naming_the_field() {
        let err = controller_reference(&owner("")).unwrap_err().to_string();
        assert!(err.contains("metadata.uid"), "{err}");
    }

    #[test]
    fn setting_the_same_controller_twice_keeps_one_reference() {
        let mut child = ObjectMeta::default();
        let r = controller_reference(&owner("u1")).unwrap();
        set_controller(&mut child, r.clone()).unwrap();
        set_controller(&mut child, r).unwrap();
        assert_eq!(child.owner_references.as_ref().map(Vec::len), Some(1));
        assert!(is_controlled_by(&child, "u1"));
    }

    #[test]
    fn a_child_controlled_by_another_owner_is_not_taken_over() {
        let mut child = ObjectMeta::default();
        set_controller(&mut child, controller_reference(&owner("u1")).unwrap()).unwrap();
        let err = set_controller(&mut child, controller_reference(&owner("u2")).unwrap());
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("already controlled by Widget")
        );
        assert!(!is_controlled_by(&child, "u2"));
    }
}
