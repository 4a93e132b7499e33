//! Type-checking a parsed CRD rule against the type of the node it sits on, as cel-go's
//! checker does when kube-apiserver compiles the rule: undeclared references, undefined
//! fields, field selection on a type without fields, calls no overload takes, and ranges that
//! are not lists or maps, each reported at its place in the rule in cel-go's words
//! (`ERROR: <input>:1:5: undefined field 'nope'` with the line and a caret).
//!
//! The checker only refuses what it is sure cel-go refuses: a value whose type it does not
//! know (`dyn`, or the result of a function whose overloads it does not resolve) passes every
//! check, so a rule kube accepts is never refused here.

use std::collections::HashMap;
use std::sync::Arc;

use cel::IdedExpr;
use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, LiteralValue, SelectExpr, SourceInfo,
};

use super::cel_literals;
use super::cel_overloads::{self, Declared, Overload, Pattern};
use super::cel_type::CelType;

/// A rule's type and the errors found, written as cel-go writes its issues.
pub struct Checked {
    /// The type of the whole expression.
    pub output: CelType,
    /// `ERROR: <input>:L:C: ...` lines (with the source line and a caret), in source order;
    /// empty when the rule checks.
    pub errors: Vec<String>,
    /// The type of every part of the expression, by its id.
    pub types: HashMap<u64, CelType>,
    /// The overloads a call may take, by the call's id (none for a function known by name
    /// only, and for `&&` and `||`).
    pub overloads: HashMap<u64, Vec<&'static Overload>>,
    /// The calls of a namespaced function (`ip.isCanonical(x)`), by id, with the function's
    /// full name: the checker takes them for global calls, not calls on a variable.
    pub namespaced: HashMap<u64, String>,
}

/// Checks `expr` (parsed from `source`) with `variables` declared.
pub fn check(
    expr: &IdedExpr,
    info: &SourceInfo,
    source: &str,
    variables: &[(&str, CelType)],
) -> Checked {
    let mut checker = Checker {
        info,
        scopes: variables
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect(),
        errors: Vec::new(),
        types: HashMap::new(),
        overloads: HashMap::new(),
        namespaced: HashMap::new(),
    };
    let output = checker.check(expr);
    // kube's validators of literal arguments run on a rule that type-checks.
    if checker.errors.is_empty() {
        for (id, message) in cel_literals::invalid_literals(expr) {
            checker.report(id, message);
        }
    }
    let mut errors = checker.errors;
    errors.sort_by_key(|(offset, _)| *offset);
    let errors = errors
        .into_iter()
        .take(100)
        .map(|(offset, message)| display(source, offset, &message))
        .collect();
    Checked {
        output,
        errors,
        types: checker.types,
        overloads: checker.overloads,
        namespaced: checker.namespaced,
    }
}

struct Checker<'a> {
    info: &'a SourceInfo,
    scopes: Vec<(String, CelType)>,
    errors: Vec<(u32, String)>,
    types: HashMap<u64, CelType>,
    overloads: HashMap<u64, Vec<&'static Overload>>,
    namespaced: HashMap<u64, String>,
}

impl Checker<'_> {
    fn report(&mut self, id: u64, message: String) {
        let offset = self.info.offset_for(id).map_or(0, |(start, _)| start);
        self.errors.push((offset, message));
    }

    fn check(&mut self, e: &IdedExpr) -> CelType {
        let t = self.type_of(e);
        self.types.insert(e.id, t.clone());
        t
    }

    fn type_of(&mut self, e: &IdedExpr) -> CelType {
        match &e.expr {
            Expr::Unspecified | Expr::Struct(_) => CelType::Dyn,
            Expr::Literal(l) => literal(l),
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(s) => self.select(e.id, s),
            Expr::Call(c) => self.call(e.id, c),
            Expr::List(l) => {
                let mut items = None;
                for item in &l.elements {
                    let t = self.check(item);
                    items = Some(self.join_literal(item.id, items, t));
                }
                CelType::list(items.unwrap_or(CelType::Dyn))
            }
            Expr::Map(m) => {
                let (mut keys, mut values) = (None, None);
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        let k = self.check(&m.key);
                        keys = Some(self.join_literal(m.key.id, keys, k));
                        let v = self.check(&m.value);
                        values = Some(self.join_literal(m.value.id, values, v));
                    }
                }
                let (k, v) = (keys.unwrap_or(CelType::Dyn), values.unwrap_or(CelType::Dyn));
                CelType::map(k, v)
            }
            Expr::Comprehension(c) => self.comprehension(c),
        }
    }

    /// The element type of a list or map literal so far, with one more element: kube wants
    /// them all of one type (cel-go's homogeneous aggregate literals), and reports the first
    /// that is not at that element.
    fn join_literal(&mut self, id: u64, so_far: Option<CelType>, next: CelType) -> CelType {
        let Some(previous) = so_far else {
            return next;
        };
        if previous.is_open() || next.is_open() {
            return if matches!(previous, CelType::Error) {
                previous
            } else {
                CelType::Dyn
            };
        }
        if compatible(&previous, &next) {
            return join(&previous, &next);
        }
        self.report(id, format!("expected type '{previous}' but found '{next}'"));
        CelType::Error
    }

    fn lookup(&self, name: &str) -> Option<CelType> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    fn ident(&mut self, id: u64, name: &str) -> CelType {
        if let Some(t) = self.lookup(name) {
            return t;
        }
        if let Some(t) = cel_overloads::type_named(name) {
            return CelType::Type(Box::new(t));
        }
        self.report(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        );
        CelType::Error
    }

    fn select(&mut self, id: u64, s: &SelectExpr) -> CelType {
        // A field of an optional value is an optional of the field, as cel-go selects it.
        let (operand, optional) = match self.check(&s.operand) {
            CelType::Optional(inner) => (*inner, true),
            other => (other, false),
        };
        let field = match operand {
            CelType::Dyn | CelType::Error => CelType::Dyn,
            CelType::Unknown => CelType::Unknown,
            CelType::Map(_, v) => *v,
            CelType::Object(object) => match object.fields.get(&s.field) {
                Some(t) => t.clone(),
                None => {
                    self.report(id, format!("undefined field '{}'", s.field));
                    CelType::Error
                }
            },
            other => {
                self.report(
                    id,
                    format!("type '{other}' does not support field selection"),
                );
                CelType::Dyn
            }
        };
        match (s.test, optional) {
            (true, _) => CelType::Bool,
            (false, true) => CelType::Optional(Box::new(field)),
            (false, false) => field,
        }
    }

    fn call(&mut self, id: u64, c: &CallExpr) -> CelType {
        // `ns.f(x)` is the namespaced function `ns.f` when `ns` is no variable.
        if let Some(target) = &c.target
            && let Expr::Ident(ns) = &target.expr
            && self.lookup(ns).is_none()
        {
            let qualified = format!("{ns}.{}", c.func_name);
            if cel_overloads::lookup(&qualified).is_some() {
                self.namespaced.insert(id, qualified.clone());
                let call = CallExpr {
                    func_name: qualified,
                    target: None,
                    args: c.args.clone(),
                };
                return self.call(id, &call);
            }
        }
        let receiver = c.target.as_ref().map(|t| self.check(t));
        let args: Vec<CelType> = c.args.iter().map(|a| self.check(a)).collect();
        if c.func_name == "_&&_" || c.func_name == "_||_" {
            return self.logical(&c.args, &args);
        }
        // `null` is an optional value to cel-go, which optional indexing takes.
        if c.func_name == "_[_]" && args.first() == Some(&CelType::Null) {
            return match args.get(1) {
                Some(index) if index.is_open() => CelType::Dyn,
                _ => CelType::Optional(Box::new(CelType::Dyn)),
            };
        }
        match cel_overloads::lookup(&c.func_name) {
            None => {
                self.report(
                    id,
                    format!(
                        "undeclared reference to '{}' (in container '')",
                        c.func_name
                    ),
                );
                CelType::Error
            }
            Some(Declared::Unresolved) => CelType::Unknown,
            Some(Declared::Overloads(overloads)) => {
                self.resolve(id, &c.func_name, overloads, receiver.as_ref(), &args)
            }
        }
    }

    /// `&&` and `||`: each operand must be a bool (reported at the operand).
    fn logical(&mut self, operands: &[IdedExpr], types: &[CelType]) -> CelType {
        let mut checks = true;
        for (operand, t) in operands.iter().zip(types) {
            if !compatible(&CelType::Bool, t) {
                self.report(operand.id, format!("expected type 'bool' but found '{t}'"));
                checks = false;
            }
        }
        if checks {
            CelType::Bool
        } else {
            CelType::Error
        }
    }

    fn resolve(
        &mut self,
        id: u64,
        name: &str,
        overloads: &'static [Overload],
        receiver: Option<&CelType>,
        args: &[CelType],
    ) -> CelType {
        let (taken, results): (Vec<&'static Overload>, Vec<CelType>) = overloads
            .iter()
            .filter_map(|o| applies(o, receiver, args).map(|r| (o, r)))
            .unzip();
        self.overloads.insert(id, taken);
        if results.is_empty() {
            let listed = args
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let applied = match receiver {
                Some(r) => format!("{r}.({listed})"),
                None => format!("({listed})"),
            };
            self.report(
                id,
                format!("found no matching overload for '{name}' applied to '{applied}'"),
            );
            return CelType::Error;
        }
        let result = if results.iter().all(|r| *r == results[0]) {
            results[0].clone()
        } else {
            CelType::Dyn
        };
        // A call on a value of a function the checker does not resolve may have a type cel-go
        // knows (`f.validate(s).value()[0]` is a string): it is not known here either.
        let unresolved = receiver
            .into_iter()
            .chain(args)
            .any(|t| *t == CelType::Unknown);
        if unresolved && result == CelType::Dyn {
            CelType::Unknown
        } else {
            result
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> CelType {
        let range = self.check(&c.iter_range);
        let (first, second) = match &range {
            CelType::List(item) => match c.iter_var2 {
                Some(_) => (CelType::Int, (**item).clone()),
                None => ((**item).clone(), CelType::Dyn),
            },
            CelType::Map(k, v) => ((**k).clone(), (**v).clone()),
            CelType::Dyn | CelType::Error => (CelType::Dyn, CelType::Dyn),
            CelType::Unknown => (CelType::Unknown, CelType::Unknown),
            other => {
                self.report(
                    c.iter_range.id,
                    format!(
                        "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                    ),
                );
                (CelType::Error, CelType::Error)
            }
        };
        let init = self.check(&c.accu_init);
        let depth = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), init.clone()));
        self.scopes.push((c.iter_var.clone(), first));
        if let Some(v2) = &c.iter_var2 {
            self.scopes.push((v2.clone(), second));
        }
        self.check(&c.loop_cond);
        let step = self.check(&c.loop_step);
        self.scopes.truncate(depth);
        self.scopes.push((c.accu_var.clone(), join(&init, &step)));
        let result = self.check(&c.result);
        self.scopes.truncate(depth);
        result
    }
}

fn literal(l: &LiteralValue) -> CelType {
    match l {
        LiteralValue::Boolean(_) => CelType::Bool,
        LiteralValue::Bytes(_) => CelType::Bytes,
        LiteralValue::Double(_) => CelType::Double,
        LiteralValue::Int(_) => CelType::Int,
        LiteralValue::Null => CelType::Null,
        LiteralValue::String(_) => CelType::String,
        LiteralValue::UInt(_) => CelType::Uint,
    }
}

/// The type of an overload's result when it takes these arguments.
fn applies(o: &Overload, receiver: Option<&CelType>, args: &[CelType]) -> Option<CelType> {
    if o.params.len() != args.len() || o.receiver.is_some() != receiver.is_some() {
        return None;
    }
    let mut bound = HashMap::new();
    if let (Some(p), Some(r)) = (&o.receiver, receiver) {
        unify(p, r, &mut bound)?;
    }
    for (p, a) in o.params.iter().zip(args) {
        unify(p, a, &mut bound)?;
    }
    Some(substitute(&o.result, &bound))
}

/// Whether `t` fits `p`, binding `p`'s parameters; `dyn`, `!error!` and `null` fit anything.
fn unify(p: &Pattern, t: &CelType, bound: &mut HashMap<char, CelType>) -> Option<()> {
    if let Pattern::Param(name) = p {
        return match bound.get(name) {
            None | Some(CelType::Dyn) => {
                bound.insert(*name, t.clone());
                Some(())
            }
            Some(CelType::Null) if null_fits(t) => {
                bound.insert(*name, t.clone());
                Some(())
            }
            Some(b) => compatible(b, t).then_some(()),
        };
    }
    if t.is_open() {
        return Some(());
    }
    match (p, t) {
        (Pattern::Exact(CelType::Dyn), _) => Some(()),
        (Pattern::Exact(e), CelType::Null) => null_fits(e).then_some(()),
        (Pattern::Exact(e), t) => (e == t).then_some(()),
        (Pattern::TypeOf(inner), CelType::Type(t)) => unify(inner, t, bound),
        (Pattern::Optional(inner), CelType::Optional(t)) => unify(inner, t, bound),
        (Pattern::List(item), CelType::List(t)) => unify(item, t, bound),
        (Pattern::Map(k, v), CelType::Map(tk, tv)) => {
            unify(k, tk, bound)?;
            unify(v, tv, bound)
        }
        _ => None,
    }
}

/// Whether two types can be the same type (`dyn` and `!error!` match any, `null` an object).
fn compatible(a: &CelType, b: &CelType) -> bool {
    match (a, b) {
        (a, b) if a.is_open() || b.is_open() => true,
        (CelType::Null, t) | (t, CelType::Null) => null_fits(t),
        (CelType::List(x), CelType::List(y)) => compatible(x, y),
        (CelType::Map(k1, v1), CelType::Map(k2, v2)) => compatible(k1, k2) && compatible(v1, v2),
        (CelType::Object(x), CelType::Object(y)) => Arc::ptr_eq(x, y) || x.name == y.name,
        (CelType::Optional(x), CelType::Optional(y)) => compatible(x, y),
        (CelType::Type(_), CelType::Type(_)) => true,
        _ => a == b,
    }
}

/// Whether `null` is a value of `t` (as of the types cel-go treats as messages: objects,
/// timestamps and durations).
fn null_fits(t: &CelType) -> bool {
    matches!(
        t,
        CelType::Null
            | CelType::Object(_)
            | CelType::Timestamp
            | CelType::Duration
            | CelType::Optional(_)
    ) || t.is_open()
}

fn substitute(p: &Pattern, bound: &HashMap<char, CelType>) -> CelType {
    match p {
        Pattern::Exact(t) => t.clone(),
        Pattern::Param(name) => bound.get(name).cloned().unwrap_or(CelType::Dyn),
        Pattern::List(item) => CelType::list(substitute(item, bound)),
        Pattern::Map(k, v) => CelType::map(substitute(k, bound), substitute(v, bound)),
        Pattern::TypeOf(t) => CelType::Type(Box::new(substitute(t, bound))),
        Pattern::Optional(t) => CelType::Optional(Box::new(substitute(t, bound))),
    }
}

/// The more precise of two types that must be the same, `dyn` where they differ.
fn join(a: &CelType, b: &CelType) -> CelType {
    match (a, b) {
        (CelType::Error, _) | (_, CelType::Error) => CelType::Error,
        (CelType::Dyn | CelType::Unknown | CelType::Null, t)
        | (t, CelType::Dyn | CelType::Unknown | CelType::Null) => t.clone(),
        (CelType::List(x), CelType::List(y)) => CelType::list(join(x, y)),
        (CelType::Map(k1, v1), CelType::Map(k2, v2)) => CelType::map(join(k1, k2), join(v1, v2)),
        (a, b) if a == b => a.clone(),
        _ => CelType::Dyn,
    }
}

/// An issue at a character offset of `source`, as cel-go displays it.
fn display(source: &str, offset: u32, message: &str) -> String {
    let offset = offset as usize;
    let before: String = source.chars().take(offset).collect();
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    display_issue(source, line, column, message)
}

/// One issue as cel-go's `Error.ToDisplayString` writes it: the position (the line, and the
/// 0-based character `column` shown from 1), the message, and the source line with a caret
/// under the place (wide characters drawn wide).
pub fn display_issue(source: &str, line: usize, column: usize, message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{}: {message}", column + 1);
    let Some(snippet) = source.split('\n').nth(line.saturating_sub(1)) else {
        return out;
    };
    let snippet = snippet.replace('\t', " ");
    out.push_str("\n | ");
    out.push_str(&snippet);
    out.push_str("\n | ");
    let mut chars = snippet.chars();
    for _ in 0..column {
        match chars.next() {
            Some(c) if c.len_utf8() > 1 => out.push('\u{ff0e}'),
            Some(_) => out.push('.'),
            None => break,
        }
    }
    match chars.next() {
        Some(c) if c.len_utf8() > 1 => out.push('\u{ff3e}'),
        _ => out.push('^'),
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn spec() -> CelType {
        let fields: BTreeMap<String, CelType> = [
            ("size".to_string(), CelType::Int),
            ("color".to_string(), CelType::String),
            ("tags".to_string(), CelType::list(CelType::String)),
            (
                "labels".to_string(),
                CelType::map(CelType::String, CelType::String),
            ),
        ]
        .into();
        let object = super::super::cel_type::Object {
            name: "selfType1".into(),
            fields,
        };
        CelType::Object(Arc::new(object))
    }

    fn errors_of(rule: &str) -> Vec<String> {
        let program = cel::Env::stdlib().compile(rule).expect("parses");
        let self_type = spec();
        check(
            program.expression(),
            program.source_info(),
            rule,
            &[("self", self_type.clone()), ("oldSelf", self_type)],
        )
        .errors
    }

    #[test]
    fn an_undefined_field_is_reported_at_its_dot() {
        assert_eq!(
            errors_of("self.nope > 1"),
            ["ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 1\n | ....^"]
        );
    }

    #[test]
    fn an_undeclared_variable_is_reported() {
        assert_eq!(
            errors_of("size > 1"),
            [
                "ERROR: <input>:1:1: undeclared reference to 'size' (in container '')\n | size > 1\n | ^"
            ]
        );
    }

    #[test]
    fn a_call_no_overload_takes_names_its_argument_types() {
        assert_eq!(
            errors_of("self.color > 1"),
            [
                "ERROR: <input>:1:12: found no matching overload for '_>_' applied to '(string, int)'\n | self.color > 1\n | ...........^"
            ]
        );
        assert_eq!(
            errors_of("self.color.startsWith(1)")[0].lines().next(),
            Some(
                "ERROR: <input>:1:22: found no matching overload for 'startsWith' applied to 'string.(int)'"
            )
        );
    }

    #[test]
    fn a_string_has_no_fields() {
        assert_eq!(
            errors_of("self.color.length > 1")[0].lines().next(),
            Some("ERROR: <input>:1:11: type 'string' does not support field selection")
        );
    }

    #[test]
    fn macros_bind_their_variables_to_the_element_type() {
        assert!(errors_of("self.tags.all(t, t.startsWith('a'))").is_empty());
        assert!(
            errors_of("self.labels.exists(k, k.size() > 1 && self.labels[k] != '')").is_empty()
        );
        assert!(errors_of("self.tags.map(t, t.size()).sum() < 10").is_empty());
        assert_eq!(
            errors_of("self.tags.all(t, t > 1)")[0].lines().next(),
            Some(
                "ERROR: <input>:1:20: found no matching overload for '_>_' applied to '(string, int)'"
            )
        );
    }

    #[test]
    fn dyn_values_pass_every_check() {
        let program = cel::Env::stdlib()
            .compile("self.x.y > 'a' && self[1] == 2")
            .expect("parses");
        let checked = check(
            program.expression(),
            program.source_info(),
            "",
            &[("self", CelType::Dyn)],
        );
        assert!(checked.errors.is_empty());
        assert_eq!(checked.output, CelType::Bool);
    }

    #[test]
    fn an_unknown_function_is_an_undeclared_reference_at_its_parenthesis() {
        assert_eq!(
            errors_of("self.color.shout() == 'A'")[0].lines().next(),
            Some("ERROR: <input>:1:17: undeclared reference to 'shout' (in container '')")
        );
    }
}
