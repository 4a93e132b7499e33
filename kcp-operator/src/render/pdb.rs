//! The optional PodDisruptionBudgets of the workloads (a kcp-rs addition, upstream
//! kcp-operator#176): `policy/v1` PodDisruptionBudget named like the Deployment, in its
//! namespace, with the workload labels and the Deployment's pod labels as selector.
//!
//! Each `render_*_pdb` returns `None` when the source has no `podDisruptionBudget` or has it
//! with `enabled: false`; the workload group then deletes a budget it created earlier.

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec as PdbSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::*;
use crate::render::frontproxy::ProxyInput;
use crate::render::names::{self, Component};
use crate::render::{meta, name_ns};

/// The budget of the workload `component` of the object `instance`, when `spec` enables one:
/// `minAvailable` or `maxUnavailable` as given, `maxUnavailable: 1` when neither is.
pub fn workload_pdb(
    component: Component,
    instance: &str,
    namespace: &str,
    spec: Option<&PodDisruptionBudgetSpec>,
) -> Option<PodDisruptionBudget> {
    let spec = spec.filter(|s| s.enabled)?;
    let labels: BTreeMap<String, String> = names::resource_labels(instance, component);
    let (min_available, max_unavailable) = match (&spec.min_available, &spec.max_unavailable) {
        (None, None) => (None, Some(IntOrString::Int(1))),
        (min, max) => (min.clone(), max.clone()),
    };
    Some(PodDisruptionBudget {
        metadata: meta(
            &component.workload_name(instance),
            namespace,
            labels.clone(),
        ),
        spec: Some(PdbSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels),
                ..LabelSelector::default()
            }),
            min_available,
            max_unavailable,
            ..PdbSpec::default()
        }),
        status: None,
    })
}

/// PodDisruptionBudget `<rs>-kcp` from `spec.podDisruptionBudget` of the RootShard.
pub fn render_root_shard_pdb(crs: &CompiledRootShard) -> Option<PodDisruptionBudget> {
    let (name, ns) = name_ns(&crs.metadata);
    let spec = crs.spec.root_shard.common.pod_disruption_budget.as_ref();
    workload_pdb(Component::RootShard, name, ns, spec)
}

/// PodDisruptionBudget `<rs>-proxy` (the internal proxy) from
/// `spec.proxy.podDisruptionBudget` of the RootShard.
pub fn render_root_shard_proxy_pdb(crs: &CompiledRootShard) -> Option<PodDisruptionBudget> {
    render_proxy_pdb(&ProxyInput::internal(crs))
}

/// PodDisruptionBudget `<s>-shard-kcp` from `spec.podDisruptionBudget` of the Shard.
pub fn render_shard_pdb(cs: &CompiledShard) -> Option<PodDisruptionBudget> {
    let (name, ns) = name_ns(&cs.metadata);
    let spec = cs.spec.shard.common.pod_disruption_budget.as_ref();
    workload_pdb(Component::Shard, name, ns, spec)
}

/// PodDisruptionBudget `<fp>-front-proxy` from `spec.podDisruptionBudget` of the FrontProxy.
pub fn render_front_proxy_pdb(cfp: &CompiledFrontProxy) -> Option<PodDisruptionBudget> {
    render_proxy_pdb(&ProxyInput::front_proxy(cfp))
}

/// The budget of a proxy: the FrontProxy's, or the internal proxy's.
pub fn render_proxy_pdb(input: &ProxyInput<'_>) -> Option<PodDisruptionBudget> {
    match input.front_proxy {
        Some((name, fp)) => workload_pdb(
            Component::FrontProxy,
            name,
            input.namespace,
            fp.pod_disruption_budget.as_ref(),
        ),
        None => workload_pdb(
            Component::RootShardProxy,
            input.root_shard,
            input.namespace,
            input
                .root_shard_spec
                .proxy
                .as_ref()
                .and_then(|p| p.pod_disruption_budget.as_ref()),
        ),
    }
}

/// PodDisruptionBudget `<cs>-cache-server` from `spec.podDisruptionBudget` of the CacheServer.
pub fn render_cache_server_pdb(ccs: &CompiledCacheServer) -> Option<PodDisruptionBudget> {
    let (name, ns) = name_ns(&ccs.metadata);
    let spec = ccs.spec.cache_server.pod_disruption_budget.as_ref();
    workload_pdb(Component::CacheServer, name, ns, spec)
}

/// PodDisruptionBudget `<vw>-virtual-workspace` from `spec.podDisruptionBudget` of the
/// VirtualWorkspace.
pub fn render_virtual_workspace_pdb(cvw: &CompiledVirtualWorkspace) -> Option<PodDisruptionBudget> {
    let (name, ns) = name_ns(&cvw.metadata);
    let spec = cvw.spec.virtual_workspace.pod_disruption_budget.as_ref();
    workload_pdb(Component::VirtualWorkspace, name, ns, spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fixtures::*;

    fn enabled(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudgetSpec {
        PodDisruptionBudgetSpec {
            enabled: true,
            min_available: min,
            max_unavailable: max,
        }
    }

    #[test]
    fn no_budget_is_rendered_without_the_option_or_with_it_disabled() {
        let mut rs = root_shard();
        assert_eq!(render_root_shard_pdb(&compiled_root_shard(&rs)), None);
        rs.spec.common.pod_disruption_budget = Some(PodDisruptionBudgetSpec {
            enabled: false,
            min_available: Some(IntOrString::Int(1)),
            max_unavailable: None,
        });
        assert_eq!(render_root_shard_pdb(&compiled_root_shard(&rs)), None);
    }

    #[test]
    fn root_shard_pdb_matches_snapshot() {
        let mut rs = root_shard();
        rs.spec.common.pod_disruption_budget = Some(enabled(Some(IntOrString::Int(1)), None));
        insta::assert_yaml_snapshot!(render_root_shard_pdb(&compiled_root_shard(&rs)));
    }

    #[test]
    fn internal_proxy_pdb_matches_snapshot() {
        let mut rs = root_shard();
        rs.spec.proxy = Some(RootShardProxySpec {
            pod_disruption_budget: Some(enabled(None, None)),
            ..RootShardProxySpec::default()
        });
        insta::assert_yaml_snapshot!(render_root_shard_proxy_pdb(&compiled_root_shard(&rs)));
    }

    #[test]
    fn shard_pdb_matches_snapshot() {
        let mut s = shard();
        s.spec.common.pod_disruption_budget =
            Some(enabled(None, Some(IntOrString::String("50%".into()))));
        insta::assert_yaml_snapshot!(render_shard_pdb(&compiled_shard(&s, &root_shard())));
    }

    #[test]
    fn front_proxy_pdb_matches_snapshot() {
        let mut fp = front_proxy();
        fp.spec.pod_disruption_budget =
            Some(enabled(Some(IntOrString::String("50%".into())), None));
        let cfp = compiled_front_proxy(&fp, &root_shard());
        insta::assert_yaml_snapshot!(render_front_proxy_pdb(&cfp));
    }

    #[test]
    fn cache_server_pdb_matches_snapshot() {
        let mut cs = cache_server();
        cs.spec.pod_disruption_budget = Some(enabled(None, Some(IntOrString::Int(1))));
        insta::assert_yaml_snapshot!(render_cache_server_pdb(&compiled_cache_server(&cs)));
    }

    #[test]
    fn virtual_workspace_pdb_matches_snapshot() {
        let mut vw = virtual_workspace();
        vw.spec.pod_disruption_budget = Some(enabled(Some(IntOrString::Int(1)), None));
        let cvw = compiled_virtual_workspace(&vw, &root_shard());
        insta::assert_yaml_snapshot!(render_virtual_workspace_pdb(&cvw));
    }

    #[test]
    fn budget_without_min_or_max_allows_one_unavailable_pod() {
        let pdb = workload_pdb(Component::Shard, "s", "ns", Some(&enabled(None, None))).unwrap();
        let spec = pdb.spec.unwrap();
        assert_eq!(spec.max_unavailable, Some(IntOrString::Int(1)));
        assert_eq!(spec.min_available, None);
    }

    #[test]
    fn budget_selects_exactly_the_pods_of_its_deployment() {
        let mut rs = root_shard();
        rs.spec.common.pod_disruption_budget = Some(enabled(None, None));
        let crs = compiled_root_shard(&rs);
        let pdb = render_root_shard_pdb(&crs).unwrap();
        let dep = crate::render::rootshard::render_root_shard_deployment(&crs);
        let pod_labels = dep.spec.unwrap().template.metadata.unwrap().labels.unwrap();
        let selector = pdb.spec.unwrap().selector.unwrap().match_labels.unwrap();
        assert!(selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)));
        assert_eq!(pdb.metadata.name, dep.metadata.name);
    }
}
