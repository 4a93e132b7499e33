//! Fault injection for reliability tests and benchmarks: latency per request (fixed plus
//! jitter), error answers (429, 500, 503, 409, ...) at a rate for chosen verbs and resources,
//! dropping every open watch, and forcing `410 Gone` on the next watch.
//!
//! Faults are set in [`crate::Config`] at start and changed at runtime through
//! [`crate::Server::faults`]; they apply to HTTP requests and to the in-process client alike.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::status::ApiError;

/// A request verb, as Kubernetes authorization names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// Read one object.
    Get,
    /// List objects.
    List,
    /// Watch objects.
    Watch,
    /// Create an object.
    Create,
    /// Replace an object.
    Update,
    /// Patch (including server-side apply).
    Patch,
    /// Delete one object or a collection.
    Delete,
}

impl Verb {
    /// The lowercase name (`get`, `list`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
}

/// Error answers injected at a rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorRule {
    /// HTTP code to answer with (429, 500, 503, 409, ...).
    pub code: u16,
    /// Probability in `[0, 1]` that a matching request fails.
    pub rate: f64,
    /// Verbs the rule applies to; empty means every verb.
    pub verbs: Vec<Verb>,
    /// Resources the rule applies to, as `plural` or `plural.group`; empty means every resource.
    pub resources: Vec<String>,
    /// The write is carried out and only its answer is the error: the client cannot tell that
    /// it landed (a connection lost after the server committed). Writes only.
    pub after_write: bool,
}

impl ErrorRule {
    /// A rule failing `rate` of all requests with `code`.
    pub fn new(code: u16, rate: f64) -> Self {
        Self {
            code,
            rate,
            verbs: Vec::new(),
            resources: Vec::new(),
            after_write: false,
        }
    }

    /// Makes the rule answer with its error after carrying out the write.
    pub fn after_the_write(mut self) -> Self {
        self.after_write = true;
        self
    }

    /// Restricts the rule to some verbs.
    pub fn verbs(mut self, verbs: impl IntoIterator<Item = Verb>) -> Self {
        self.verbs = verbs.into_iter().collect();
        self
    }

    /// Restricts the rule to some resources (`configmaps`, `deployments.apps`).
    pub fn resources<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        self.resources = resources.into_iter().map(Into::into).collect();
        self
    }

    fn applies(&self, verb: Verb, group: &str, resource: &str, after_write: bool) -> bool {
        if self.after_write != after_write {
            return false;
        }
        let verb_ok = self.verbs.is_empty() || self.verbs.contains(&verb);
        let resource_ok = self.resources.is_empty()
            || self.resources.iter().any(|r| match r.split_once('.') {
                Some((plural, g)) => plural == resource && g == group,
                None => r == resource,
            });
        verb_ok && resource_ok
    }
}

/// The faults in effect.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultConfig {
    /// Added to every request.
    pub latency: Duration,
    /// A random extra delay in `[0, jitter)` added to every request.
    pub jitter: Duration,
    /// Error answers.
    pub errors: Vec<ErrorRule>,
}

/// The live fault settings of a running simulator.
#[derive(Debug)]
pub struct Faults {
    config: Mutex<FaultConfig>,
    drops: watch::Sender<u64>,
    forced_gone: AtomicU32,
    injected: AtomicU64,
}

impl Faults {
    /// Faults starting from `config`.
    pub fn new(config: FaultConfig) -> Self {
        Self {
            config: Mutex::new(config),
            drops: watch::Sender::new(0),
            forced_gone: AtomicU32::new(0),
            injected: AtomicU64::new(0),
        }
    }

    fn with_config<T>(&self, f: impl FnOnce(&mut FaultConfig) -> T) -> T {
        let mut guard = match self.config.lock() {
            Ok(g) => g,
            // The settings are plain data: a panic elsewhere leaves them usable.
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Sets the latency of every request.
    pub fn set_latency(&self, fixed: Duration, jitter: Duration) {
        self.with_config(|c| {
            c.latency = fixed;
            c.jitter = jitter;
        });
    }

    /// Adds an error rule.
    pub fn add_error(&self, rule: ErrorRule) {
        self.with_config(|c| c.errors.push(rule));
    }

    /// Replaces every setting.
    pub fn set(&self, config: FaultConfig) {
        self.with_config(|c| *c = config);
    }

    /// Removes every latency and error rule.
    pub fn clear(&self) {
        self.set(FaultConfig::default());
    }

    /// The settings in effect.
    pub fn config(&self) -> FaultConfig {
        self.with_config(|c| c.clone())
    }

    /// Ends every open watch stream (clients see the connection end and re-watch).
    pub fn drop_watches(&self) {
        self.drops.send_modify(|n| *n += 1);
    }

    /// Makes the next `count` watch requests fail with `410 Gone`.
    pub fn force_gone(&self, count: u32) {
        self.forced_gone.fetch_add(count, Ordering::SeqCst);
    }

    /// Consumes one forced 410, if any is pending.
    pub(crate) fn take_forced_gone(&self) -> bool {
        self.forced_gone
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    /// How many error answers the rules have injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// A receiver that changes whenever [`Self::drop_watches`] is called.
    pub(crate) fn watch_drops(&self) -> watch::Receiver<u64> {
        self.drops.subscribe()
    }

    /// Applies latency and error rules to one request.
    pub(crate) async fn before(
        &self,
        verb: Verb,
        group: &str,
        resource: &str,
    ) -> Result<(), ApiError> {
        let (delay, failure) = self.with_config(|c| {
            let mut delay = c.latency;
            if !c.jitter.is_zero() {
                delay += c.jitter.mul_f64(fastrand::f64());
            }
            let failure = c
                .errors
                .iter()
                .filter(|r| r.applies(verb, group, resource, false))
                .find(|r| fastrand::f64() < r.rate)
                .map(|r| r.code);
            (delay, failure)
        });
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        self.answer(verb, resource, failure)
    }

    /// Applies the after-the-write rules to a write that was carried out.
    pub(crate) fn after(&self, verb: Verb, group: &str, resource: &str) -> Result<(), ApiError> {
        let failure = self.with_config(|c| {
            c.errors
                .iter()
                .filter(|r| r.applies(verb, group, resource, true))
                .find(|r| fastrand::f64() < r.rate)
                .map(|r| r.code)
        });
        self.answer(verb, resource, failure)
    }

    fn answer(&self, verb: Verb, resource: &str, failure: Option<u16>) -> Result<(), ApiError> {
        let Some(code) = failure else {
            return Ok(());
        };
        self.injected.fetch_add(1, Ordering::SeqCst);
        let message = format!(
            "injected fault: {} {resource} answered {code}",
            verb.as_str()
        );
        let err = ApiError::new(code, ApiError::reason_for_code(code), message);
        if code == 429 || code == 503 {
            Err(err.retry_after(1))
        } else {
            Err(err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_for_named_resources_and_verbs_skips_others() {
        let rule = ErrorRule::new(503, 1.0)
            .verbs([Verb::Create])
            .resources(["deployments.apps", "configmaps"]);
        assert!(rule.applies(Verb::Create, "apps", "deployments", false));
        assert!(rule.applies(Verb::Create, "", "configmaps", false));
        assert!(!rule.applies(Verb::Get, "", "configmaps", false));
        assert!(!rule.applies(Verb::Create, "", "secrets", false));
    }

    #[tokio::test]
    async fn an_after_the_write_rule_answers_only_once_the_write_was_carried_out() {
        let faults = Faults::new(FaultConfig::default());
        faults.add_error(ErrorRule::new(503, 1.0).after_the_write());
        faults.before(Verb::Update, "", "configmaps").await.unwrap();
        let err = faults.after(Verb::Update, "", "configmaps").unwrap_err();
        assert_eq!(err.code, 503);
    }

    #[tokio::test]
    async fn a_certain_error_rule_fails_every_matching_request() {
        let faults = Faults::new(FaultConfig::default());
        faults.add_error(ErrorRule::new(429, 1.0));
        let err = faults
            .before(Verb::Get, "", "configmaps")
            .await
            .unwrap_err();
        assert_eq!((err.code, err.reason), (429, "TooManyRequests"));
        assert_eq!(err.retry_after_seconds(), Some(1));
    }

    #[test]
    fn forced_gone_is_consumed_once_per_count() {
        let faults = Faults::new(FaultConfig::default());
        faults.force_gone(1);
        assert!(faults.take_forced_gone());
        assert!(!faults.take_forced_gone());
    }
}
