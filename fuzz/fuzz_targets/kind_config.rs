//! capi-kind's kind configuration: a KindCluster (Cluster API) or KINDCluster (upstream) with
//! any spec is planned and rendered to the YAML `kind create cluster --config` reads, as a
//! reconcile does. Nothing may panic or grow without bound; a refusal names the object and
//! the field; a rendered config must parse back as YAML with the same name, node count and
//! ownership marker on every node.
#![no_main]

use capi_kind::api::{KINDCluster, KindCluster};
use capi_kind::kind_config::{OWNER_LABEL, render_kind_config};
use capi_kind::plan::{plan_capi, plan_upstream};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const IP_FAMILIES: [&str; 3] = ["ipv4", "ipv6", "dual"];
const PROXY_MODES: [&str; 4] = ["iptables", "ipvs", "nftables", "none"];
const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];

#[derive(Arbitrary, Debug)]
struct Networking {
    ip_family: Option<u8>,
    api_server_address: Option<String>,
    api_server_port: Option<i32>,
    pod_subnet: Option<String>,
    service_subnet: Option<String>,
    disable_default_cni: Option<bool>,
    kube_proxy_mode: Option<u8>,
}

#[derive(Arbitrary, Debug)]
struct Port {
    container_port: i32,
    host_port: Option<i32>,
    listen_address: Option<String>,
    protocol: Option<u8>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    upstream: bool,
    name: String,
    uid: String,
    cluster_name: Option<String>,
    kubernetes_version: Option<String>,
    node_image: Option<String>,
    control_plane_nodes: Option<u32>,
    worker_nodes: Option<u32>,
    networking: Option<Networking>,
    feature_gates: Vec<(String, bool)>,
    ports: Vec<Port>,
}

fn pick(list: &[&'static str], i: u8) -> &'static str {
    list[usize::from(i) % list.len()]
}

fn capi_spec(input: &Input) -> Value {
    let mut spec = json!({
        "featureGates": input.feature_gates.iter().map(|(k, v)| (k.clone(), json!(v)))
            .collect::<serde_json::Map<_, _>>(),
        "extraPortMappings": input.ports.iter().map(|p| json!({
            "containerPort": p.container_port, "hostPort": p.host_port,
            "listenAddress": p.listen_address,
            "protocol": p.protocol.map(|i| pick(&PROTOCOLS, i)),
        })).collect::<Vec<_>>(),
    });
    let fields = [
        ("clusterName", json!(input.cluster_name)),
        ("kubernetesVersion", json!(input.kubernetes_version)),
        ("nodeImage", json!(input.node_image)),
        ("controlPlaneNodes", json!(input.control_plane_nodes)),
        ("workerNodes", json!(input.worker_nodes)),
    ];
    for (key, value) in fields {
        if !value.is_null() {
            spec[key] = value;
        }
    }
    if let Some(n) = &input.networking {
        spec["networking"] = json!({
            "ipFamily": n.ip_family.map(|i| pick(&IP_FAMILIES, i)),
            "apiServerAddress": n.api_server_address, "apiServerPort": n.api_server_port,
            "podSubnet": n.pod_subnet, "serviceSubnet": n.service_subnet,
            "disableDefaultCNI": n.disable_default_cni,
            "kubeProxyMode": n.kube_proxy_mode.map(|i| pick(&PROXY_MODES, i)),
        });
    }
    spec
}

fuzz_target!(|input: Input| {
    if input.ports.len() > 8 || input.feature_gates.len() > 8 {
        return;
    }
    let metadata = json!({"name": input.name, "namespace": "team-a", "uid": input.uid});
    let plan = if input.upstream {
        let object = json!({
            "apiVersion": "infrastructure.cluster-k8s.io/v1alpha1", "kind": "KINDCluster",
            "metadata": metadata,
            "spec": {"clusterName": input.cluster_name.clone().unwrap_or_default(),
                     "kubernetesVersion": input.kubernetes_version.clone().unwrap_or_default()},
        });
        let object: KINDCluster = match serde_json::from_value(object) {
            Ok(o) => o,
            Err(err) => panic!("the generated KINDCluster does not deserialize: {err}"),
        };
        plan_upstream(&object)
    } else {
        let object = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "KindCluster",
            "metadata": metadata, "spec": capi_spec(&input),
        });
        let object: KindCluster = match serde_json::from_value(object) {
            Ok(o) => o,
            Err(err) => panic!("the generated KindCluster does not deserialize: {err}"),
        };
        plan_capi(&object)
    };
    let plan = match plan {
        Ok(plan) => plan,
        Err(err) => {
            let text = err.to_string();
            assert!(
                text.contains("team-a/"),
                "a refusal without its object: {text}"
            );
            return;
        }
    };
    let yaml = match render_kind_config(&plan.config) {
        Ok(yaml) => yaml,
        Err(err) => panic!("a planned config does not render: {err}"),
    };
    let parsed: Value = match serde_saphyr::from_str(&yaml) {
        Ok(v) => v,
        Err(err) => panic!("the rendered kind config does not parse back: {err}\n{yaml}"),
    };
    assert_eq!(parsed["kind"], "Cluster");
    assert_eq!(parsed["name"], json!(plan.cluster_name));
    let nodes = parsed["nodes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    assert_eq!(nodes.len(), plan.config.nodes.len());
    for node in nodes {
        assert_eq!(node["labels"][OWNER_LABEL], json!(plan.owner_uid), "{yaml}");
    }
});
