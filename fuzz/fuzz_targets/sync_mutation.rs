//! kcp-sync's mutation rules (`spec.mutation` of a PublishedResource): delete, regex, template
//! (Go html/template) and CEL rules with any path, pattern, replacement, template and
//! expression, compiled the way a reconcile compiles them and applied to an object in both
//! directions. Nothing may panic or hang; every error names the rule and has a reason.
#![no_main]

use std::sync::LazyLock;

use kcp_core::TemplateEngine;
use kcp_sync::api::{
    ResourceCELMutation, ResourceDeleteMutation, ResourceMutation, ResourceMutationSpec,
    ResourceRegexMutation, ResourceTemplateMutation,
};
use kcp_sync::mutation::Mutator;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Arbitrary, Debug)]
enum Rule {
    Delete {
        path: String,
    },
    Regex {
        path: String,
        pattern: String,
        replacement: String,
    },
    Template {
        path: String,
        template: String,
    },
    Cel {
        path: String,
        expression: String,
    },
    /// Two kinds at once (refused at compile time).
    Both {
        path: String,
        template: String,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    spec: Vec<Rule>,
    status: Vec<Rule>,
    other: bool,
}

static ENGINE: LazyLock<TemplateEngine> = LazyLock::new(TemplateEngine::new);

static OBJECT: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "apiVersion": "example.com/v1", "kind": "Thing",
        "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"}},
        "spec": {"n": 24, "f": 1.5, "s": "Hello <World> & 'you'", "b": true, "nil": null,
                 "items": [{"name": "web", "port": 80}, {"name": "db"}, 3]},
        "status": {"phase": "Ready", "conditions": [{"type": "Ready", "status": "True"}]},
    })
});

static OTHER: LazyLock<Value> = LazyLock::new(
    || json!({"metadata": {"name": "b", "namespace": "local"}, "spec": {"s": "other"}}),
);

fn rule(rule: &Rule) -> ResourceMutation {
    let mut out = ResourceMutation::default();
    match rule {
        Rule::Delete { path } => out.delete = Some(ResourceDeleteMutation { path: path.clone() }),
        Rule::Regex {
            path,
            pattern,
            replacement,
        } => {
            out.regex = Some(ResourceRegexMutation {
                path: path.clone(),
                pattern: pattern.clone(),
                replacement: replacement.clone(),
            })
        }
        Rule::Template { path, template } => {
            out.template = Some(ResourceTemplateMutation {
                path: path.clone(),
                template: template.clone(),
            })
        }
        Rule::Cel { path, expression } => {
            out.cel = Some(ResourceCELMutation {
                path: path.clone(),
                expression: expression.clone(),
            })
        }
        Rule::Both { path, template } => {
            out.delete = Some(ResourceDeleteMutation { path: path.clone() });
            out.template = Some(ResourceTemplateMutation {
                path: path.clone(),
                template: template.clone(),
            });
        }
    }
    out
}

fuzz_target!(|input: Input| {
    if input.spec.len() + input.status.len() > 8 {
        return;
    }
    let spec = ResourceMutationSpec {
        spec: input.spec.iter().map(rule).collect(),
        status: input.status.iter().map(rule).collect(),
    };
    let mutator = match Mutator::new("fuzz", "spec.mutation", Some(&spec)) {
        Ok(m) => m,
        Err(err) => {
            let text = err.to_string();
            assert!(
                text.contains("spec.mutation."),
                "compile error without its rule: {text}"
            );
            return;
        }
    };
    let other = input.other.then_some(&*OTHER);
    for result in [
        mutator.mutate_spec(&ENGINE, &OBJECT, other),
        mutator.mutate_status(&ENGINE, &OBJECT, other),
    ] {
        if let Err(err) = result {
            let text = err.to_string();
            assert!(
                text.contains("spec.mutation."),
                "mutation error without its rule: {text}"
            );
        }
    }
});
