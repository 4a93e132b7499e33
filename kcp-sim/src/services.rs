//! Services as kube-apiserver keeps them: the decode defaults (`SetDefaults_Service`: type,
//! session affinity, port protocols and target ports, traffic policies) and, in a Kubernetes
//! cluster, the allocation of cluster IPs from `10.0.0.0/24` (the test servers'
//! `--service-cluster-ip-range`) and node ports from 30000-32767, with the field errors
//! kube-apiserver gives for an address or port outside its range or already taken. An update that
//! leaves the allocated values out keeps them, as kube-apiserver's strategy does.
//!
//! Known difference: kube-apiserver hands out free addresses and ports at random; kcp-sim takes
//! the highest free address and the lowest free port, so its choices repeat from run to run.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use crate::resource::{GroupResource, ResourceType};
use crate::schema::field::{ErrorType, FieldError};
use crate::semantics::{self, PatchKind, WriteOptions};
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// The service network: `10.0.0.0/24`.
const NETWORK: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 0);
const PREFIX_LEN: u32 = 24;
/// The first address, which the `kubernetes` Service holds.
const API_SERVER_ADDRESS: &str = "10.0.0.1";
/// `--service-node-port-range`.
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// `SetDefaults_Service`.
pub fn defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec
        .get("type")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        spec.insert("type".into(), json!("ClusterIP"));
    }
    let kind = service_type(spec).to_string();
    if spec
        .get("sessionAffinity")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        spec.insert("sessionAffinity".into(), json!("None"));
    }
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP") {
        let config = spec
            .entry("sessionAffinityConfig")
            .or_insert_with(|| json!({"clientIP": {}}));
        if let Some(client) = config.get_mut("clientIP").and_then(Value::as_object_mut) {
            client.entry("timeoutSeconds").or_insert(json!(10800));
        }
    }
    for port in spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        default_port(port);
    }
    if kind != "ExternalName" {
        spec.entry("internalTrafficPolicy")
            .or_insert(json!("Cluster"));
    }
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer") {
        spec.entry("externalTrafficPolicy")
            .or_insert(json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        spec.entry("allocateLoadBalancerNodePorts")
            .or_insert(json!(true));
    }
}

/// A port's protocol (`TCP`) and target port (its own port number).
fn default_port(port: &mut Map<String, Value>) {
    if port
        .get("protocol")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        port.insert("protocol".into(), json!("TCP"));
    }
    let unset = match port.get("targetPort") {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if unset && let Some(number) = port.get("port").cloned() {
        port.insert("targetPort".into(), number);
    }
}

fn service_type(spec: &Map<String, Value>) -> &str {
    spec.get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
}

/// What the other Services of the cluster hold.
#[derive(Debug, Default)]
struct Taken {
    addresses: BTreeSet<Ipv4Addr>,
    node_ports: BTreeSet<i64>,
}

impl Taken {
    fn of_cluster(state: &State, cluster: &str) -> Taken {
        let mut taken = Taken::default();
        let recorded = crate::ip_addresses::held(state, cluster);
        taken
            .addresses
            .extend(recorded.iter().filter_map(|a| a.parse::<Ipv4Addr>().ok()));
        let services = state
            .clusters
            .get(cluster)
            .and_then(|c| c.objects.get(&GroupResource::new("", "services")));
        for stored in services.into_iter().flat_map(|m| m.values()) {
            let Ok(service) = stored.value() else {
                continue;
            };
            let addresses = service
                .pointer("/spec/clusterIPs")
                .and_then(Value::as_array);
            for address in addresses.into_iter().flatten().filter_map(Value::as_str) {
                if let Ok(ip) = address.parse() {
                    taken.addresses.insert(ip);
                }
            }
            let ports = service.pointer("/spec/ports").and_then(Value::as_array);
            for port in ports.into_iter().flatten() {
                if let Some(number) = port.get("nodePort").and_then(Value::as_i64) {
                    taken.node_ports.insert(number);
                }
            }
        }
        taken
    }
}

/// What kube-apiserver writes at start for its service network: the `kubernetes` ServiceCIDR
/// (Ready, as its controller reports it) and, in `default`, the `kubernetes` Service at the first
/// address, whose port 443 leads to the server's own `api_port`.
pub fn bootstrap(state: &mut State, cluster: &str, api_port: u16) -> ApiResult<()> {
    let opts = WriteOptions {
        default_manager: "kube-apiserver".into(),
        ..WriteOptions::default()
    };
    let cidrs = served(state, cluster, "networking.k8s.io", "servicecidrs")?;
    let cidr = json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": "kubernetes"},
        "spec": {"cidrs": [format!("{NETWORK}/{PREFIX_LEN}")]},
    });
    semantics::create(state, cluster, &cidrs, "v1", None, cidr, &opts)?;
    let ready = json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": "kubernetes"},
        "status": {"conditions": [{
            "type": "Ready",
            "status": "True",
            "lastTransitionTime": semantics::now(),
            "reason": "",
            "message": "Kubernetes default Service CIDR is ready",
        }]},
    });
    let controller = WriteOptions {
        field_manager: Some("kubernetes-service-cidr-controller".into()),
        ..opts.clone()
    };
    semantics::patch(
        state,
        cluster,
        &cidrs,
        "v1",
        "",
        "kubernetes",
        true,
        PatchKind::Apply,
        &ready,
        &controller,
    )?;
    let services = served(state, cluster, "", "services")?;
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": API_SERVER_ADDRESS,
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
            "sessionAffinity": "None",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": api_port}],
        },
    });
    semantics::create(
        state,
        cluster,
        &services,
        "v1",
        Some("default"),
        service,
        &opts,
    )?;
    Ok(())
}

fn served(state: &State, cluster: &str, group: &str, plural: &str) -> ApiResult<ResourceType> {
    state.required_type(cluster, &GroupResource::new(group, plural))
}

/// A new Service's cluster IP, IP families and node ports, and its empty load balancer status.
/// Outside a Kubernetes cluster (kcp) nothing is allocated.
pub fn allocate(state: &State, cluster: &str, name: &str, obj: &mut Value) -> ApiResult<()> {
    obj["status"] = json!({"loadBalancer": {}});
    if state.flavor != crate::resource::Flavor::Kubernetes {
        return Ok(());
    }
    let taken = Taken::of_cluster(state, cluster);
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if service_type(spec) == "ExternalName" {
        return Ok(());
    }
    allocate_address(name, spec, &taken)?;
    if matches!(service_type(spec), "NodePort" | "LoadBalancer") {
        allocate_node_ports(name, spec, &taken)?;
    }
    Ok(())
}

/// The requested cluster IP checked, or the highest free one taken; `None` stays headless.
fn allocate_address(name: &str, spec: &mut Map<String, Value>, taken: &Taken) -> ApiResult<()> {
    let requested = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
        .map(String::from);
    let address = match requested.as_deref() {
        Some("None") => "None".to_string(),
        Some(text) => checked_address(name, text, taken)?.to_string(),
        None => free_address(taken)
            .ok_or_else(|| {
                ApiError::internal(format!(
                    "failed to allocate a serviceIP: range is full (Service {name})"
                ))
            })?
            .to_string(),
    };
    spec.insert("clusterIP".into(), json!(address));
    spec.insert("clusterIPs".into(), json!([address]));
    spec.entry("ipFamilyPolicy").or_insert(json!("SingleStack"));
    spec.entry("ipFamilies").or_insert(json!(["IPv4"]));
    Ok(())
}

fn checked_address(name: &str, text: &str, taken: &Taken) -> ApiResult<Ipv4Addr> {
    let invalid = |field: &str, why: String| ApiError::invalid("", "Service", name, field, &why);
    let address: Ipv4Addr = text.parse().map_err(|_| {
        invalid(
            "spec.clusterIPs[0]",
            format!("Invalid value: \"{text}\": must be a valid IP address"),
        )
    })?;
    let failed = |why: &str| {
        invalid(
            "spec.clusterIPs",
            format!("Invalid value: [\"{text}\"]: failed to allocate IP {text}: {why}"),
        )
    };
    if !in_network(address) {
        return Err(failed(
            "the provided network does not match the current range",
        ));
    }
    if taken.addresses.contains(&address) {
        return Err(failed("provided IP is already allocated"));
    }
    Ok(address)
}

fn in_network(address: Ipv4Addr) -> bool {
    let mask = u32::MAX << (32 - PREFIX_LEN);
    let bits = u32::from(address);
    let host = bits & !mask;
    bits & mask == u32::from(NETWORK) && host != 0 && host != !mask
}

fn free_address(taken: &Taken) -> Option<Ipv4Addr> {
    let first = u32::from(NETWORK);
    let last = first | (u32::MAX >> PREFIX_LEN);
    (first..=last)
        .rev()
        .map(Ipv4Addr::from)
        .find(|a| in_network(*a) && !taken.addresses.contains(a))
}

/// Each port's node port checked, or the lowest free one taken.
fn allocate_node_ports(name: &str, spec: &mut Map<String, Value>, taken: &Taken) -> ApiResult<()> {
    let mut used = taken.node_ports.clone();
    let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
    for (index, port) in ports.into_iter().flatten().enumerate() {
        let Some(port) = port.as_object_mut() else {
            continue;
        };
        let field = format!("spec.ports[{index}].nodePort");
        let invalid = |why: String| ApiError::invalid("", "Service", name, &field, &why);
        let number = match port
            .get("nodePort")
            .and_then(Value::as_i64)
            .filter(|n| *n != 0)
        {
            Some(n) if !NODE_PORTS.contains(&n) => {
                return Err(invalid(format!(
                    "Invalid value: {n}: provided port is not in the valid range. The range of \
                     valid ports is {}-{}",
                    NODE_PORTS.start(),
                    NODE_PORTS.end()
                )));
            }
            Some(n) if used.contains(&n) => {
                return Err(invalid(format!(
                    "Invalid value: {n}: provided port is already allocated"
                )));
            }
            Some(n) => n,
            None => NODE_PORTS
                .clone()
                .find(|n| !used.contains(n))
                .ok_or_else(|| {
                    ApiError::internal(format!(
                        "failed to allocate a nodePort: range is full (Service {name})"
                    ))
                })?,
        };
        used.insert(number);
        port.insert("nodePort".into(), json!(number));
    }
    Ok(())
}

/// An update that leaves out what was allocated keeps it: the cluster IPs, IP families and
/// policy, and each port's node port (by position), while the type stays the same.
pub fn keep_allocations(old: &Value, new: &mut Value) {
    let (Some(old_spec), Some(new_spec)) = (
        old.get("spec").and_then(Value::as_object),
        new.get_mut("spec").and_then(Value::as_object_mut),
    ) else {
        return;
    };
    if service_type(old_spec) != service_type(new_spec) {
        return;
    }
    for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if let Some(value) = old_spec.get(key)
            && new_spec.get(key).is_none_or(Value::is_null)
        {
            new_spec.insert(key.into(), value.clone());
        }
    }
    let old_ports = old_spec.get("ports").and_then(Value::as_array);
    let new_ports = new_spec.get_mut("ports").and_then(Value::as_array_mut);
    if let (Some(old_ports), Some(new_ports)) = (old_ports, new_ports) {
        for (old_port, new_port) in old_ports.iter().zip(new_ports.iter_mut()) {
            if let (Some(node_port), Some(port)) =
                (old_port.get("nodePort"), new_port.as_object_mut())
            {
                port.entry("nodePort").or_insert(node_port.clone());
            }
        }
    }
}

/// `SetDefaults_LoadBalancerStatus`: an ingress point with an `ip` and no `ipMode` is `VIP`.
pub fn default_load_balancer_status(obj: &mut Value) {
    let Some(ingress) = obj
        .pointer_mut("/status/loadBalancer/ingress")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for entry in ingress.iter_mut().filter_map(Value::as_object_mut) {
        let has_ip = entry
            .get("ip")
            .and_then(Value::as_str)
            .is_some_and(|ip| !ip.is_empty());
        if has_ip && entry.get("ipMode").is_none_or(Value::is_null) {
            entry.insert("ipMode".into(), json!("VIP"));
        }
    }
}

/// kube's `ValidateLoadBalancerStatus` for a Service's status write: ingress only on a
/// `LoadBalancer` Service, each `ip` an IP address (with an `ipMode` of `VIP` or `Proxy`, and
/// no `ipMode` without an `ip`), each `hostname` a DNS subdomain that is no IP address.
pub fn load_balancer_status_errors(obj: &Value) -> Vec<FieldError> {
    let path = "status.loadBalancer.ingress";
    let Some(ingress) = obj
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    if ingress.is_empty() {
        return Vec::new();
    }
    if obj.pointer("/spec/type").and_then(Value::as_str) != Some("LoadBalancer") {
        return vec![FieldError::forbidden(
            path,
            "may only be used when `spec.type` is 'LoadBalancer'",
        )];
    }
    let mut errors = Vec::new();
    for (i, entry) in ingress.iter().enumerate() {
        let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default();
        let (ip, hostname) = (text("ip"), text("hostname"));
        if !ip.is_empty() && ip.parse::<std::net::IpAddr>().is_err() {
            errors.push(FieldError::invalid(
                format!("{path}[{i}].ip"),
                json!(ip),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
        match entry.get("ipMode") {
            Some(_) if ip.is_empty() => errors.push(FieldError::forbidden(
                format!("{path}[{i}].ipMode"),
                "may not be specified when `ip` is not set",
            )),
            Some(mode) if !matches!(mode.as_str(), Some("VIP" | "Proxy")) => {
                errors.push(FieldError::new(
                    ErrorType::NotSupported,
                    format!("{path}[{i}].ipMode"),
                    Some(mode.clone()),
                    "supported values: \"Proxy\", \"VIP\"",
                ));
            }
            _ => {}
        }
        if !hostname.is_empty() {
            let field = format!("{path}[{i}].hostname");
            for message in kcp_core::name_validation::dns1123_subdomain_errors(hostname) {
                errors.push(FieldError::invalid(field.clone(), json!(hostname), message));
            }
            if hostname.parse::<std::net::IpAddr>().is_ok() {
                errors.push(FieldError::invalid(
                    field,
                    json!(hostname),
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(addresses: &[&str], node_ports: &[i64]) -> Taken {
        Taken {
            addresses: addresses.iter().map(|a| a.parse().unwrap()).collect(),
            node_ports: node_ports.iter().copied().collect(),
        }
    }

    #[test]
    fn a_service_without_a_type_is_a_cluster_ip_service_with_target_ports() {
        let mut service = json!({"spec": {"ports": [{"port": 80}]}});
        defaults(&mut service);
        assert_eq!(
            service["spec"],
            json!({"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                   "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]})
        );
    }

    #[test]
    fn the_highest_free_address_is_taken() {
        let mut spec = Map::new();
        allocate_address("s", &mut spec, &taken(&["10.0.0.254"], &[])).unwrap();
        assert_eq!(spec["clusterIP"], "10.0.0.253");
        assert_eq!(spec["clusterIPs"], json!(["10.0.0.253"]));
    }

    #[test]
    fn an_address_outside_the_range_or_taken_is_invalid() {
        let mut spec = Map::new();
        let error = checked_address("s", "10.9.0.1", &taken(&[], &[])).unwrap_err();
        assert!(
            error
                .message
                .contains("the provided network does not match the current range")
        );
        let error = checked_address("s", "10.0.0.1", &taken(&["10.0.0.1"], &[])).unwrap_err();
        assert!(error.message.contains("provided IP is already allocated"));
        spec.insert("clusterIP".into(), json!("None"));
        allocate_address("s", &mut spec, &taken(&[], &[])).unwrap();
        assert_eq!(spec["clusterIPs"], json!(["None"]));
    }

    #[test]
    fn a_node_port_outside_the_range_or_taken_is_invalid() {
        let mut spec = json!({"ports": [{"port": 80, "nodePort": 40000}]});
        let spec = spec.as_object_mut().unwrap();
        let error = allocate_node_ports("s", spec, &taken(&[], &[])).unwrap_err();
        assert!(
            error
                .message
                .contains("The range of valid ports is 30000-32767")
        );
        spec["ports"][0]["nodePort"] = json!(30080);
        let error = allocate_node_ports("s", spec, &taken(&[], &[30080])).unwrap_err();
        assert!(error.message.contains("provided port is already allocated"));
        spec["ports"][0]["nodePort"] = json!(0);
        allocate_node_ports("s", spec, &taken(&[], &[30000])).unwrap();
        assert_eq!(spec["ports"][0]["nodePort"], 30001);
    }

    #[test]
    fn an_update_without_the_allocated_values_keeps_them() {
        let old = json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.9", "clusterIPs": ["10.0.0.9"],
                                  "ports": [{"port": 80, "nodePort": 30005}]}});
        let mut new = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        keep_allocations(&old, &mut new);
        assert_eq!(new["spec"]["clusterIP"], "10.0.0.9");
        assert_eq!(new["spec"]["ports"][0]["nodePort"], 30005);
    }
}
