//! The `error_policy` of single-cluster controllers on `kube::runtime::Controller`.
//!
//! kube's Controller asks an error policy for an [`Action`] after each failed reconcile. This
//! one keeps a consecutive-failure count per object: transient errors wait the [`Backoff`]
//! delay for that count, permanent ones wait the backoff cap (something else may get fixed),
//! and a success ([`ErrorPolicy::succeeded`], called from the reconcile wrapper) resets it.
//!
//! ```
//! use std::sync::Arc;
//! use kcp_core::runtime::{ErrorPolicy, Outcome};
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! struct Context { errors: ErrorPolicy }
//! async fn reconcile(obj: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<kube::runtime::controller::Action, kcp_core::Error> {
//!     // ... bring the world in line with `obj` ...
//!     Ok(ctx.errors.succeeded(obj.as_ref(), Outcome::Done))
//! }
//! fn error_policy(obj: Arc<ConfigMap>, err: &kcp_core::Error, ctx: Arc<Context>) -> kube::runtime::controller::Action {
//!     ctx.errors.failed(obj.as_ref(), err)
//! }
//! ```

use std::collections::HashMap;
use std::sync::Mutex;

use kube::Resource;
use kube::runtime::controller::Action;

use crate::retry::Backoff;
use crate::runtime::outcome::{Classify, Outcome};

/// Per-object failure counts and the backoff they select.
#[derive(Debug)]
pub struct ErrorPolicy {
    backoff: Backoff,
    failures: Mutex<HashMap<String, u32>>,
}

impl Default for ErrorPolicy {
    fn default() -> Self {
        Self::new(Backoff::default())
    }
}

fn key_of<K: Resource>(obj: &K) -> String
where
    K::DynamicType: Default,
{
    let meta = obj.meta();
    format!(
        "{}/{}/{}",
        K::kind(&K::DynamicType::default()),
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

impl ErrorPolicy {
    /// A policy with this backoff.
    pub fn new(backoff: Backoff) -> Self {
        ErrorPolicy {
            backoff,
            failures: Mutex::new(HashMap::new()),
        }
    }

    fn with_failures<T>(&self, f: impl FnOnce(&mut HashMap<String, u32>) -> T) -> T {
        match self.failures.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// After a failed reconcile of `obj`: when to try again.
    pub fn failed<K: Resource, E: Classify>(&self, obj: &K, err: &E) -> Action
    where
        K::DynamicType: Default,
    {
        if !err.is_transient() {
            return Action::requeue(self.backoff.max);
        }
        let failures = self.with_failures(|f| {
            let n = f.entry(key_of(obj)).or_insert(0);
            *n = n.saturating_add(1);
            *n
        });
        Action::requeue(self.backoff.delay(failures))
    }

    /// After a successful reconcile of `obj`: resets its failure count and turns the outcome
    /// into kube's [`Action`].
    pub fn succeeded<K: Resource>(&self, obj: &K, outcome: Outcome) -> Action
    where
        K::DynamicType: Default,
    {
        self.with_failures(|f| f.remove(&key_of(obj)));
        match outcome {
            Outcome::Done => Action::await_change(),
            Outcome::RequeueAfter(delay) => Action::requeue(delay),
        }
    }

    /// Consecutive failures recorded for `obj`.
    pub fn failures<K: Resource>(&self, obj: &K) -> u32
    where
        K::DynamicType: Default,
    {
        self.with_failures(|f| f.get(&key_of(obj)).copied().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    struct E(bool);
    impl Classify for E {
        fn is_transient(&self) -> bool {
            self.0
        }
        fn reason(&self) -> &str {
            "E"
        }
    }

    fn cm(name: &str) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.metadata.namespace = Some("d".into());
        cm
    }

    fn policy() -> ErrorPolicy {
        ErrorPolicy::new(
            Backoff::new(Duration::from_secs(1), Duration::from_secs(4)).without_jitter(),
        )
    }

    #[test]
    fn transient_failures_back_off_per_object_up_to_the_cap() {
        let p = policy();
        let actions: Vec<Action> = (0..4).map(|_| p.failed(&cm("a"), &E(true))).collect();
        let expected: Vec<Action> = [1, 2, 4, 4]
            .iter()
            .map(|s| Action::requeue(Duration::from_secs(*s)))
            .collect();
        assert_eq!(actions, expected);
        assert_eq!(
            p.failed(&cm("b"), &E(true)),
            Action::requeue(Duration::from_secs(1))
        );
    }

    #[test]
    fn permanent_failures_wait_for_the_cap() {
        assert_eq!(
            policy().failed(&cm("a"), &E(false)),
            Action::requeue(Duration::from_secs(4))
        );
    }

    #[test]
    fn success_resets_the_failures() {
        let p = policy();
        p.failed(&cm("a"), &E(true));
        p.failed(&cm("a"), &E(true));
        assert_eq!(p.succeeded(&cm("a"), Outcome::Done), Action::await_change());
        assert_eq!(p.failures(&cm("a")), 0);
        assert_eq!(
            p.failed(&cm("a"), &E(true)),
            Action::requeue(Duration::from_secs(1))
        );
    }
}
