//! Running many cases at once: how many of a file's cases may share a server at a time.
//!
//! Each case has a namespace (and, on kcp, a workspace) of its own, and each case on kcp-sim a
//! server of its own, so most cases may run side by side. The suite is mostly waiting (on kcp's
//! controllers, on a `kubectl` process, on a step's `until`), so running cases side by side
//! shortens it several times over on two cores.
//!
//! Cases held to a real server run one at a time, in all: kube-apiserver's beside kcp's took the
//! real suite from 660 s to 402 s, but twice a real answer then drifted under the load.
//! On kube-apiserver some cases change what the whole server serves (a
//! CustomResourceDefinition is cluster-scoped and shows in discovery, in OpenAPI and in
//! `kubectl api-resources`), and another case's answer would show it. On kcp every case has a
//! workspace of its own, but some cases read a state kcp's controllers pass through on their
//! way (a workspace's initializers before `root:universal` has removed itself); with six cases
//! at once kcp is slow enough to be caught there (tried: 3 of its 73 cases then answered
//! otherwise than recorded).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio::sync::Semaphore;

use super::case::{Case, CaseFile, ServerKind};

/// Where the cases run, and so how many may share it at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A fresh kcp-sim per case: nothing is shared.
    Sim,
    /// The shared real servers: kube-apiserver one case at a time, kcp several.
    Real,
}

/// A queue of cases that share a limit of how many run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Every case on kcp-sim: the limit only spreads the machine's cores.
    Sim,
    /// Cases held to the real kube-apiserver.
    RealKube,
    /// Cases held to the real kcp.
    RealKcp,
}

impl Lane {
    /// The lane of a file's cases.
    pub fn of(target: Target, server: ServerKind) -> Lane {
        match (target, server) {
            (Target::Sim, _) => Lane::Sim,
            (Target::Real, ServerKind::Kube) => Lane::RealKube,
            (Target::Real, ServerKind::Kcp) => Lane::RealKcp,
        }
    }

    /// How many of its cases run at once.
    pub fn width(self) -> usize {
        match self {
            Lane::Sim => 4,
            Lane::RealKube => 1,
            Lane::RealKcp => 1,
        }
    }
}

/// What running one case gave, and how long it took.
#[derive(Debug)]
pub struct Ran<T> {
    /// `<file>/<case>`.
    pub id: String,
    /// The case's outcome.
    pub outcome: T,
    /// From the start of the case (not of its wait for a lane) to its end.
    pub took: Duration,
}

/// Runs `run` on every case of `files` (in their order), at most a [`Lane`]'s width at once
/// per lane, and returns the outcomes per file, in the files' and cases' order.
pub async fn run_all<'a, T, F, Fut>(
    files: &'a [CaseFile],
    target: Target,
    run: F,
) -> Vec<Vec<Ran<T>>>
where
    F: Fn(&'a CaseFile, &'a Case) -> Fut,
    Fut: Future<Output = T>,
{
    let limit = |lane: Lane| Arc::new(Semaphore::new(lane.width()));
    let sim = limit(Lane::Sim);
    // The real servers share one machine: a kcp case beside a kube-apiserver case made both slow
    // enough to be caught halfway (a new group's discovery not yet published), so the real cases
    // run one at a time in all.
    let kube = limit(Lane::RealKube);
    let kcp = kube.clone();
    let per_file = files.iter().map(|file| {
        let lane = match Lane::of(target, file.server) {
            Lane::Sim => sim.clone(),
            Lane::RealKube => kube.clone(),
            Lane::RealKcp => kcp.clone(),
        };
        let run = &run;
        join_all(file.cases.iter().map(move |case| {
            let lane = lane.clone();
            async move {
                // The semaphore is never closed, so a permit always comes; it is fair, so the
                // cases of one lane start in their order.
                let _permit = lane.acquire_owned().await.ok();
                let started = Instant::now();
                let outcome = run(file, case).await;
                Ran {
                    id: format!("{}/{}", file.file, case.name),
                    outcome,
                    took: started.elapsed(),
                }
            }
        }))
    });
    join_all(per_file).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn file(name: &str, server: &str, cases: usize) -> CaseFile {
        let cases: Vec<String> = (0..cases)
            .map(|i| format!("  - name: c{i}\n    steps: []\n"))
            .collect();
        let text = format!("area: A\nserver: {server}\ncases:\n{}", cases.concat());
        let mut file: CaseFile = serde_saphyr::from_str(&text).unwrap();
        file.file = name.to_string();
        file
    }

    /// Runs the files with a case that sleeps 1 s, and counts the most cases that ran at once
    /// on kube, on kcp, and in all.
    async fn most_at_once(files: &[CaseFile], target: Target) -> [usize; 3] {
        let running: [AtomicUsize; 3] = Default::default();
        let most: [AtomicUsize; 3] = Default::default();
        run_all(files, target, |file, _| {
            let kind = usize::from(file.server == ServerKind::Kcp);
            let (running, most) = (&running, &most);
            async move {
                for i in [kind, 2] {
                    let now = running[i].fetch_add(1, Ordering::SeqCst) + 1;
                    most[i].fetch_max(now, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                for i in [kind, 2] {
                    running[i].fetch_sub(1, Ordering::SeqCst);
                }
            }
        })
        .await;
        most.map(AtomicUsize::into_inner)
    }

    #[tokio::test(start_paused = true)]
    async fn the_real_servers_take_one_case_at_a_time_in_all() {
        let files = [
            file("a", "kube", 5),
            file("b", "kcp", 9),
            file("c", "kube", 3),
        ];
        let [kube, kcp, all] = most_at_once(&files, Target::Real).await;
        assert_eq!((kube, kcp, all), (1, 1, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn kcp_sim_cases_share_one_limit_whatever_they_play() {
        let files = [file("a", "kube", 6), file("b", "kcp", 6)];
        let [_, _, all] = most_at_once(&files, Target::Sim).await;
        assert_eq!(all, Lane::Sim.width());
    }

    #[tokio::test(start_paused = true)]
    async fn outcomes_come_back_in_the_order_of_files_and_cases() {
        let files = [file("a", "kcp", 4), file("b", "kube", 2)];
        // Later cases finish first.
        let ran = run_all(&files, Target::Real, |file, case| async move {
            let rank: u64 = case.name[1..].parse().unwrap();
            tokio::time::sleep(Duration::from_secs(10 - rank)).await;
            format!("{}/{}", file.file, case.name)
        })
        .await;
        let ids: Vec<Vec<String>> = ran
            .iter()
            .map(|file| file.iter().map(|r| r.outcome.clone()).collect())
            .collect();
        assert_eq!(
            ids,
            [vec!["a/c0", "a/c1", "a/c2", "a/c3"], vec!["b/c0", "b/c1"]]
        );
        assert!(ran.iter().flatten().all(|r| r.id == r.outcome));
    }
}
