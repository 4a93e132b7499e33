//! `x-kubernetes-validations`: CEL rules compiled once per CRD generation (with the `cel`
//! crate, cel-go's semantics), evaluated with `self` (and `oldSelf` for transition rules, only
//! when an old value exists), failing with `message`, `messageExpression`, `reason` and
//! `fieldPath` as kube-apiserver reports them.
//!
//! The environment is cel-go's standard library with the `strings` and `lists` extensions
//! (kube-apiserver's `ext.Strings` and `ext.Lists`), plus Kubernetes' list library (`isSorted`,
//! `sum`, `min`, `max`) and regex library (`find`, `findAll`), added here because the crate does
//! not have them, and the quantity, IP/CIDR and semver libraries of
//! [`cel_library`](super::cel_library).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use base64::Engine as _;
pub use cel::Value as Cel;
use cel::extractors::This;
use cel::objects::{Key, Map as CelMap, OptionalValue};
use cel::{Context, Env, ExecutionError, Program};
use serde_json::Value;

use super::cel_budget::RuleCosts;
use super::cel_check;
use super::cel_cost;
use super::cel_errors;
use super::cel_size::Sizes;
use super::cel_type::CelType;
use super::field::{ErrorType, FieldError};

/// The environment every rule compiles and runs in.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // The extensions and kube's overloads only declare new overloads on a fresh environment,
    // which cannot fail.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    let _ = super::cel_conversions::add(&mut env);
    Arc::new(env)
});

/// The Kubernetes library functions the crate does not have, by name.
const KUBE_FUNCTIONS: &[&str] = &["isSorted", "sum", "min", "max", "find", "findAll"];

/// One compiled rule.
pub struct Rule {
    /// `rule`, as written.
    pub source: String,
    program: Program,
    /// `message`.
    pub message: Option<String>,
    message_expression: Option<Program>,
    /// `fieldPath`, normalized to a path under the node (`.a.b` -> `a.b`).
    pub field_path: Option<String>,
    /// `reason`.
    pub reason: Option<ErrorType>,
    /// Whether the rule reads `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    /// Whether the rule runs on every write, with `oldSelf` an optional value (none on a
    /// create), rather than on updates only (`optionalOldSelf: true`).
    pub optional_old_self: bool,
    /// The Kubernetes library functions the rule or its message expression calls.
    kube_functions: Vec<&'static str>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("rule", &self.source).finish()
    }
}

/// What the rules of one node are compiled with.
#[derive(Debug)]
pub struct RuleScope<'a> {
    /// The type `self` has in the node's rules.
    pub self_type: &'a CelType,
    /// The path of the highest node above whose values kube cannot correlate between an
    /// object's old and new revision (a list that is not a map-list), where rules may not read
    /// `oldSelf`.
    pub uncorrelatable: Option<&'a str>,
    /// The node's share of the schema's cost budget.
    pub costs: RuleCosts<'a>,
}

/// Compiles the `x-kubernetes-validations` of a node, type-checking each rule against the
/// type of its values and estimating its cost; what is wrong with them is reported at
/// `path.x-kubernetes-validations[i]...`, as kube-apiserver refuses such a CRD.
pub fn compile_rules(
    rules: Option<&Value>,
    scope: &mut RuleScope,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Vec<Rule> {
    let Some(list) = rules.and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, raw) in list.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        if let Some(rule) = compile_rule(raw, scope, &at, errors) {
            out.push(rule);
        }
    }
    out
}

fn compile_rule(
    raw: &Value,
    scope: &mut RuleScope,
    at: &str,
    errors: &mut Vec<FieldError>,
) -> Option<Rule> {
    let text = |k: &str| raw.get(k).and_then(Value::as_str);
    let before = errors.len();
    let source = text("rule").unwrap_or_default();
    let message = text("message");
    check_texts(source, message, at, errors);
    let reason = text("reason").and_then(|r| parse_reason(r, at, errors));
    let field_path = text("fieldPath").and_then(|p| parse_field_path(p, at, errors));
    let optional_old_self = raw.get("optionalOldSelf").and_then(Value::as_bool);
    let expression = RuleExpression {
        raw,
        self_type: scope.self_type,
        optional_old_self: optional_old_self == Some(true),
        sizes: scope.costs.sizes,
    };
    let compiled = compile_texts(&expression, at, &mut scope.costs, errors);
    // kube takes a rule that did not compile for one that does not read `oldSelf`.
    let reads_old_self = compiled
        .as_ref()
        .is_some_and(|(program, _)| program.references().has_variable("oldSelf"));
    check_old_self(raw, reads_old_self, scope.uncorrelatable, at, errors);
    if errors.len() > before {
        return None;
    }
    let (program, message_expression) = compiled?;
    let calls = |p: &Program, name: &str| calls_function(p, name);
    let kube_functions = KUBE_FUNCTIONS
        .iter()
        .chain(super::cel_library::FUNCTIONS)
        .copied()
        .filter(|f| calls(&program, f) || message_expression.as_ref().is_some_and(|m| calls(m, f)))
        .collect();
    Some(Rule {
        source: source.to_string(),
        uses_old_self: reads_old_self,
        optional_old_self: expression.optional_old_self,
        program,
        message: message.map(|m| m.trim().to_string()),
        message_expression,
        field_path,
        reason,
        kube_functions,
    })
}

/// Compiles a rule and its message expression (only when the rule compiled), charging their
/// estimated costs to the budget.
fn compile_texts(
    expression: &RuleExpression,
    at: &str,
    costs: &mut RuleCosts,
    errors: &mut Vec<FieldError>,
) -> Option<(Program, Option<Program>)> {
    let text = |k: &str| expression.raw.get(k).and_then(Value::as_str);
    let rule_at = format!("{at}.rule");
    let source = text("rule").unwrap_or_default();
    let rule = expression.compile(source, Output::Rule, &rule_at, errors);
    if let Some((_, estimate)) = &rule {
        let cost = costs.of_rule(*estimate);
        errors.extend(costs.charge(&rule_at, "estimated rule cost", cost));
    }
    let mut message_estimate = 0;
    let message_expression = match text("messageExpression") {
        None => None,
        Some(m) if m.trim().is_empty() => {
            errors.push(FieldError::required(
                format!("{at}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
            None
        }
        // kube compiles the message expression only when the rule compiled.
        Some(_) if rule.is_none() => None,
        Some(m) => {
            let message_at = format!("{at}.messageExpression");
            let compiled = expression.compile(m, Output::Message, &message_at, errors);
            compiled.map(|(program, cost)| {
                message_estimate = cost;
                let what = "estimated messageExpression cost";
                errors.extend(costs.charge(&message_at, what, cost));
                program
            })
        }
    };
    let (program, estimate) = rule?;
    costs.record(at, estimate, message_estimate);
    Some((program, message_expression))
}

/// kube's checks of a compiled rule's use of `oldSelf`: not where old and new values cannot
/// be correlated, and `optionalOldSelf` only on a rule that reads it.
fn check_old_self(
    raw: &Value,
    reads_old_self: bool,
    uncorrelatable: Option<&str>,
    at: &str,
    errors: &mut Vec<FieldError>,
) {
    let optional = raw.get("optionalOldSelf").and_then(Value::as_bool);
    match (reads_old_self, uncorrelatable, optional) {
        (true, Some(within), _) => {
            let source = raw.get("rule").cloned().unwrap_or(Value::Null);
            errors.push(FieldError::invalid(
                format!("{at}.rule"),
                source,
                format!(
                    "oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"
                ),
            ));
        }
        (false, _, Some(set)) => errors.push(FieldError::invalid(
            format!("{at}.optionalOldSelf"),
            Value::Bool(set),
            "may not be set if oldSelf is not used in rule",
        )),
        _ => {}
    }
}

/// Whether `program` calls the library function `name`; a namespaced one (`format.uri`) is
/// referenced by its last part, called on its namespace.
fn calls_function(program: &Program, name: &str) -> bool {
    let references = program.references();
    match name.rsplit_once('.') {
        Some((_, function)) => references.has_function(function),
        None => references.has_function(name),
    }
}

/// kube-apiserver's checks of `rule` and `message`: a rule is required, a message is not empty
/// and on one line, and a rule on several lines needs one.
fn check_texts(source: &str, message: Option<&str>, at: &str, errors: &mut Vec<FieldError>) {
    if source.trim().is_empty() {
        errors.push(FieldError::required(
            format!("{at}.rule"),
            "rule is not specified",
        ));
    }
    match message {
        Some(m) if m.trim().is_empty() => errors.push(FieldError::invalid(
            format!("{at}.message"),
            m.into(),
            "must be non-empty if specified",
        )),
        Some(m) if m.contains('\n') => errors.push(FieldError::invalid(
            format!("{at}.message"),
            m.into(),
            "must not contain line breaks",
        )),
        Some(_) => {}
        None if source.contains('\n') => errors.push(FieldError::required(
            format!("{at}.message"),
            "message must be specified if rule contains line breaks",
        )),
        None => {}
    }
}

/// `reason`: one of the four field error types a rule may report.
fn parse_reason(reason: &str, at: &str, errors: &mut Vec<FieldError>) -> Option<ErrorType> {
    match reason {
        "FieldValueInvalid" => Some(ErrorType::Invalid),
        "FieldValueForbidden" => Some(ErrorType::Forbidden),
        "FieldValueRequired" => Some(ErrorType::Required),
        "FieldValueDuplicate" => Some(ErrorType::Duplicate),
        other => {
            errors.push(FieldError::new(
                ErrorType::NotSupported,
                format!("{at}.reason"),
                Some(other.into()),
                "supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
            ));
            None
        }
    }
}

/// `fieldPath`, normalized, or an error when it is not a path.
fn parse_field_path(path: &str, at: &str, errors: &mut Vec<FieldError>) -> Option<String> {
    let normalized = normalize_field_path(path);
    if normalized.is_none() {
        errors.push(FieldError::invalid(
            format!("{at}.fieldPath"),
            path.into(),
            "must be a valid path",
        ));
    }
    normalized
}

/// What a compiled expression must evaluate to.
#[derive(Clone, Copy, PartialEq)]
enum Output {
    /// A rule: a bool.
    Rule,
    /// A message expression: a string.
    Message,
}

impl Output {
    /// What kube writes before the issues of an expression that does not compile.
    fn failure_prefix(self) -> &'static str {
        match self {
            Output::Rule => "compilation failed: ",
            Output::Message => "messageExpression compilation failed: ",
        }
    }

    /// Whether an expression of type `t` is of the wanted type (an unresolved call may be).
    fn accepts(self, t: &CelType) -> bool {
        match self {
            Output::Rule => matches!(t, CelType::Bool | CelType::Unknown),
            Output::Message => matches!(t, CelType::String | CelType::Unknown),
        }
    }

    /// kube's refusal of an expression of another type.
    fn wrong_type(self) -> &'static str {
        match self {
            Output::Rule => "cel expression must evaluate to a bool",
            Output::Message => "messageExpression must evaluate to a string",
        }
    }
}

/// What an expression of a rule is compiled with: the rule as written, and the type and sizes
/// of `self`.
struct RuleExpression<'a> {
    raw: &'a Value,
    self_type: &'a CelType,
    /// `oldSelf` is an optional of the node's type (`optionalOldSelf: true`).
    optional_old_self: bool,
    sizes: Option<&'a Sizes>,
}

impl RuleExpression<'_> {
    /// Parses and type-checks `source` with `self` and `oldSelf` of the node's type, and
    /// estimates its most cost; a failure is reported at `at` in kube's words, with the rule
    /// shown as Go prints its `ValidationRule`.
    fn compile(
        &self,
        source: &str,
        output: Output,
        at: &str,
        errors: &mut Vec<FieldError>,
    ) -> Option<(Program, u64)> {
        let old_self = match self.optional_old_self {
            true => CelType::Optional(Box::new(self.self_type.clone())),
            false => self.self_type.clone(),
        };
        let variables = [("self", self.self_type.clone()), ("oldSelf", old_self)];
        let (program, checked) = compile(source, self.raw, &variables, output, at, errors)?;
        let estimate = self.sizes.map_or(0, |sizes| {
            cel_cost::estimate(program.expression(), &checked, sizes).max
        });
        Some((program, estimate))
    }
}

/// Parses and type-checks `source` with `variables` (`self` and `oldSelf`) declared; a failure
/// is reported at `at` in kube's words, with the rule shown as Go prints its `ValidationRule`.
fn compile(
    source: &str,
    raw: &Value,
    variables: &[(&str, CelType)],
    output: Output,
    at: &str,
    errors: &mut Vec<FieldError>,
) -> Option<(Program, cel_check::Checked)> {
    if source.trim().is_empty() {
        return None;
    }
    let failed = |detail: String| FieldError::invalid_struct(at, go_validation_rule(raw), detail);
    let prefix = output.failure_prefix();
    let program = match ENV.compile(source) {
        Ok(p) => p,
        Err(e) => {
            errors.push(failed(format!("{prefix}{}", parse_issues(&e, source))));
            return None;
        }
    };
    let checked = cel_check::check(
        program.expression(),
        program.source_info(),
        source,
        variables,
    );
    if !checked.errors.is_empty() {
        errors.push(failed(format!("{prefix}{}", checked.errors.join("\n"))));
        return None;
    }
    if !output.accepts(&checked.output) {
        errors.push(failed(output.wrong_type().into()));
        return None;
    }
    Some((program, checked))
}

/// The parser's errors as cel-go writes its issues: in source order, at most 100, each with
/// its line and a caret.
fn parse_issues(e: &cel::ParseErrors, source: &str) -> String {
    let mut found: Vec<(isize, isize, &str)> = e
        .errors
        .iter()
        .map(|e| (e.pos.0, e.pos.1, e.msg.as_str()))
        .collect();
    found.sort_by_key(|(line, column, _)| (*line, *column));
    let mut shown: Vec<String> = found
        .iter()
        .take(100)
        .map(|(line, column, message)| {
            let column = usize::try_from(column.saturating_sub(1)).unwrap_or(0);
            cel_check::display_issue(source, usize::try_from(*line).unwrap_or(1), column, message)
        })
        .collect();
    if found.len() > 100 {
        shown.push(format!("{} more errors were truncated", found.len() - 100));
    }
    shown.join("\n")
}

/// A rule as Go's `encoding/json` writes apiextensions' internal `ValidationRule` (a struct
/// without JSON tags): its fields in declaration order, under their Go names.
fn go_validation_rule(raw: &Value) -> String {
    let text = |k: &str| go_json_string(raw.get(k).and_then(Value::as_str).unwrap_or_default());
    let reason = match raw.get("reason").and_then(Value::as_str) {
        Some(r) => go_json_string(r),
        None => "null".into(),
    };
    let optional_old_self = match raw.get("optionalOldSelf").and_then(Value::as_bool) {
        Some(b) => b.to_string(),
        None => "null".into(),
    };
    format!(
        "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{reason},\"FieldPath\":{},\"OptionalOldSelf\":{optional_old_self}}}",
        text("rule"),
        text("message"),
        text("messageExpression"),
        text("fieldPath"),
    )
}

/// A string as Go's `encoding/json` writes it.
fn go_json_string(s: &str) -> String {
    crate::schema::field::go_json(&Value::String(s.to_string()))
}

/// `.a.b` or `.a['b.c']` as a field path under the node (`a.b`, `a[b.c]`), or `None` when it
/// is not a path.
fn normalize_field_path(p: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = p;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            if name.is_empty() {
                return None;
            }
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']")?;
            out.push('[');
            out.push_str(&r[..end]);
            out.push(']');
            rest = &r[end + 2..];
        } else {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A JSON value as CEL sees it: integers are `int`, other numbers `double`.
pub fn to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => Cel::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<Key, Cel> = m
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
    }
}

/// A JSON value as the rules of a node of type `t` see it: the fields of objects under their
/// escaped names (`namespace` is `__namespace__`, `my-field` is `my__dash__field`), as kube
/// declares them, map keys as they are, every `number` a double, and strings of the formats
/// `date-time`/`date`, `duration` and `byte` timestamps, durations and bytes.
pub fn to_cel_typed(v: &Value, t: &CelType) -> Cel {
    match (v, t) {
        (Value::Object(m), CelType::Object(object)) => {
            let map: HashMap<Key, Cel> = m
                .iter()
                .filter_map(|(k, v)| {
                    let name = super::cel_type::escape_field_name(k)?;
                    let value = match object.fields.get(&name) {
                        Some(field) => to_cel_typed(v, field),
                        None => to_cel(v),
                    };
                    Some((Key::String(Arc::new(name)), value))
                })
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
        (Value::Object(m), CelType::Map(_, values)) => {
            let map: HashMap<Key, Cel> = m
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel_typed(v, values)))
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
        (Value::Array(a), CelType::List(item)) => {
            Cel::List(Arc::new(a.iter().map(|v| to_cel_typed(v, item)).collect()))
        }
        // A `number` is a double even when it is written without a fraction.
        (Value::Number(n), CelType::Double) => Cel::Float(n.as_f64().unwrap_or_default()),
        (Value::String(s), CelType::Timestamp) => {
            timestamp(s).map_or_else(|| to_cel(v), Cel::Timestamp)
        }
        (Value::String(s), CelType::Duration) => kcp_core::go_duration::parse(s)
            .and_then(|ns| i64::try_from(ns).ok())
            .map_or_else(
                || to_cel(v),
                |ns| Cel::Duration(chrono::Duration::nanoseconds(ns)),
            ),
        (Value::String(s), CelType::Bytes) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_or_else(|_| to_cel(v), |b| Cel::Bytes(Arc::new(b))),
        _ => to_cel(v),
    }
}

/// A `date-time` (RFC 3339) or a `date` (midnight UTC) as a CEL timestamp.
fn timestamp(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t);
    }
    let day = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    Some(day.and_hms_opt(0, 0, 0)?.and_utc().fixed_offset())
}

/// A CEL expression outside a CRD (an admission policy's validation, variable or match
/// condition), compiled in the rules' environment.
pub struct Expression {
    /// The expression, as written.
    pub source: String,
    program: Program,
    kube_functions: Vec<&'static str>,
}

impl Expression {
    /// Compiles `source`, or says why it does not compile.
    pub fn compile(source: &str) -> Result<Expression, String> {
        let program = ENV
            .compile(source)
            .map_err(|e| e.to_string().replace('\n', " "))?;
        let kube_functions = KUBE_FUNCTIONS
            .iter()
            .chain(super::cel_library::FUNCTIONS)
            .copied()
            .filter(|f| calls_function(&program, f))
            .collect();
        Ok(Expression {
            source: source.to_string(),
            program,
            kube_functions,
        })
    }

    /// Evaluates the expression with these variables bound.
    pub fn evaluate(&self, variables: &[(&str, Cel)]) -> Result<Cel, String> {
        let mut ctx = Context::with_env(ENV.clone());
        for (name, value) in variables {
            ctx.add_variable_from_value(*name, value.clone());
        }
        for name in &self.kube_functions {
            add_kube_function(&mut ctx, name);
        }
        self.program.execute(&ctx).map_err(|e| e.to_string())
    }
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expression")
            .field("source", &self.source)
            .finish()
    }
}

/// The outcome of one rule on one value.
pub enum Outcome {
    /// The rule held (or was not evaluated: a transition rule without an old value).
    Passed,
    /// The rule evaluated to false: the detail to report.
    Failed(String),
    /// The rule could not be evaluated.
    Error(String),
}

/// The context the rules of one node run in: `self` (and `oldSelf`) converted and bound once,
/// with the Kubernetes library functions any of the rules calls. With `optional_old`,
/// `oldSelf` is an optional value, none without an old value (for `optionalOldSelf` rules).
pub fn context_for(
    rules: &[Rule],
    value: Cel,
    old: Option<Cel>,
    optional_old: bool,
) -> Context<'static, 'static> {
    let mut ctx = Context::with_env(ENV.clone());
    ctx.add_variable_from_value("self", value);
    match (old, optional_old) {
        (Some(old), false) => ctx.add_variable_from_value("oldSelf", old),
        (old, true) => {
            let optional = match old {
                Some(old) => OptionalValue::of(old),
                None => OptionalValue::none(),
            };
            ctx.add_variable_from_value("oldSelf", Cel::Opaque(Arc::new(optional)));
        }
        (None, false) => {}
    }
    let mut added: Vec<&str> = Vec::new();
    for name in rules.iter().flat_map(|r| r.kube_functions.iter()) {
        if !added.contains(name) {
            add_kube_function(&mut ctx, name);
            added.push(name);
        }
    }
    ctx
}

/// Declares one of [`KUBE_FUNCTIONS`]; their names are not declared by the environment, so
/// adding them cannot conflict.
fn add_kube_function(ctx: &mut Context, name: &str) {
    let _ = match name {
        "isSorted" => ctx.add_function(name, |This(l): This<Arc<Vec<Cel>>>| is_sorted(&l)),
        "sum" => ctx.add_function(name, |This(l): This<Arc<Vec<Cel>>>| sum(&l)),
        "min" => ctx.add_function(name, |This(l): This<Arc<Vec<Cel>>>| extreme(&l, true)),
        "max" => ctx.add_function(name, |This(l): This<Arc<Vec<Cel>>>| extreme(&l, false)),
        "find" => ctx.add_function(name, |This(s): This<Arc<String>>, re: Arc<String>| {
            find(&s, &re, false)
        }),
        "findAll" => ctx.add_function(name, |This(s): This<Arc<String>>, re: Arc<String>| {
            find(&s, &re, true)
        }),
        other => {
            super::cel_library::add_function(ctx, other);
            Ok(())
        }
    };
}

impl Rule {
    /// Evaluates the rule in a context from [`context_for`]; `has_old` tells whether `oldSelf`
    /// is bound (a transition rule without it passes: it only runs on updates).
    pub fn evaluate(&self, ctx: &Context, has_old: bool) -> Outcome {
        if self.uses_old_self && !has_old && !self.optional_old_self {
            return Outcome::Passed;
        }
        match self.program.execute(ctx) {
            Ok(Cel::Bool(true)) => Outcome::Passed,
            Ok(Cel::Bool(false)) => Outcome::Failed(self.failure_detail(ctx)),
            Ok(other) => Outcome::Error(format!(
                "rule evaluated to {other:?}, not a bool, evaluating rule: {}",
                self.error_string()
            )),
            Err(e) => Outcome::Error(cel_errors::evaluation_error(&e, self.error_string())),
        }
    }

    /// `message` or the rule itself, trimmed (kube's `ruleErrorString`).
    fn error_string(&self) -> &str {
        self.message.as_deref().unwrap_or(self.source.trim())
    }

    fn failure_detail(&self, ctx: &Context) -> String {
        if let Some(m) = &self.message_expression
            && let Ok(Cel::String(s)) = m.execute(ctx)
        {
            let s = s.trim();
            if !s.is_empty() && !s.contains('\n') {
                return s.to_string();
            }
        }
        match &self.message {
            Some(m) => m.clone(),
            None => format!("failed rule: {}", self.source.trim()),
        }
    }
}

fn is_sorted(l: &[Cel]) -> Result<bool, ExecutionError> {
    for pair in l.windows(2) {
        match pair[0].partial_cmp(&pair[1]) {
            Some(std::cmp::Ordering::Greater) => return Ok(false),
            Some(_) => {}
            None => {
                return Err(ExecutionError::function_error(
                    "isSorted",
                    "list elements must be comparable",
                ));
            }
        }
    }
    Ok(true)
}

fn sum(l: &[Cel]) -> Result<Cel, ExecutionError> {
    let mut ints: i64 = 0;
    let mut floats: Option<f64> = None;
    for v in l {
        match v {
            Cel::Int(i) => {
                ints = ints
                    .checked_add(*i)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?;
            }
            Cel::Float(f) => floats = Some(floats.unwrap_or(0.0) + f),
            _ => {
                return Err(ExecutionError::function_error(
                    "sum",
                    "list elements must be numbers",
                ));
            }
        }
    }
    Ok(match floats {
        Some(f) => Cel::Float(f + ints as f64),
        None => Cel::Int(ints),
    })
}

fn extreme(l: &[Cel], min: bool) -> Result<Cel, ExecutionError> {
    let name = if min { "min" } else { "max" };
    let mut best: Option<&Cel> = None;
    for v in l {
        best = match best {
            None => Some(v),
            Some(b) => {
                let ord = v.partial_cmp(b).ok_or_else(|| {
                    ExecutionError::function_error(name, "list elements must be comparable")
                })?;
                let better = if min { ord.is_lt() } else { ord.is_gt() };
                Some(if better { v } else { b })
            }
        };
    }
    best.cloned()
        .ok_or_else(|| ExecutionError::function_error(name, "list is empty"))
}

fn find(s: &str, re: &str, all: bool) -> Result<Cel, ExecutionError> {
    let name = if all { "findAll" } else { "find" };
    let re = regex::Regex::new(re).map_err(|e| ExecutionError::function_error(name, e))?;
    if all {
        let found: Vec<Cel> = re
            .find_iter(s)
            .map(|m| Cel::String(Arc::new(m.as_str().to_string())))
            .collect();
        Ok(Cel::List(Arc::new(found)))
    } else {
        let found = re.find(s).map(|m| m.as_str()).unwrap_or("");
        Ok(Cel::String(Arc::new(found.to_string())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(raw: Value) -> Rule {
        let mut errors = Vec::new();
        let mut budget = super::super::cel_budget::SchemaBudget::default();
        let mut scope = RuleScope {
            self_type: &CelType::Dyn,
            uncorrelatable: None,
            costs: RuleCosts {
                sizes: None,
                cardinality: Some(1),
                budget: &mut budget,
            },
        };
        let raw = Some(&json!([raw]));
        let rules = compile_rules(raw, &mut scope, "x", &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        rules.into_iter().next().unwrap()
    }

    fn holds(raw: Value, v: Value) -> bool {
        let r = rule(raw);
        let ctx = context_for(std::slice::from_ref(&r), to_cel(&v), None, false);
        matches!(r.evaluate(&ctx, false), Outcome::Passed)
    }

    #[test]
    fn field_paths_are_normalized_under_the_node() {
        assert_eq!(normalize_field_path(".a.b").as_deref(), Some("a.b"));
        assert_eq!(normalize_field_path(".a['b.c']").as_deref(), Some("a[b.c]"));
        assert_eq!(normalize_field_path("a.b"), None);
    }

    #[test]
    fn integers_compare_with_integer_literals() {
        assert!(holds(
            json!({"rule": "self.replicas > 1"}),
            json!({"replicas": 2})
        ));
    }

    #[test]
    fn kube_list_functions_are_available() {
        assert!(holds(
            json!({"rule": "self.l.isSorted() && self.l.sum() == 6 && self.l.max() == 3"}),
            json!({"l": [1, 2, 3]})
        ));
    }

    #[test]
    fn string_extension_functions_are_available() {
        assert!(holds(
            json!({"rule": "self.n.lowerAscii().startsWith('ab') && self.n.matches('^[A-Z]+$')"}),
            json!({"n": "ABC"})
        ));
    }
    #[test]
    fn quantity_rules_compare_parse_and_convert() {
        let v = json!({"memory": "1536Mi", "cpu": "500m", "bad": "1K"});
        for rule in [
            "quantity(self.memory).isGreaterThan(quantity('1Gi'))",
            "quantity(self.memory).compareTo(quantity('1.5Gi')) == 0",
            "quantity(self.cpu).isLessThan(quantity('1'))",
            "isQuantity(self.cpu) && !isQuantity(self.bad)",
            "quantity(self.cpu).add(quantity('500m')).asInteger() == 1",
            "sign(quantity(self.cpu).sub(1)) == -1",
            "!quantity(self.cpu).isInteger() && quantity(self.cpu).asApproximateFloat() == 0.5",
        ] {
            assert!(holds(json!({"rule": rule}), v.clone()), "{rule}");
        }
    }

    #[test]
    fn ip_and_cidr_rules_classify_and_contain() {
        let v = json!({"ip": "10.1.2.3", "net": "10.1.0.0/16"});
        for rule in [
            "isIP(self.ip) && ip(self.ip).family() == 4 && ip(self.ip).isGlobalUnicast()",
            "cidr(self.net).containsIP(self.ip) && cidr(self.net).containsIP(ip(self.ip))",
            "cidr(self.net).containsCIDR('10.1.2.0/24') && cidr(self.net).prefixLength() == 16",
            "cidr('10.1.2.3/16').masked() == cidr(self.net)",
            "cidr(self.net).ip() == ip('10.1.0.0') && !isCIDR(self.ip)",
            "ip('::1').isLoopback() && ip('::').isUnspecified()",
        ] {
            assert!(holds(json!({"rule": rule}), v.clone()), "{rule}");
        }
    }

    #[test]
    fn semver_rules_compare_versions() {
        let v = json!({"version": "1.30.2"});
        for rule in [
            "semver(self.version).isGreaterThan(semver('1.29.9'))",
            "semver(self.version).major() == 1 && semver(self.version).minor() == 30",
            "semver('v1.30', true).isLessThan(semver(self.version))",
            "isSemver(self.version) && !isSemver('v1.30') && isSemver('v1.30', true)",
            "semver(self.version).compareTo(semver('1.30.2')) == 0",
        ] {
            assert!(holds(json!({"rule": rule}), v.clone()), "{rule}");
        }
    }

    #[test]
    fn url_rules_read_the_parts_of_a_url() {
        let v = json!({"endpoint": "https://kcp.example.com:6443/clusters/root?watch=true"});
        for rule in [
            "isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'",
            "url(self.endpoint).getHostname() == 'kcp.example.com' && url(self.endpoint).getPort() == '6443'",
            "url(self.endpoint).getEscapedPath().startsWith('/clusters/')",
            "url(self.endpoint).getQuery()['watch'] == ['true']",
            "!isURL('relative/path')",
        ] {
            assert!(holds(json!({"rule": rule}), v.clone()), "{rule}");
        }
    }

    #[test]
    fn a_malformed_library_argument_is_an_evaluation_error_naming_the_function() {
        let r = rule(json!({"rule": "sign(quantity(self.q)) == 1"}));
        let ctx = context_for(
            std::slice::from_ref(&r),
            to_cel(&json!({"q": "1K"})),
            None,
            false,
        );
        match r.evaluate(&ctx, false) {
            Outcome::Error(e) => assert!(e.contains("quantity"), "{e}"),
            _ => panic!("1K is not a quantity"),
        }
    }
}
