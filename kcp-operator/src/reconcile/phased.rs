//! The status every installation kind and its Compiled* object share: conditions with the
//! summary `Ready`, the phase and `observedGeneration`, written by one function; and a
//! source's `Available`, read from its Compiled* object by one function.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::ObjectClient;
use kcp_core::ObjectClientExt as _;
use kcp_core::runtime::conditions::ConditionUpdate;
use kcp_core::runtime::{StatusWrite, write_status};
use kube::Resource;
use kube::core::object::HasStatus;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::config::apply_status;
use super::{core, describe, set_conditions};
use crate::api::*;
use crate::error::{Error, Result};
use crate::status;

/// A status with conditions, a phase and `observedGeneration`.
pub(crate) trait PhasedStatus: Default {
    /// The three fields [`apply_status`] maintains.
    fn parts(&mut self) -> (&mut Vec<Condition>, &mut String, &mut Option<i64>);
}

macro_rules! phased_status {
    ($($status:ty),*) => {$(
        impl PhasedStatus for $status {
            fn parts(&mut self) -> (&mut Vec<Condition>, &mut String, &mut Option<i64>) {
                (&mut self.conditions, &mut self.phase, &mut self.observed_generation)
            }
        }
    )*};
}

phased_status!(
    RootShardStatus,
    ShardStatus,
    FrontProxyStatus,
    CacheServerStatus,
    VirtualWorkspaceStatus,
    KubeconfigStatus
);

/// Writes `updates`, the summary `Ready`, the phase and `observedGeneration` into `obj`'s
/// status (only when that changes it).
pub(crate) async fn write_phased<K>(
    client: &dyn ObjectClient,
    obj: &K,
    updates: &[ConditionUpdate],
) -> Result<()>
where
    K: Resource<DynamicType = ()> + HasStatus + Serialize + DeserializeOwned + Clone + Send + Sync,
    K::Status: PhasedStatus,
{
    let generation = obj.meta().generation;
    let name = obj.meta().name.clone().unwrap_or_default();
    let namespace = obj.meta().namespace.clone();
    write_status::<K, _>(client, namespace.as_deref(), &name, |live| {
        let (conditions, phase, observed) = live
            .status_mut()
            .get_or_insert_with(Default::default)
            .parts();
        apply_status(conditions, phase, observed, updates, generation, false);
    })
    .await
    .map_err(core(format!("writing the status of {}", describe(obj))))?;
    Ok(())
}

/// Writes why a pass over `obj` stopped on its input (`err`, see
/// [`Error::is_about_input`]) into its `Ready` condition, keeping the other conditions and
/// the phase: what the object's children are is unchanged by such a pass.
pub(crate) async fn write_stopped<K>(client: &dyn ObjectClient, obj: &K, err: &Error) -> Result<()>
where
    K: Resource<DynamicType = ()> + HasStatus + Serialize + DeserializeOwned + Clone + Send + Sync,
    K::Status: PhasedStatus,
{
    let generation = obj.meta().generation;
    let name = obj.meta().name.clone().unwrap_or_default();
    let namespace = obj.meta().namespace.clone();
    let update = status::stopped(err.reason(), err.to_string());
    write_status::<K, _>(client, namespace.as_deref(), &name, |live| {
        let (conditions, _, _) = live
            .status_mut()
            .get_or_insert_with(Default::default)
            .parts();
        set_conditions(conditions, std::slice::from_ref(&update), generation);
    })
    .await
    .map_err(core(format!("writing the status of {}", describe(obj))))?;
    Ok(())
}

/// Writes phase `Deleting` into `obj`'s status once it is being deleted (as upstream does; a
/// Shard waits there for its kcp registration to go, any object under foreground deletion for
/// its children), keeping its conditions. `Some` (the object as it now is, for a finalizer
/// update that must carry the latest resourceVersion) when it is being deleted.
pub(crate) async fn write_deleting<K>(client: &dyn ObjectClient, obj: &K) -> Result<Option<K>>
where
    K: Resource<DynamicType = ()> + HasStatus + Serialize + DeserializeOwned + Clone + Send + Sync,
    K::Status: PhasedStatus,
{
    if obj.meta().deletion_timestamp.is_none() {
        return Ok(None);
    }
    let name = obj.meta().name.clone().unwrap_or_default();
    let namespace = obj.meta().namespace.clone();
    let written = write_status::<K, _>(client, namespace.as_deref(), &name, |live| {
        let (_, phase, _) = live
            .status_mut()
            .get_or_insert_with(Default::default)
            .parts();
        *phase = status::phase(true, false).to_owned();
    })
    .await
    .map_err(core(format!("writing the status of {}", describe(obj))))?;
    Ok(Some(match written {
        StatusWrite::Unchanged(now) | StatusWrite::Written(now) => now,
        StatusWrite::Gone => obj.clone(),
    }))
}

/// A source's `Available`: its Compiled* object `C` (same namespace and name) read and its
/// `Available` condition copied, or "not rendered yet" while it does not exist.
pub(crate) async fn compiled_available<C>(
    client: &dyn ObjectClient,
    namespace: &str,
    name: &str,
) -> Result<ConditionUpdate>
where
    C: Resource<DynamicType = ()> + HasStatus + Serialize + DeserializeOwned + Clone + Send + Sync,
    C::Status: PhasedStatus,
{
    let kind = C::kind(&());
    let live: Option<C> = client
        .get_typed(Some(namespace), name)
        .await
        .map_err(core(format!("reading {kind} {namespace}/{name}")))?;
    let conditions = live
        .and_then(|mut c| c.status_mut().take())
        .map(|mut s| std::mem::take(s.parts().0));
    Ok(status::copied_available(conditions.as_deref(), &kind, name))
}
