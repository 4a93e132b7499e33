//! `ObjectClient`: the one interface reconcile code talks to.
//!
//! The trait works on [`DynamicObject`] plus a [`GroupVersionKind`], so the same reconcile code
//! runs against a real API server ([`crate::KubeObjectClient`]), against kcp-sim in-process, or
//! against any test double. It is object-safe (`&dyn ObjectClient`, `Arc<dyn ObjectClient>`);
//! typed access for any `kube::Resource` comes from [`crate::ObjectClientExt`].
//!
//! Implementors provide seven required methods; the conveniences (`apply`, `patch_status`,
//! `update_status`, `apply_status`) are provided on top of them.

use std::fmt;

use async_trait::async_trait;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

use crate::error::{Error, Result};

/// Identifies one object: its kind, namespace (for namespaced kinds) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// Group, version and kind.
    pub gvk: GroupVersionKind,
    /// Namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectRef {
    /// A reference to a cluster-scoped object.
    pub fn cluster_scoped(gvk: GroupVersionKind, name: impl Into<String>) -> Self {
        ObjectRef {
            gvk,
            namespace: None,
            name: name.into(),
        }
    }

    /// A reference to a namespaced object.
    pub fn namespaced(
        gvk: GroupVersionKind,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        ObjectRef {
            gvk,
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// The reference of an object, taken from its `apiVersion`, `kind` and metadata.
    ///
    /// Fails with [`Error::InvalidObject`] when the type or the name is missing.
    pub fn from_object(obj: &DynamicObject) -> Result<Self> {
        let gvk = gvk_of(obj)?;
        let name = obj
            .metadata
            .name
            .clone()
            .ok_or_else(|| Error::InvalidObject {
                object: format!("{} (unnamed)", crate::error::display_gvk(&gvk)),
                field: "metadata.name".into(),
                reason: "is required".into(),
            })?;
        Ok(ObjectRef {
            gvk,
            namespace: obj.metadata.namespace.clone(),
            name,
        })
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::error::display_gvk(&self.gvk))?;
        match &self.namespace {
            Some(ns) => write!(f, " {ns}/{}", self.name),
            None => write!(f, " {}", self.name),
        }
    }
}

/// The group/version/kind of an object from its `apiVersion` and `kind`.
///
/// Fails with [`Error::InvalidObject`] when either is missing or `apiVersion` is malformed.
pub fn gvk_of(obj: &DynamicObject) -> Result<GroupVersionKind> {
    let describe = || match &obj.metadata.name {
        Some(n) => format!("{n:?}"),
        None => "(unnamed)".to_string(),
    };
    let types = obj.types.as_ref().ok_or_else(|| Error::InvalidObject {
        object: describe(),
        field: "apiVersion".into(),
        reason: "apiVersion and kind are required".into(),
    })?;
    if types.kind.is_empty() {
        return Err(Error::InvalidObject {
            object: describe(),
            field: "kind".into(),
            reason: "is required".into(),
        });
    }
    parse_api_version(&types.api_version, &types.kind).ok_or_else(|| Error::InvalidObject {
        object: describe(),
        field: "apiVersion".into(),
        reason: format!(
            "{:?} is not of the form <version> or <group>/<version>",
            types.api_version
        ),
    })
}

/// Splits `apiVersion` into group and version and pairs them with `kind`.
pub fn parse_api_version(api_version: &str, kind: &str) -> Option<GroupVersionKind> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    if version.is_empty()
        || version.contains('/')
        || (api_version.contains('/') && group.is_empty())
    {
        return None;
    }
    Some(GroupVersionKind::gvk(group, version, kind))
}

/// What the server knows about a kind: its REST resource, scope and subresources.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// Group, version, kind and plural.
    pub resource: ApiResource,
    /// Whether objects of this kind live in a namespace.
    pub namespaced: bool,
    /// Subresource names, e.g. `status`, `scale`.
    pub subresources: Vec<String>,
}

impl ResourceInfo {
    /// Whether the kind has a `status` subresource.
    pub fn has_status(&self) -> bool {
        self.subresources.iter().any(|s| s == "status")
    }
}

/// Options of a LIST request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// A label selector (`a=b,c in (x,y),!d`).
    pub label_selector: Option<String>,
    /// A field selector (`metadata.name=x`).
    pub field_selector: Option<String>,
    /// Page size.
    pub limit: Option<u32>,
    /// Continue token from a previous page.
    pub continue_token: Option<String>,
}

impl ListOptions {
    /// Options selecting by label.
    pub fn labels(selector: impl Into<String>) -> Self {
        ListOptions {
            label_selector: Some(selector.into()),
            ..ListOptions::default()
        }
    }

    /// Options selecting by field.
    pub fn fields(selector: impl Into<String>) -> Self {
        ListOptions {
            field_selector: Some(selector.into()),
            ..ListOptions::default()
        }
    }
}

/// The result of a LIST request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectList {
    /// The objects, each with `apiVersion` and `kind` set.
    pub items: Vec<DynamicObject>,
    /// The list's resourceVersion (to start a watch from).
    pub resource_version: Option<String>,
    /// Token for the next page, when the list was limited.
    pub continue_token: Option<String>,
}

/// The body of a PATCH.
#[derive(Debug, Clone, PartialEq)]
pub enum ObjectPatch {
    /// `application/merge-patch+json` (RFC 7386).
    Merge(Value),
    /// `application/json-patch+json` (RFC 6902).
    Json(json_patch::Patch),
    /// Server-side apply (`application/apply-patch+yaml`); the body is the full intent.
    Apply(Value),
}

/// Options of a PATCH or apply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchOptions {
    /// The field manager recorded in managedFields (required for server-side apply).
    pub field_manager: Option<String>,
    /// Server-side apply only: take over fields owned by other managers.
    pub force: bool,
}

impl PatchOptions {
    /// Server-side apply options for `manager`, with `force` set (the usual controller choice).
    pub fn apply(manager: impl Into<String>) -> Self {
        PatchOptions {
            field_manager: Some(manager.into()),
            force: true,
        }
    }
}

/// Which part of an object a write targets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Subresource {
    /// The object itself.
    #[default]
    Main,
    /// The `/status` subresource.
    Status,
}

/// How dependents are handled when an owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Propagation {
    /// Dependents are left alone.
    Orphan,
    /// The owner goes at once; dependents are deleted in the background.
    Background,
    /// The owner waits (with a `foregroundDeletion` finalizer) until dependents are gone.
    Foreground,
}

impl Propagation {
    /// The wire name (`Orphan`, `Background`, `Foreground`).
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

/// Options of a DELETE.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Propagation policy for dependents.
    pub propagation: Option<Propagation>,
    /// Only delete if the object still has this uid.
    pub precondition_uid: Option<String>,
    /// Only delete if the object is still at this resourceVersion.
    pub precondition_resource_version: Option<String>,
    /// Grace period in seconds.
    pub grace_period_seconds: Option<u32>,
}

/// What a DELETE did.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteOutcome {
    /// The object is gone.
    Deleted,
    /// The object is marked for deletion but still exists (finalizers pending); here it is.
    Terminating(Box<DynamicObject>),
    /// There was nothing to delete.
    AlreadyGone,
}

/// The interface reconcile code uses to read and write objects of any kind.
///
/// All writes take the kind from the object's `apiVersion`/`kind` (or from the [`ObjectRef`]).
/// Implementations map server answers to [`Error`] so that [`Error::is_transient`] works the
/// same everywhere: an unknown kind is [`Error::KindNotServed`], a missing namespace on create
/// or apply is [`Error::NamespaceNotFound`], other failures are [`Error::Api`] with the server's
/// code and reason.
#[async_trait]
pub trait ObjectClient: Send + Sync {
    /// Looks up how a kind is served. [`Error::KindNotServed`] when the server does not know it.
    async fn resolve(&self, gvk: &GroupVersionKind) -> Result<ResourceInfo>;

    /// Reads one object; `Ok(None)` when it does not exist.
    async fn get(&self, target: &ObjectRef) -> Result<Option<DynamicObject>>;

    /// Lists objects of a kind, in one namespace or (with `None`) across all of them.
    async fn list(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ObjectList>;

    /// Creates an object (`generateName` is honoured).
    async fn create(&self, obj: &DynamicObject) -> Result<DynamicObject>;

    /// Replaces an object or its status. When `metadata.resourceVersion` is set it is a
    /// precondition: a newer object on the server gives a 409 Conflict.
    async fn replace(&self, obj: &DynamicObject, subresource: Subresource)
    -> Result<DynamicObject>;

    /// Patches an object or its status.
    async fn patch(
        &self,
        target: &ObjectRef,
        subresource: Subresource,
        patch: &ObjectPatch,
        options: &PatchOptions,
    ) -> Result<DynamicObject>;

    /// Deletes an object.
    async fn delete(&self, target: &ObjectRef, options: &DeleteOptions) -> Result<DeleteOutcome>;

    /// Server-side applies `obj` (the full intent of `options.field_manager`).
    async fn apply(&self, obj: &DynamicObject, options: &PatchOptions) -> Result<DynamicObject> {
        let target = ObjectRef::from_object(obj)?;
        let body = to_value(obj, &target)?;
        self.patch(
            &target,
            Subresource::Main,
            &ObjectPatch::Apply(body),
            options,
        )
        .await
    }

    /// Server-side applies the status of `obj`.
    async fn apply_status(
        &self,
        obj: &DynamicObject,
        options: &PatchOptions,
    ) -> Result<DynamicObject> {
        let target = ObjectRef::from_object(obj)?;
        let body = to_value(obj, &target)?;
        self.patch(
            &target,
            Subresource::Status,
            &ObjectPatch::Apply(body),
            options,
        )
        .await
    }

    /// Patches the status subresource.
    async fn patch_status(&self, target: &ObjectRef, patch: &ObjectPatch) -> Result<DynamicObject> {
        self.patch(target, Subresource::Status, patch, &PatchOptions::default())
            .await
    }

    /// Replaces the status subresource (resourceVersion precondition as for [`Self::replace`]).
    async fn update_status(&self, obj: &DynamicObject) -> Result<DynamicObject> {
        self.replace(obj, Subresource::Status).await
    }
}

/// `obj` as JSON, an error naming `target` if it cannot be encoded.
pub(crate) fn to_value(obj: &DynamicObject, target: &ObjectRef) -> Result<Value> {
    serde_json::to_value(obj).map_err(|source| Error::Serialization {
        context: format!("encoding {target}"),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn object_ref_displays_group_version_kind_namespace_and_name() {
        let o = obj(json!({"apiVersion":"apps/v1","kind":"Deployment",
            "metadata":{"name":"web","namespace":"prod"}}));
        let r = ObjectRef::from_object(&o).unwrap();
        assert_eq!(r.to_string(), "apps/v1 Deployment prod/web");
    }

    #[test]
    fn core_group_objects_display_without_a_group() {
        let o = obj(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}));
        assert_eq!(
            ObjectRef::from_object(&o).unwrap().to_string(),
            "v1 Namespace a"
        );
    }

    #[test]
    fn missing_kind_is_an_invalid_object_naming_the_field() {
        let o = obj(json!({"metadata":{"name":"a"}}));
        let err = ObjectRef::from_object(&o).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid object \"a\": field apiVersion: apiVersion and kind are required"
        );
    }

    #[test]
    fn missing_name_is_an_invalid_object() {
        let o = obj(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{}}));
        let err = ObjectRef::from_object(&o).unwrap_err();
        assert!(
            err.to_string().contains("field metadata.name: is required"),
            "{err}"
        );
    }

    #[test]
    fn malformed_api_versions_are_rejected() {
        assert!(parse_api_version("a/b/c", "K").is_none());
        assert!(parse_api_version("/v1", "K").is_none());
        assert!(parse_api_version("apps/", "K").is_none());
        assert_eq!(
            parse_api_version("apps/v1", "Deployment"),
            Some(GroupVersionKind::gvk("apps", "v1", "Deployment"))
        );
    }
}
