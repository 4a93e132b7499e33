//! Stopping a `kube::runtime::Controller` that may never have synced its cache.
//!
//! `Controller::graceful_shutdown_on` stops the watches and then waits for the reconciles in
//! flight. But kube-runtime's runner holds every reconcile until the primary store is ready,
//! and while it waits it also waits through the shutdown: if the first list failed (a 500, a
//! dropped connection) and the retry had not happened yet when the stop came, the watch that
//! would make the store ready is already stopped, and `run` never ends. [`drain_controller`] ends it
//! instead: a controller whose cache was not synced at the stop has started no reconcile,
//! so there is nothing to wait for.

use std::future::Future;
use std::hash::Hash;

use futures::FutureExt;
use kube::Resource;
use kube::runtime::reflector::Store;
use tokio_util::sync::CancellationToken;

/// Runs `controller` (a `Controller::run(..).for_each(..)` future whose graceful shutdown is
/// `stop`) to its end; once `stop` is cancelled, returns at once if `store` (the controller's
/// own store) never synced, since the controller would then wait forever (see the module docs).
pub async fn drain_controller<K>(
    controller: impl Future<Output = ()>,
    store: Store<K>,
    stop: CancellationToken,
) where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    let never_synced = async move {
        stop.cancelled().await;
        // The watches stop with `stop`, so readiness cannot change any more: look once.
        if store.wait_until_ready().now_or_never().is_some() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = controller => {}
        () = never_synced => {
            tracing::debug!("stopped before the cache synced: no reconcile to wait for");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::{reflector, watcher};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_controller_stopped_before_its_cache_synced_is_not_waited_for() {
        let (store, _writer) = reflector::store::<ConfigMap>();
        let stop = CancellationToken::new();
        stop.cancel();
        let stuck = std::future::pending::<()>();
        tokio::time::timeout(Duration::from_secs(1), drain_controller(stuck, store, stop))
            .await
            .expect("drain returns without waiting for the stuck controller");
    }

    #[tokio::test(start_paused = true)]
    async fn a_synced_controller_is_drained_to_its_end() {
        let (store, mut writer) = reflector::store::<ConfigMap>();
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let stop = CancellationToken::new();
        stop.cancel();
        let (finished_tx, finished_rx) = tokio::sync::oneshot::channel();
        let in_flight = async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let _ = finished_tx.send(());
        };
        drain_controller(in_flight, store, stop).await;
        assert!(
            finished_rx.await.is_ok(),
            "the reconcile in flight finished"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_controller_is_never_cut_short_before_the_stop() {
        let (store, _writer) = reflector::store::<ConfigMap>();
        let stop = CancellationToken::new();
        let running = tokio::spawn(drain_controller(
            std::future::pending::<()>(),
            store,
            stop.clone(),
        ));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!running.is_finished(), "drain returned before the stop");
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(1), running)
            .await
            .expect("drain returns after the stop")
            .expect("no panic");
    }
}
