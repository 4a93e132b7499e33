//! Services of the workloads: ClusterIP, `https` ports with appProtocol `https`, the workload
//! labels as selector, then the user's serviceTemplate (type, clusterIP, metadata merged with
//! the operator's keys winning).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::ServiceTemplate;
use crate::render::{merge_maps, meta};

/// A TCP port `name` -> `target`, appProtocol `https`.
pub fn https_port(name: &str, port: i32, target: i32) -> ServicePort {
    ServicePort {
        name: Some(name.to_owned()),
        protocol: Some("TCP".to_owned()),
        port,
        target_port: Some(IntOrString::Int(target)),
        app_protocol: Some("https".to_owned()),
        ..ServicePort::default()
    }
}

/// A workload Service.
pub fn workload_service(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    ports: Vec<ServicePort>,
    template: Option<&ServiceTemplate>,
) -> Service {
    let mut service = Service {
        metadata: meta(name, namespace, labels.clone()),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            ports: Some(ports),
            selector: Some(labels),
            ..ServiceSpec::default()
        }),
        status: None,
    };
    let Some(t) = template else { return service };
    if let Some(m) = &t.metadata {
        service.metadata.annotations =
            merge_maps(service.metadata.annotations.take(), &m.annotations);
        service.metadata.labels = merge_maps(service.metadata.labels.take(), &m.labels);
    }
    if let (Some(s), Some(spec)) = (&t.spec, service.spec.as_mut()) {
        if !s.type_.is_empty() {
            spec.type_ = Some(s.type_.clone());
        }
        if !s.cluster_ip.is_empty() {
            spec.cluster_ip = Some(s.cluster_ip.clone());
        }
    }
    service
}
