//! Agent selection among 10,000 Agents (target: <= 1 ms).
#![allow(missing_docs, clippy::unwrap_used)]

use capi_agent::foreign::{Agent, AgentCondition, AgentSpec, AgentStatus};
use capi_agent::select::{Request, best, rank};
use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use std::hint::black_box;

fn agents(n: usize) -> Vec<Agent> {
    (0..n)
        .map(|i| {
            let mut a = Agent::new(
                &format!("agent-{i:05}"),
                AgentSpec {
                    approved: i % 7 != 0,
                    ..AgentSpec::default()
                },
            );
            a.metadata.labels = Some([("pool".to_string(), format!("p{}", i % 4))].into());
            a.metadata.creation_timestamp = Some(Time(
                jiff::Timestamp::from_second(1_700_000_000 + (i as i64 * 7919) % 10_007).unwrap(),
            ));
            let c = |t: &str, s: &str| AgentCondition {
                type_: t.into(),
                status: s.into(),
                ..AgentCondition::default()
            };
            a.status = Some(AgentStatus {
                conditions: vec![
                    c("Validated", "True"),
                    c("Connected", if i % 11 == 0 { "False" } else { "True" }),
                    c("Bound", "False"),
                ],
                ..AgentStatus::default()
            });
            a
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let agents = agents(10_000);
    let selector = LabelSelector {
        match_labels: Some([("pool".to_string(), "p1".to_string())].into()),
        match_expressions: None,
    };
    let any = Request::default();
    let pool = Request {
        selector: Some(&selector),
        ..Request::default()
    };
    c.bench_function("select/best of 10000 agents", |b| {
        b.iter(|| black_box(best(&agents, &any)))
    });
    c.bench_function("select/rank 10000 agents", |b| {
        b.iter(|| black_box(rank(&agents, &any).len()))
    });
    c.bench_function("select/rank 10000 agents, selector", |b| {
        b.iter(|| black_box(rank(&agents, &pool).len()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
