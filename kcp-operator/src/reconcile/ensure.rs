//! Writing a child object: server-side apply under [`super::FIELD_MANAGER`] through kcp-core's
//! [`apply_child`], controller-owned by its source. The child ends up equal to what is
//! rendered for the fields the operator owns: a field rendered before and not any more is
//! removed (a deleted `auth.oidc`, the last `extraArgs`, a nodeSelector key), while what others
//! own (a Service's `clusterIP`, a defaulted field, an annotation someone added) is kept. A
//! pass whose rendered children already match sends nothing.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kcp_core::ObjectClient;
use kcp_core::client::ObjectRef;
use kcp_core::runtime::owner::set_controller;
use kcp_core::runtime::{Applied, apply_child};
use kcp_core::typed::{from_dynamic, to_dynamic};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{FIELD_MANAGER, core};
use crate::error::Result;

/// Makes `desired` exist as the controller-owned child of `owner` (when given), equal to what
/// is rendered for the operator's fields. Returns what was done and the object as it is now.
pub async fn ensure<K>(
    client: &dyn ObjectClient,
    desired: &K,
    owner: Option<&OwnerReference>,
) -> Result<(Applied, K)>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync,
{
    let mut object = desired.clone();
    if let Some(owner) = owner {
        set_controller(object.meta_mut(), owner.clone()).map_err(core("setting the owner"))?;
    }
    let dynamic = to_dynamic(&object).map_err(core("serializing a child"))?;
    let target = ObjectRef::from_object(&dynamic).map_err(core("naming a child"))?;
    let live = client
        .get(&target)
        .await
        .map_err(core(format!("reading {target}")))?;
    let (applied, now) = apply_child(client, &dynamic, live, FIELD_MANAGER)
        .await
        .map_err(core(format!("applying {target}")))?;
    let now = from_dynamic(now).map_err(core(format!("reading {target}")))?;
    Ok((applied, now))
}
