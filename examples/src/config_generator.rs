//! A controller on kcp-rs's runtime to copy from: the counterpart of kube's
//! `configmapgen_controller.rs`.
//!
//! A `ConfigMapGenerator` (`example.kcp-rs.io/v1`) holds some `content`; the controller keeps a
//! ConfigMap of the same name holding it. What each piece shows:
//! - [`reconcile`] dispatches on the finalizer state, as every kcp-rs component does;
//! - [`config_map`] is the desired child as a pure function, written by server-side apply
//!   ([`apply_child`]), so a key no longer rendered leaves the ConfigMap;
//! - the status is written by one writer ([`write_status`]) with a typed `Ready` condition;
//! - Events go through the aggregating [`EventRecorder`]; a permanent error (empty content)
//!   becomes a Warning Event through the [`Harness`], which also spans, times and counts each
//!   reconcile under controller-runtime's metric names;
//! - the finalizer deletes the ConfigMap before the generator goes (no garbage collector
//!   needed, so it behaves the same on a bare kube-apiserver).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kcp_core::runtime::conditions::now;
use kcp_core::runtime::{
    Applied, Classify, ConditionUpdate, ControllerMetrics, EventRecorder, EventType,
    FinalizerState, Harness, Outcome, add_finalizer, apply_child, finalizer_state,
    remove_finalizer, set_condition, write_status,
};
use kcp_core::typed::{object_ref_for, to_dynamic};
use kcp_core::{DeleteOptions, ObjectClient};
use kube::runtime::{Controller, watcher};
use kube::{Api, CustomResource, Resource, ResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The generator's finalizer.
pub const FINALIZER: &str = "example.kcp-rs.io/cleanup";
/// The field manager of the ConfigMap and the Events' component.
pub const MANAGER: &str = "config-generator";

/// What a generator asks for.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.kcp-rs.io",
    version = "v1",
    kind = "ConfigMapGenerator"
)]
#[kube(namespaced, status = "GeneratorStatus", shortname = "cmg")]
pub struct ConfigMapGeneratorSpec {
    /// Copied into the ConfigMap's `content` key; must not be empty.
    pub content: String,
}

/// What the controller reports.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct GeneratorStatus {
    /// `Ready`: the ConfigMap holds the content.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Why a pass failed, naming the generator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec cannot be served as it is.
    #[error("ConfigMapGenerator {object}: {field}: {reason}")]
    InvalidSpec {
        /// `namespace/name`.
        object: String,
        /// The path of the field.
        field: &'static str,
        /// Why it cannot be served.
        reason: &'static str,
    },
    /// The API server refused or failed a request.
    #[error("ConfigMapGenerator {object}: {action}: {source}")]
    Client {
        /// `namespace/name`.
        object: String,
        /// What the controller was doing.
        action: &'static str,
        /// The client's error.
        source: kcp_core::Error,
    },
}

impl Classify for Error {
    fn is_transient(&self) -> bool {
        matches!(self, Error::Client { source, .. } if source.is_transient())
    }
    fn reason(&self) -> &str {
        match self {
            Error::InvalidSpec { .. } => "InvalidSpec",
            Error::Client { .. } => "ClientError",
        }
    }
}

/// What the reconciles share.
pub struct Context {
    client: Arc<dyn ObjectClient>,
    events: EventRecorder,
    harness: Harness,
}

fn key(generator: &ConfigMapGenerator) -> String {
    format!(
        "{}/{}",
        generator.namespace().unwrap_or_default(),
        generator.name_any()
    )
}

fn failed(
    generator: &ConfigMapGenerator,
    action: &'static str,
) -> impl Fn(kcp_core::Error) -> Error {
    let object = key(generator);
    move |source| Error::Client {
        object: object.clone(),
        action,
        source,
    }
}

/// The ConfigMap a generator wants: its name, namespace and content, owned by it.
pub fn config_map(generator: &ConfigMapGenerator) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(generator.name_any());
    cm.metadata.namespace = generator.namespace();
    cm.metadata.owner_references = generator.controller_owner_ref(&()).map(|o| vec![o]);
    cm.data = Some(BTreeMap::from([(
        "content".into(),
        generator.spec.content.clone(),
    )]));
    cm
}

/// One pass over a generator: what its finalizer state asks for.
pub async fn reconcile(generator: &ConfigMapGenerator, ctx: &Context) -> Result<Outcome, Error> {
    match finalizer_state(generator, FINALIZER) {
        FinalizerState::Released => Ok(Outcome::Done),
        FinalizerState::CleanupDue => cleanup(generator, ctx).await,
        FinalizerState::Missing => {
            // The update wakes the next pass.
            add_finalizer(ctx.client.as_ref(), generator, FINALIZER)
                .await
                .map_err(failed(generator, "adding the finalizer"))?;
            Ok(Outcome::Done)
        }
        FinalizerState::Present => generate(generator, ctx).await,
    }
}

async fn generate(generator: &ConfigMapGenerator, ctx: &Context) -> Result<Outcome, Error> {
    if generator.spec.content.is_empty() {
        let message = "spec.content must not be empty";
        set_ready(generator, ctx, false, "InvalidSpec", message).await?;
        let (object, field, reason) = (key(generator), "spec.content", "must not be empty");
        return Err(Error::InvalidSpec {
            object,
            field,
            reason,
        });
    }
    let desired = to_dynamic(&config_map(generator)).map_err(failed(generator, "rendering"))?;
    let target =
        object_ref_for::<ConfigMap>(generator.namespace().as_deref(), &generator.name_any());
    let live = ctx
        .client
        .get(&target)
        .await
        .map_err(failed(generator, "reading the ConfigMap"))?;
    let (applied, _) = apply_child(ctx.client.as_ref(), &desired, live, MANAGER)
        .await
        .map_err(failed(generator, "applying the ConfigMap"))?;
    if applied != Applied::Unchanged {
        ctx.events
            .publish(
                ctx.client.as_ref(),
                generator,
                EventType::Normal,
                "Generated",
                "the ConfigMap holds the content",
            )
            .await;
    }
    set_ready(
        generator,
        ctx,
        true,
        "Generated",
        "the ConfigMap holds the content",
    )
    .await?;
    Ok(Outcome::Done)
}

async fn cleanup(generator: &ConfigMapGenerator, ctx: &Context) -> Result<Outcome, Error> {
    let target =
        object_ref_for::<ConfigMap>(generator.namespace().as_deref(), &generator.name_any());
    ctx.client
        .delete(&target, &DeleteOptions::default())
        .await
        .map_err(failed(generator, "deleting the ConfigMap"))?;
    ctx.events
        .publish(
            ctx.client.as_ref(),
            generator,
            EventType::Normal,
            "Deleted",
            "the ConfigMap was deleted",
        )
        .await;
    remove_finalizer(ctx.client.as_ref(), generator, FINALIZER)
        .await
        .map_err(failed(generator, "removing the finalizer"))?;
    Ok(Outcome::Done)
}

async fn set_ready(
    generator: &ConfigMapGenerator,
    ctx: &Context,
    ready: bool,
    reason: &str,
    message: &str,
) -> Result<(), Error> {
    let update = ConditionUpdate::new("Ready", ready, reason)
        .message(message)
        .generation(generator.meta().generation);
    let at = now();
    write_status::<ConfigMapGenerator, _>(
        ctx.client.as_ref(),
        generator.namespace().as_deref(),
        &generator.name_any(),
        |g| {
            let status = g.status.get_or_insert_with(GeneratorStatus::default);
            set_condition(&mut status.conditions, update.clone(), at.clone());
        },
    )
    .await
    .map_err(failed(generator, "writing the status"))?;
    Ok(())
}

/// Runs the controller over the generators of `namespace` until `shutdown` completes,
/// counting into `metrics`.
pub async fn run(
    client: kube::Client,
    namespace: String,
    metrics: ControllerMetrics,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let objects: Arc<dyn ObjectClient> = Arc::new(kcp_core::KubeObjectClient::new(client.clone()));
    let events = EventRecorder::new(MANAGER);
    let harness = Harness::new("configmapgenerator", metrics, 0)
        .with_warnings(events.clone(), objects.clone());
    let ctx = Arc::new(Context {
        client: objects,
        events,
        harness,
    });
    let generators = Api::<ConfigMapGenerator>::namespaced(client.clone(), &namespace);
    let config_maps = Api::<ConfigMap>::namespaced(client, &namespace);
    Controller::new(generators, watcher::Config::default())
        .owns(config_maps, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(
            |g, ctx: Arc<Context>| async move {
                ctx.harness.reconcile(g.as_ref(), reconcile(&g, &ctx)).await
            },
            |g, err, ctx| ctx.harness.error_policy(g.as_ref(), err),
            ctx,
        )
        .for_each(|_| async {})
        .await;
}
