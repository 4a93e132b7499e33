//! The reconcile contract: what a reconcile returns, and the one place that decides what
//! happens next.

use std::fmt;
use std::time::Duration;

use crate::retry::Backoff;
use crate::runtime::metrics::ReconcileResult;

/// What a successful reconcile asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The object is where it should be; reconcile again only when something changes.
    Done,
    /// Done for now, but look again after this long (polling something not watched).
    RequeueAfter(Duration),
}

/// An error that knows whether retrying can help.
///
/// Implemented for kcp-core's [`Error`](crate::Error); every component's error enum
/// implements it by delegating to the errors it wraps.
pub trait Classify {
    /// Whether the same input can succeed later (a conflict, a 5xx, a kind not served yet).
    fn is_transient(&self) -> bool;

    /// A short machine-readable reason for conditions and Events (`TemplateError`, ...).
    fn reason(&self) -> &str;
}

impl Classify for crate::Error {
    fn is_transient(&self) -> bool {
        crate::Error::is_transient(self)
    }

    fn reason(&self) -> &str {
        crate::Error::reason(self)
    }
}

/// How failures are retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Delays of consecutive transient failures of one key.
    pub backoff: Backoff,
    /// When a permanently failing key is tried again anyway (something else may have been
    /// fixed); `None` waits for the next change.
    pub permanent_retry: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        let backoff = Backoff::default();
        RetryPolicy {
            backoff,
            permanent_retry: Some(backoff.max),
        }
    }
}

impl RetryPolicy {
    /// A policy with this backoff, retrying permanent failures at its cap.
    pub fn new(backoff: Backoff) -> Self {
        RetryPolicy {
            backoff,
            permanent_retry: Some(backoff.max),
        }
    }
}

/// What to do with a key after its reconcile: the single mapping from results to actions.
#[derive(Debug, PartialEq)]
pub enum Disposition<E> {
    /// Success: drop the key's failure count; nothing scheduled.
    Forget,
    /// Success, and look again after the delay (failure count dropped).
    RequeueAfter(Duration),
    /// A transient failure: retry after the key's next backoff delay.
    Retry(E),
    /// A permanent failure: record a Warning, retry only per [`RetryPolicy::permanent_retry`].
    Failed(E),
}

impl<E: Classify> Disposition<E> {
    /// Classifies a reconcile result.
    pub fn of(result: Result<Outcome, E>) -> Self {
        match result {
            Ok(Outcome::Done) => Disposition::Forget,
            Ok(Outcome::RequeueAfter(delay)) => Disposition::RequeueAfter(delay),
            Err(err) if err.is_transient() => Disposition::Retry(err),
            Err(err) => Disposition::Failed(err),
        }
    }

    /// How this result is counted in metrics.
    pub fn result(&self) -> ReconcileResult {
        match self {
            Disposition::Forget => ReconcileResult::Success,
            Disposition::RequeueAfter(_) => ReconcileResult::RequeueAfter,
            Disposition::Retry(_) | Disposition::Failed(_) => ReconcileResult::Error,
        }
    }
}

impl<E: fmt::Display> fmt::Display for Disposition<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Disposition::Forget => write!(f, "done"),
            Disposition::RequeueAfter(d) => write!(f, "requeue after {d:?}"),
            Disposition::Retry(e) => write!(f, "transient failure, retrying: {e}"),
            Disposition::Failed(e) => write!(f, "failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Fake(bool);

    impl Classify for Fake {
        fn is_transient(&self) -> bool {
            self.0
        }
        fn reason(&self) -> &str {
            "Fake"
        }
    }

    #[test]
    fn done_forgets_the_key() {
        assert_eq!(
            Disposition::<Fake>::of(Ok(Outcome::Done)),
            Disposition::Forget
        );
    }

    #[test]
    fn requeue_after_keeps_its_delay() {
        let d = Duration::from_secs(7);
        assert_eq!(
            Disposition::<Fake>::of(Ok(Outcome::RequeueAfter(d))),
            Disposition::RequeueAfter(d)
        );
    }

    #[test]
    fn transient_errors_retry_and_permanent_ones_fail() {
        assert_eq!(
            Disposition::of(Err(Fake(true))),
            Disposition::Retry(Fake(true))
        );
        assert_eq!(
            Disposition::of(Err(Fake(false))),
            Disposition::Failed(Fake(false))
        );
    }

    #[test]
    fn core_errors_classify_through_is_transient() {
        let conflict = crate::Error::Api {
            verb: "update",
            object: "x".into(),
            code: 409,
            reason: "Conflict".into(),
            message: "m".into(),
        };
        assert!(matches!(
            Disposition::of(Err(conflict)),
            Disposition::Retry(_)
        ));
        let bad = crate::Error::Config("bad".into());
        assert!(matches!(Disposition::of(Err(bad)), Disposition::Failed(_)));
    }

    #[test]
    fn results_have_controller_runtime_metric_labels() {
        assert_eq!(Disposition::<Fake>::Forget.result().as_str(), "success");
        assert_eq!(
            Disposition::<Fake>::RequeueAfter(Duration::ZERO)
                .result()
                .as_str(),
            "requeue_after"
        );
        assert_eq!(Disposition::Retry(Fake(true)).result().as_str(), "error");
    }
}
