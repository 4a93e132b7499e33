//! Mutations (`mutation.spec` on the way from source to destination, `mutation.status` on
//! the way back), upstream §4.9.
//!
//! A [`Mutator`] is compiled once per PublishedResource generation (upstream compiles on
//! every reconcile): regular expressions are compiled and every rule is checked to set
//! exactly one of `delete`, `regex`, `template`, `cel` (upstream silently takes the first).
//! Rules run in order on a copy of the object:
//!
//! * `delete`: removes the value at the path.
//! * `regex`: without a pattern, sets the path to the replacement string; otherwise reads the
//!   value as a string (numbers and objects as their JSON text), replaces every match
//!   (`$1`/`${name}` refer to groups, as in Go) and writes a string back.
//! * `template`: a Go template over `.Value` (the current value, with gjson's `.Value.String`,
//!   `.Value.Int`, `.Value.Float`, `.Value.Bool`, `.Value.Raw`, `.Value.Exists`),
//!   `.LocalObject` (the object being mutated) and `.RemoteObject` (the other side, or nil);
//!   the trimmed output is written as a string. Rendered as text: upstream renders with
//!   `html/template`, which escapes `<`, `>`, `&`, quotes; kcp-sync does not.
//! * `cel`: a CEL expression (the `cel` crate, compiled once) over `self` (the object being
//!   mutated), `other` (the other side, or null) and `value` (the current value, or null);
//!   the result is written back with its type (`42` stays a number).

use std::sync::Arc;

use kcp_core::TemplateEngine;
use regex::Regex;
use serde_json::{Value, json};

use crate::api::{ResourceMutation, ResourceMutationSpec};
use crate::error::{Error, Result};
use crate::path;

/// One compiled rule.
#[derive(Clone)]
enum Rule {
    Delete {
        path: String,
    },
    Regex {
        path: String,
        regex: Option<Regex>,
        replacement: String,
    },
    Template {
        path: String,
        template: String,
    },
    Cel {
        path: String,
        program: Arc<cel::Program>,
    },
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::Delete { path } => write!(f, "delete {path}"),
            Rule::Regex { path, .. } => write!(f, "regex {path}"),
            Rule::Template { path, .. } => write!(f, "template {path}"),
            Rule::Cel { path, .. } => write!(f, "cel {path}"),
        }
    }
}

/// A rule with where it came from (`spec.mutation.spec[2]`).
#[derive(Debug, Clone)]
struct Located {
    location: String,
    rule: Rule,
}

/// The compiled mutation rules of one PublishedResource (or one related resource).
#[derive(Debug, Clone, Default)]
pub struct Mutator {
    spec: Vec<Located>,
    status: Vec<Located>,
}

impl Mutator {
    /// Compiles `spec` (absent means no rules). `owner` names the PublishedResource and
    /// `field` the mutation field (`spec.mutation` or `spec.related[0].mutation`), for errors.
    pub fn new(owner: &str, field: &str, spec: Option<&ResourceMutationSpec>) -> Result<Self> {
        let Some(spec) = spec else {
            return Ok(Self::default());
        };
        let compile = |rules: &[ResourceMutation], list: &str| {
            rules
                .iter()
                .enumerate()
                .map(|(i, r)| compile_rule(owner, &format!("{field}.{list}[{i}]"), r))
                .collect::<Result<Vec<_>>>()
        };
        Ok(Self {
            spec: compile(&spec.spec, "spec")?,
            status: compile(&spec.status, "status")?,
        })
    }

    /// Whether there are no rules at all.
    pub fn is_empty(&self) -> bool {
        self.spec.is_empty() && self.status.is_empty()
    }

    /// Applies the spec rules to a copy of `object`; `other` is the destination object, when
    /// known.
    pub fn mutate_spec(
        &self,
        engine: &TemplateEngine,
        object: &Value,
        other: Option<&Value>,
    ) -> Result<Value> {
        apply(&self.spec, engine, object, other)
    }

    /// Applies the status rules to a copy of `object`; `other` is the (mutated) source.
    pub fn mutate_status(
        &self,
        engine: &TemplateEngine,
        object: &Value,
        other: Option<&Value>,
    ) -> Result<Value> {
        apply(&self.status, engine, object, other)
    }
}

/// The engine mutation templates are checked with when a PublishedResource is compiled (it
/// keeps what it parsed, so a template is parsed once).
fn syntax_checker() -> &'static TemplateEngine {
    static ENGINE: std::sync::OnceLock<TemplateEngine> = std::sync::OnceLock::new();
    ENGINE.get_or_init(TemplateEngine::new)
}

fn compile_rule(owner: &str, location: &str, rule: &ResourceMutation) -> Result<Located> {
    let invalid = |reason: String| Error::InvalidSpec {
        published_resource: owner.to_owned(),
        field: location.to_owned(),
        reason,
    };
    let set = [
        rule.delete.is_some(),
        rule.regex.is_some(),
        rule.template.is_some(),
        rule.cel.is_some(),
    ]
    .iter()
    .filter(|s| **s)
    .count();
    if set != 1 {
        return Err(invalid(format!(
            "exactly one of delete, regex, template, cel must be set, found {set}"
        )));
    }
    let compiled = if let Some(d) = &rule.delete {
        Rule::Delete {
            path: d.path.clone(),
        }
    } else if let Some(r) = &rule.regex {
        let regex = if r.pattern.is_empty() {
            None
        } else {
            Some(Regex::new(&r.pattern).map_err(|e| invalid(format!("regex.pattern: {e}")))?)
        };
        Rule::Regex {
            path: r.path.clone(),
            regex,
            replacement: r.replacement.clone(),
        }
    } else if let Some(t) = &rule.template {
        // Parsed now, so a template that cannot render (bad syntax, an unknown function) is
        // refused on the PublishedResource, not object by object.
        syntax_checker()
            .check(location, &t.template, &template_options())
            .map_err(|e| invalid(format!("template: {e}")))?;
        Rule::Template {
            path: t.path.clone(),
            template: t.template.clone(),
        }
    } else if let Some(c) = &rule.cel {
        let program = cel::Program::compile(&c.expression)
            .map_err(|e| invalid(format!("cel.expression: {e}")))?;
        Rule::Cel {
            path: c.path.clone(),
            program: Arc::new(program),
        }
    } else {
        return Err(invalid("no rule set".into()));
    };
    Ok(Located {
        location: location.to_owned(),
        rule: compiled,
    })
}

fn apply(
    rules: &[Located],
    engine: &TemplateEngine,
    object: &Value,
    other: Option<&Value>,
) -> Result<Value> {
    let mut out = object.clone();
    for located in rules {
        apply_rule(&located.rule, engine, &mut out, other).map_err(|reason| Error::Mutation {
            object: describe(object),
            rule: located.location.clone(),
            reason,
        })?;
    }
    Ok(out)
}

fn apply_rule(
    rule: &Rule,
    engine: &TemplateEngine,
    object: &mut Value,
    other: Option<&Value>,
) -> Result<(), String> {
    match rule {
        Rule::Delete { path } => {
            path::delete(object, path);
            Ok(())
        }
        Rule::Regex {
            path,
            regex,
            replacement,
        } => {
            let new = match regex {
                None => replacement.clone(),
                Some(re) => re
                    .replace_all(&path::get_string(object, path), replacement.as_str())
                    .into_owned(),
            };
            path::set(object, path, Value::String(new))
        }
        Rule::Cel { path, program } => {
            let result = eval_cel(program, object, other, path::get(object, path))?;
            path::set(object, path, result)
        }
        Rule::Template { path, template } => {
            let context = json!({
                "Value": path::result(object, path),
                "LocalObject": object.clone(),
                "RemoteObject": other.cloned().unwrap_or(Value::Null),
            });
            let rendered = engine
                .render_with(path, template, &template_options(), &context)
                .map_err(|e| e.to_string())?;
            path::set(object, path, Value::String(rendered.trim().to_owned()))
        }
    }
}

/// How mutation templates render: as upstream's, with Go's `html/template` (its escaping of
/// `<`, `>`, `&`, quotes and `+`), so that a takeover computes the same values the Go agent
/// stored. (Naming templates are `text/template` upstream, and here.)
fn template_options() -> kcp_core::TemplateOptions {
    kcp_core::TemplateOptions::go().with_escaping(kcp_core::template::Escaping::Html)
}

/// Runs a CEL program with `self`, `other` and `value` bound; the result as JSON.
fn eval_cel(
    program: &cel::Program,
    object: &Value,
    other: Option<&Value>,
    value: Option<Value>,
) -> Result<Value, String> {
    let mut context = cel::Context::default();
    let bind = |v: &Value| cel::to_value(v).map_err(|e| e.to_string());
    context.add_variable_from_value("self", bind(object)?);
    context.add_variable_from_value("other", bind(other.unwrap_or(&Value::Null))?);
    context.add_variable_from_value("value", bind(&value.unwrap_or(Value::Null))?);
    let result = program.execute(&context).map_err(|e| e.to_string())?;
    result.json().map_err(|e| e.to_string())
}

fn describe(object: &Value) -> String {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("object");
    let meta = |f: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (ns, name) = (meta("namespace"), meta("name"));
    if ns.is_empty() {
        format!("{kind} {name:?}")
    } else {
        format!("{kind} \"{ns}/{name}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{
        ResourceCELMutation, ResourceDeleteMutation, ResourceRegexMutation,
        ResourceTemplateMutation,
    };

    fn delete(path: &str) -> ResourceMutation {
        ResourceMutation {
            delete: Some(ResourceDeleteMutation { path: path.into() }),
            ..Default::default()
        }
    }

    fn regex(path: &str, pattern: &str, replacement: &str) -> ResourceMutation {
        ResourceMutation {
            regex: Some(ResourceRegexMutation {
                path: path.into(),
                pattern: pattern.into(),
                replacement: replacement.into(),
            }),
            ..Default::default()
        }
    }

    fn template(path: &str, template: &str) -> ResourceMutation {
        ResourceMutation {
            template: Some(ResourceTemplateMutation {
                path: path.into(),
                template: template.into(),
            }),
            ..Default::default()
        }
    }

    fn mutate(rules: Vec<ResourceMutation>, object: Value) -> Result<Value> {
        let spec = ResourceMutationSpec {
            spec: rules,
            status: vec![],
        };
        let m = Mutator::new("pr", "spec.mutation", Some(&spec))?;
        m.mutate_spec(&TemplateEngine::new(), &object, None)
    }

    fn thing() -> Value {
        json!({"kind": "Thing", "metadata": {"name": "n", "namespace": "ns"},
               "spec": {"secretName": "creds", "replicas": 24, "keys": [1, 2], "image": "nginx"}})
    }

    #[test]
    fn delete_removes_an_object_key() {
        let out = mutate(vec![delete("spec.secretName")], thing()).unwrap();
        assert!(out["spec"].get("secretName").is_none());
    }

    #[test]
    fn delete_removes_an_array_element() {
        let out = mutate(vec![delete("spec.keys.0")], thing()).unwrap();
        assert_eq!(out["spec"]["keys"], json!([2]));
    }

    #[test]
    fn regex_replaces_with_group_references() {
        let out = mutate(vec![regex("spec.secretName", "^(.+)$", "tls-$1")], thing()).unwrap();
        assert_eq!(out["spec"]["secretName"], "tls-creds");
    }

    #[test]
    fn regex_without_pattern_sets_the_replacement() {
        let out = mutate(vec![regex("spec.secretName", "", "fixed")], thing()).unwrap();
        assert_eq!(out["spec"]["secretName"], "fixed");
    }

    #[test]
    fn regex_turns_numbers_into_strings() {
        let out = mutate(vec![regex("spec.replicas", "4", "5")], thing()).unwrap();
        assert_eq!(out["spec"]["replicas"], "25");
    }

    #[test]
    fn regex_can_empty_a_value() {
        let out = mutate(vec![regex("spec.image", ".*", "")], thing()).unwrap();
        assert_eq!(out["spec"]["image"], "");
    }

    #[test]
    fn template_sees_value_string_and_writes_a_string() {
        let out = mutate(
            vec![template("spec.image", "{{ upper .Value.String }}")],
            thing(),
        )
        .unwrap();
        assert_eq!(out["spec"]["image"], "NGINX");
    }

    #[test]
    fn an_empty_template_gives_an_empty_string() {
        let out = mutate(vec![template("spec.replicas", "")], thing()).unwrap();
        assert_eq!(out["spec"]["replicas"], "");
    }

    /// The case `html mutation value` of kcp-core's Go differential table: its template and
    /// data are this mutation's, its output what Go's `html/template` rendered (checked live
    /// against Go in CI).
    #[test]
    fn template_output_is_escaped_as_upstreams_html_template_escapes_it() {
        let table = include_str!("../../kcp-core/tests/go_differential/cases.json");
        let cases: Vec<Value> = serde_json::from_str(table).unwrap();
        let case = cases
            .iter()
            .find(|c| c["name"] == "html mutation value")
            .unwrap();
        let object = case["data"]["LocalObject"].clone();
        let rule = template("spec.value", case["template"].as_str().unwrap());
        let out = mutate(vec![rule], object).unwrap();
        let go = case["output"].as_str().unwrap().trim();
        assert_eq!(out["spec"]["value"], go);
    }

    #[test]
    fn template_sees_the_remote_object() {
        let spec = ResourceMutationSpec {
            spec: vec![template("spec.image", "{{ .RemoteObject.spec.image }}:1")],
            status: vec![],
        };
        let m = Mutator::new("pr", "spec.mutation", Some(&spec)).unwrap();
        let other = json!({"spec": {"image": "busybox"}});
        let out = m
            .mutate_spec(&TemplateEngine::new(), &thing(), Some(&other))
            .unwrap();
        assert_eq!(out["spec"]["image"], "busybox:1");
    }

    #[test]
    fn rules_run_in_order() {
        let out = mutate(
            vec![
                regex("spec.image", "", "a"),
                template("spec.image", "{{ .Value.String }}b"),
            ],
            thing(),
        )
        .unwrap();
        assert_eq!(out["spec"]["image"], "ab");
    }

    #[test]
    fn a_rule_with_two_kinds_is_refused_naming_it() {
        let mut rule = delete("a");
        rule.regex = regex("a", "", "").regex;
        let err = mutate(vec![delete("b"), rule], thing())
            .unwrap_err()
            .to_string();
        assert!(err.contains("spec.mutation.spec[1]"), "{err}");
        assert!(err.contains("exactly one"), "{err}");
    }

    #[test]
    fn an_invalid_regex_is_refused_when_compiling() {
        let err = mutate(vec![regex("a", "(", "")], thing())
            .unwrap_err()
            .to_string();
        assert!(err.contains("regex.pattern"), "{err}");
    }

    fn cel(path: &str, expression: &str) -> ResourceMutation {
        ResourceMutation {
            cel: Some(ResourceCELMutation {
                path: path.into(),
                expression: expression.into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn cel_sets_a_constant_of_the_same_type() {
        let out = mutate(vec![cel("spec.image", "'busybox'")], thing()).unwrap();
        assert_eq!(out["spec"]["image"], "busybox");
    }

    #[test]
    fn cel_keeps_the_result_type() {
        let out = mutate(vec![cel("spec.image", "42")], thing()).unwrap();
        assert_eq!(out["spec"]["image"], 42);
    }

    #[test]
    fn cel_sees_the_current_value() {
        let out = mutate(vec![cel("spec.image", "value + 'foo'")], thing()).unwrap();
        assert_eq!(out["spec"]["image"], "nginxfoo");
    }

    #[test]
    fn cel_sees_the_other_object() {
        let spec = ResourceMutationSpec {
            spec: vec![cel("spec.image", "other.spec.image")],
            status: vec![],
        };
        let m = Mutator::new("pr", "spec.mutation", Some(&spec)).unwrap();
        let other = json!({"spec": {"image": "busybox"}});
        let out = m
            .mutate_spec(&TemplateEngine::new(), &thing(), Some(&other))
            .unwrap();
        assert_eq!(out["spec"]["image"], "busybox");
    }

    #[test]
    fn cel_defaults_a_missing_value() {
        let out = mutate(
            vec![cel("spec.duration", "value == null ? '2160h' : value")],
            thing(),
        )
        .unwrap();
        assert_eq!(out["spec"]["duration"], "2160h");
    }

    #[test]
    fn an_invalid_cel_expression_is_refused_when_compiling() {
        let err = mutate(vec![cel("spec.a", "1 +")], thing())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("spec.mutation.spec[0]") && err.contains("cel.expression"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_template_function_is_refused_when_compiling() {
        let err = mutate(vec![template("spec.image", "{{ nosuch }}")], thing())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("spec.mutation.spec[0]")
                && err.contains("template")
                && err.contains("nosuch"),
            "{err}"
        );
    }

    #[test]
    fn template_errors_at_render_time_name_the_object_and_rule() {
        let err = mutate(
            vec![template("spec.image", "{{ index .LocalObject.spec 7 }}")],
            thing(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("Thing \"ns/n\""), "{err}");
        assert!(err.contains("spec.mutation.spec[0]"), "{err}");
    }

    #[test]
    fn status_rules_only_touch_status_paths_they_name() {
        let spec = ResourceMutationSpec {
            spec: vec![],
            status: vec![regex("status.secretName", "^tls-", "")],
        };
        let m = Mutator::new("pr", "spec.mutation", Some(&spec)).unwrap();
        let obj = json!({"status": {"secretName": "tls-x"}});
        let out = m.mutate_status(&TemplateEngine::new(), &obj, None).unwrap();
        assert_eq!(out["status"]["secretName"], "x");
    }
}
