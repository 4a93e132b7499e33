//! The spec's example manifests (section 7) as typed objects, and their Compiled* forms, for
//! the renderer tests.

use crate::api::*;

fn docs() -> Vec<serde_json::Value> {
    let text = include_str!("../../tests/fixtures/examples.yaml");
    kcp_core::parse_manifests("examples", text)
        .unwrap()
        .iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

fn doc<T: serde::de::DeserializeOwned>(index: usize) -> T {
    serde_json::from_value(docs()[index].clone()).unwrap()
}

pub(crate) fn root_shard() -> RootShard {
    doc(0)
}
pub(crate) fn shard() -> Shard {
    doc(1)
}
pub(crate) fn front_proxy() -> FrontProxy {
    doc(2)
}
pub(crate) fn cache_server() -> CacheServer {
    doc(3)
}
pub(crate) fn kubeconfig() -> Kubeconfig {
    doc(4)
}
pub(crate) fn virtual_workspace() -> VirtualWorkspace {
    doc(5)
}

fn compiled_meta(name: &str) -> kube::api::ObjectMeta {
    kube::api::ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some("kcp".to_owned()),
        ..Default::default()
    }
}

pub(crate) fn named_root(rs: &RootShard) -> NamedRootShardSpec {
    NamedRootShardSpec {
        name: "root".into(),
        spec: rs.spec.clone(),
    }
}

pub(crate) fn compiled_root_shard(rs: &RootShard) -> CompiledRootShard {
    CompiledRootShard {
        metadata: compiled_meta("root"),
        spec: CompiledRootShardSpec {
            root_shard: rs.spec.clone(),
            virtual_workspace: None,
            shards: vec!["alpha".into()],
            required_secrets: Vec::new(),
        },
        status: None,
    }
}

pub(crate) fn compiled_shard(s: &Shard, rs: &RootShard) -> CompiledShard {
    CompiledShard {
        metadata: compiled_meta("alpha"),
        spec: CompiledShardSpec {
            shard: s.spec.clone(),
            root_shard: named_root(rs),
            virtual_workspace: None,
            shards: vec!["alpha".into()],
            required_secrets: Vec::new(),
        },
        status: None,
    }
}

pub(crate) fn compiled_front_proxy(fp: &FrontProxy, rs: &RootShard) -> CompiledFrontProxy {
    CompiledFrontProxy {
        metadata: compiled_meta("edge"),
        spec: CompiledFrontProxySpec {
            front_proxy: fp.spec.clone(),
            root_shard: named_root(rs),
            shards: vec!["alpha".into()],
            required_secrets: Vec::new(),
        },
        status: None,
    }
}

pub(crate) fn compiled_cache_server(cs: &CacheServer) -> CompiledCacheServer {
    CompiledCacheServer {
        metadata: compiled_meta("cache"),
        spec: CompiledCacheServerSpec {
            cache_server: cs.spec.clone(),
            required_secrets: Vec::new(),
        },
        status: None,
    }
}

pub(crate) fn compiled_virtual_workspace(
    vw: &VirtualWorkspace,
    rs: &RootShard,
) -> CompiledVirtualWorkspace {
    CompiledVirtualWorkspace {
        metadata: compiled_meta("vw-root"),
        spec: CompiledVirtualWorkspaceSpec {
            virtual_workspace: vw.spec.clone(),
            root_shard: named_root(rs),
            shard: None,
            required_secrets: Vec::new(),
        },
        status: None,
    }
}

/// A parsed YAML fragment of type `T` (for variations).
pub(crate) fn yaml<T: serde::de::DeserializeOwned>(text: &str) -> T {
    serde_saphyr::from_str(text).unwrap()
}
