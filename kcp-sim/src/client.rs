//! The in-process client: [`kcp_core::ObjectClient`] straight onto the simulator, without HTTP.
//!
//! Errors come out exactly as [`kcp_core::KubeObjectClient`] reports a real server's answers
//! (`KindNotServed`, `NamespaceNotFound`, `Api { code, reason, .. }`), and faults apply as they
//! do over HTTP, so a test can swap one client for the other.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_core::client::{
    DeleteOptions, DeleteOutcome, ListOptions, ObjectList, ObjectPatch, ObjectRef, PatchOptions,
    ResourceInfo, Subresource,
};
use kcp_core::{Error, ObjectClient, Result};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

use crate::api::{Endpoint, Sim, Target, render};
use crate::query::Filter;
use crate::resource::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::semantics::{DeleteRequest, PatchKind, WriteOptions};
use crate::status::ApiError;
use crate::store::Stored;

/// The field manager of in-process writes that name none.
pub const DEFAULT_FIELD_MANAGER: &str = "kcp-sim-client";

/// An [`ObjectClient`] for one endpoint of a simulator, called in-process.
#[derive(Debug, Clone)]
pub struct SimClient {
    sim: Arc<Sim>,
    endpoint: Endpoint,
}

impl SimClient {
    pub(crate) fn new(sim: Arc<Sim>, endpoint: Endpoint) -> Self {
        Self { sim, endpoint }
    }

    /// The endpoint this client talks to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn lookup(&self, gvk: &GroupVersionKind) -> Result<Arc<ResourceType>> {
        self.sim
            .type_of_kind(&self.endpoint, &gvk.group, &gvk.version, &gvk.kind)
            .map_err(|e| api_error("discover", gvk_text(gvk), e))?
            .ok_or_else(|| Error::KindNotServed { gvk: gvk.clone() })
    }

    fn target(
        &self,
        rt: &ResourceType,
        version: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        status: bool,
    ) -> Target {
        Target {
            endpoint: self.endpoint.clone(),
            group: rt.group.clone(),
            version: version.to_string(),
            plural: rt.plural.clone(),
            namespace: namespace.filter(|_| rt.namespaced).map(String::from),
            name: name.map(String::from),
            subresource: status.then(|| "status".to_string()),
        }
    }

    fn target_of(&self, r: &ObjectRef, status: bool) -> Result<(Arc<ResourceType>, Target)> {
        let rt = self.lookup(&r.gvk)?;
        if rt.namespaced && r.namespace.is_none() {
            return Err(Error::InvalidObject {
                object: r.to_string(),
                field: "metadata.namespace".into(),
                reason: format!("{} is namespaced: a namespace is required", rt.kind),
            });
        }
        let t = self.target(
            &rt,
            &r.gvk.version,
            r.namespace.as_deref(),
            Some(&r.name),
            status,
        );
        Ok((rt, t))
    }
}

fn gvk_text(gvk: &GroupVersionKind) -> String {
    if gvk.group.is_empty() {
        format!("{} {}", gvk.version, gvk.kind)
    } else {
        format!("{}/{} {}", gvk.group, gvk.version, gvk.kind)
    }
}

fn api_error(verb: &'static str, object: String, e: ApiError) -> Error {
    Error::Api {
        verb,
        object,
        code: e.code,
        reason: e.reason.to_string(),
        message: e.message,
    }
}

/// A write's error: a missing namespace is [`Error::NamespaceNotFound`], as `KubeObjectClient` says.
fn write_error(verb: &'static str, r: &ObjectRef, e: ApiError) -> Error {
    let missing_namespace = e.code == 404
        && e.details_kind() == Some("namespaces")
        && r.namespace.is_some()
        && e.details_name() == r.namespace.as_deref();
    if missing_namespace {
        Error::NamespaceNotFound {
            object: r.to_string(),
            namespace: r.namespace.clone().unwrap_or_default(),
        }
    } else {
        api_error(verb, r.to_string(), e)
    }
}

fn decode(rt: &ResourceType, version: &str, obj: &Stored, context: &str) -> Result<DynamicObject> {
    let failed = |source| Error::Serialization {
        context: format!("decoding {context}"),
        source,
    };
    let value: Value = serde_json::from_slice(&render(rt, version, obj)).map_err(failed)?;
    dynamic_from_value(value).map_err(failed)
}

/// A `DynamicObject` from a JSON object, field by field: serde's `flatten` (which
/// `DynamicObject` uses for its data) buffers the whole object first and costs twice as much.
fn dynamic_from_value(value: Value) -> serde_json::Result<DynamicObject> {
    let Value::Object(mut map) = value else {
        return serde_json::from_value(value);
    };
    let metadata = map
        .remove("metadata")
        .map(serde_json::from_value)
        .transpose()?
        .unwrap_or_default();
    let api_version = map.remove("apiVersion");
    let kind = map.remove("kind");
    let types = match (api_version, kind) {
        (Some(Value::String(api_version)), Some(Value::String(kind))) => {
            Some(kube::api::TypeMeta { api_version, kind })
        }
        _ => None,
    };
    Ok(DynamicObject {
        types,
        metadata,
        data: Value::Object(map),
    })
}

/// The JSON of a `DynamicObject`, built field by field (see [`dynamic_from_value`]).
fn encode(obj: &DynamicObject, r: &ObjectRef) -> Result<Value> {
    let failed = |source| Error::Serialization {
        context: format!("encoding {r}"),
        source,
    };
    let mut map = match &obj.data {
        Value::Object(data) => data.clone(),
        Value::Null => serde_json::Map::new(),
        other => {
            return Err(Error::InvalidObject {
                object: r.to_string(),
                field: "data".into(),
                reason: format!("the object's fields must be a JSON object, not {other}"),
            });
        }
    };
    if let Some(types) = &obj.types {
        map.insert(
            "apiVersion".into(),
            Value::String(types.api_version.clone()),
        );
        map.insert("kind".into(), Value::String(types.kind.clone()));
    }
    map.insert(
        "metadata".into(),
        serde_json::to_value(&obj.metadata).map_err(failed)?,
    );
    Ok(Value::Object(map))
}

fn write_options(manager: Option<&str>, force: bool) -> WriteOptions {
    WriteOptions {
        field_manager: manager.map(String::from),
        default_manager: DEFAULT_FIELD_MANAGER.to_string(),
        force,
        dry_run: false,
        lifecycle: None,
        scale: false,
        approval: false,
        ephemeral_containers: false,
        requester: None,
        field_validation: Some(crate::field_validation::FieldValidation::Warn),
        duplicates: Vec::new(),
    }
}

#[async_trait]
impl ObjectClient for SimClient {
    async fn resolve(&self, gvk: &GroupVersionKind) -> Result<ResourceInfo> {
        let rt = self.lookup(gvk)?;
        Ok(ResourceInfo {
            resource: ApiResource {
                group: rt.group.clone(),
                version: gvk.version.clone(),
                api_version: rt.api_version(&gvk.version),
                kind: rt.kind.clone(),
                plural: rt.plural.clone(),
            },
            namespaced: rt.namespaced,
            subresources: if rt.status {
                vec!["status".to_string()]
            } else {
                Vec::new()
            },
        })
    }

    async fn get(&self, target: &ObjectRef) -> Result<Option<DynamicObject>> {
        let (rt, t) = self.target_of(target, false)?;
        match self.sim.get(&t).await {
            Ok((_, obj)) => decode(&rt, &target.gvk.version, &obj, &target.to_string()).map(Some),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(api_error("get", target.to_string(), e)),
        }
    }

    async fn list(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ObjectList> {
        let rt = self.lookup(gvk)?;
        let what = gvk_text(gvk);
        let invalid = |field: &str, reason: String| Error::InvalidObject {
            object: what.clone(),
            field: field.to_string(),
            reason,
        };
        let labels = options
            .label_selector
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(LabelSelector::parse)
            .transpose()
            .map_err(|e| invalid("labelSelector", e.to_string()))?;
        let fields = options
            .field_selector
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(FieldSelector::parse)
            .transpose()
            .map_err(|e| invalid("fieldSelector", e.to_string()))?;
        let filter = Filter {
            labels,
            fields,
            ..Filter::default()
        };
        let t = self.target(&rt, &gvk.version, namespace, None, false);
        let (_, page) = self
            .sim
            .list(
                &t,
                filter,
                options.limit.map(|l| l as usize),
                options.continue_token.as_deref(),
            )
            .await
            .map_err(|e| api_error("list", what.clone(), e))?;
        let items = page
            .items
            .iter()
            .map(|o| decode(&rt, &gvk.version, o, &what))
            .collect::<Result<Vec<_>>>()?;
        Ok(ObjectList {
            items,
            resource_version: Some(page.resource_version.to_string()),
            continue_token: page.continue_token,
        })
    }

    async fn create(&self, obj: &DynamicObject) -> Result<DynamicObject> {
        let r = ObjectRef::from_object(obj).or_else(|_| {
            // generateName objects have no name yet.
            let gvk = kcp_core::client::gvk_of(obj)?;
            Ok::<_, Error>(ObjectRef {
                gvk,
                namespace: obj.metadata.namespace.clone(),
                name: obj.metadata.generate_name.clone().unwrap_or_default(),
            })
        })?;
        let rt = self.lookup(&r.gvk)?;
        if rt.namespaced && r.namespace.is_none() {
            return Err(Error::InvalidObject {
                object: r.to_string(),
                field: "metadata.namespace".into(),
                reason: format!("{} is namespaced: a namespace is required", rt.kind),
            });
        }
        let t = self.target(&rt, &r.gvk.version, r.namespace.as_deref(), None, false);
        let body = encode(obj, &r)?;
        let (_, written) = self
            .sim
            .create(&t, body, &write_options(None, false))
            .await
            .map_err(|e| write_error("create", &r, e))?;
        decode(&rt, &r.gvk.version, &written.object, &r.to_string())
    }

    async fn replace(
        &self,
        obj: &DynamicObject,
        subresource: Subresource,
    ) -> Result<DynamicObject> {
        let r = ObjectRef::from_object(obj)?;
        let status = subresource == Subresource::Status;
        let (rt, t) = self.target_of(&r, status)?;
        let body = encode(obj, &r)?;
        let verb = if status { "update status" } else { "update" };
        let (_, written) = self
            .sim
            .update(&t, body, &write_options(None, false))
            .await
            .map_err(|e| api_error(verb, r.to_string(), e))?;
        decode(&rt, &r.gvk.version, &written.object, &r.to_string())
    }

    async fn patch(
        &self,
        target: &ObjectRef,
        subresource: Subresource,
        patch: &ObjectPatch,
        options: &PatchOptions,
    ) -> Result<DynamicObject> {
        let status = subresource == Subresource::Status;
        let (rt, t) = self.target_of(target, status)?;
        let (kind, body, verb) = match patch {
            ObjectPatch::Merge(v) => (
                PatchKind::Merge,
                v.clone(),
                if status { "patch status" } else { "patch" },
            ),
            ObjectPatch::Json(p) => (
                PatchKind::Json,
                serde_json::to_value(p).map_err(|source| Error::Serialization {
                    context: format!("encoding a JSON patch of {target}"),
                    source,
                })?,
                if status { "patch status" } else { "patch" },
            ),
            ObjectPatch::Apply(v) => (
                PatchKind::Apply,
                v.clone(),
                if status { "apply status" } else { "apply" },
            ),
        };
        let opts = write_options(options.field_manager.as_deref(), options.force);
        let (_, written) = self
            .sim
            .patch(&t, kind, &body, &opts)
            .await
            .map_err(|e| write_error(verb, target, e))?;
        decode(
            &rt,
            &target.gvk.version,
            &written.object,
            &target.to_string(),
        )
    }

    async fn delete(&self, target: &ObjectRef, options: &DeleteOptions) -> Result<DeleteOutcome> {
        let (rt, t) = self.target_of(target, false)?;
        let req = DeleteRequest {
            propagation: options.propagation.map(|p| p.as_str().to_string()),
            precondition_uid: options.precondition_uid.clone(),
            precondition_resource_version: options.precondition_resource_version.clone(),
            dry_run: false,
            grace_period_seconds: options.grace_period_seconds.map(i64::from),
        };
        match self.sim.delete(&t, &req).await {
            Ok((_, deleted)) => {
                let still_there = self.sim.get(&t).await.is_ok();
                if still_there {
                    let obj = decode(
                        &rt,
                        &target.gvk.version,
                        &deleted.object,
                        &target.to_string(),
                    )?;
                    Ok(DeleteOutcome::Terminating(Box::new(obj)))
                } else {
                    Ok(DeleteOutcome::Deleted)
                }
            }
            Err(e) if e.code == 404 => Ok(DeleteOutcome::AlreadyGone),
            Err(e) => Err(api_error("delete", target.to_string(), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dynamic_objects_convert_like_serde_does() {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "b", "labels": {"x": "y"}},
            "data": {"k": "v"}});
        let manual = dynamic_from_value(v.clone()).unwrap();
        let derived: DynamicObject = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(manual, derived);
        let r = ObjectRef::from_object(&manual).unwrap();
        assert_eq!(
            encode(&manual, &r).unwrap(),
            serde_json::to_value(&derived).unwrap()
        );
    }
}
