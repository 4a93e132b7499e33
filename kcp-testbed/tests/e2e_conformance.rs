//! kcp-sim held to the real servers.
//!
//! Every case under `conformance/cases` runs on a fresh kcp-sim (several side by side; see
//! `kcp_testbed::conformance::schedule`) and is compared field by field with what the real
//! server (kube-apiserver or kcp) answered, recorded in `conformance/recorded`. A difference must be listed with its reason in
//! `conformance/differences.yaml` (README's known differences); a listing that covers nothing
//! any more is stale and fails too. The table printed is README's conformance table.
//!
//! With `KCP_RS_BACKEND=real` the cases run on the real servers, and their answers must still be
//! the recorded ones (kcp-sim is held to those in the fast suite); with
//! `KCP_RS_CONFORMANCE_RECORD=1` they are written instead, and kcp-sim is held to them at once.
//! `KCP_RS_CONFORMANCE_ONLY=<file>[,<file>]` runs only those case files;
//! `KCP_RS_CONFORMANCE_TIMINGS=1` prints the time of every case, not only the five slowest.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kcp_testbed::Backend;
use kcp_testbed::conformance::{
    CaseFile, Difference, Listed, Ran, Table, Target, Verdict, differences, run, run_all, stale,
};
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance")
}

type Recording = BTreeMap<String, Vec<Value>>;

fn recording_path(file: &CaseFile) -> PathBuf {
    dir().join("recorded").join(format!("{}.json", file.file))
}

fn recorded(file: &CaseFile) -> Recording {
    std::fs::read_to_string(recording_path(file))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

fn recording_wanted() -> bool {
    std::env::var("KCP_RS_CONFORMANCE_RECORD").is_ok_and(|v| v == "1")
}

/// What the real server answers now, checked against (or, when recording, written to) the
/// recordings; returns the recordings to hold kcp-sim to. A path `listed` as a known difference
/// is not held to its recording either: kcp-sim is not compared there, and some such paths are
/// the server's own (a message quoting its store revisions differs from run to run).
async fn real_answers(files: &[CaseFile], listed: &[Listed]) -> Vec<Recording> {
    let ran = run_all(files, Target::Real, run::on_real).await;
    print_slowest("on the real servers", ran.iter().flatten());
    let mut drifted = Vec::new();
    let mut all = Vec::new();
    for (file, ran) in files.iter().zip(ran) {
        let mut recording = recorded(file);
        for (case, Ran { id, outcome, .. }) in file.cases.iter().zip(ran) {
            let answers = outcome.unwrap();
            match recording.get(&case.name) {
                Some(before) if !recording_wanted() => {
                    drifted.extend(
                        differences(&answers, before)
                            .into_iter()
                            .filter(|d| !listed.iter().any(|l| l.covers(&id, d)))
                            .map(|d| (id.clone(), d)),
                    );
                }
                _ => {
                    recording.insert(case.name.clone(), answers);
                }
            }
        }
        if recording_wanted() {
            // Answers of cases the file no longer has go with them.
            recording.retain(|name, _| file.cases.iter().any(|c| &c.name == name));
            let text = serde_json::to_string_pretty(&recording).unwrap() + "\n";
            std::fs::write(recording_path(file), text).unwrap();
        }
        all.push(recording);
    }
    let report: Vec<String> = drifted
        .iter()
        .map(|(id, d)| format!("  {id} {d}"))
        .collect();
    assert!(
        report.is_empty(),
        "the real servers no longer answer as recorded (real shown as kcp-sim, recorded as real); \
         record again with KCP_RS_CONFORMANCE_RECORD=1 if that is right:\n{}",
        report.join("\n")
    );
    all
}

/// The slowest cases and the time of all of them, to keep the suite's time in view (cases run
/// side by side, so the suite takes less than their sum).
fn print_slowest<'a, T: 'a>(on: &str, ran: impl Iterator<Item = &'a Ran<T>>) {
    let mut timings: Vec<_> = ran.map(|r| (r.took, &r.id)).collect();
    timings.sort();
    let all: f64 = timings.iter().map(|(took, _)| took.as_secs_f64()).sum();
    println!("{} cases {on}: {all:.0} s of cases in all", timings.len());
    // KCP_RS_CONFORMANCE_TIMINGS=1 prints every case's time, to find where a suite's time goes.
    let shown = match std::env::var("KCP_RS_CONFORMANCE_TIMINGS") {
        Ok(v) if v == "1" => timings.len(),
        _ => 5,
    };
    for (took, id) in timings.iter().rev().take(shown) {
        println!("slowest {on}: {:.2} s {id}", took.as_secs_f64());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcp_sim_answers_as_the_real_servers_do() {
    // KCP_RS_CONFORMANCE_ONLY=<file>[,<file>] runs those files alone (no stale check then).
    // An empty value runs every file, as an unset one does (not none, which would pass).
    let only = std::env::var("KCP_RS_CONFORMANCE_ONLY")
        .ok()
        .filter(|o| !o.is_empty());
    let files: Vec<CaseFile> = CaseFile::load_dir(&dir().join("cases"))
        .unwrap()
        .into_iter()
        .filter(|f| {
            only.as_ref()
                .is_none_or(|o| o.split(',').any(|n| n == f.file))
        })
        .collect();
    let listed = Listed::load(&dir().join("differences.yaml")).unwrap();
    let recordings = match Backend::from_env().unwrap() {
        Backend::Real => {
            let answers = real_answers(&files, &listed).await;
            if !recording_wanted() {
                // The real servers answered as recorded, and kcp-sim is held to the recordings
                // in the fast suite (`cargo test --workspace`): running it again here would
                // compare the same answers with the same recordings.
                println!(
                    "the real servers answered as recorded; kcp-sim is compared in the fast suite"
                );
                return;
            }
            answers
        }
        Backend::Sim => files.iter().map(recorded).collect(),
    };
    let sim = run_all(&files, Target::Sim, run::on_sim).await;
    print_slowest("on kcp-sim", sim.iter().flatten());
    let mut table = Table::default();
    let mut found: Vec<(String, Vec<Difference>)> = Vec::new();
    let mut problems = Vec::new();
    for ((file, recording), sim) in files.iter().zip(&recordings).zip(sim) {
        for (case, Ran { id, outcome, .. }) in file.cases.iter().zip(sim) {
            let Some(real) = recording.get(&case.name) else {
                problems.push(format!(
                    "{id}: no recording; run with KCP_RS_BACKEND=real KCP_RS_CONFORMANCE_RECORD=1"
                ));
                continue;
            };
            let sim = match outcome {
                Ok(answers) => answers,
                Err(e) => {
                    problems.push(format!("{id}: kcp-sim could not run the case: {e}"));
                    table.add(&file.area, &Verdict::Unlisted(Vec::new()));
                    continue;
                }
            };
            let diffs = differences(&sim, real);
            let verdict = Verdict::of(&id, case.fixed.is_some(), &diffs, &listed);
            if let Verdict::Unlisted(unlisted) = &verdict {
                problems.extend(unlisted.iter().map(|d| format!("{id} {d}")));
            }
            table.add(&file.area, &verdict);
            found.push((id, diffs));
        }
    }
    let every_case_ran = only.is_none();
    for gone in stale(&listed, &found)
        .into_iter()
        .filter(|_| every_case_ran)
    {
        problems.push(format!(
            "differences.yaml lists {} {} but kcp-sim answers as the real server there now",
            gone.case, gone.path
        ));
    }
    println!("{table}");
    assert!(
        problems.is_empty(),
        "{table}\nunlisted differences (fix kcp-sim or list them with their reason):\n{}",
        problems.join("\n")
    );
}
