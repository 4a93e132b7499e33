//! Fault runs on the real servers (issue 25): a system's binary works through a batch while a
//! test kills it with SIGKILL at random points, kills the servers under it, or kills the leader
//! of two replicas; afterwards the servers are read (never the binary's own counters) to show
//! that every item converged exactly once and nothing was lost.
//!
//! A system takes part by implementing [`FaultBatch`]; the three runs are
//! [`run_with_binary_kills`], [`run_with_server_restarts`] and [`run_with_leader_kill`]. The
//! random points come from a seed the run prints (`KCP_RS_FAULT_SEED` repeats one), and
//! `KCP_RS_FAULTS_LONG=1` asks for the long variants (the full batch sizes).

use std::fmt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease;
use kcp_core::{ObjectClient, ObjectClientExt};

/// Whether the long variants run (`KCP_RS_FAULTS_LONG=1`).
pub fn long_run() -> bool {
    std::env::var("KCP_RS_FAULTS_LONG").is_ok_and(|v| v == "1")
}

/// The batch size: `short` in CI, `long` when [`long_run`].
pub fn size(short: usize, long: usize) -> usize {
    if long_run() { long } else { short }
}

/// The run's random source, from `KCP_RS_FAULT_SEED` or fresh; the seed is printed so a failing
/// run can be repeated.
pub fn seeded(run: &str) -> fastrand::Rng {
    let seed = std::env::var("KCP_RS_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("[{run}] KCP_RS_FAULT_SEED={seed}");
    fastrand::Rng::with_seed(seed)
}

/// A binary of ours run as a process: killed with SIGKILL by [`Replica::kill_hard`] (std's
/// `Child::kill` sends SIGKILL), started again with the same command line by
/// [`Replica::start_again`]; its log appends across starts.
pub struct Replica {
    program: String,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
    /// How often it was started.
    pub starts: u32,
}

impl Replica {
    /// Starts `program args...`, its stderr appended to `log`.
    pub fn start(program: &str, args: Vec<String>, log: PathBuf) -> Replica {
        let mut replica = Replica {
            program: program.to_string(),
            args,
            log,
            child: None,
            starts: 0,
        };
        replica.start_again();
        replica
    }

    /// Starts it again (after [`Replica::kill_hard`], or if it exited).
    pub fn start_again(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(&self.program)
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.program));
        self.child = Some(child);
        self.starts += 1;
    }

    /// SIGKILL: no drain, no Lease release, no flush.
    pub fn kill_hard(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The running process's id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process still runs; an exit is reported with the log's path.
    pub fn assert_running(&mut self) {
        if let Some(child) = self.child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            panic!(
                "{} exited ({status}); its log: {}",
                self.program,
                self.log.display()
            );
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill_hard();
    }
}

/// What a run read off the servers once the batch converged, printed as one line per run.
#[derive(Debug, Default)]
pub struct Report {
    pub system: &'static str,
    pub fault: &'static str,
    /// What the checks counted on the servers (name, count).
    pub counts: Vec<(&'static str, u64)>,
    /// Binary kills, server restarts or leader kills done.
    pub faults: u32,
    /// How many of them struck before the batch had converged (the others found it done).
    pub while_working: u32,
    /// From the batch's submission to convergence.
    pub converged_after: Duration,
    /// Only for the leader run: from the leader's kill to the standby holding the Lease.
    pub handover: Option<Duration>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fault run {} / {}: {} fault(s) ({} while working), converged after {:.1} s",
            self.system,
            self.fault,
            self.faults,
            self.while_working,
            self.converged_after.as_secs_f64()
        )?;
        if let Some(handover) = self.handover {
            write!(f, ", handover {:.1} s", handover.as_secs_f64())?;
        }
        for (name, count) in &self.counts {
            write!(f, ", {name} {count}")?;
        }
        Ok(())
    }
}

/// One system's batch under faults.
#[async_trait]
pub trait FaultBatch: Send + Sync {
    /// The system's name in the report.
    fn system(&self) -> &'static str;
    /// The binary and its arguments for replica `index` (ports and logs of its own), with
    /// leader election when `leader_election`.
    fn command(&self, index: usize, leader_election: bool) -> (String, Vec<String>);
    /// Where replicas keep their Lease: a client of that server, namespace and name.
    fn lease(&self) -> (Arc<dyn ObjectClient>, String, String);
    /// The Lease duration the replicas were given (leader election runs).
    fn lease_duration(&self) -> Duration;
    /// Creates the batch's objects.
    async fn submit(&self);
    /// Reads the servers. `Ok(counts)` once every item converged exactly once; `Err(what is
    /// still missing)` before that. A violation that can never heal (a duplicate, an item done
    /// twice, work released before it was done) panics at once, naming the item.
    async fn check(&self) -> Result<Vec<(&'static str, u64)>, String>;
    /// Kills the servers under the binary with SIGKILL and starts them again on their data;
    /// returns how long they were gone.
    async fn restart_servers(&self) -> Duration;
    /// How long a converging batch may take.
    fn within(&self) -> Duration;
}

fn replica(batch: &dyn FaultBatch, index: usize, leader_election: bool) -> Replica {
    let (program, args) = batch.command(index, leader_election);
    let name = std::path::Path::new(&program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let log = std::env::temp_dir().join(format!("fault-{name}-{}-{index}.log", std::process::id()));
    eprintln!(
        "[{}] replica {index} logs to {}",
        batch.system(),
        log.display()
    );
    Replica::start(&program, args, log)
}

/// Polls [`FaultBatch::check`] until it passes; panics with the last answer after `within`.
async fn converge(
    batch: &dyn FaultBatch,
    replicas: &mut [Replica],
) -> (Vec<(&'static str, u64)>, Duration) {
    let started = Instant::now();
    let mut last = String::new();
    while started.elapsed() < batch.within() {
        for replica in replicas.iter_mut() {
            replica.assert_running();
        }
        match batch.check().await {
            Ok(counts) => return (counts, started.elapsed()),
            Err(missing) => last = missing,
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!(
        "{}: not converged after {:?}: {last}",
        batch.system(),
        batch.within()
    );
}

/// kill -9 the binary at `kills` random points while it works, starting it again each time.
pub async fn run_with_binary_kills(batch: &dyn FaultBatch, kills: u32) -> Report {
    let mut rng = seeded(batch.system());
    let mut replicas = vec![replica(batch, 0, false)];
    let submitted = Instant::now();
    batch.submit().await;
    let mut while_working = 0;
    for _ in 0..kills {
        tokio::time::sleep(Duration::from_millis(rng.u64(200..1_500))).await;
        while_working += u32::from(batch.check().await.is_err());
        replicas[0].kill_hard();
        tokio::time::sleep(Duration::from_millis(rng.u64(0..1_000))).await;
        replicas[0].start_again();
    }
    let (counts, _) = converge(batch, &mut replicas).await;
    report(
        batch,
        "binary killed",
        counts,
        (kills, while_working),
        submitted.elapsed(),
        None,
    )
}

/// kill -9 the servers under the binary `restarts` times while it works, starting them again on
/// their data; the binary itself must ride it out (keep running and converge).
pub async fn run_with_server_restarts(batch: &dyn FaultBatch, restarts: u32) -> Report {
    let mut rng = seeded(batch.system());
    let mut replicas = vec![replica(batch, 0, false)];
    let submitted = Instant::now();
    batch.submit().await;
    let mut while_working = 0;
    for _ in 0..restarts {
        tokio::time::sleep(Duration::from_millis(rng.u64(500..3_000))).await;
        while_working += u32::from(batch.check().await.is_err());
        let gone = batch.restart_servers().await;
        eprintln!("[{}] servers back after {gone:?}", batch.system());
    }
    let (counts, _) = converge(batch, &mut replicas).await;
    report(
        batch,
        "servers killed",
        counts,
        (restarts, while_working),
        submitted.elapsed(),
        None,
    )
}

/// Two replicas with leader election; kill -9 the leader while it works. The standby must hold
/// the Lease within the Lease duration (plus one retry period of slack) and finish the batch.
pub async fn run_with_leader_kill(batch: &dyn FaultBatch) -> Report {
    let mut rng = seeded(batch.system());
    let mut replicas = vec![replica(batch, 0, true), replica(batch, 1, true)];
    let (client, namespace, name) = batch.lease();
    let first = wait_for_holder(&*client, &namespace, &name, &replicas, None).await;
    let submitted = Instant::now();
    batch.submit().await;
    tokio::time::sleep(Duration::from_millis(rng.u64(500..2_500))).await;
    let while_working = u32::from(batch.check().await.is_err());
    replicas[first].kill_hard();
    let killed = Instant::now();
    let second = wait_for_holder(&*client, &namespace, &name, &replicas, Some(first)).await;
    let handover = killed.elapsed();
    assert_ne!(first, second);
    let bound = batch.lease_duration() + Duration::from_secs(2);
    assert!(
        handover <= bound,
        "{}: the standby took {handover:?} to lead (Lease duration {:?})",
        batch.system(),
        batch.lease_duration()
    );
    replicas[first].start_again();
    let (counts, _) = converge(batch, &mut replicas).await;
    report(
        batch,
        "leader killed",
        counts,
        (1, while_working),
        submitted.elapsed(),
        Some(handover),
    )
}

fn report(
    batch: &dyn FaultBatch,
    fault: &'static str,
    counts: Vec<(&'static str, u64)>,
    (faults, while_working): (u32, u32),
    converged_after: Duration,
    handover: Option<Duration>,
) -> Report {
    let report = Report {
        system: batch.system(),
        fault,
        counts,
        faults,
        while_working,
        converged_after,
        handover,
    };
    eprintln!("{report}");
    report
}

/// The index of the replica holding the Lease (its identity ends in `_<pid>`), other than
/// `not`; waits up to 60 s.
async fn wait_for_holder(
    client: &dyn ObjectClient,
    namespace: &str,
    name: &str,
    replicas: &[Replica],
    not: Option<usize>,
) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let lease: Option<Lease> = client.get_typed(Some(namespace), name).await.ok().flatten();
        let holder = lease
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .unwrap_or_default();
        let pid = holder
            .rsplit('_')
            .next()
            .and_then(|p| p.parse::<u32>().ok());
        let index = replicas
            .iter()
            .position(|r| pid.is_some() && r.pid() == pid);
        if let Some(index) = index.filter(|i| Some(*i) != not) {
            return index;
        }
        assert!(
            Instant::now() < deadline,
            "no replica holds the Lease {namespace}/{name} (holder {holder:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Kills this test binary's kcp with SIGKILL and starts it again on its data.
pub async fn restart_kcp() -> Duration {
    tokio::task::spawn_blocking(|| kcp_testbed::shared_kcp().unwrap().restart_hard().unwrap())
        .await
        .unwrap()
}

/// Kills this test binary's kube-apiserver and etcd with SIGKILL and starts them again.
pub async fn restart_kube() -> Duration {
    tokio::task::spawn_blocking(|| kcp_testbed::shared_kube().unwrap().restart_hard().unwrap())
        .await
        .unwrap()
}

/// The fault runs of one test binary share its servers and kill them: one at a time.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
