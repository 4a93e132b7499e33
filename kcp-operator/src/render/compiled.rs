//! The Compiled* objects the config group writes (spec section 2.9): same name and namespace
//! as the source, its labels and annotations copied, identity labels added, and one
//! `operator.kcp.io/cert-<name>-revision` annotation per captured Certificate, so a renewal
//! changes the object and the workload group rolls the Deployment.

use std::collections::BTreeMap;

use kube::api::ObjectMeta;

use crate::api::*;
use crate::render::names;

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
    CompiledRootShard {
        metadata: compiled_meta(
            &rs.metadata,
            &[(names::ROOT_SHARD_LABEL, name(&rs.metadata))],
            revisions,
        ),
        spec: CompiledRootShardSpec {
            root_shard: rs.spec.clone(),
            virtual_workspace,
            shards,
        },
        status: None,
    }
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
    CompiledShard {
        metadata: compiled_meta(&shard.metadata, &identity, revisions),
        spec: CompiledShardSpec {
            shard: shard.spec.clone(),
            root_shard: NamedRootShardSpec {
                name: name(&rs.metadata).to_owned(),
                spec: rs.spec.clone(),
            },
            virtual_workspace,
            shards,
        },
        status: None,
    }
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
    CompiledFrontProxy {
        metadata: compiled_meta(&fp.metadata, &identity, revisions),
        spec: CompiledFrontProxySpec {
            front_proxy: fp.spec.clone(),
            root_shard: NamedRootShardSpec {
                name: name(&rs.metadata).to_owned(),
                spec: rs.spec.clone(),
            },
            shards,
        },
        status: None,
    }
}

/// CompiledCacheServer `<cs>`.
pub fn render_compiled_cache_server(
    cs: &CacheServer,
    revisions: &BTreeMap<String, i64>,
) -> CompiledCacheServer {
    CompiledCacheServer {
        metadata: compiled_meta(
            &cs.metadata,
            &[(names::CACHE_SERVER_LABEL, name(&cs.metadata))],
            revisions,
        ),
        spec: CompiledCacheServerSpec {
            cache_server: cs.spec.clone(),
        },
        status: None,
    }
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
    CompiledVirtualWorkspace {
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
        },
        status: None,
    }
}
