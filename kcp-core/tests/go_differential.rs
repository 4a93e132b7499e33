//! Differential test: kcp-core's Go template engine against Go itself.
//!
//! `go_differential/cases.json` is a table of templates and data written from the Go
//! text/template and sprig documentation, each with the output (or error) Go produced for it
//! (recorded with Go 1.19 and sprig 3.2.3, and checked live against Go 1.26 with sprig 3.3.0 and
//! yaml.v2 2.4.0, the versions upstream's tools pin). Every case is rendered with kcp-core and compared byte for byte
//! with that expected output; for an expected error, kcp-core must fail too, on the same
//! line when Go names one. Cases marked `yaml` also compare the rendered manifest as
//! Kubernetes reads it (YAML 1.1, converted to JSON) with what Go's ghodss/yaml made of it;
//! cases marked `html` render with [`Escaping::Html`] against Go's `html/template`.
//!
//! When Go is installed, the test also builds the Go renderer in `gotmpl-oracle/` (a Go module:
//! sprig v3.3.0, as the upstream init-agent pins it, and ghodss/yaml, from the Go module proxy)
//! and renders every case with it live, so
//! the table itself is checked against Go, and checks that every function of
//! `sprig.TxtFuncMap()` is in kcp-core's catalogue. Without Go that part is skipped with a
//! line saying so; set `KCP_REQUIRE_GO_ORACLE=1` (CI does) to make a missing Go a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod go_oracle;

use std::path::Path;

use kcp_core::Error;
use kcp_core::template::{Escaping, TemplateEngine, TemplateOptions};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    template: String,
    data: Value,
    #[serde(default)]
    yaml: bool,
    #[serde(default)]
    html: bool,
    output: Option<String>,
    json: Option<String>,
    error: Option<String>,
}

/// What rendering a case gave.
#[derive(Debug, PartialEq)]
enum Outcome {
    Output {
        text: String,
        json: Option<Value>,
    },
    Error {
        line: Option<usize>,
        message: String,
    },
}

fn cases() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go_differential/cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn render_ours(engine: &TemplateEngine, case: &Case) -> Outcome {
    let escaping = if case.html {
        Escaping::Html
    } else {
        Escaping::Text
    };
    let options = TemplateOptions::go().with_escaping(escaping);
    match engine.render_with(&case.name, &case.template, &options, &case.data) {
        Ok(text) => {
            let json = case
                .yaml
                .then(|| match kcp_core::parse_manifests(&case.name, &text) {
                    Ok(objects) => serde_json::to_value(&objects[0]).unwrap(),
                    Err(err) => Value::String(format!("manifest error: {err}")),
                });
            Outcome::Output { text, json }
        }
        Err(Error::Template { line, message, .. }) => Outcome::Error { line, message },
        Err(other) => Outcome::Error {
            line: None,
            message: other.to_string(),
        },
    }
}

/// The line Go names in "template: NAME:LINE[:COL]: ...".
fn go_error_line(message: &str) -> Option<usize> {
    let rest = message.strip_prefix("template: template:")?;
    rest.split(':').next()?.parse().ok()
}

/// Compares kcp-core's outcome with Go's; `None` when they agree.
fn compare(
    case: &Case,
    ours: &Outcome,
    output: Option<&str>,
    json: Option<&str>,
    error: Option<&str>,
) -> Option<String> {
    match (ours, output, error) {
        (
            Outcome::Output {
                text,
                json: our_json,
            },
            Some(expected),
            None,
        ) => {
            if text != expected {
                return Some(format!(
                    "output differs\n  go:   {expected:?}\n  ours: {text:?}"
                ));
            }
            if case.yaml {
                let go_json: Value = json
                    .map(|j| serde_json::from_str(j).unwrap())
                    .unwrap_or(Value::Null);
                if our_json.as_ref() != Some(&go_json) {
                    return Some(format!(
                        "manifest differs\n  go:   {go_json}\n  ours: {}",
                        our_json.as_ref().map(Value::to_string).unwrap_or_default()
                    ));
                }
            }
            None
        }
        (Outcome::Error { line, message }, None, Some(expected)) => {
            let go_line = go_error_line(expected);
            if go_line.is_some() && *line != go_line {
                return Some(format!(
                    "both fail, but on different lines\n  go:   {expected}\n  ours: line {line:?}: {message}"
                ));
            }
            None
        }
        (Outcome::Error { message, .. }, Some(expected), _) => {
            Some(format!("go renders {expected:?}, ours fails: {message}"))
        }
        (Outcome::Output { text, .. }, None, Some(expected)) => {
            Some(format!("go fails ({expected}), ours renders {text:?}"))
        }
        _ => Some("the case has neither an output nor an error".to_owned()),
    }
}

#[test]
fn table_has_at_least_150_cases_with_unique_names() {
    let cases = cases();
    assert!(cases.len() >= 150, "{} cases", cases.len());
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names must be unique");
}

#[test]
fn every_case_renders_as_go_rendered_it() {
    let engine = TemplateEngine::new();
    let cases = cases();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let ours = render_ours(&engine, case);
            compare(
                case,
                &ours,
                case.output.as_deref(),
                case.json.as_deref(),
                case.error.as_deref(),
            )
            .map(|why| format!("case {:?} ({:?}): {why}", case.name, case.template))
        })
        .collect();
    println!(
        "go differential (recorded table): {} of {} cases agree",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_case_renders_as_go_renders_it_live() {
    let Some(oracle) = go_oracle::built_or_skip() else {
        return;
    };
    let cases = cases();
    let requests: Vec<Value> = cases
        .iter()
        .map(|c| {
            serde_json::json!({"template": c.template, "data": c.data, "yaml": c.yaml, "html": c.html})
        })
        .collect();
    let answers = go_oracle::ask(&oracle, &requests);
    assert_eq!(answers.len(), cases.len());
    let engine = TemplateEngine::new();
    let mut failures = Vec::new();
    for (case, answer) in cases.iter().zip(&answers) {
        let recorded = (case.output.as_deref(), case.error.is_some());
        let live = (answer["output"].as_str(), answer["error"].is_string());
        if recorded != live {
            failures.push(format!(
                "case {:?}: the recorded expectation is not what Go renders now: {answer}",
                case.name
            ));
            continue;
        }
        let ours = render_ours(&engine, case);
        if let Some(why) = compare(
            case,
            &ours,
            answer["output"].as_str(),
            answer["json"].as_str(),
            answer["error"].as_str(),
        ) {
            failures.push(format!("case {:?} ({:?}): {why}", case.name, case.template));
        }
    }
    println!(
        "go differential (live Go): {} of {} cases byte-identical",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_sprig_function_is_supported_or_excluded_with_a_reason() {
    let Some(oracle) = go_oracle::built_or_skip() else {
        return;
    };
    let answers = go_oracle::ask(&oracle, &[serde_json::json!({"list_functions": true})]);
    let names: Vec<String> = serde_json::from_value(answers[0]["functions"].clone()).unwrap();
    assert!(names.len() > 200, "{names:?}");
    let engine = TemplateEngine::new();
    for name in names {
        // A function that exists parses (calls are checked when the template is parsed);
        // an excluded one is refused with its name and a reason.
        let src = format!("{{{{ if false }}}}{{{{ {name} }}}}{{{{ end }}}}");
        match engine.check("t", &src, &Default::default()) {
            Ok(()) => {}
            Err(Error::Template { message, .. }) => assert!(
                message.contains(&format!("function {name:?} is not allowed: ")),
                "{name}: {message}"
            ),
            Err(other) => panic!("{name}: {other}"),
        }
    }
}
