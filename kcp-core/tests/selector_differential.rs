//! kcp-core reads label and field selectors as kube-apiserver does: it accepts what
//! apimachinery's `labels.Parse` and `fields.ParseSelector` accept, refuses the rest with the
//! same message, and selects what they select. Held to apimachinery itself (v0.34.2, in the Go
//! oracle) on thousands of selectors made by cutting, changing and growing valid ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod go_oracle;

use kcp_core::selector::{FieldSelector, LabelSelector};
use serde_json::{Value, json};

const SEEDS: &[&str] = &[
    "app=web,tier in (a,b),!legacy,env!=prod",
    "example.com/team notin (x,,y), release , n>3,m<10",
    "a==b,c in (),d=",
];

/// Pieces that steer the grammar: operators, keywords, brackets, bad characters and white space.
const STEERING: &[&str] = &[
    "=",
    "==",
    "!",
    "!=",
    ">",
    "<",
    ",",
    "(",
    ")",
    " ",
    "\t",
    "in",
    "notin",
    "$",
    "-",
    "_",
    ".",
    "/",
    "A",
    "7",
    "\0",
    "é",
    "\\",
    // 64 characters: one more than a name part or a value may have.
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

const FIELD_SEEDS: &[&str] = &[
    r"metadata.name=a\,b\=c\\d,status.phase!=Running",
    "spec.nodeName==,metadata.namespace=default",
];

/// Every seed cut short at each character, and with each steering piece put in place of, and in
/// front of, each of its characters.
fn selectors() -> Vec<String> {
    mutations(SEEDS)
}

fn mutations(seeds: &[&str]) -> Vec<String> {
    let mut selectors = Vec::new();
    for seed in seeds {
        let chars: Vec<char> = seed.chars().collect();
        for at in 0..=chars.len() {
            let head: String = chars[..at].iter().collect();
            selectors.push(head.clone());
            let Some(tail) = chars.get(at..) else {
                continue;
            };
            if tail.is_empty() {
                continue;
            }
            let rest: String = tail[1..].iter().collect();
            let whole_tail: String = tail.iter().collect();
            for piece in STEERING {
                selectors.push(format!("{head}{piece}{rest}"));
                selectors.push(format!("{head}{piece}{whole_tail}"));
            }
        }
    }
    selectors
}

/// The oracle's answer to `{key: selector}` for each selector, in order.
fn ask_each(oracle: &std::path::Path, key: &str, selectors: &[String]) -> Vec<Value> {
    let requests: Vec<Value> = selectors.iter().map(|s| json!({key: s})).collect();
    go_oracle::ask(oracle, &requests)
}

#[track_caller]
fn assert_none_differ(differ: &[String], of: usize, what: &str) {
    assert!(
        differ.is_empty(),
        "{} of {of} {what} differ from apimachinery, first:\n{}",
        differ.len(),
        differ[..differ.len().min(8)].join("\n")
    );
}

/// Label sets the seeds' selectors select or not.
fn label_sets() -> Vec<Value> {
    vec![
        json!({}),
        json!({"app": "web", "tier": "a", "env": "dev"}),
        json!({"app": "web", "tier": "c", "legacy": "", "env": "prod"}),
        json!({"example.com/team": "y", "release": "1", "n": "5", "m": "3"}),
        json!({"n": "x", "m": "12"}),
        json!({"a": "b", "c": "", "d": ""}),
    ]
}

#[test]
fn a_selector_selects_what_labels_parse_selects() {
    let Some(oracle) = go_oracle::built_or_skip() else {
        return;
    };
    let selectors: Vec<String> = selectors()
        .into_iter()
        .filter(|s| LabelSelector::parse(s).is_ok())
        .collect();
    let cases: Vec<(String, Value)> = selectors
        .iter()
        .flat_map(|s| label_sets().into_iter().map(move |l| (s.clone(), l)))
        .collect();
    let requests: Vec<Value> = cases
        .iter()
        .map(|(s, labels)| json!({"label_selector": s, "labels": labels}))
        .collect();
    let answers = go_oracle::ask(&oracle, &requests);
    let differ: Vec<String> = cases
        .iter()
        .zip(&answers)
        .filter_map(|((selector, labels), go)| {
            let go_says = go["exists"].as_bool();
            let selector_parsed = LabelSelector::parse(selector).ok()?;
            let we_say = Some(selector_parsed.matches(labels.as_object()));
            (we_say != go_says)
                .then(|| format!("{selector:?} on {labels}: kcp-core {we_say:?}, Go {go_says:?}"))
        })
        .collect();
    assert_none_differ(&differ, cases.len(), "selections");
}

#[test]
fn a_label_selector_is_accepted_or_refused_as_labels_parse_does() {
    let Some(oracle) = go_oracle::built_or_skip() else {
        return;
    };
    let selectors = selectors();
    let answers = ask_each(&oracle, "label_selector", &selectors);
    let differ: Vec<String> = selectors
        .iter()
        .zip(&answers)
        .filter_map(|(selector, go)| {
            let go_says = go["error"].as_str().map(String::from);
            let we_say = LabelSelector::parse(selector).err().map(|e| e.to_string());
            (we_say != go_says)
                .then(|| format!("{selector:?}: kcp-core {we_say:?}, Go {go_says:?}"))
        })
        .collect();
    assert_none_differ(&differ, selectors.len(), "selectors");
}

#[test]
fn a_field_selector_is_read_as_fields_parse_selector_reads_it() {
    let Some(oracle) = go_oracle::built_or_skip() else {
        return;
    };
    let selectors = mutations(FIELD_SEEDS);
    let answers = ask_each(&oracle, "field_selector", &selectors);
    let differ: Vec<String> = selectors
        .iter()
        .zip(&answers)
        .filter_map(|(selector, go)| {
            // Go's answer: its error, or the selector written back (terms sorted, values escaped).
            let go_says = match go["error"].as_str() {
                Some(error) => Err(error.to_string()),
                None => Ok(go["output"].as_str().unwrap_or_default().to_string()),
            };
            let we_say = FieldSelector::parse(selector)
                .map(|s| s.to_string())
                .map_err(|e| e.to_string());
            (we_say != go_says)
                .then(|| format!("{selector:?}: kcp-core {we_say:?}, Go {go_says:?}"))
        })
        .collect();
    assert_none_differ(&differ, selectors.len(), "field selectors");
}
