//! The names of a RootShard's Shards from the Shard controller's watch cache: the RootShard,
//! Shard and FrontProxy passes each need them, and listing every Shard of a namespace holding
//! many installations on every pass costs the API server O(installations) each time. Once the
//! caches synced, the controller hands the store to the pass ([`super::PassContext::shards`])
//! and [`shard_names_in`] reads the names straight from it (a stale answer is harmless: every
//! Shard event wakes its RootShard and FrontProxies again); before that, the pass lists.

use kube::runtime::reflector::Store;

use crate::api::Shard;

/// The sorted names of the Shards of root shard `rs` in `namespace`, from `store`.
pub fn shard_names_in(store: &Store<Shard>, namespace: &str, rs: &str) -> Vec<String> {
    let mut names: Vec<String> = store
        .state_filter(|s| {
            s.metadata.namespace.as_deref() == Some(namespace)
                && s.spec.root_shard.name() == Some(rs)
        })
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use kube::runtime::{reflector, watcher};

    use super::*;
    use crate::api::ShardSpec;

    fn shard(name: &str) -> Shard {
        let mut s = Shard::new(name, ShardSpec::default());
        s.metadata.namespace = Some("kcp".into());
        s
    }

    #[tokio::test]
    async fn shard_names_come_from_the_store() {
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        let mut alpha = shard("alpha");
        alpha.spec.root_shard.reference = Some(k8s_openapi::api::core::v1::LocalObjectReference {
            name: "root".into(),
        });
        writer.apply_watcher_event(&watcher::Event::InitApply(alpha));
        writer.apply_watcher_event(&watcher::Event::InitApply(shard("beta")));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        assert_eq!(
            shard_names_in(&store, "kcp", "root"),
            vec!["alpha".to_owned()]
        );
    }
}
