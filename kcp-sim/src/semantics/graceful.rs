//! Graceful deletion, as kube-apiserver's `rest.BeforeDelete` and the pod strategy do it: a pod
//! is marked for deletion (its `deletionTimestamp` at the end of its grace period, its
//! `deletionGracePeriodSeconds`, its next generation) and stored before anything else happens
//! to it; a pod with a grace period then stays for its node's kubelet, which kcp-sim does not
//! have. Other kinds have no grace period.

use serde_json::{Value, json};

use super::{DeleteRequest, Deleted, meta_mut, now, remove_now};
use crate::pods;
use crate::resource::ResourceType;
use crate::status::{ApiError, ApiResult};
use crate::store::{State, Stored};

/// Where a pod's delete goes.
pub(super) enum Outcome {
    /// Answered here: the pod waits out its grace period, or went now.
    Answered(Deleted),
    /// The pod is marked (no grace period left) or was already terminating without one: the
    /// delete goes on as for any kind, with `obj` as it now is.
    Continue,
}

/// Deletes the pod `obj` (stored as `current`) gracefully. `finalizers`: what it keeps,
/// with those the propagation policy adds.
#[allow(clippy::too_many_arguments)]
pub(super) fn delete_pod(
    state: &mut State,
    cluster: &str,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    current: &std::sync::Arc<Stored>,
    obj: &mut Value,
    finalizers: &[String],
    req: &DeleteRequest,
) -> ApiResult<Outcome> {
    let pending = obj
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let marked_at = obj
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .map(String::from);
    let period = match marked_at {
        // Terminating without a grace period: finalizers hold it, as any kind.
        Some(_) if pending <= 0 => return Ok(Outcome::Continue),
        // Only a shorter grace period changes a pending one.
        Some(marked_at) => {
            let requested = pods::requested_grace(req.grace_period_seconds);
            let Some(shorter) = requested.filter(|&p| p < pending) else {
                return Ok(answered(current.clone(), false));
            };
            let end = shift(&marked_at, shorter - pending)?;
            mark(obj, &end, shorter, None)?;
            shorter
        }
        None => {
            let period = pods::grace_period(obj, req.grace_period_seconds);
            let end = shift(&now(), period)?;
            mark(obj, &end, period, Some(finalizers))?;
            period
        }
    };
    let marked = state.store(cluster, rt.group_resource(), namespace, name, obj)?;
    if period > 0 {
        return Ok(answered(marked, false));
    }
    if crate::object_meta::finalizers_of(obj).is_empty() {
        let removed = remove_now(state, cluster, rt, namespace, name)?;
        return Ok(answered(removed.unwrap_or(marked), true));
    }
    Ok(Outcome::Continue)
}

fn answered(object: std::sync::Arc<Stored>, at_once: bool) -> Outcome {
    Outcome::Answered(Deleted { object, at_once })
}

/// Marks `obj` for deletion at `end` after `period` seconds: a first mark also moves its
/// generation on and sets the finalizers the delete leaves it.
fn mark(obj: &mut Value, end: &str, period: i64, first: Option<&[String]>) -> ApiResult<()> {
    let meta = meta_mut(obj)?;
    meta.insert("deletionTimestamp".into(), json!(end));
    meta.insert("deletionGracePeriodSeconds".into(), json!(period));
    let Some(finalizers) = first else {
        return Ok(());
    };
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation > 0
    {
        meta.insert("generation".into(), json!(generation + 1));
    }
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), json!(finalizers));
    }
    Ok(())
}

/// `time` (RFC 3339, seconds) moved by `seconds`.
fn shift(time: &str, seconds: i64) -> ApiResult<String> {
    let at: jiff::Timestamp = time
        .parse()
        .map_err(|e| ApiError::internal(format!("deletionTimestamp {time:?}: {e}")))?;
    let moved = at
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .map_err(|e| ApiError::internal(format!("deletionTimestamp {time:?} + {seconds}s: {e}")))?;
    Ok(moved.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deletion_time_moves_by_the_grace_period() {
        assert_eq!(
            shift("2026-11-30T09:59:45Z", 30).unwrap(),
            "2026-11-30T10:00:15Z"
        );
        assert_eq!(
            shift("2026-11-30T10:00:15Z", -20).unwrap(),
            "2026-11-30T09:59:55Z"
        );
    }

    #[test]
    fn a_first_mark_moves_the_generation_on_and_sets_the_finalizers() {
        let mut pod = json!({"metadata": {"name": "p", "generation": 1}});
        mark(
            &mut pod,
            "2026-11-30T10:00:15Z",
            30,
            Some(&["a/b".to_string()]),
        )
        .unwrap();
        assert_eq!(pod["metadata"]["generation"], 2);
        assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
        assert_eq!(pod["metadata"]["finalizers"], json!(["a/b"]));
    }

    #[test]
    fn a_shortened_mark_keeps_the_generation() {
        let mut pod = json!({"metadata": {"name": "p", "generation": 2}});
        mark(&mut pod, "2026-11-30T09:59:55Z", 10, None).unwrap();
        assert_eq!(pod["metadata"]["generation"], 2);
        assert_eq!(pod["metadata"]["deletionTimestamp"], "2026-11-30T09:59:55Z");
    }
}
