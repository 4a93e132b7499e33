//! Agents a worker of this process is claiming right now.
//!
//! Selection is deterministic, so workers reconciling different AgentMachines at the same time
//! rank the free Agents alike and would all try the best one; all but one would then lose the
//! optimistic-concurrency race (a 409) and move on. Skipping the Agents another worker is
//! already claiming spreads the workers over the candidates instead. This is only an
//! optimisation within one process: the resourceVersion precondition of the claim stays what
//! guarantees that no Agent is bound twice.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

/// The set of Agents (`namespace/name`) being claimed by this process.
#[derive(Debug, Clone, Default)]
pub struct ClaimsInFlight {
    agents: Arc<Mutex<HashSet<String>>>,
}

/// Holds one Agent as "being claimed" until dropped.
#[derive(Debug)]
pub struct ClaimGuard {
    agents: Arc<Mutex<HashSet<String>>>,
    key: String,
}

impl ClaimsInFlight {
    /// Marks `key` as being claimed, unless another worker already is.
    pub fn begin(&self, key: &str) -> Option<ClaimGuard> {
        lock(&self.agents)
            .insert(key.to_owned())
            .then(|| ClaimGuard {
                agents: self.agents.clone(),
                key: key.to_owned(),
            })
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        lock(&self.agents).remove(&self.key);
    }
}

fn lock(agents: &Mutex<HashSet<String>>) -> MutexGuard<'_, HashSet<String>> {
    // A plain set of names: a panic elsewhere leaves it usable.
    agents
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_being_claimed_cannot_be_claimed_by_another_worker() {
        let claims = ClaimsInFlight::default();
        let first = claims.begin("agents/a");
        assert!(first.is_some());
        assert!(claims.begin("agents/a").is_none());
        assert!(claims.begin("agents/b").is_some());
    }

    #[test]
    fn a_finished_claim_frees_the_agent() {
        let claims = ClaimsInFlight::default();
        drop(claims.begin("agents/a"));
        assert!(claims.begin("agents/a").is_some());
    }
}
