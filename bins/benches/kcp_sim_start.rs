//! Start to ready of kcp-sim (target: under 50 ms), in kube and kcp mode:
//!
//! - `in_process`: `kcp_sim::Server::start` on a two-worker tokio runtime until a `GET /api`
//!   (kcp mode: `/clusters/root/api`) on its URL is answered 200 over a new TCP connection;
//! - `process`: the release `kcp-sim` binary, from spawning it until the same `GET` is
//!   answered 200, sent to the URL of its `kcp-sim serving <url>` line as a CI script would
//!   (polling a port before anything listens on it can connect the poller to itself: Linux's
//!   TCP self-connect, when the kernel picks that port as the poller's own).
//!
//! - `serving_ca`: making the CA and serving certificate (`kcp_sim::serving_ca`), which kcp mode
//!   and `--tls` add to a start.
//!
//! Stopping the server is not timed. `cargo bench -p kcp-bins --bench kcp_sim_start`.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use kcp_sim::{Config, Server};
use support::Running;

const BINARY: &str = env!("CARGO_BIN_EXE_kcp-sim");

/// `(mode flag, readiness path)` of the two modes.
const MODES: [(&str, &str); 2] = [("kube", "/api"), ("kcp", "/clusters/root/api")];

fn config(mode: &str) -> Config {
    if mode == "kcp" {
        Config::kcp()
    } else {
        Config::default()
    }
}

/// Whether `GET path` on `host:port` (no scheme) is answered 200.
fn answers(host_port: &str, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(host_port) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host_port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer.starts_with(b"HTTP/1.1 200")
}

fn in_process(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let mut group = c.benchmark_group("kcp_sim_start");
    for (mode, path) in MODES {
        group.bench_function(format!("{mode}_in_process"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let sim = rt
                        .block_on(Server::start(config(mode)))
                        .unwrap_or_else(|e| panic!("{e}"));
                    let host_port = sim.url().trim_start_matches("http://").to_owned();
                    assert!(answers(&host_port, path), "{mode}: GET {path} failed");
                    total += start.elapsed();
                    rt.block_on(sim.shutdown());
                }
                total
            })
        });
    }
    group.finish();
}

fn process(c: &mut Criterion) {
    let mut group = c.benchmark_group("kcp_sim_start");
    group.sample_size(20);
    for (mode, path) in MODES {
        group.bench_function(format!("{mode}_process"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let mut child = Command::new(BINARY)
                        .args(["--mode", mode])
                        .stdout(Stdio::piped())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap_or_else(|e| panic!("{BINARY}: {e}"));
                    let stdout = child.stdout.take();
                    let running = Running(child);
                    let mut line = String::new();
                    if let Some(stdout) = stdout {
                        let _ = BufReader::new(stdout).read_line(&mut line);
                    }
                    let host_port = line
                        .trim_end()
                        .strip_prefix("kcp-sim serving http://")
                        .unwrap_or_else(|| panic!("{mode}: no URL line, got {line:?}"))
                        .to_owned();
                    assert!(answers(&host_port, path), "{mode}: GET {path} failed");
                    total += start.elapsed();
                    drop(running);
                }
                total
            })
        });
    }
    group.finish();
}

fn serving_ca(c: &mut Criterion) {
    let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
    c.bench_function("kcp_sim_start/serving_ca", |b| {
        b.iter(|| {
            kcp_sim::serving_ca::ServingCa::generate(loopback).unwrap_or_else(|e| panic!("{e}"))
        })
    });
}

criterion_group!(benches, in_process, process, serving_ca);
criterion_main!(benches);
