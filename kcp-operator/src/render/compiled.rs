//! The Compiled* objects the config group writes (spec section 2.9): same name and namespace
//! as the source, its labels and annotations copied, identity labels added, and one
//! `operator.kcp.io/cert-<name>-revision` annotation per captured Certificate, so a renewal
//! changes the object and the workload group rolls the Deployment.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::ObjectMeta;

use crate::api::*;
use crate::render::cacheserver::render_cache_server_deployment;
use crate::render::frontproxy::{
    ProxyInput, proxy_dynamic_kubeconfig_name, render_proxy_deployment,
};
use crate::render::names;
use crate::render::revisions::{MountKind, referenced_objects};
use crate::render::rootshard::render_root_shard_deployment;
use crate::render::shard::render_shard_deployment;
use crate::render::virtualworkspace::render_virtual_workspace_deployment;

/// The revision annotation of a Certificate.
pub fn revision_annotation(certificate: &str) -> String {
    format!("operator.kcp.io/cert-{certificate}-revision")
}

/// Metadata of a Compiled* object: the source's labels and annotations, the identity labels,
/// the certificate revision annotations.
pub fn compiled_meta(
    source: &ObjectMeta,
    identity: &[(&str, &str)],
    revisions: &BTreeMap<String, i64>,
) -> ObjectMeta {
    let mut labels = source.labels.clone().unwrap_or_default();
    labels.extend(
        identity
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let mut annotations = source.annotations.clone().unwrap_or_default();
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    annotations.extend(
        revisions
            .iter()
            .map(|(cert, rev)| (revision_annotation(cert), rev.to_string())),
    );
    ObjectMeta {
        name: source.name.clone(),
        namespace: source.namespace.clone(),
        labels: Some(labels),
        annotations: (!annotations.is_empty()).then_some(annotations),
        ..ObjectMeta::default()
    }
}

fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

/// CompiledRootShard `<rs>`: the RootShard spec, its external VirtualWorkspace and its shards.
pub fn render_compiled_root_shard(
    rs: &RootShard,
    virtual_workspace: Option<NamedVirtualWorkspaceSpec>,
    shards: Vec<String>,
    revisions: &BTreeMap<String, i64>,
) -> CompiledRootShard {
    let mut compiled = CompiledRootShard {
        metadata: compiled_meta(
            &rs.metadata,
            &[(names::ROOT_SHARD_LABEL, name(&rs.metadata))],
            revisions,
        ),
        spec: CompiledRootShardSpec {
            root_shard: rs.spec.clone(),
            virtual_workspace,
            shards,
            required_secrets: Vec::new(),
        },
        status: None,
    };
    compiled.spec.required_secrets = required_secrets_of_root_shard(&compiled);
    compiled
}

/// CompiledShard `<s>`.
pub fn render_compiled_shard(
    shard: &Shard,
    rs: &RootShard,
    virtual_workspace: Option<NamedVirtualWorkspaceSpec>,
    shards: Vec<String>,
    revisions: &BTreeMap<String, i64>,
) -> CompiledShard {
    let identity = [
        (names::SHARD_LABEL, name(&shard.metadata)),
        (names::ROOT_SHARD_LABEL, name(&rs.metadata)),
    ];
    let mut compiled = CompiledShard {
        metadata: compiled_meta(&shard.metadata, &identity, revisions),
        spec: CompiledShardSpec {
            shard: shard.spec.clone(),
            root_shard: NamedRootShardSpec {
                name: name(&rs.metadata).to_owned(),
                spec: rs.spec.clone(),
            },
            virtual_workspace,
            shards,
            required_secrets: Vec::new(),
        },
        status: None,
    };
    compiled.spec.required_secrets = required_secrets_of_shard(&compiled);
    compiled
}

/// CompiledFrontProxy `<fp>`.
pub fn render_compiled_front_proxy(
    fp: &FrontProxy,
    rs: &RootShard,
    shards: Vec<String>,
    revisions: &BTreeMap<String, i64>,
) -> CompiledFrontProxy {
    let identity = [
        (names::FRONT_PROXY_LABEL, name(&fp.metadata)),
        (names::ROOT_SHARD_LABEL, name(&rs.metadata)),
    ];
    let mut compiled = CompiledFrontProxy {
        metadata: compiled_meta(&fp.metadata, &identity, revisions),
        spec: CompiledFrontProxySpec {
            front_proxy: fp.spec.clone(),
            root_shard: NamedRootShardSpec {
                name: name(&rs.metadata).to_owned(),
                spec: rs.spec.clone(),
            },
            shards,
            required_secrets: Vec::new(),
        },
        status: None,
    };
    compiled.spec.required_secrets = required_secrets_of_front_proxy(&compiled);
    compiled
}

/// CompiledCacheServer `<cs>`.
pub fn render_compiled_cache_server(
    cs: &CacheServer,
    revisions: &BTreeMap<String, i64>,
) -> CompiledCacheServer {
    let mut compiled = CompiledCacheServer {
        metadata: compiled_meta(
            &cs.metadata,
            &[(names::CACHE_SERVER_LABEL, name(&cs.metadata))],
            revisions,
        ),
        spec: CompiledCacheServerSpec {
            cache_server: cs.spec.clone(),
            required_secrets: Vec::new(),
        },
        status: None,
    };
    compiled.spec.required_secrets = required_secrets_of_cache_server(&compiled);
    compiled
}

/// CompiledVirtualWorkspace `<vw>`: the VirtualWorkspace spec, its RootShard and (for a shard
/// target) its Shard.
pub fn render_compiled_virtual_workspace(
    vw: &VirtualWorkspace,
    rs: &RootShard,
    shard: Option<&Shard>,
    revisions: &BTreeMap<String, i64>,
) -> CompiledVirtualWorkspace {
    let identity = [
        (names::VIRTUAL_WORKSPACE_LABEL, name(&vw.metadata)),
        (names::ROOT_SHARD_LABEL, name(&rs.metadata)),
    ];
    let mut compiled = CompiledVirtualWorkspace {
        metadata: compiled_meta(&vw.metadata, &identity, revisions),
        spec: CompiledVirtualWorkspaceSpec {
            virtual_workspace: vw.spec.clone(),
            root_shard: NamedRootShardSpec {
                name: name(&rs.metadata).to_owned(),
                spec: rs.spec.clone(),
            },
            shard: shard.map(|s| NamedShardSpec {
                name: name(&s.metadata).to_owned(),
                spec: s.spec.clone(),
            }),
            required_secrets: Vec::new(),
        },
        status: None,
    };
    compiled.spec.required_secrets = required_secrets_of_virtual_workspace(&compiled);
    compiled
}

/// The Secrets `deployments` mount, except `own` (those the workload group writes itself),
/// sorted and unique.
fn mounted_secrets(deployments: &[Deployment], own: &[String]) -> Vec<String> {
    let mut out: Vec<String> = deployments
        .iter()
        .flat_map(referenced_objects)
        .filter(|(kind, name)| *kind == MountKind::Secret && !own.contains(name))
        .map(|(_, name)| name)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The Secrets a root shard's workload needs: those of `<rs>-kcp` and of the internal proxy
/// `<rs>-proxy` (whose dynamic kubeconfig the workload group writes itself).
pub fn required_secrets_of_root_shard(crs: &CompiledRootShard) -> Vec<String> {
    let proxy = ProxyInput::internal(crs);
    mounted_secrets(
        &[
            render_root_shard_deployment(crs),
            render_proxy_deployment(&proxy),
        ],
        &[proxy_dynamic_kubeconfig_name(&proxy)],
    )
}

/// The Secrets a shard's workload `<s>-shard-kcp` needs.
pub fn required_secrets_of_shard(cs: &CompiledShard) -> Vec<String> {
    mounted_secrets(&[render_shard_deployment(cs)], &[])
}

/// The Secrets a front-proxy's workload `<fp>-front-proxy` needs (its dynamic kubeconfig is
/// written by the workload group).
pub fn required_secrets_of_front_proxy(cfp: &CompiledFrontProxy) -> Vec<String> {
    let proxy = ProxyInput::front_proxy(cfp);
    mounted_secrets(
        &[render_proxy_deployment(&proxy)],
        &[proxy_dynamic_kubeconfig_name(&proxy)],
    )
}

/// The Secrets a cache server's workload `<cs>-cache-server` needs.
pub fn required_secrets_of_cache_server(ccs: &CompiledCacheServer) -> Vec<String> {
    mounted_secrets(&[render_cache_server_deployment(ccs)], &[])
}

/// The Secrets a virtual workspace server's workload `<vw>-virtual-workspace` needs.
pub fn required_secrets_of_virtual_workspace(cvw: &CompiledVirtualWorkspace) -> Vec<String> {
    mounted_secrets(&[render_virtual_workspace_deployment(cvw)], &[])
}

/// A Compiled* object's required Secrets: its `spec.requiredSecrets`, or, for an object
/// written without the list (by an older config side), the ones derived from its spec.
pub trait RequiredSecrets {
    /// The names of the required Secrets in the object's namespace.
    fn required_secrets(&self) -> Vec<String>;
}

macro_rules! required_secrets {
    ($($kind:ty => $derive:ident),* $(,)?) => {$(
        impl RequiredSecrets for $kind {
            fn required_secrets(&self) -> Vec<String> {
                if self.spec.required_secrets.is_empty() {
                    $derive(self)
                } else {
                    self.spec.required_secrets.clone()
                }
            }
        }
    )*};
}

required_secrets!(
    CompiledRootShard => required_secrets_of_root_shard,
    CompiledShard => required_secrets_of_shard,
    CompiledFrontProxy => required_secrets_of_front_proxy,
    CompiledCacheServer => required_secrets_of_cache_server,
    CompiledVirtualWorkspace => required_secrets_of_virtual_workspace,
);
