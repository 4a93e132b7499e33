//! The supervisor: the InitTargets the agent knows, one runner ([`crate::runner`]) per acting
//! InitTarget in a [`TaskSet`], and the InitTemplates each runner uses.
//!
//! - Creating, changing (`workspaceTypeRef`, labels leaving the selector) or deleting an
//!   InitTarget starts, restarts or stops its runner without waiting for it: a stopped runner
//!   drains in the background, its delayed retries cancelled.
//! - InitTargets naming one WorkspaceType (by path, logical cluster name or an empty path) all
//!   get `Conflict`; only the oldest runs ([`crate::targets`]).
//! - A changed InitTemplate signals the runners using it to re-attempt their pending clusters.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kcp_core::kcp::{CLUSTER_ANNOTATION, WorkspaceType};
use kcp_core::kube::Api;
use kcp_core::runtime::{ConditionUpdate, TaskSet};
use tokio::sync::watch;

use crate::api::{CONDITION_CONFLICT, InitTarget};
use crate::controller::Shared;
use crate::runner::run_target;
use crate::status::set_conditions;
use crate::targets::{TypeIdentity, TypeRef, plan_targets};

/// The InitTargets known, the runners started for them, and the InitTemplates each uses.
pub(crate) struct Supervisor {
    shared: Arc<Shared>,
    config_workspace: String,
    known: BTreeMap<String, InitTarget>,
    runners: TaskSet<String>,
    template_signals: BTreeMap<String, (BTreeSet<String>, watch::Sender<u64>)>,
    conflicted: BTreeSet<String>,
    /// Logical cluster of each WorkspaceType workspace path resolved so far.
    clusters_of_paths: BTreeMap<String, String>,
}

impl Supervisor {
    pub(crate) fn new(shared: Arc<Shared>, config_workspace: String) -> Self {
        Supervisor {
            shared,
            config_workspace,
            known: BTreeMap::new(),
            runners: TaskSet::new(),
            template_signals: BTreeMap::new(),
            conflicted: BTreeSet::new(),
            clusters_of_paths: BTreeMap::new(),
        }
    }

    /// Resolves the logical cluster of every type workspace path not resolved yet (through the
    /// WorkspaceType's `kcp.io/cluster` annotation); unresolved paths stand for themselves.
    async fn resolve_paths(&mut self) {
        let refs: BTreeSet<TypeRef> = self
            .known
            .values()
            .map(|t| TypeRef::of(t, &self.config_workspace))
            .collect();
        for r in refs {
            if self.clusters_of_paths.contains_key(&r.path) {
                continue;
            }
            let Ok(kube) = self.shared.clients.cluster(&self.shared.base_url, &r.path) else {
                continue;
            };
            if let Ok(Some(wt)) = Api::<WorkspaceType>::all(kube).get_opt(&r.name).await
                && let Some(cluster) = wt
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(CLUSTER_ANNOTATION))
            {
                self.clusters_of_paths
                    .insert(r.path.clone(), cluster.clone());
            }
        }
    }

    /// Takes the InitTargets a complete list returned as the known ones, then syncs.
    pub(crate) async fn replace_all(&mut self, targets: BTreeMap<String, InitTarget>) {
        self.known = targets;
        self.sync().await;
    }

    /// Records a created or changed InitTarget, then syncs.
    pub(crate) async fn applied(&mut self, target: InitTarget) {
        let name = target.metadata.name.clone().unwrap_or_default();
        self.known.insert(name, target);
        self.sync().await;
    }

    /// Forgets a deleted InitTarget, then syncs.
    pub(crate) async fn deleted(&mut self, name: &str) {
        self.known.remove(name);
        self.sync().await;
    }

    /// Stops every runner and waits up to `timeout` for their in-flight initializations.
    pub(crate) async fn shutdown(&mut self, timeout: Duration) {
        self.runners.shutdown(timeout).await;
    }

    /// Starts, restarts and stops runners to match the known InitTargets.
    async fn sync(&mut self) {
        self.resolve_paths().await;
        let identity = |t: &InitTarget| {
            let r = TypeRef::of(t, &self.config_workspace);
            let cluster = self
                .clusters_of_paths
                .get(&r.path)
                .cloned()
                .unwrap_or(r.path);
            TypeIdentity {
                cluster,
                name: r.name,
            }
        };
        let plan = plan_targets(self.known.values(), identity);
        self.report_conflicts(&plan.conflicts).await;
        self.runners.retain(|name| plan.active.contains_key(name));
        self.template_signals
            .retain(|name, _| plan.active.contains_key(name));
        for (name, target) in plan.active {
            self.ensure_runner(name, &target);
        }
    }

    /// Writes `Conflict` True on every target in `conflicts` and False on every known target
    /// that left a conflict. A target whose False could not be written stays among the
    /// conflicted, so the next sync writes it again (True is written on every sync).
    async fn report_conflicts(&mut self, conflicts: &BTreeMap<String, String>) {
        let config = self.shared.config.as_ref();
        for (name, message) in conflicts {
            let update = ConditionUpdate::new(CONDITION_CONFLICT, true, "SameWorkspaceType")
                .message(message.clone());
            if let Err(err) = set_conditions(config, name, vec![update]).await {
                tracing::warn!(target = %name, error = %err, "could not report the InitTarget's Conflict");
            }
        }
        let mut conflicted: BTreeSet<String> = conflicts.keys().cloned().collect();
        let resolved = self
            .conflicted
            .iter()
            .filter(|n| !conflicts.contains_key(*n) && self.known.contains_key(*n));
        for name in resolved {
            let update = ConditionUpdate::new(CONDITION_CONFLICT, false, "NoConflict");
            if let Err(err) = set_conditions(config, name, vec![update]).await {
                tracing::warn!(target = %name, error = %err, "could not clear the InitTarget's Conflict; written again on the next sync");
                conflicted.insert(name.clone());
            }
        }
        self.conflicted = conflicted;
    }

    fn ensure_runner(&mut self, name: String, target: &InitTarget) {
        let type_ref = TypeRef::of(target, &self.config_workspace);
        let sources: BTreeSet<String> = target
            .spec
            .sources
            .iter()
            .filter_map(|s| s.template.as_ref().map(|t| t.name.clone()))
            .collect();
        let fingerprint = format!(
            "{}|{}|{}",
            target.metadata.uid.as_deref().unwrap_or_default(),
            type_ref.path,
            type_ref.name
        );
        let (signal, signals) = watch::channel(0u64);
        let shared = self.shared.clone();
        let started = self.runners.ensure(name.clone(), &fingerprint, |stop| {
            tracing::info!(target = %name, workspace_type = %type_ref.name, path = %type_ref.path, "starting InitTarget");
            run_target(shared, name.clone(), type_ref, signals, stop)
        });
        if started {
            self.template_signals.insert(name, (sources, signal));
        } else if let Some((known_sources, signal)) = self.template_signals.get_mut(&name)
            && *known_sources != sources
        {
            // Same WorkspaceType, new sources: the runner reads sources fresh on each attempt.
            *known_sources = sources;
            signal.send_modify(|n| *n += 1);
        }
    }

    pub(crate) fn template_changed(&self, template: &str) {
        for (sources, signal) in self.template_signals.values() {
            if sources.contains(template) {
                signal.send_modify(|n| *n += 1);
            }
        }
    }
}
