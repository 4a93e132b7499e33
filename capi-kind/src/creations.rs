//! Background cluster creation: one task per kind cluster, at most N at a time.
//!
//! A `kind create cluster` takes a minute or more. Upstream runs it inside the reconcile, so
//! one create blocks every other object. Here the reconciler only *starts* a creation
//! ([`Creations::start`]) and reports phase `Provisioning`; the task runs under a semaphore
//! (`--max-concurrent-creates`), records its result, and calls a wake-up function so the
//! object is reconciled again at once. The next reconcile [`Creations::take_finished`]s the
//! result.
//!
//! [`Claims`] make sure one kind cluster name is asked for by one object only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Semaphore;

use crate::provisioner::{CreateRequest, Provisioner};

/// Where the creation of one cluster stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Creation {
    /// Waiting for a slot or running.
    Running,
    /// Finished: `Ok` or the failure message.
    Finished(Result<(), String>),
}

/// The creations in flight and their results, by kind cluster name.
#[derive(Clone)]
pub struct Creations {
    provisioner: Arc<dyn Provisioner>,
    slots: Arc<Semaphore>,
    state: Arc<Mutex<HashMap<String, Creation>>>,
}

impl std::fmt::Debug for Creations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Creations")
            .field("free_slots", &self.slots.available_permits())
            .finish()
    }
}

impl Creations {
    /// Creations through `provisioner`, at most `max_concurrent` at a time (at least one).
    pub fn new(provisioner: Arc<dyn Provisioner>, max_concurrent: usize) -> Self {
        Creations {
            provisioner,
            slots: Arc::new(Semaphore::new(max_concurrent.max(1))),
            state: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Creation>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts creating `request.name` in the background unless a creation of it is running or
    /// its result has not been taken yet; `done` runs when it finishes. Returns whether it was
    /// started.
    pub fn start(&self, request: CreateRequest, done: impl FnOnce() + Send + 'static) -> bool {
        {
            let mut state = self.lock();
            if state.contains_key(&request.name) {
                return false;
            }
            state.insert(request.name.clone(), Creation::Running);
        }
        let this = self.clone();
        tokio::spawn(async move {
            let result = match this.slots.clone().acquire_owned().await {
                Ok(_permit) => {
                    tracing::info!(cluster = %request.name, "creating kind cluster");
                    this.provisioner
                        .create(&request)
                        .await
                        .map_err(|e| e.to_string())
                }
                Err(_) => Err("the creation queue was closed".to_string()),
            };
            if let Err(message) = &result {
                tracing::warn!(cluster = %request.name, error = %message, "kind cluster creation failed");
            }
            this.lock()
                .insert(request.name.clone(), Creation::Finished(result));
            done();
        });
        true
    }

    /// Whether a creation of `name` is waiting or running.
    pub fn running(&self, name: &str) -> bool {
        self.lock().get(name) == Some(&Creation::Running)
    }

    /// The result of a finished creation of `name`, removed from the registry.
    pub fn take_finished(&self, name: &str) -> Option<Result<(), String>> {
        let mut state = self.lock();
        match state.get(name) {
            Some(Creation::Finished(_)) => match state.remove(name) {
                Some(Creation::Finished(result)) => Some(result),
                _ => None,
            },
            _ => None,
        }
    }

    /// How many creations are waiting or running.
    pub fn in_flight(&self) -> usize {
        self.lock()
            .values()
            .filter(|c| **c == Creation::Running)
            .count()
    }
}

/// Which object asked for which kind cluster name: the first claim wins until released.
#[derive(Debug, Default)]
pub struct Claims {
    by_name: Mutex<HashMap<String, (String, String)>>,
}

impl Claims {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (String, String)>> {
        self.by_name.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims `name` for the object with `uid` (described as `object`); `Err` names the object
    /// holding it.
    pub fn claim(&self, name: &str, uid: &str, object: &str) -> Result<(), String> {
        let mut claims = self.lock();
        match claims.get(name) {
            Some((holder, description)) if holder != uid => Err(description.clone()),
            _ => {
                claims.insert(name.to_string(), (uid.to_string(), object.to_string()));
                Ok(())
            }
        }
    }

    /// Releases `name` if the object with `uid` holds it.
    pub fn release(&self, name: &str, uid: &str) {
        let mut claims = self.lock();
        if claims.get(name).is_some_and(|(holder, _)| holder == uid) {
            claims.remove(name);
        }
    }

    /// Releases every name the object with `uid` holds.
    pub fn release_all(&self, uid: &str) {
        self.lock().retain(|_, (holder, _)| holder != uid);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use async_trait::async_trait;
    use tokio::time::Instant;

    use super::*;
    use crate::error::{Error, Result};

    /// Creates take two seconds; names starting with "bad" fail.
    struct Slow;

    #[async_trait]
    impl Provisioner for Slow {
        async fn create(&self, request: &CreateRequest) -> Result<()> {
            tokio::time::sleep(Duration::from_secs(2)).await;
            if request.name.starts_with("bad") {
                return Err(Error::provisioner(&request.name, "create", "no space left"));
            }
            Ok(())
        }
        async fn delete(&self, _: &str) -> Result<()> {
            Ok(())
        }
        async fn list(&self) -> Result<Vec<String>> {
            Ok(vec![])
        }
        async fn owner(&self, _: &str) -> Result<Option<String>> {
            Ok(None)
        }
        async fn mark_owner(&self, _: &str, _: &str) -> Result<()> {
            Ok(())
        }
        async fn kubeconfig(&self, _: &str) -> Result<String> {
            Ok(String::new())
        }
    }

    fn request(name: &str) -> CreateRequest {
        CreateRequest {
            name: name.into(),
            image: None,
            config: String::new(),
            owner_uid: "u".into(),
            wait: Duration::from_secs(60),
        }
    }

    async fn create_all(creations: &Creations, n: usize) -> Duration {
        let started = Instant::now();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..n {
            let tx = tx.clone();
            assert!(creations.start(request(&format!("c{i}")), move || {
                let _ = tx.send(());
            }));
        }
        for _ in 0..n {
            rx.recv().await.unwrap();
        }
        started.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn twenty_slow_creates_run_together() {
        let creations = Creations::new(Arc::new(Slow), 20);
        assert_eq!(create_all(&creations, 20).await, Duration::from_secs(2));
        assert_eq!(creations.take_finished("c7"), Some(Ok(())));
    }

    #[tokio::test(start_paused = true)]
    async fn the_concurrency_limit_queues_the_rest() {
        let creations = Creations::new(Arc::new(Slow), 4);
        assert_eq!(create_all(&creations, 20).await, Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_creation_is_not_started_twice() {
        let creations = Creations::new(Arc::new(Slow), 1);
        assert!(creations.start(request("a"), || ()));
        assert!(!creations.start(request("a"), || ()));
        assert!(creations.running("a"));
        assert_eq!(creations.in_flight(), 1);
        assert_eq!(creations.take_finished("a"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_is_kept_until_taken() {
        let creations = Creations::new(Arc::new(Slow), 1);
        let (tx, rx) = tokio::sync::oneshot::channel();
        creations.start(request("bad"), move || {
            let _ = tx.send(());
        });
        rx.await.unwrap();
        assert!(!creations.running("bad"));
        let failure = creations.take_finished("bad").unwrap().unwrap_err();
        assert!(failure.contains("no space left"), "{failure}");
        assert_eq!(creations.take_finished("bad"), None);
    }

    #[test]
    fn the_first_claim_wins_until_released() {
        let claims = Claims::default();
        assert_eq!(claims.claim("dev", "u1", "KindCluster a/x"), Ok(()));
        assert_eq!(claims.claim("dev", "u1", "KindCluster a/x"), Ok(()));
        assert_eq!(
            claims.claim("dev", "u2", "KINDCluster b/y"),
            Err("KindCluster a/x".into())
        );
        claims.release("dev", "u2");
        assert!(claims.claim("dev", "u2", "KINDCluster b/y").is_err());
        claims.release_all("u1");
        assert_eq!(claims.claim("dev", "u2", "KINDCluster b/y"), Ok(()));
    }
}
