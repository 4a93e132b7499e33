//! `componentstatuses` (deprecated since Kubernetes 1.19, still served): kube-apiserver answers
//! each read by probing the scheduler and the controller manager on their secure ports of this
//! host and by checking its etcd. kcp-sim probes the same two ports (a connection refused is
//! answered with kube-apiserver's message; a port that accepts counts as healthy, as kcp-sim
//! speaks no TLS to check `/healthz`), and its store plays `etcd-0`, always healthy.

use std::time::Duration;

use serde_json::{Value, json};

use crate::status::{ApiError, ApiResult};

/// The deprecation warning kube-apiserver sends with every answer.
pub const WARNING: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// The components and the ports their health is read on.
const PROBED: [(&str, u16); 2] = [("scheduler", 10259), ("controller-manager", 10257)];

/// How long a probe waits for a connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// One component's status object.
fn status(name: &str, healthy: bool, message: &str) -> Value {
    let condition = json!({
        "type": "Healthy",
        "status": if healthy { "True" } else { "False" },
        "message": message,
    });
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

/// The status of a component on `port`, from a connection attempt.
async fn probe(name: &str, port: u16) -> Value {
    let url = format!("https://127.0.0.1:{port}/healthz");
    let connect = tokio::net::TcpStream::connect(("127.0.0.1", port));
    match tokio::time::timeout(PROBE_TIMEOUT, connect).await {
        Ok(Ok(_)) => status(name, true, "ok"),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => status(
            name,
            false,
            &format!("Get \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused"),
        ),
        Ok(Err(e)) => status(name, false, &format!("Get \"{url}\": {e}")),
        Err(_) => status(
            name,
            false,
            &format!("Get \"{url}\": context deadline exceeded"),
        ),
    }
}

/// Every component's status, in kube-apiserver's order.
pub async fn observe() -> Vec<Value> {
    let mut items = Vec::with_capacity(PROBED.len() + 1);
    for (name, port) in PROBED {
        items.push(probe(name, port).await);
    }
    items.push(status("etcd-0", true, "ok"));
    items
}

/// The answer to a read of `componentstatuses` (`name` for one): the object, the list, or the
/// Table kube's printer makes of it when `table_version` (`v1` or `v1beta1` of `meta.k8s.io`)
/// asks for one.
pub fn answer(
    items: Vec<Value>,
    name: Option<&str>,
    table_version: Option<&str>,
) -> ApiResult<Value> {
    let items = match name {
        Some(name) => {
            let item = items
                .into_iter()
                .find(|i| i["metadata"]["name"] == name)
                .ok_or_else(|| ApiError::not_found("", "componentstatus", name))?;
            if table_version.is_none() {
                return Ok(item);
            }
            vec![item]
        }
        None => items,
    };
    if let Some(version) = table_version {
        return Ok(as_table(&items, version));
    }
    let items: Vec<Value> = items
        .into_iter()
        .map(|mut i| {
            if let Some(map) = i.as_object_mut() {
                map.remove("kind");
                map.remove("apiVersion");
            }
            i
        })
        .collect();
    Ok(json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}))
}

/// `printComponentStatus`: the `Healthy` condition as `Healthy` or `Unhealthy`, its message
/// and its error.
fn as_table(items: &[Value], version: &str) -> Value {
    let api_version = format!("meta.k8s.io/{version}");
    let column = |name: &str, description: &str| json!({"name": name, "type": "string", "format": "", "description": description, "priority": 0});
    let mut name = column("Name", &crate::table::name_description());
    name["format"] = json!("name");
    let rows: Vec<Value> = items
        .iter()
        .map(|i| {
            let condition = &i["conditions"][0];
            let state = if condition["status"] == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            };
            let text = |key: &str| condition[key].as_str().unwrap_or_default().to_string();
            json!({
                "cells": [i["metadata"]["name"], state, text("message"), text("error")],
                "object": {"kind": "PartialObjectMetadata", "apiVersion": api_version,
                    "metadata": i["metadata"]},
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": {},
        "columnDefinitions": [
            name,
            column("Status", "Status of the component conditions"),
            column("Message", "Message of the component conditions"),
            column("Error", "Error of the component conditions"),
        ],
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_port_nobody_listens_on_is_unhealthy_with_kubes_message() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let status = probe("scheduler", port).await;
        assert_eq!(status["conditions"][0]["status"], "False");
        assert_eq!(
            status["conditions"][0]["message"],
            format!(
                "Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            )
        );
    }

    #[test]
    fn the_table_prints_health_as_a_word() {
        let table = answer(vec![status("etcd-0", true, "ok")], None, Some("v1")).unwrap();
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["etcd-0", "Healthy", "ok", ""])
        );
    }

    #[test]
    fn a_v1beta1_table_is_answered_in_that_version() {
        let table = answer(vec![status("etcd-0", true, "ok")], None, Some("v1beta1")).unwrap();
        assert_eq!(table["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(
            table["rows"][0]["object"]["apiVersion"],
            "meta.k8s.io/v1beta1"
        );
    }

    #[test]
    fn an_unknown_component_is_not_found() {
        let error = answer(vec![status("etcd-0", true, "ok")], Some("nope"), None).unwrap_err();
        assert_eq!(error.code, 404);
    }
}
