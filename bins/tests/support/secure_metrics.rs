//! Scraping a binary's `/metrics` under `--metrics-secure`, and the families every binary must
//! serve (controller-runtime's, client-go's and the process', as dashboards read them).

use std::process::Command;

/// The metric families controller-runtime users' dashboards and alerts read, as their `# TYPE`
/// lines name them (a counter without `_total`).
pub const FAMILIES: [&str; 20] = [
    "controller_runtime_reconcile",
    "controller_runtime_reconcile_errors",
    "controller_runtime_terminal_reconcile_errors",
    "controller_runtime_reconcile_time_seconds",
    "controller_runtime_max_concurrent_reconciles",
    "controller_runtime_active_workers",
    "workqueue_adds",
    "workqueue_depth",
    "workqueue_queue_duration_seconds",
    "workqueue_work_duration_seconds",
    "workqueue_retries",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
    "rest_client_requests",
    "rest_client_request_duration_seconds",
    "leader_election_master_status",
    "process_resident_memory_bytes",
    "process_cpu_seconds",
    "process_open_fds",
    "process_start_time_seconds",
];

/// The families of [`FAMILIES`] `exposition` lacks.
pub fn missing_families(exposition: &str) -> Vec<&'static str> {
    FAMILIES
        .into_iter()
        .filter(|family| !exposition.contains(&format!("# TYPE {family} ")))
        .collect()
}

/// `curl -k` of `https://127.0.0.1:<port>/metrics` (the certificate is self-signed) with
/// `token`: the status code and the body.
pub fn scrape(port: u16, token: Option<&str>) -> (String, String) {
    let mut curl = Command::new("curl");
    curl.args(["-sk", "-o", "-", "-w", "\n%{http_code}"]);
    if let Some(token) = token {
        curl.arg("-H").arg(format!("Authorization: Bearer {token}"));
    }
    let out = curl
        .arg(format!("https://127.0.0.1:{port}/metrics"))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_owned(), body.to_owned())
}

/// As controller-runtime's filter answers: 401 without a token, 403 for `user-1` (no rule lets
/// it get /metrics), and every family for `allowed` (a token the API server lets get /metrics),
/// once the binary leads and its controllers started (within 30 s).
pub async fn served_only_to_who_may_read_them(port: u16, allowed: String) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let token = allowed.clone();
        let (code, body) = tokio::task::spawn_blocking(move || scrape(port, Some(&token)))
            .await
            .unwrap();
        if code == "200" && missing_families(&body).is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            break; // the assertions below say what is missing
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let ids = &kcp_testbed::real::credentials().unwrap().identities;
    let user = ids.user("user-1").unwrap().token.clone();
    let answers = tokio::task::spawn_blocking(move || {
        (
            scrape(port, None),
            scrape(port, Some(&user)),
            scrape(port, Some(&allowed)),
        )
    })
    .await
    .unwrap();
    assert_eq!(answers.0.0, "401", "anonymous: {}", answers.0.1);
    assert_eq!(answers.1.0, "403", "user-1: {}", answers.1.1);
    assert_eq!(answers.2.0, "200", "allowed: {}", answers.2.1);
    assert_eq!(
        missing_families(&answers.2.1),
        Vec::<&str>::new(),
        "under --metrics-secure:\n{}",
        answers.2.1
    );
}
