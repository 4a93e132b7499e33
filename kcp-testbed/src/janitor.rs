//! The test bed's disk: every run's data is removed, its logs kept for a day.
//!
//! A kcp and a kube-apiserver with etcd take about 200 MB of data (etcd preallocates two 64 MB
//! write-ahead logs), and a test binary's servers live in statics that are never dropped. So a
//! small `sh` janitor, whose standard input is a pipe from this process, waits for this process
//! to end (the pipe closes however it ends), gives the peers' watchdogs time to stop them, and
//! then removes everything in the run's directory except the `*.log` files. When a new run
//! starts, directories of runs whose process is gone and which are older than a day are removed
//! whole.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

/// How long a finished run's logs are kept.
const KEEP_LOGS_FOR: Duration = Duration::from_secs(24 * 3600);

/// Longer than a peer's watchdog takes to kill it (TERM, then KILL after 10 s).
const JANITOR: &str = r##"
read -r _
sleep 12
find "$1" -mindepth 1 -maxdepth 1 ! -name '*.log' -exec rm -rf {} +
"##;

/// Starts the janitor of `dir`. The returned child must be kept alive for the life of the
/// process (its standard input is the pipe whose end is the signal).
pub(crate) fn watch(dir: &Path) -> std::io::Result<Child> {
    Command::new("sh")
        .arg("-c")
        .arg(JANITOR)
        .arg("sh")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// Removes, under `parent`, the directories named `<prefix><pid>-…` of processes that no
/// longer run and that were last changed more than a day ago. Errors are ignored: a directory
/// that cannot be removed costs disk, not correctness.
pub(crate) fn prune_finished_runs(parent: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if process_runs(pid) || !older_than(&entry.path(), KEEP_LOGS_FOR) {
            continue;
        }
        let _ = std::fs::remove_dir_all(entry.path());
    }
}

fn process_runs(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

fn older_than(path: &Path, age: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok())
        .is_some_and(|elapsed| elapsed > age)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_run_older_than_a_day_is_removed_and_a_live_one_kept() {
        let parent = std::env::temp_dir().join(format!("janitor-test-{}", fastrand::u64(..)));
        let live = parent.join(format!("run-{}-aa", std::process::id()));
        let finished = parent.join("run-4294967-bb");
        let other = parent.join("unrelated");
        for dir in [&live, &finished, &other] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let old = SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
        for dir in [&live, &finished, &other] {
            std::fs::File::open(dir).unwrap().set_modified(old).unwrap();
        }

        prune_finished_runs(&parent, "run-");

        assert!(live.exists(), "this process still runs");
        assert!(!finished.exists(), "no process 4294967 exists");
        assert!(other.exists(), "not a run directory");
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn a_finished_run_of_today_keeps_its_logs() {
        let parent = std::env::temp_dir().join(format!("janitor-test-{}", fastrand::u64(..)));
        let finished = parent.join("run-4294967-cc");
        std::fs::create_dir_all(&finished).unwrap();

        prune_finished_runs(&parent, "run-");

        assert!(finished.exists());
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn the_janitor_removes_data_but_not_logs_once_its_pipe_closes() {
        let dir = std::env::temp_dir().join(format!("janitor-test-{}", fastrand::u64(..)));
        std::fs::create_dir_all(dir.join("etcd/member")).unwrap();
        std::fs::write(dir.join("etcd/member/wal"), b"data").unwrap();
        std::fs::write(dir.join("kcp.log"), b"log").unwrap();
        let script = JANITOR.replace("sleep 12", "sleep 0");
        let mut janitor = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("sh")
            .arg(&dir)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();

        drop(janitor.stdin.take());
        janitor.wait().unwrap();

        assert!(!dir.join("etcd").exists());
        assert!(dir.join("kcp.log").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
