//! kcp's two lifecycle virtual workspaces, named by the WorkspaceType whose initializer or
//! terminator they serve: `/services/initializingworkspaces/<type>` shows the workspaces that
//! still carry that initializer while they initialize (their LogicalCluster and content),
//! `/services/terminatingworkspaces/<type>` the deleted workspaces that still carry that
//! terminator (their LogicalCluster only). Through either, the type's controller may remove
//! its own entry from the LogicalCluster's status, and nothing else.

use serde_json::Value;

use super::{LOGICAL_CLUSTER_NAME, logical_clusters};
use crate::schema::field::FieldError;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// Which lifecycle view a request came through, and the initializer or terminator it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifecycleView {
    /// `/services/initializingworkspaces/<initializer>`.
    Initializing(String),
    /// `/services/terminatingworkspaces/<terminator>`.
    Terminating(String),
}

impl LifecycleView {
    /// The view of `service` (`initializingworkspaces` or `terminatingworkspaces`) for `name`.
    pub fn of_service(service: &str, name: &str) -> Option<Self> {
        match service {
            "initializingworkspaces" => Some(Self::Initializing(name.to_string())),
            "terminatingworkspaces" => Some(Self::Terminating(name.to_string())),
            _ => None,
        }
    }

    /// Whether the view shows this LogicalCluster: initializing with the initializer, or
    /// deleted and still held by the terminator.
    pub fn sees(&self, lc: &Value) -> bool {
        match self {
            Self::Initializing(initializer) => {
                lc.pointer("/status/phase").and_then(Value::as_str) == Some("Initializing")
                    && listed(lc, "initializers", initializer)
            }
            Self::Terminating(terminator) => {
                lc.pointer("/metadata/deletionTimestamp").is_some()
                    && listed(lc, "terminators", terminator)
            }
        }
    }

    /// Whether the view serves `group`/`plural` (a terminator sees the LogicalCluster only).
    pub fn serves(&self, group: &str, plural: &str) -> bool {
        match self {
            Self::Initializing(_) => true,
            Self::Terminating(_) => group == "core.kcp.io" && plural == "logicalclusters",
        }
    }

    /// The status list this view's controller removes itself from, and its entry there.
    fn entry(&self) -> (&'static str, &str) {
        match self {
            Self::Initializing(i) => ("initializers", i),
            Self::Terminating(t) => ("terminators", t),
        }
    }

    /// What a write through the view to a LogicalCluster may change: only its own entry
    /// out of the status list, nothing of the spec or the labels.
    pub fn check_write(&self, old: &Value, new: &Value) -> ApiResult<()> {
        let (list, own) = self.entry();
        let (before, after) = (entries(old, list), entries(new, list));
        let others_kept = before.iter().all(|e| e == own || after.contains(e));
        let rest_kept = old.get("spec") == new.get("spec")
            && old.pointer("/metadata/labels") == new.pointer("/metadata/labels");
        match self {
            Self::Initializing(_) => {
                if let Some(other) = before.iter().find(|e| *e != own && !after.contains(e)) {
                    return Err(forbidden(&format!(
                        "only the initializer {own:?} may be removed through this virtual workspace, not {other:?}"
                    )));
                }
                if !rest_kept {
                    return Err(forbidden(
                        "an initializer may only change status.initializers",
                    ));
                }
                Ok(())
            }
            Self::Terminating(_) => {
                let removed_own_only = before.len() == after.len() + 1
                    && !after.iter().any(|e| e == own)
                    && others_kept;
                if removed_own_only && rest_kept {
                    return Ok(());
                }
                let error = FieldError::invalid(
                    "status.terminators",
                    Value::from(after),
                    format!("only removing the {own:?} terminator is supported"),
                );
                Err(crate::schema::field::invalid_object(
                    "core.kcp.io",
                    "LogicalCluster",
                    LOGICAL_CLUSTER_NAME,
                    &[error],
                ))
            }
        }
    }
}

/// Whether `cluster` may be reached through `view` (one cluster's path of the view): only
/// while the view shows its LogicalCluster. kcp's initializing handler refuses anything else
/// with a plain-text `403`; the terminating view answers as if the LogicalCluster were not
/// there.
pub fn admit(
    state: &State,
    cluster: &str,
    view: &LifecycleView,
    shard: Option<usize>,
) -> ApiResult<()> {
    let seen = state
        .clusters
        .get(cluster)
        .filter(|c| shard.is_none_or(|s| s == c.shard))
        .and_then(|c| c.get(&logical_clusters(), "", LOGICAL_CLUSTER_NAME))
        .and_then(|lc| lc.value().ok())
        .is_some_and(|lc| view.sees(&lc));
    match view {
        _ if seen => Ok(()),
        LifecycleView::Initializing(initializer) => Err(ApiError::plain(
            403,
            "Forbidden",
            format!("initializer {initializer:?} cannot access this workspace"),
        )),
        LifecycleView::Terminating(_) => Err(ApiError::not_found(
            "core.kcp.io",
            "logicalclusters",
            LOGICAL_CLUSTER_NAME,
        )),
    }
}

fn forbidden(why: &str) -> ApiError {
    super::admission_forbidden("core.kcp.io", "logicalclusters", LOGICAL_CLUSTER_NAME, why)
}

/// The entries of a LogicalCluster's `status.<list>`.
pub fn entries(lc: &Value, list: &str) -> Vec<String> {
    crate::object_meta::strings_at(lc, &format!("/status/{list}"))
}

fn listed(lc: &Value, list: &str, entry: &str) -> bool {
    entries(lc, list).iter().any(|e| e == entry)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deleted_with(terminators: &[&str]) -> Value {
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"terminators": terminators}, "status": {"terminators": terminators}})
    }

    #[test]
    fn a_terminator_may_remove_itself() {
        let view = LifecycleView::Terminating("root:a".into());
        let old = deleted_with(&["root:a", "root:b"]);
        let mut new = old.clone();
        new["status"]["terminators"] = json!(["root:b"]);
        assert!(view.check_write(&old, &new).is_ok());
    }

    #[test]
    fn a_terminator_may_not_remove_another() {
        let view = LifecycleView::Terminating("root:a".into());
        let old = deleted_with(&["root:a", "root:b"]);
        let mut new = old.clone();
        new["status"]["terminators"] = json!(["root:a"]);
        let err = view.check_write(&old, &new).unwrap_err();
        assert_eq!(err.code, 422);
    }

    #[test]
    fn a_terminating_view_sees_only_deleted_clusters() {
        let view = LifecycleView::Terminating("root:a".into());
        let mut lc = deleted_with(&["root:a"]);
        assert!(view.sees(&lc));
        lc["metadata"] = json!({});
        assert!(!view.sees(&lc));
    }
}
