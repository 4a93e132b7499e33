//! Requests to the kinds kube-apiserver answers without storing them
//! ([`Access::CreateOnly`]): the reviews a client posts to learn about a token or an access,
//! the `bindings` (also `pods/<name>/binding`) a scheduler posts to place a pod on a node, and
//! the `pods/<name>/eviction` a drain posts ([`crate::evictions`]).
//! Any verb but `create` is refused as kube-apiserver refuses it (`405`, or `404` for a path
//! naming an object).

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::api::{Endpoint, Sim, addressed_cluster};
use crate::authorization::{self, User};
use crate::resource::{Access, GroupResource};
use crate::semantics;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// What a request to an answered kind is about.
#[derive(Debug)]
pub struct Question<'a> {
    /// The endpoint the request came to.
    pub endpoint: &'a Endpoint,
    /// The resource's group and plural (`pods` for `pods/<name>/binding`).
    pub resource: GroupResource,
    /// The namespace in the path, if any.
    pub namespace: Option<&'a str>,
    /// The name in the path, if any.
    pub name: Option<&'a str>,
    /// The subresource in the path, if any.
    pub subresource: Option<&'a str>,
    /// The request's method.
    pub method: &'a Method,
    /// The posted object (for a `POST`).
    pub body: Option<Value>,
    /// Who writes: the field manager the request names.
    pub manager: &'a str,
}

/// Whether a request goes to an answered kind (a `pods/<name>/binding` too).
pub fn is_answered(access: Option<Access>, question: &Question) -> bool {
    access == Some(Access::CreateOnly) || is_pod_binding(question)
}

/// A `pods/<name>/binding` or `pods/<name>/eviction`.
fn is_pod_binding(question: &Question) -> bool {
    question.resource == GroupResource::new("", "pods")
        && matches!(question.subresource, Some("binding" | "eviction"))
}

/// The answer to a request to an answered kind, with its status code.
pub fn answer(sim: &Sim, question: Question, asker: &User) -> ApiResult<(StatusCode, Value)> {
    let pod_binding = is_pod_binding(&question);
    if question.name.is_some() && !pod_binding {
        return Err(ApiError::path_not_found());
    }
    if *question.method != Method::POST {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let body = question.body.clone().unwrap_or_else(|| json!({}));
    let namespace = question.namespace.unwrap_or_default();
    let answer = match (
        question.resource.group.as_str(),
        question.resource.resource.as_str(),
    ) {
        ("", "pods") if question.subresource == Some("eviction") => {
            let mut state = sim.write();
            let cluster = cluster_of(&state, question.endpoint)?;
            crate::evictions::evict(&mut state, &cluster, namespace, question.name, &body)?
        }
        ("", "bindings" | "pods") => {
            let mut state = sim.write();
            let cluster = cluster_of(&state, question.endpoint)?;
            bind(&mut state, &cluster, namespace, question.name, &body)?
        }
        ("authentication.k8s.io", "tokenreviews") => {
            let state = sim.read();
            let cluster = cluster_of(&state, question.endpoint)?;
            crate::token_review::answer(&state, &cluster, &body)?
        }
        ("authorization.k8s.io", "localsubjectaccessreviews") => {
            check_local_namespace(namespace, &body)?;
            let state = sim.read();
            let cluster = cluster_of(&state, question.endpoint)?;
            let mut answer = authorization::review(&state, &cluster, &body, asker);
            answer["metadata"]["namespace"] = json!(namespace);
            answer
        }
        (group, _) => {
            let asker = (asker, question.manager);
            authorization::answer_review(sim, question.endpoint, group, &body, asker)
        }
    };
    Ok((StatusCode::CREATED, answer))
}

fn cluster_of(state: &State, endpoint: &Endpoint) -> ApiResult<String> {
    addressed_cluster(state, endpoint).ok_or_else(ApiError::path_not_found)
}

/// A LocalSubjectAccessReview may only ask about its own namespace.
fn check_local_namespace(namespace: &str, review: &Value) -> ApiResult<()> {
    let asked = review
        .pointer("/spec/resourceAttributes/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if review.pointer("/spec/resourceAttributes").is_some() && asked != namespace {
        return Err(ApiError::invalid(
            "authorization.k8s.io",
            "",
            "",
            "spec.resourceAttributes.namespace",
            &format!("Invalid value: \"{asked}\": must match metadata.namespace"),
        ));
    }
    Ok(())
}

/// A Binding: the pod it names (in the URL too, for `pods/<name>/binding`) is placed on the
/// target node, once: `spec.nodeName` and a true `PodScheduled` condition, no managed fields.
fn bind(
    state: &mut State,
    cluster: &str,
    namespace: &str,
    url_name: Option<&str>,
    binding: &Value,
) -> ApiResult<Value> {
    let name = named_in_url(url_name, binding, "Binding")?;
    let kind = binding
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !kind.is_empty() && kind != "Node" {
        return Err(ApiError::new(
            500,
            "",
            format!(
                "target.kind: Unsupported value: \"{kind}\": supported values: \"Node\", \"<empty>\""
            ),
        ));
    }
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let pods = state
        .served_type(cluster, &GroupResource::new("", "pods"))
        .ok_or_else(ApiError::path_not_found)?;
    let mut pod = semantics::get(state, cluster, &pods, namespace, name)?.value()?;
    if let Some(assigned) = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Err(ApiError::conflict(
            "",
            "pods/binding",
            name,
            &format!("pod {name} is already assigned to node \"{assigned}\""),
        ));
    }
    pod["spec"]["nodeName"] = json!(node);
    crate::pods::mark_scheduled(&mut pod, &semantics::now());
    state.store(cluster, pods.group_resource(), namespace, name, &mut pod)?;
    Ok(
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

/// The name of a posted `kind` object (a Binding, an Eviction), which the URL may also name
/// but not contradict.
pub(crate) fn named_in_url<'b>(
    url_name: Option<&str>,
    posted: &'b Value,
    kind: &str,
) -> ApiResult<&'b str> {
    let name = posted
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if url_name.is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in {kind} object"
        )));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_review_of_another_namespace_is_invalid() {
        let review = json!({"spec": {"resourceAttributes": {"verb": "get", "namespace": "x"}}});
        let error = check_local_namespace("default", &review).unwrap_err();
        assert_eq!(error.code, 422);
        assert!(error.message.contains("must match metadata.namespace"));
        let review =
            json!({"spec": {"resourceAttributes": {"verb": "get", "namespace": "default"}}});
        assert!(check_local_namespace("default", &review).is_ok());
    }
}
