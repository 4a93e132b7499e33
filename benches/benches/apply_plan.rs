//! Plan building (`ApplyPlan::build` with the default rules) for 1k, 10k and 100k mixed objects.
//!
//! Targets on the project's 2-core machine: 10k objects in <= 20 ms, 100k in <= 300 ms, and
//! near-linear growth. Cloning the input is setup, not measured.

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kcp_benches::mixed_objects;
use kcp_core::apply::{ApplyPlan, RuleSet};

fn plan_building(c: &mut Criterion) {
    let rules = RuleSet::default();
    let mut group = c.benchmark_group("apply_plan_build");
    group.sample_size(20);
    for n in [1_000usize, 10_000, 100_000] {
        let objects = mixed_objects(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &objects, |b, objects| {
            b.iter_batched(
                || objects.clone(),
                |input| ApplyPlan::build(input, &rules),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, plan_building);
criterion_main!(benches);
