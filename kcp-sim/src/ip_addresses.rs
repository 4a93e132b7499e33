//! IPAddresses, as kube-apiserver's IP allocator keeps them in a Kubernetes cluster: each
//! cluster IP a Service holds is an `networking.k8s.io/v1` IPAddress named by the address,
//! labelled with its family and allocator and pointing back at the Service (`parentRef`). It
//! is written when the Service takes the address and removed when the Service lets it go. An
//! IPAddress a user makes holds its address too: no Service is given it.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::resource::{GroupResource, ResourceType};
use crate::semantics::{self, DeleteRequest, WriteOptions};
use crate::status::ApiResult;
use crate::store::State;

fn ip_addresses(state: &State, cluster: &str) -> Option<ResourceType> {
    state.served_type(
        cluster,
        &GroupResource::new("networking.k8s.io", "ipaddresses"),
    )
}

/// The names (addresses) of every IPAddress of `cluster`.
pub fn held(state: &State, cluster: &str) -> BTreeSet<String> {
    let gr = GroupResource::new("networking.k8s.io", "ipaddresses");
    state
        .clusters
        .get(cluster)
        .and_then(|c| c.objects.get(&gr))
        .map(|objects| {
            objects
                .keys()
                .map(|key| key.rsplit('/').next().unwrap_or(key).to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The IPAddress that records `address` as held by the Service `namespace/name`.
fn record(address: &str, namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {
            "name": address,
            "labels": {
                "ipaddress.kubernetes.io/ip-family": "IPv4",
                "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io",
            },
        },
        "spec": {"parentRef": {"resource": "services", "namespace": namespace, "name": name}},
    })
}

fn cluster_ips(service: &Value) -> BTreeSet<String> {
    service
        .pointer("/spec/clusterIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|a| *a != "None" && !a.is_empty())
        .map(String::from)
        .collect()
}

fn is_parent(ip: &Value, namespace: &str, name: &str) -> bool {
    ip.pointer("/spec/parentRef/resource") == Some(&json!("services"))
        && ip.pointer("/spec/parentRef/namespace") == Some(&json!(namespace))
        && ip.pointer("/spec/parentRef/name") == Some(&json!(name))
}

/// Makes the IPAddresses of the Service `service` (as just stored) match its cluster IPs.
pub fn follow_service(state: &mut State, cluster: &str, service: &Value) -> ApiResult<()> {
    hold(state, cluster, service, &cluster_ips(service))
}

/// Removes the IPAddresses of a Service that is gone.
pub fn release(state: &mut State, cluster: &str, service: &Value) -> ApiResult<()> {
    hold(state, cluster, service, &BTreeSet::new())
}

/// Makes `service` hold exactly the addresses `wanted`.
fn hold(
    state: &mut State,
    cluster: &str,
    service: &Value,
    wanted: &BTreeSet<String>,
) -> ApiResult<()> {
    let Some(rt) = ip_addresses(state, cluster) else {
        return Ok(());
    };
    let namespace = text(service, "/metadata/namespace");
    let name = text(service, "/metadata/name");
    let existing = crate::apiexport::objects_of(state, cluster, rt.group_resource());
    for ip in existing
        .iter()
        .filter(|ip| is_parent(ip, &namespace, &name))
    {
        let address = text(ip, "/metadata/name");
        if !wanted.contains(&address) {
            semantics::delete(state, cluster, &rt, "", &address, &DeleteRequest::default())?;
        }
    }
    let opts = WriteOptions {
        default_manager: "kube-apiserver".into(),
        ..WriteOptions::default()
    };
    let have = held(state, cluster);
    for address in wanted.iter().filter(|a| !have.contains(*a)) {
        let ip = record(address, &namespace, &name);
        semantics::create(state, cluster, &rt, "v1", None, ip, &opts)?;
    }
    Ok(())
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_points_back_at_its_service() {
        let ip = record("10.0.0.9", "shop", "web");
        assert!(is_parent(&ip, "shop", "web"));
        assert!(!is_parent(&ip, "shop", "api"));
        assert_eq!(ip["metadata"]["name"], "10.0.0.9");
    }

    #[test]
    fn a_headless_service_holds_no_address() {
        let service = json!({"spec": {"clusterIP": "None", "clusterIPs": ["None"]}});
        assert!(cluster_ips(&service).is_empty());
    }
}
