//! What goes around every single-cluster reconcile on `kube::runtime::Controller`, written once.
//!
//! controller-runtime's `reconcileHandler` is the model: each pass runs in a span naming the
//! controller and the object, is timed and counted under controller-runtime's series
//! (`result` = `success`, `requeue_after` or `error`; a permanent failure also as a terminal
//! error), resets or advances the object's backoff
//! ([`ErrorPolicy`]), and a permanent failure records one Warning Event on the object (when the
//! component asks for it; reason and message from the error, aggregated by [`EventRecorder`]).
//! A component writes its reconcile as a plain `async fn(&K, &Context) -> Result<Outcome, E>`
//! and hands [`Harness::reconcile`] and [`Harness::error_policy`] to the controller:
//!
//! ```
//! use std::sync::Arc;
//! use kcp_core::runtime::{Harness, Outcome};
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # use kube::runtime::controller::Action;
//! struct Context { harness: Harness }
//! # fn context() -> Context {
//! #     Context { harness: Harness::new("configmap", Default::default(), 0) }
//! # }
//!
//! async fn reconcile_config_map(cm: &ConfigMap, ctx: &Context) -> Result<Outcome, kcp_core::Error> {
//!     // ... bring the world in line with `cm` ...
//!     Ok(Outcome::Done)
//! }
//!
//! async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action, kcp_core::Error> {
//!     ctx.harness.reconcile(cm.as_ref(), reconcile_config_map(&cm, &ctx)).await
//! }
//!
//! fn error_policy(cm: Arc<ConfigMap>, err: &kcp_core::Error, ctx: Arc<Context>) -> Action {
//!     ctx.harness.error_policy(cm.as_ref(), err)
//! }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use kube::Resource;
use kube::runtime::controller::Action;
use tracing::Instrument as _;

use crate::client::ObjectClient;
use crate::runtime::error_policy::ErrorPolicy;
use crate::runtime::events::{EventRecorder, EventType};
use crate::runtime::metrics::{ControllerMetrics, ReconcileResult};
use crate::runtime::outcome::{Classify, Outcome};

/// Where a permanent failure's Warning Event goes.
struct Warnings {
    recorder: EventRecorder,
    client: Arc<dyn ObjectClient>,
}

/// The span, timing, metrics, backoff and Warning Event of one single-cluster controller.
pub struct Harness {
    controller: String,
    metrics: ControllerMetrics,
    errors: ErrorPolicy,
    warnings: Option<Warnings>,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness")
            .field("controller", &self.controller)
            .field("warnings", &self.warnings.is_some())
            .finish_non_exhaustive()
    }
}

impl Harness {
    /// The harness of `controller` (its name in metrics and spans, controller-runtime's
    /// lower-case kind by convention), counting into `metrics`, for a controller running up to
    /// `concurrency` reconciles at once (kube's `ControllerSettings::concurrency`, 0 for no
    /// limit); the controller's series are created at zero now, as controller-runtime does at
    /// start.
    pub fn new(
        controller: impl Into<String>,
        metrics: ControllerMetrics,
        concurrency: u16,
    ) -> Self {
        let controller = controller.into();
        metrics.init_controller(&controller, usize::from(concurrency));
        Harness {
            controller,
            metrics,
            errors: ErrorPolicy::default(),
            warnings: None,
        }
    }

    /// Uses `errors` for the per-object backoff instead of the default one.
    pub fn with_error_policy(mut self, errors: ErrorPolicy) -> Self {
        self.errors = errors;
        self
    }

    /// Records a Warning Event on the object through `client` after each permanent failure.
    pub fn with_warnings(mut self, recorder: EventRecorder, client: Arc<dyn ObjectClient>) -> Self {
        self.warnings = Some(Warnings { recorder, client });
        self
    }

    /// The controller's name.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// The per-object backoff.
    pub fn errors(&self) -> &ErrorPolicy {
        &self.errors
    }

    /// Runs `pass`, the reconcile of `obj`, inside the controller's span; counts and times it;
    /// turns its outcome into kube's [`Action`] (resetting the object's backoff), or records
    /// the Warning of a permanent failure and hands the error on to [`Harness::error_policy`].
    pub async fn reconcile<K, E>(
        &self,
        obj: &K,
        pass: impl Future<Output = Result<Outcome, E>>,
    ) -> Result<Action, E>
    where
        K: Resource,
        K::DynamicType: Default,
        E: Classify + fmt::Display,
    {
        let dt = K::DynamicType::default();
        let meta = obj.meta();
        let span = tracing::info_span!(
            "reconcile",
            controller = %self.controller,
            kind = %K::kind(&dt),
            namespace = meta.namespace.as_deref().unwrap_or_default(),
            name = meta.name.as_deref().unwrap_or_default(),
        );
        let started = Instant::now();
        let result = pass.instrument(span.clone()).await;
        self.metrics.observe(
            &self.controller,
            ReconcileResult::of(&result),
            started.elapsed(),
        );
        match result {
            Ok(outcome) => Ok(self.errors.succeeded(obj, outcome)),
            Err(err) => {
                if !err.is_transient() {
                    self.metrics.terminal(&self.controller);
                    self.warn(obj, &err).instrument(span).await;
                }
                Err(err)
            }
        }
    }

    /// kube's `error_policy`: logs the failure with the object and its reason, and returns
    /// when to try again (the object's next backoff delay, or the cap for a permanent error).
    pub fn error_policy<K, E>(&self, obj: &K, err: &E) -> Action
    where
        K: Resource,
        K::DynamicType: Default,
        E: Classify + fmt::Display,
    {
        let meta = obj.meta();
        tracing::warn!(
            controller = %self.controller,
            kind = %K::kind(&K::DynamicType::default()),
            namespace = meta.namespace.as_deref().unwrap_or_default(),
            name = meta.name.as_deref().unwrap_or_default(),
            reason = err.reason(),
            transient = err.is_transient(),
            error = %err,
            "reconcile failed"
        );
        self.errors.failed(obj, err)
    }

    async fn warn<K, E>(&self, obj: &K, err: &E)
    where
        K: Resource,
        K::DynamicType: Default,
        E: Classify + fmt::Display,
    {
        if let Some(warnings) = &self.warnings {
            let message = err.to_string();
            let client = warnings.client.as_ref();
            let (warning, reason) = (EventType::Warning, err.reason());
            warnings
                .recorder
                .publish(client, obj, warning, reason, &message)
                .await;
        }
    }
}
