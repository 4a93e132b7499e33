//! Prints the apply waves of a manifest bundle, without a cluster.
//!
//! ```text
//! cargo run -p kcp-examples --bin plan -- examples/manifests/bundle.yaml
//! ```
//!
//! Objects may come in any order: the plan puts CRDs before their custom resources, Namespaces
//! before their members, roles and service accounts before bindings, and so on. Everything in a
//! wave can be applied at once.

use std::process::ExitCode;

use kcp_core::apply::{ApplyPlan, RuleSet};
use kcp_core::manifest::parse_manifests;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: plan <manifests.yaml>");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("reading {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let plan = match parse_manifests(&path, &text)
        .and_then(|objects| ApplyPlan::build(objects, &RuleSet::default()))
    {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    for (n, wave) in plan.waves().iter().enumerate() {
        println!("wave {n}:");
        for &i in wave {
            let after: Vec<String> = plan
                .dependencies(i)
                .into_iter()
                .map(|d| plan.object(d).to_string())
                .collect();
            match after.is_empty() {
                true => println!("  {}", plan.object(i)),
                false => println!("  {}   (after {})", plan.object(i), after.join(", ")),
            }
        }
    }
    ExitCode::SUCCESS
}
