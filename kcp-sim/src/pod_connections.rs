//! The pod subresources that reach the pod's kubelet: `log`, and `exec`, `attach` and
//! `portforward` (streams a client upgrades to). kube-apiserver checks the request, the pod, its
//! container and its node before it connects to the kubelet; kcp-sim answers those checks as it
//! does. A pod no node runs has an empty log and no stream ("does not have a host assigned").
//! kcp-sim has no kubelets: past the checks, a node without an address is refused as
//! kube-apiserver refuses it, and a node with one cannot be reached.

use serde_json::{Value, json};

use crate::schema::field::{FieldError, invalid_object};
use crate::status::{ApiError, ApiResult};

/// The `kubelet-preferred-address-types` kube-apiserver tries by default, in order.
const PREFERRED_ADDRESS_TYPES: [&str; 5] = [
    "Hostname",
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
];

/// The kubelet port when the node names none.
const DEFAULT_KUBELET_PORT: i64 = 10250;

/// The query of a `pods/<name>/log` read that kube-apiserver checks.
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    /// `container`.
    pub container: Option<String>,
    /// `tailLines`.
    pub tail_lines: Option<i64>,
    /// `limitBytes`.
    pub limit_bytes: Option<i64>,
    /// `sinceSeconds`.
    pub since_seconds: Option<i64>,
    /// Whether `sinceTime` is set.
    pub since_time: bool,
}

/// The log of pod `name` (`pod`, on `node` when it is scheduled and that node exists): empty
/// for a pod no node runs.
pub fn log(
    name: &str,
    pod: &Value,
    node: Option<&Value>,
    options: &LogOptions,
) -> ApiResult<String> {
    let errors = log_option_errors(options);
    if !errors.is_empty() {
        return Err(invalid_object("", "PodLogOptions", name, &errors));
    }
    let container = checked_container(name, pod, options.container.as_deref())?;
    let Some(node_name) = node_name(pod) else {
        return Ok(String::new());
    };
    let path = format!("/containerLogs/{}/{name}/{container}", namespace(pod));
    Err(unreachable_kubelet(node_name, node, &path, true))
}

/// The answer to an `exec`, `attach` (`with_container`) or `portforward` of pod `name`: always
/// an error, since no kubelet takes the stream.
pub fn stream(
    name: &str,
    pod: &Value,
    node: Option<&Value>,
    subresource: &str,
    container: Option<&str>,
) -> ApiError {
    let container = if subresource == "portforward" {
        String::new()
    } else {
        match checked_container(name, pod, container) {
            Ok(container) => container,
            Err(error) => return error,
        }
    };
    let Some(node_name) = node_name(pod) else {
        return ApiError::bad_request(format!("pod {name} does not have a host assigned"));
    };
    let path = format!("/{subresource}/{}/{name}/{container}", namespace(pod));
    unreachable_kubelet(node_name, node, &path, false)
}

/// `ValidatePodLogOptions`.
fn log_option_errors(options: &LogOptions) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(lines) = options.tail_lines.filter(|l| *l < 0) {
        errors.push(FieldError::invalid(
            "tailLines",
            json!(lines),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(bytes) = options.limit_bytes.filter(|b| *b < 1) {
        errors.push(FieldError::invalid(
            "limitBytes",
            json!(bytes),
            "must be greater than 0",
        ));
    }
    match options.since_seconds {
        Some(_) if options.since_time => errors.push(FieldError::forbidden(
            "",
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        )),
        Some(seconds) if seconds < 1 => errors.push(FieldError::invalid(
            "sinceSeconds",
            json!(seconds),
            "must be greater than 0",
        )),
        _ => {}
    }
    errors
}

/// `validateContainer`: the named container must be the pod's; without a name, the pod must
/// have exactly one container.
fn checked_container(name: &str, pod: &Value, container: Option<&str>) -> ApiResult<String> {
    let names_in = |key: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str).map(String::from))
            .collect()
    };
    let containers = names_in("containers");
    let mut every = names_in("initContainers");
    every.extend(containers.iter().cloned());
    every.extend(names_in("ephemeralContainers"));
    match container.filter(|c| !c.is_empty()) {
        Some(named) if every.iter().any(|c| c == named) => Ok(named.to_string()),
        Some(named) => Err(ApiError::bad_request(format!(
            "container {named} is not valid for pod {name}"
        ))),
        None => match containers.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                every.join(" ")
            ))),
        },
    }
}

fn node_name(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

fn namespace(pod: &Value) -> &str {
    pod.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Why the kubelet of `node_name` cannot be reached: the node is missing (kube-apiserver's
/// lookup names it as a pod), has no address of a preferred type, or does not answer.
fn unreachable_kubelet(node_name: &str, node: Option<&Value>, path: &str, log: bool) -> ApiError {
    let Some(node) = node else {
        return ApiError::not_found("", "pods", node_name);
    };
    let addresses: Vec<&Value> = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let address_of = |kind: &str| {
        addresses
            .iter()
            .find(|a| a["type"] == kind)
            .and_then(|a| a["address"].as_str())
    };
    let Some(host) = PREFERRED_ADDRESS_TYPES.iter().find_map(|t| address_of(t)) else {
        let known: Vec<String> = addresses
            .iter()
            .map(|a| {
                format!(
                    "{{{} {}}}",
                    a["type"].as_str().unwrap_or_default(),
                    a["address"].as_str().unwrap_or_default()
                )
            })
            .collect();
        return ApiError::new(
            500,
            "",
            format!(
                "no preferred addresses found; known addresses: [{}]",
                known.join(" ")
            ),
        );
    };
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0)
        .unwrap_or(DEFAULT_KUBELET_PORT);
    let host_port = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let refused = format!("dial tcp {host_port}: connect: connection refused");
    let message = if log {
        format!("Get \"https://{host_port}{path}\": {refused}")
    } else {
        format!("error dialing backend: {refused}")
    };
    ApiError::new(500, "", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(node: &str, containers: &[&str]) -> Value {
        let containers: Vec<Value> = containers.iter().map(|c| json!({"name": c})).collect();
        json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": node, "containers": containers}})
    }

    #[test]
    fn a_pod_no_node_runs_has_an_empty_log() {
        let log = log("p", &pod("", &["web"]), None, &LogOptions::default());
        assert_eq!(log.unwrap(), "");
    }

    #[test]
    fn a_pod_no_node_runs_has_no_host_to_stream_from() {
        let error = stream("p", &pod("", &["web"]), None, "exec", None);
        assert_eq!(error.code, 400);
        assert_eq!(error.message, "pod p does not have a host assigned");
    }

    #[test]
    fn a_container_must_be_named_when_the_pod_has_several() {
        let error = log("p", &pod("", &["a", "b"]), None, &LogOptions::default()).unwrap_err();
        assert_eq!(
            error.message,
            "a container name must be specified for pod p, choose one of: [a b]"
        );
    }

    #[test]
    fn a_container_of_another_pod_is_not_valid() {
        let options = LogOptions {
            container: Some("x".into()),
            ..LogOptions::default()
        };
        let error = log("p", &pod("", &["web"]), None, &options).unwrap_err();
        assert_eq!(error.message, "container x is not valid for pod p");
    }

    #[test]
    fn negative_tail_lines_are_invalid() {
        let options = LogOptions {
            tail_lines: Some(-1),
            ..LogOptions::default()
        };
        let error = log("p", &pod("", &["web"]), None, &options).unwrap_err();
        assert_eq!(error.code, 422);
    }

    #[test]
    fn a_missing_node_is_named_as_kube_apiserver_names_it() {
        let error = log("p", &pod("ghost", &["web"]), None, &LogOptions::default()).unwrap_err();
        assert_eq!(error.message, "pods \"ghost\" not found");
    }

    #[test]
    fn a_node_without_an_address_is_refused() {
        let node = json!({"metadata": {"name": "n1"}});
        let error = stream("p", &pod("n1", &["web"]), Some(&node), "exec", None);
        assert_eq!(error.code, 500);
        assert_eq!(
            error.message,
            "no preferred addresses found; known addresses: []"
        );
    }
}
