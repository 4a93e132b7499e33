//! kcp-sync's related-object locators (`spec.related[]` of a PublishedResource): a reference
//! path with an optional regex rewrite, a template rendered on both sides, and a label
//! selector whose keys and values are templates, against two primaries. Nothing may panic
//! or hang; every error has a message.
#![no_main]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use kcp_core::TemplateEngine;
use kcp_sync::api::{
    RegularExpression, RelatedResourceObjectReference, RelatedResourceObjectSelector,
    RelatedResourceOrigin, RelatedResourceSelectorRewrite, TemplateExpression,
};
use kcp_sync::related::{
    Primaries, apply_regex, reference_pairs, rewrite_name, selector_string, template_pair,
};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Arbitrary, Debug)]
enum Locator {
    Reference {
        path: String,
        regex: Option<(String, String)>,
    },
    Template {
        template: String,
    },
    Selector {
        labels: Vec<(String, String)>,
        rewrite_regex: Option<(String, String)>,
        rewrite_template: Option<String>,
        selected: String,
    },
    Regex {
        pattern: String,
        replacement: String,
        value: String,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    locator: Locator,
    from_kcp: bool,
    secret_name: String,
}

static ENGINE: LazyLock<TemplateEngine> = LazyLock::new(TemplateEngine::new);

fn primary(name: &str, secret: &str) -> Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Database",
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "db"}},
        "spec": {"secretRef": {"name": secret}, "list": [{"name": "a"}, {"name": secret}],
                 "port": 5432},
    })
}

fn regex((pattern, replacement): &(String, String)) -> RegularExpression {
    RegularExpression {
        pattern: pattern.clone(),
        replacement: replacement.clone(),
    }
}

fuzz_target!(|input: Input| {
    let remote = primary("remote", &input.secret_name);
    let local = primary("local", "fixed-secret");
    let primaries = Primaries {
        local: &local,
        remote: &remote,
        cluster: "1x2y3z",
        path: "root:org",
    };
    let origin = if input.from_kcp {
        RelatedResourceOrigin::Kcp
    } else {
        RelatedResourceOrigin::Service
    };
    let (origin_primary, dest_primary) = primaries.by_origin(origin);
    let location = "spec.related[0]";
    let error = match &input.locator {
        Locator::Reference { path, regex: re } => {
            let reference = RelatedResourceObjectReference {
                path: path.clone(),
                regex: re.as_ref().map(regex),
            };
            reference_pairs(location, &reference, origin_primary, dest_primary).err()
        }
        Locator::Template { template } => {
            template_pair(&ENGINE, location, template, origin, &primaries).err()
        }
        Locator::Selector {
            labels,
            rewrite_regex,
            rewrite_template,
            selected,
        } => {
            if labels.len() > 8 {
                return;
            }
            let selector = RelatedResourceObjectSelector {
                match_labels: Some(labels.iter().cloned().collect::<BTreeMap<_, _>>()),
                rewrite: RelatedResourceSelectorRewrite {
                    regex: rewrite_regex.as_ref().map(regex),
                    template: rewrite_template.as_ref().map(|t| TemplateExpression {
                        template: t.clone(),
                    }),
                },
                ..RelatedResourceObjectSelector::default()
            };
            selector_string(&ENGINE, location, &selector, &primaries)
                .and_then(|_| {
                    rewrite_name(
                        &ENGINE,
                        location,
                        &selector,
                        selected,
                        Some(&remote),
                        &primaries,
                    )
                })
                .err()
        }
        Locator::Regex {
            pattern,
            replacement,
            value,
        } => {
            let re = RegularExpression {
                pattern: pattern.clone(),
                replacement: replacement.clone(),
            };
            apply_regex(location, &re, value).err()
        }
    };
    if let Some(err) = error {
        let text = err.to_string();
        assert!(
            text.contains(location),
            "error without its location: {text}"
        );
    }
});
