//! The cells kube-apiserver's printers compute for the networking, discovery, autoscaling,
//! scheduling, storage, flow-control and API registration kinds (`pkg/printers/internalversion`), each a pure function of the object, used by
//! [`crate::table`] through `Cell::Computed`.

use serde_json::{Value, json};

fn text<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn list<'a>(o: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    o.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// At most `max` items joined with `separator`, then ` + <n> more...`.
fn at_most(items: &[String], max: usize, separator: &str) -> String {
    if items.len() <= max {
        return items.join(separator);
    }
    format!(
        "{} + {} more...",
        items[..max].join(separator),
        items.len() - max
    )
}

/// `formatHosts`: the hosts of an Ingress's rules (three at most), `*` for none.
pub fn ingress_hosts(o: &Value) -> Value {
    let rules: Vec<&Value> = list(o, "/spec/rules").collect();
    let hosts: Vec<String> = rules
        .iter()
        .filter_map(|rule| rule.get("host").and_then(Value::as_str))
        .filter(|host| !host.is_empty())
        .map(String::from)
        .collect();
    if hosts.is_empty() {
        return json!("*");
    }
    if hosts.len() > 3 {
        return json!(format!(
            "{} + {} more...",
            hosts[..3].join(","),
            rules.len() - 3
        ));
    }
    json!(hosts.join(","))
}

/// The addresses of a load balancer's ingress points (IPs, else hostnames), comma-separated.
pub fn load_balancer_addresses(o: &Value) -> Value {
    let addresses: Vec<&str> = list(o, "/status/loadBalancer/ingress")
        .filter_map(|point| {
            point
                .get("ip")
                .or_else(|| point.get("hostname"))
                .and_then(Value::as_str)
        })
        .collect();
    json!(addresses.join(","))
}

/// `getServiceExternalIP` as the server prints it (wide): a ClusterIP or NodePort Service's
/// `externalIPs` (`<none>` without), a LoadBalancer's ingress addresses (sorted, each once) then
/// its `externalIPs` (`<pending>` with neither), an ExternalName Service's name.
pub fn service_external_ip(o: &Value) -> Value {
    let external: Vec<&str> = list(o, "/spec/externalIPs")
        .filter_map(Value::as_str)
        .collect();
    let joined_or = |none: &str| {
        if external.is_empty() {
            none.to_string()
        } else {
            external.join(",")
        }
    };
    let shown = match o.pointer("/spec/type").and_then(Value::as_str) {
        None | Some("ClusterIP" | "NodePort") => joined_or("<none>"),
        Some("LoadBalancer") => {
            let ingress: std::collections::BTreeSet<&str> = list(o, "/status/loadBalancer/ingress")
                .filter_map(|point| {
                    [text(point, "/ip"), text(point, "/hostname")]
                        .into_iter()
                        .find(|address| !address.is_empty())
                })
                .collect();
            let all: Vec<&str> = ingress
                .into_iter()
                .chain(external.iter().copied())
                .collect();
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        Some("ExternalName") => text(o, "/spec/externalName").to_string(),
        Some(_) => "<unknown>".to_string(),
    };
    json!(shown)
}

/// `formatPorts`: `80`, and `443` too when the Ingress has TLS.
pub fn ingress_ports(o: &Value) -> Value {
    if list(o, "/spec/tls").next().is_some() {
        json!("80, 443")
    } else {
        json!("80")
    }
}

/// An IngressClass's parameters as `<kind>.<group>/<name>`, `<none>` without.
pub fn ingress_class_parameters(o: &Value) -> Value {
    let Some(parameters) = o.pointer("/spec/parameters").filter(|p| p.is_object()) else {
        return json!("<none>");
    };
    let group = text(parameters, "/apiGroup");
    let kind = text(parameters, "/kind");
    let kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    json!(format!(
        "{}/{}",
        kind.to_ascii_lowercase(),
        text(parameters, "/name")
    ))
}

/// A NetworkPolicy's pod selector as a selector string, `<none>` when it selects every pod.
pub fn pod_selector(o: &Value) -> Value {
    let selector = o
        .pointer("/spec/podSelector")
        .map(crate::scale::format_selector)
        .unwrap_or_default();
    json!(if selector.is_empty() {
        "<none>".to_string()
    } else {
        selector
    })
}

/// `<kind>/<name>` of an autoscaler's scale target.
pub fn scale_target(o: &Value) -> Value {
    json!(format!(
        "{}/{}",
        text(o, "/spec/scaleTargetRef/kind"),
        text(o, "/spec/scaleTargetRef/name")
    ))
}

/// `formatHPAMetrics`: each metric's `current/target` (two at most), `<none>` for none.
pub fn autoscaler_targets(o: &Value) -> Value {
    let specs: Vec<&Value> = list(o, "/spec/metrics").collect();
    if specs.is_empty() {
        return json!("<none>");
    }
    let statuses: Vec<&Value> = list(o, "/status/currentMetrics").collect();
    let targets: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| metric_target(spec, statuses.get(i).copied()))
        .collect();
    json!(at_most(&targets, 2, ", "))
}

/// One metric's `current/target`, as `formatHPAMetrics` writes its source type.
fn metric_target(spec: &Value, status: Option<&Value>) -> String {
    let source = text(spec, "/type");
    let field = match source {
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        _ => return "<unknown type>".to_string(),
    };
    let target = spec.pointer(&format!("/{field}/target"));
    let current = status.and_then(|s| s.pointer(&format!("/{field}/current")));
    let quantity = |v: Option<&Value>, key: &str| {
        v.and_then(|v| v.get(key))
            .map(|q| q.as_str().map_or_else(|| q.to_string(), String::from))
    };
    let unknown = || "<unknown>".to_string();
    match field {
        "resource" | "containerResource" => {
            let name = text(spec, &format!("/{field}/name"));
            if let Some(average) = quantity(target, "averageValue") {
                let now = quantity(current, "averageValue").unwrap_or_else(unknown);
                return format!("{name}: {now}/{average}");
            }
            let percent = |v: Option<&Value>| {
                v.and_then(|v| v.get("averageUtilization"))
                    .and_then(Value::as_i64)
                    .map(|p| format!("{p}%"))
            };
            let now = percent(current).unwrap_or_else(unknown);
            let wanted = percent(target).unwrap_or_else(|| "<auto>".to_string());
            format!("{name}: {now}/{wanted}")
        }
        "pods" => {
            let now = quantity(current, "averageValue").unwrap_or_else(unknown);
            let wanted = quantity(target, "averageValue").unwrap_or_default();
            format!("{now}/{wanted}")
        }
        _ => match quantity(target, "averageValue") {
            Some(average) => {
                let now = quantity(current, "averageValue").unwrap_or_else(unknown);
                format!("{now}/{average} (avg)")
            }
            None => {
                let now = quantity(current, "value").unwrap_or_else(unknown);
                let wanted = quantity(target, "value").unwrap_or_default();
                format!("{now}/{wanted}")
            }
        },
    }
}

/// A PriorityClass's `globalDefault`, false when unset.
pub fn global_default(o: &Value) -> Value {
    json!(o.get("globalDefault").and_then(Value::as_bool) == Some(true))
}

/// `GetAccessModesAsString` of a claim's bound access modes (`RWO,ROX,RWX,RWOP`).
pub fn access_modes(o: &Value) -> Value {
    access_modes_at(o, "/status/accessModes")
}

/// `GetAccessModesAsString` of a volume's access modes.
pub fn volume_access_modes(o: &Value) -> Value {
    access_modes_at(o, "/spec/accessModes")
}

fn access_modes_at(o: &Value, pointer: &str) -> Value {
    let modes: Vec<&str> = [
        "ReadWriteOnce",
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOncePod",
    ]
    .into_iter()
    .zip(["RWO", "ROX", "RWX", "RWOP"])
    .filter(|(mode, _)| list(o, pointer).any(|m| m == mode))
    .map(|(_, short)| short)
    .collect();
    json!(modes.join(","))
}

/// A volume's capacity (`spec.capacity.storage`), `0` when it has none.
pub fn volume_capacity(o: &Value) -> Value {
    match text(o, "/spec/capacity/storage") {
        "" => json!("0"),
        storage => json!(storage),
    }
}

/// The claim a volume is bound to, `<namespace>/<name>`, or empty.
pub fn volume_claim(o: &Value) -> Value {
    if o.pointer("/spec/claimRef").is_none_or(Value::is_null) {
        return json!("");
    }
    json!(format!(
        "{}/{}",
        text(o, "/spec/claimRef/namespace"),
        text(o, "/spec/claimRef/name")
    ))
}

/// A StorageClass's name, followed by ` (default)` when it is the cluster's default class.
pub fn storage_class_name(o: &Value) -> Value {
    let annotation = |key: &str| text(o, &format!("/metadata/annotations/{key}")) == "true";
    let name = text(o, "/metadata/name");
    if annotation("storageclass.kubernetes.io~1is-default-class")
        || annotation("storageclass.beta.kubernetes.io~1is-default-class")
    {
        json!(format!("{name} (default)"))
    } else {
        json!(name)
    }
}

/// A StorageClass's reclaim policy (`Delete` when unset).
pub fn reclaim_policy(o: &Value) -> Value {
    json!(match text(o, "/reclaimPolicy") {
        "" => "Delete",
        policy => policy,
    })
}

/// A StorageClass's volume binding mode (`Immediate` when unset).
pub fn volume_binding_mode(o: &Value) -> Value {
    json!(match text(o, "/volumeBindingMode") {
        "" => "Immediate",
        mode => mode,
    })
}

/// Whether a StorageClass allows volume expansion (false when unset).
pub fn allow_volume_expansion(o: &Value) -> Value {
    json!(o.get("allowVolumeExpansion").and_then(Value::as_bool) == Some(true))
}

/// `formatEndpoints`: every `address:port` of an Endpoints object's subsets (the bare address of
/// a subset without ports), three at most, `<none>` for an object without subsets.
pub fn endpoints_addresses(o: &Value) -> Value {
    if list(o, "/subsets").next().is_none() {
        return json!("<none>");
    }
    let mut found = Vec::new();
    for subset in list(o, "/subsets") {
        let addresses: Vec<&str> = list(subset, "/addresses").map(|a| text(a, "/ip")).collect();
        let ports: Vec<i64> = list(subset, "/ports")
            .filter_map(|p| p.get("port").and_then(Value::as_i64))
            .collect();
        if ports.is_empty() {
            found.extend(addresses.iter().map(|a| a.to_string()));
            continue;
        }
        for port in ports {
            found.extend(addresses.iter().map(|a| host_port(a, port)));
        }
    }
    json!(at_most(&found, 3, ","))
}

/// Go's `net.JoinHostPort`: an IPv6 address in brackets.
fn host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `formatDiscoveryPorts`: an EndpointSlice's port numbers (a port's name when it has no
/// number, `*` when neither), three at most, `<unset>` for none.
pub fn slice_ports(o: &Value) -> Value {
    let ports: Vec<String> = list(o, "/ports")
        .map(
            |p| match (p.get("port").and_then(Value::as_i64), text(p, "/name")) {
                (Some(port), _) => port.to_string(),
                (None, "") => "*".to_string(),
                (None, name) => name.to_string(),
            },
        )
        .collect();
    unset_when_empty(at_most(&ports, 3, ","))
}

/// `formatDiscoveryEndpoints`: every address of an EndpointSlice's endpoints, three at most,
/// `<unset>` for none.
pub fn slice_endpoints(o: &Value) -> Value {
    let addresses: Vec<String> = list(o, "/endpoints")
        .flat_map(|e| list(e, "/addresses"))
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    unset_when_empty(at_most(&addresses, 3, ","))
}

fn unset_when_empty(text: String) -> Value {
    json!(if text.is_empty() {
        "<unset>".into()
    } else {
        text
    })
}

/// A ValidatingAdmissionPolicy's parameter kind (`<apiVersion>/<kind>`), `<unset>` without.
pub fn param_kind(o: &Value) -> Value {
    if o.pointer("/spec/paramKind").is_none_or(Value::is_null) {
        return json!("<unset>");
    }
    json!(format!(
        "{}/{}",
        text(o, "/spec/paramKind/apiVersion"),
        text(o, "/spec/paramKind/kind")
    ))
}

/// A binding's parameter reference: `<namespace>/<name>` (`*/<name>` in any namespace), its
/// selector, or `<unset>`.
pub fn param_ref(o: &Value) -> Value {
    let Some(reference) = o.pointer("/spec/paramRef").filter(|r| !r.is_null()) else {
        return json!("<unset>");
    };
    match (text(reference, "/namespace"), text(reference, "/name")) {
        (_, "") => match reference.get("selector") {
            Some(selector) => json!(crate::scale::format_selector(selector)),
            None => json!("<unset>"),
        },
        ("", name) => json!(format!("*/{name}")),
        (namespace, name) => json!(format!("{namespace}/{name}")),
    }
}

/// A claim's or volume's storage class (`GetPersistentVolumeClaimClass`,
/// `GetPersistentVolumeClass`): the beta annotation when it is set, else
/// `spec.storageClassName`, else empty.
pub fn claim_class(o: &Value) -> Value {
    let annotation = o
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str);
    json!(annotation.unwrap_or_else(|| text(o, "/spec/storageClassName")))
}

/// `printAPIService`'s backend: `Local`, or `<namespace>/<name>` of the Service.
pub fn api_service_backend(o: &Value) -> Value {
    match o.pointer("/spec/service") {
        Some(service) if service.is_object() => json!(format!(
            "{}/{}",
            text(service, "/namespace"),
            text(service, "/name")
        )),
        _ => json!("Local"),
    }
}

/// `printAPIService`'s availability: the `Available` condition's status, with its reason when
/// it is not `True`; `Unknown` without the condition.
pub fn api_service_available(o: &Value) -> Value {
    match list(o, "/status/conditions").find(|c| c["type"] == "Available") {
        Some(c) if c["status"] == "True" => json!("True"),
        Some(c) => json!(format!("{} ({})", text(c, "/status"), text(c, "/reason"))),
        None => json!("Unknown"),
    }
}

/// `printFlowSchema`'s MissingPL: the `Dangling` condition's status, `?` without it.
pub fn flow_schema_dangling(o: &Value) -> Value {
    list(o, "/status/conditions")
        .find(|c| c["type"] == "Dangling")
        .map_or(json!("?"), |c| json!(text(c, "/status")))
}

/// A value of a limited priority level at `pointer` (below `spec.limited`), `<none>` for an
/// exempt level or one that does not queue.
fn limited_value(o: &Value, pointer: &str) -> Value {
    o.pointer(&format!("/spec/limited{pointer}"))
        .filter(|v| !v.is_null())
        .cloned()
        .unwrap_or_else(|| json!("<none>"))
}

/// `printPriorityLevelConfiguration`'s nominal concurrency shares.
pub fn priority_level_shares(o: &Value) -> Value {
    match o.pointer("/spec/limited") {
        Some(limited) if limited.is_object() => limited
            .get("nominalConcurrencyShares")
            .cloned()
            .unwrap_or(json!(0)),
        _ => json!("<none>"),
    }
}

/// `printPriorityLevelConfiguration`'s queue count.
pub fn priority_level_queues(o: &Value) -> Value {
    limited_value(o, "/limitResponse/queuing/queues")
}

/// `printPriorityLevelConfiguration`'s hand size.
pub fn priority_level_hand_size(o: &Value) -> Value {
    limited_value(o, "/limitResponse/queuing/handSize")
}

/// `printPriorityLevelConfiguration`'s queue length limit.
pub fn priority_level_queue_length(o: &Value) -> Value {
    limited_value(o, "/limitResponse/queuing/queueLengthLimit")
}

/// `printServiceCIDR`'s CIDRs, comma-separated.
pub fn service_cidrs(o: &Value) -> Value {
    let cidrs: Vec<&str> = list(o, "/spec/cidrs").filter_map(Value::as_str).collect();
    json!(cidrs.join(","))
}

/// `printIPAddress`'s parent: `<resource>[.<group>][/<namespace>]/<name>`, `<none>` without one.
pub fn ip_address_parent(o: &Value) -> Value {
    let Some(parent) = o.pointer("/spec/parentRef").filter(|p| p.is_object()) else {
        return json!("<none>");
    };
    let mut out = text(parent, "/resource").to_string();
    let group = text(parent, "/group");
    if !group.is_empty() {
        out = format!("{out}.{group}");
    }
    out = out.to_lowercase();
    let namespace = text(parent, "/namespace");
    if !namespace.is_empty() {
        out = format!("{out}/{namespace}");
    }
    json!(format!("{out}/{}", text(parent, "/name")))
}

/// The time an Event was first seen (`firstTimestamp`, else `eventTime`) or last seen (its
/// series' last observation, else `lastTimestamp`, else the first), as `printEvent` picks them.
pub fn event_seen(event: &Value, last: bool) -> Option<&Value> {
    let set = |field: &str| event.get(field).filter(|t| !t.is_null());
    let first = set("firstTimestamp").or_else(|| set("eventTime"));
    if !last {
        return first;
    }
    match event.get("series").filter(|s| !s.is_null()) {
        Some(series) => series.get("lastObservedTime"),
        None => set("lastTimestamp").or(first),
    }
}

/// `formatEventSource`: the source's component (else the reporting controller), and its host
/// (else the reporting instance) after a comma.
pub fn event_source(event: &Value) -> Value {
    let text = |pointer: &str| event.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let either = |a: &'static str, b: &'static str| match text(a) {
        "" => text(b),
        first => first,
    };
    let component = either("/source/component", "/reportingComponent");
    json!(match either("/source/host", "/reportingInstance") {
        "" => component.to_string(),
        instance => format!("{component}, {instance}"),
    })
}

/// An Event's message without surrounding blanks (empty when it has none).
pub fn event_message(event: &Value) -> Value {
    json!(
        event
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
    )
}

/// How often an Event happened: its series' count, else `count`, else once.
pub fn event_count(event: &Value) -> Value {
    let count = match event.get("series").filter(|s| !s.is_null()) {
        Some(series) => series.get("count").and_then(Value::as_i64).unwrap_or(0),
        None => event.get("count").and_then(Value::as_i64).unwrap_or(0),
    };
    json!(
        if count == 0 && event.get("series").is_none_or(Value::is_null) {
            1
        } else {
            count
        }
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_services_external_ip_follows_its_type() {
        let service = |spec: Value, status: Value| json!({"spec": spec, "status": status});
        let none = json!({});
        assert_eq!(
            service_external_ip(&service(json!({"type": "ClusterIP"}), none.clone())),
            "<none>"
        );
        assert_eq!(
            service_external_ip(&service(
                json!({"type": "NodePort", "externalIPs": ["1.2.3.4", "5.6.7.8"]}),
                none.clone()
            )),
            "1.2.3.4,5.6.7.8"
        );
        assert_eq!(
            service_external_ip(&service(json!({"type": "LoadBalancer"}), none.clone())),
            "<pending>"
        );
        let ingress = json!({"loadBalancer": {"ingress": [
            {"ip": "10.0.0.2"}, {"hostname": "lb.example.com"}, {"ip": "10.0.0.2"}]}});
        assert_eq!(
            service_external_ip(&service(
                json!({"type": "LoadBalancer", "externalIPs": ["9.9.9.9"]}),
                ingress
            )),
            "10.0.0.2,lb.example.com,9.9.9.9"
        );
        assert_eq!(
            service_external_ip(&service(
                json!({"type": "ExternalName", "externalName": "example.com"}),
                none
            )),
            "example.com"
        );
    }

    #[test]
    fn an_ip_address_names_its_parent_service() {
        let ip = json!({"spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "kubernetes"}}});
        assert_eq!(ip_address_parent(&ip), "services/default/kubernetes");
        assert_eq!(ip_address_parent(&json!({})), "<none>");
    }

    #[test]
    fn an_exempt_priority_level_has_no_shares_or_queues() {
        let exempt = json!({"spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0}}});
        assert_eq!(priority_level_shares(&exempt), "<none>");
        assert_eq!(priority_level_queues(&exempt), "<none>");
        let limited = json!({"spec": {"limited": {"nominalConcurrencyShares": 20,
            "limitResponse": {"queuing": {"queues": 128}}}}});
        assert_eq!(priority_level_shares(&limited), 20);
        assert_eq!(priority_level_queues(&limited), 128);
    }

    #[test]
    fn an_unavailable_api_service_shows_why() {
        let unavailable = json!({"status": {"conditions": [
            {"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        assert_eq!(
            api_service_available(&unavailable),
            "False (MissingEndpoints)"
        );
        assert_eq!(api_service_available(&json!({})), "Unknown");
    }
    use super::*;

    #[test]
    fn an_unmeasured_cpu_target_reads_unknown_of_its_percentage() {
        let hpa = json!({"spec": {"metrics": [{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}]},
            "status": {"currentMetrics": null}});
        assert_eq!(autoscaler_targets(&hpa), "cpu: <unknown>/80%");
    }

    #[test]
    fn more_than_two_metrics_are_counted() {
        let metric = json!({"type": "Pods", "pods": {"target": {"averageValue": "1k"}}});
        let hpa = json!({"spec": {"metrics": [metric, metric, metric]}});
        assert_eq!(
            autoscaler_targets(&hpa),
            "<unknown>/1k, <unknown>/1k + 1 more..."
        );
    }

    #[test]
    fn ingress_hosts_without_any_host_are_a_star() {
        assert_eq!(ingress_hosts(&json!({"spec": {"rules": [{}]}})), "*");
        let hosts = json!({"spec": {"rules": [{"host": "a"}, {"host": "b"}]}});
        assert_eq!(ingress_hosts(&hosts), "a,b");
    }

    #[test]
    fn an_empty_pod_selector_is_none() {
        assert_eq!(
            pod_selector(&json!({"spec": {"podSelector": {}}})),
            "<none>"
        );
    }

    #[test]
    fn bound_access_modes_are_abbreviated_in_order() {
        let claim = json!({"status": {"accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
        assert_eq!(access_modes(&claim), "RWO,RWX");
    }
    #[test]
    fn endpoints_show_three_address_port_pairs_and_count_the_rest() {
        let ep = json!({"subsets": [{"addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}],
            "ports": [{"port": 80}, {"port": 443}]}]});
        assert_eq!(
            endpoints_addresses(&ep),
            "10.1.0.1:80,10.1.0.2:80,10.1.0.1:443 + 1 more..."
        );
        assert_eq!(endpoints_addresses(&json!({})), "<none>");
        let v6 = json!({"subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]});
        assert_eq!(endpoints_addresses(&v6), "[fd00::1]:80");
    }

    #[test]
    fn an_endpoint_slice_without_ports_shows_them_unset() {
        let slice = json!({"endpoints": [{"addresses": ["10.1.0.3"]}]});
        assert_eq!(slice_ports(&slice), "<unset>");
        assert_eq!(slice_endpoints(&slice), "10.1.0.3");
    }

    #[test]
    fn the_default_storage_class_is_marked_after_its_name() {
        let class = json!({"metadata": {"name": "fast",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}});
        assert_eq!(storage_class_name(&class), "fast (default)");
        assert_eq!(
            storage_class_name(&json!({"metadata": {"name": "slow"}})),
            "slow"
        );
    }
}
