//! Typed access on top of any [`ObjectClient`]: `get_typed::<ConfigMap>()` and friends.
//!
//! Works for every `kube::Resource` with a static type (k8s-openapi types and
//! `#[derive(CustomResource)]` types). Objects are converted through JSON, so the typed and the
//! dynamic view of an object are always the same bytes on the wire.

use async_trait::async_trait;
use kube::Resource;
use kube::api::{DynamicObject, GroupVersionKind, TypeMeta};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectClient, ObjectPatch, ObjectRef, PatchOptions,
    Subresource,
};
use crate::error::{Error, Result};

/// The GVK of a statically typed resource.
pub fn gvk_for<K: Resource<DynamicType = ()>>() -> GroupVersionKind {
    GroupVersionKind::gvk(&K::group(&()), &K::version(&()), &K::kind(&()))
}

/// The reference to a typed object named `name` (in `namespace` for namespaced kinds).
pub fn object_ref_for<K: Resource<DynamicType = ()>>(
    namespace: Option<&str>,
    name: &str,
) -> ObjectRef {
    ObjectRef {
        gvk: gvk_for::<K>(),
        namespace: namespace.map(str::to_string),
        name: name.to_string(),
    }
}

/// Converts a typed resource into a [`DynamicObject`] with `apiVersion` and `kind` set.
pub fn to_dynamic<K>(obj: &K) -> Result<DynamicObject>
where
    K: Resource<DynamicType = ()> + Serialize,
{
    let encoding = |source| Error::Serialization {
        context: format!("encoding {} {:?}", K::kind(&()), obj.meta().name),
        source,
    };
    let value = serde_json::to_value(obj).map_err(encoding)?;
    let mut dynamic: DynamicObject = serde_json::from_value(value).map_err(encoding)?;
    // k8s-openapi and derive types may not serialize their type fields; set them from the type.
    dynamic.types = Some(TypeMeta {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
    });
    Ok(dynamic)
}

/// Converts a [`DynamicObject`] into a typed resource.
pub fn from_dynamic<K>(obj: DynamicObject) -> Result<K>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let name = obj.metadata.name.clone();
    let value = serde_json::to_value(obj).map_err(|source| Error::Serialization {
        context: format!("decoding {} {name:?}", K::kind(&())),
        source,
    })?;
    serde_json::from_value(value).map_err(|source| Error::Serialization {
        context: format!("decoding {} {name:?}", K::kind(&())),
        source,
    })
}

/// Typed conveniences for every [`ObjectClient`] (including `dyn ObjectClient`).
#[async_trait]
pub trait ObjectClientExt: ObjectClient {
    /// Reads a typed object; `Ok(None)` when it does not exist.
    async fn get_typed<K>(&self, namespace: Option<&str>, name: &str) -> Result<Option<K>>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send,
    {
        match self.get(&object_ref_for::<K>(namespace, name)).await? {
            Some(obj) => from_dynamic(obj).map(Some),
            None => Ok(None),
        }
    }

    /// Lists typed objects.
    async fn list_typed<K>(&self, namespace: Option<&str>, options: &ListOptions) -> Result<Vec<K>>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send,
    {
        let list = self.list(&gvk_for::<K>(), namespace, options).await?;
        list.items.into_iter().map(from_dynamic).collect()
    }

    /// Creates a typed object.
    async fn create_typed<K>(&self, obj: &K) -> Result<K>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync,
    {
        let created = self.create(&to_dynamic(obj)?).await?;
        from_dynamic(created)
    }

    /// Server-side applies a typed object.
    async fn apply_typed<K>(&self, obj: &K, options: &PatchOptions) -> Result<K>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync,
    {
        let applied = self.apply(&to_dynamic(obj)?, options).await?;
        from_dynamic(applied)
    }

    /// Server-side applies the status of a typed object.
    async fn apply_status_typed<K>(&self, obj: &K, options: &PatchOptions) -> Result<K>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync,
    {
        let applied = self.apply_status(&to_dynamic(obj)?, options).await?;
        from_dynamic(applied)
    }

    /// Replaces a typed object (resourceVersion precondition when set).
    async fn replace_typed<K>(&self, obj: &K) -> Result<K>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync,
    {
        let replaced = self.replace(&to_dynamic(obj)?, Subresource::Main).await?;
        from_dynamic(replaced)
    }

    /// Patches a typed object or its status.
    async fn patch_typed<K>(
        &self,
        namespace: Option<&str>,
        name: &str,
        subresource: Subresource,
        patch: &ObjectPatch,
    ) -> Result<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send,
    {
        let target = object_ref_for::<K>(namespace, name);
        let patched = self
            .patch(&target, subresource, patch, &PatchOptions::default())
            .await?;
        from_dynamic(patched)
    }

    /// Deletes a typed object.
    async fn delete_typed<K>(
        &self,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteOutcome>
    where
        K: Resource<DynamicType = ()> + Send,
    {
        self.delete(&object_ref_for::<K>(namespace, name), options)
            .await
    }
}

impl<C: ObjectClient + ?Sized> ObjectClientExt for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn typed_objects_convert_to_dynamic_with_their_type() {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("c".into());
        cm.data = Some([("k".to_string(), "v".to_string())].into());
        let d = to_dynamic(&cm).unwrap();
        let types = d.types.clone().unwrap();
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("v1", "ConfigMap")
        );
        assert_eq!(d.data["data"]["k"], "v");
        let back: ConfigMap = from_dynamic(d).unwrap();
        assert_eq!(back, cm);
    }

    #[test]
    fn gvk_for_static_types_comes_from_the_type() {
        let gvk = gvk_for::<k8s_openapi::api::apps::v1::Deployment>();
        assert_eq!((gvk.group.as_str(), gvk.version.as_str()), ("apps", "v1"));
        assert_eq!(gvk.kind, "Deployment");
    }
}
