//! The example controller does what its guide says, on both backends (`KCP_RS_BACKEND`): a
//! generator gets its ConfigMap and `Ready`, a change reaches the ConfigMap, an empty content
//! is refused with a Warning Event while the ConfigMap keeps the last good content, and a
//! deleted generator takes its ConfigMap with it. Each test has its own namespace and
//! controller.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace};
use kcp_core::runtime::{ControllerMetrics, ReconcileResult};
use kcp_core::typed::to_dynamic;
use kcp_core::{ObjectClient, PatchOptions};
use kcp_examples::config_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec, FINALIZER, run};
use kcp_testbed::KubeBed;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, CustomResourceExt as _};
use serde_json::json;
use tokio::sync::oneshot;

struct Running {
    _bed: KubeBed,
    client: kube::Client,
    ns: String,
    metrics: ControllerMetrics,
    _stop: oneshot::Sender<()>,
}

impl Running {
    fn generators(&self) -> Api<ConfigMapGenerator> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    async fn create(&self, name: &str, content: &str) {
        let spec = ConfigMapGeneratorSpec {
            content: content.into(),
        };
        let generator = ConfigMapGenerator::new(name, spec);
        self.generators()
            .create(&PostParams::default(), &generator)
            .await
            .unwrap();
    }

    async fn set_content(&self, name: &str, content: &str) {
        let patch = Patch::Merge(json!({"spec": {"content": content}}));
        self.generators()
            .patch(name, &PatchParams::default(), &patch)
            .await
            .unwrap();
    }

    async fn content(&self, name: &str) -> Option<String> {
        let cm = self.config_maps().get_opt(name).await.unwrap()?;
        cm.data?.get("content").cloned()
    }

    async fn ready(&self, name: &str) -> Option<(String, String)> {
        let generator = self.generators().get_opt(name).await.unwrap()?;
        let status = generator.status?;
        let ready = status.conditions.into_iter().find(|c| c.type_ == "Ready")?;
        Some((ready.status, ready.reason))
    }

    async fn events(&self, reason: &str) -> Vec<Event> {
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.ns);
        let list = events.list(&Default::default()).await.unwrap();
        list.items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .collect()
    }
}

/// Polls `check` until it holds, for at most 30 s.
async fn until<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    for _ in 0..300 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting until {what}");
}

async fn install_crd(objects: &Arc<dyn ObjectClient>, client: &kube::Client) {
    let crd = to_dynamic(&ConfigMapGenerator::crd()).unwrap();
    objects
        .apply(&crd, &PatchOptions::apply("e2e-config-generator"))
        .await
        .unwrap();
    let api: Api<ConfigMapGenerator> = Api::all(client.clone());
    until("the ConfigMapGenerator kind is served", || async {
        api.list(&Default::default()).await.is_ok()
    })
    .await;
}

async fn start(namespace: &str) -> Running {
    let bed = KubeBed::start().await.unwrap();
    let client = kube::Client::try_from(bed.config().await.unwrap()).unwrap();
    let objects = bed.object_client().await.unwrap();
    let ns = bed.namespace(namespace);
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(ns.clone());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    install_crd(&objects, &client).await;
    let metrics = ControllerMetrics::unregistered();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(run(client.clone(), ns.clone(), metrics.clone(), async {
        let _ = stopped.await;
    }));
    Running {
        _bed: bed,
        client,
        ns,
        metrics,
        _stop: stop,
    }
}

#[tokio::test]
async fn a_generator_gets_its_config_map_and_becomes_ready() {
    let env = start("generated").await;
    env.create("greeting", "hello").await;
    until("the ConfigMap holds the content", || async {
        env.content("greeting").await.as_deref() == Some("hello")
    })
    .await;
    until("the generator is Ready", || async {
        env.ready("greeting").await == Some(("True".into(), "Generated".into()))
    })
    .await;
    let generator = env.generators().get("greeting").await.unwrap();
    assert_eq!(
        generator.metadata.finalizers,
        Some(vec![FINALIZER.to_string()])
    );
    assert_eq!(env.events("Generated").await.len(), 1);
    assert!(
        env.metrics
            .reconciles("configmapgenerator", ReconcileResult::Success)
            > 0
    );
}

#[tokio::test]
async fn a_changed_content_reaches_the_config_map() {
    let env = start("changed").await;
    env.create("greeting", "hello").await;
    until("the first content", || async {
        env.content("greeting").await.as_deref() == Some("hello")
    })
    .await;
    env.set_content("greeting", "goodbye").await;
    until("the changed content", || async {
        env.content("greeting").await.as_deref() == Some("goodbye")
    })
    .await;
}

#[tokio::test]
async fn an_empty_content_is_refused_with_a_warning_and_the_config_map_keeps_the_last_good_one() {
    let env = start("refused").await;
    env.create("greeting", "hello").await;
    until("the first content", || async {
        env.content("greeting").await.as_deref() == Some("hello")
    })
    .await;
    env.set_content("greeting", "").await;
    until("the generator is not Ready, naming the field", || async {
        env.ready("greeting").await == Some(("False".into(), "InvalidSpec".into()))
    })
    .await;
    until("a Warning Event names the field", || async {
        env.events("InvalidSpec").await.iter().any(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.message.as_deref()
                    == Some(&*format!(
                        "ConfigMapGenerator {}/greeting: spec.content: must not be empty",
                        env.ns
                    ))
        })
    })
    .await;
    assert_eq!(env.content("greeting").await.as_deref(), Some("hello"));
}

#[tokio::test]
async fn a_deleted_generator_deletes_its_config_map_before_it_goes() {
    let env = start("deleted").await;
    env.create("greeting", "hello").await;
    until("the ConfigMap exists", || async {
        env.content("greeting").await.is_some()
    })
    .await;
    env.generators()
        .delete("greeting", &DeleteParams::default())
        .await
        .unwrap();
    until("the generator is gone", || async {
        env.generators()
            .get_opt("greeting")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert_eq!(env.content("greeting").await, None);
    assert_eq!(env.events("Deleted").await.len(), 1);
}
