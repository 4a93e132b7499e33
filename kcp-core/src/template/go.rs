//! Go templates: parsing with [`gotmpl`], the parse-time function check, bounded
//! execution, and errors with positions.
//!
//! Go's `text/template` rejects an unknown function when the template is parsed; gotmpl
//! only notices at execution. [`GoTemplate::parse`] therefore walks the parsed tree and
//! rejects unknown functions ("function "x" not defined") and excluded sprig functions
//! ("function "now" is not allowed: it reads the clock") with their line and column.
//!
//! Execution errors from gotmpl carry no position; they are placed at the first use of the
//! failing function, key or template in the source, which is exact unless that name is used
//! more than once.

use gotmpl::parse::{Expr, ListNode, Node, PipeNode, Pos};
use gotmpl::{FuncMap, MissingKey, TemplateError, Value};

use super::options::{Budget, Escaping, MissingKeys, TemplateOptions};
use super::sprig::exclusion_reason;
use crate::error::{Error, Result};

/// The name every Go template is parsed under (as in the upstream init-agent), so that a
/// cached template behaves the same whatever name the caller gives it.
const INTERNAL_NAME: &str = "template";

/// Go's builtin functions (sprig's `slice` replaces the builtin one).
const BUILTINS: &[&str] = &[
    "and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf",
    "println", "urlquery", "eq", "ge", "gt", "le", "lt", "ne",
];

enum Parsed {
    Text(gotmpl::Template),
    Html(gotmpl::html::Template),
}

/// A parsed Go template.
pub(crate) struct GoTemplate {
    parsed: Parsed,
    source: String,
}

fn template_error(name: &str, position: Option<(usize, usize)>, message: String) -> Error {
    Error::Template {
        template: name.to_owned(),
        line: position.map(|p| p.0),
        column: position.map(|p| p.1),
        message,
    }
}

/// 1-based line and column (in characters) of a node position.
fn line_column(source: &str, pos: Pos) -> (usize, usize) {
    let offset = pos.offset.min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (pos.line.max(1), column)
}

impl GoTemplate {
    /// Parses `source`; `name` is used in errors only.
    pub(crate) fn parse(
        name: &str,
        source: &str,
        options: &TemplateOptions,
        funcs: &FuncMap,
        budget: &Budget,
    ) -> Result<Self> {
        let missing = match options.missing_keys {
            MissingKeys::NoValue => MissingKey::Invalid,
            MissingKeys::Error => MissingKey::Error,
        };
        let parsed = match options.escaping {
            Escaping::Text => gotmpl::Template::new(INTERNAL_NAME)
                .funcs(funcs.clone())
                .missing_key(missing)
                .max_range_iters(budget.max_range_iterations)
                .parse(source)
                .map(Parsed::Text),
            Escaping::Html => gotmpl::html::Template::new(INTERNAL_NAME)
                .funcs(funcs.clone())
                .missing_key(missing)
                .max_range_iters(budget.max_range_iterations)
                .parse(source)
                .map(Parsed::Html),
        }
        .map_err(|e| parse_error(name, e))?;
        let template = Self {
            parsed,
            source: source.to_owned(),
        };
        template.check_functions(name, funcs)?;
        Ok(template)
    }

    fn trees(&self) -> Vec<&ListNode> {
        let mut trees: Vec<&ListNode> = match &self.parsed {
            Parsed::Text(t) => t.templates().iter().filter_map(|n| t.lookup(n)).collect(),
            Parsed::Html(t) => t.templates().iter().filter_map(|n| t.lookup(n)).collect(),
        };
        trees.sort_by_key(|t| t.pos.offset);
        trees
    }

    /// Rejects functions that are neither builtins nor in the function map, explaining
    /// excluded sprig functions.
    fn check_functions(&self, name: &str, funcs: &FuncMap) -> Result<()> {
        let mut identifiers = Vec::new();
        for tree in self.trees() {
            collect_list(tree, &mut |expr| {
                if let Expr::Identifier(pos, ident) = expr {
                    identifiers.push((*pos, ident.to_string()));
                }
            });
        }
        identifiers.sort_by_key(|(pos, _)| pos.offset);
        for (pos, ident) in identifiers {
            if funcs.contains_key(&ident) || BUILTINS.contains(&ident.as_str()) {
                continue;
            }
            let message = match exclusion_reason(&ident) {
                Some(reason) => format!(
                    "function {ident:?} is not allowed: {reason}, and templates must be hermetic"
                ),
                None => format!("function {ident:?} not defined"),
            };
            return Err(template_error(
                name,
                Some(line_column(&self.source, pos)),
                message,
            ));
        }
        Ok(())
    }

    /// Executes the template with `data`, within `budget`.
    pub(crate) fn render(&self, name: &str, data: &Value, budget: &Budget) -> Result<String> {
        let mut out = Bounded {
            text: String::new(),
            limit: budget.max_output_bytes,
            exceeded: false,
        };
        let result = match &self.parsed {
            Parsed::Text(t) => t.execute_fmt(&mut out, data),
            Parsed::Html(t) => t.execute_fmt(&mut out, data),
        };
        match result {
            Ok(()) => Ok(out.text),
            Err(_) if out.exceeded => Err(template_error(
                name,
                None,
                format!(
                    "execution budget exhausted: the output is larger than {} bytes",
                    budget.max_output_bytes
                ),
            )),
            Err(err) => Err(self.exec_error(name, err, budget)),
        }
    }

    fn exec_error(&self, name: &str, err: TemplateError, budget: &Budget) -> Error {
        let (message, anchor) = match err {
            TemplateError::Exec(message) => {
                let anchor = message
                    .strip_prefix("error calling ")
                    .and_then(|rest| rest.split(':').next())
                    .map(|f| Anchor::Function(f.to_owned()));
                (message, anchor)
            }
            TemplateError::MissingKey { key } => (
                format!("map has no entry for key {key:?}"),
                Some(Anchor::Key(key)),
            ),
            TemplateError::UndefinedTemplate(t) => (
                format!("template {t:?} not defined"),
                Some(Anchor::Template(t)),
            ),
            TemplateError::UndefinedFunction(f) => (
                format!("function {f:?} not defined"),
                Some(Anchor::Function(f)),
            ),
            TemplateError::ArgCount {
                name: f,
                expected,
                got,
            } => (
                format!("wrong number of args for {f}: want {expected} got {got}"),
                Some(Anchor::Function(f)),
            ),
            TemplateError::RecursionLimit => (
                "execution budget exhausted: templates and blocks nested too deeply (recursive \
                 `template` calls?)"
                    .to_owned(),
                None,
            ),
            TemplateError::RangeIterLimit => (
                format!(
                    "execution budget exhausted: more than {} range iterations",
                    budget.max_range_iterations
                ),
                None,
            ),
            other => (other.to_string(), None),
        };
        let position = anchor
            .and_then(|a| self.find(&a))
            .map(|pos| line_column(&self.source, pos));
        template_error(name, position, message)
    }

    /// The first position in the source where `anchor` is used.
    fn find(&self, anchor: &Anchor) -> Option<Pos> {
        let mut found: Option<Pos> = None;
        let mut consider = |pos: Pos| {
            if found.is_none_or(|f| pos.offset < f.offset) {
                found = Some(pos);
            }
        };
        for tree in self.trees() {
            if let Anchor::Template(t) = anchor {
                collect_template_calls(tree, &mut |pos, called| {
                    if called == t {
                        consider(pos);
                    }
                });
                continue;
            }
            collect_list(tree, &mut |expr| match (anchor, expr) {
                (Anchor::Function(f), Expr::Identifier(pos, ident)) if ident.as_str() == f => {
                    consider(*pos);
                }
                (Anchor::Key(k), Expr::Field(pos, fields))
                | (Anchor::Key(k), Expr::Variable(pos, _, fields))
                | (Anchor::Key(k), Expr::Chain(pos, _, fields))
                    if fields.iter().any(|f| f.as_str() == k) =>
                {
                    consider(*pos);
                }
                _ => {}
            });
        }
        found
    }
}

enum Anchor {
    Function(String),
    Key(String),
    Template(String),
}

fn parse_error(name: &str, err: TemplateError) -> Error {
    match err {
        TemplateError::Parse {
            line, col, message, ..
        }
        | TemplateError::Lex {
            line, col, message, ..
        } => template_error(name, Some((line, col)), message),
        other => template_error(name, None, other.to_string()),
    }
}

/// Output that refuses to grow past `limit` bytes.
struct Bounded {
    text: String,
    limit: usize,
    exceeded: bool,
}

impl std::fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.text.len() + s.len() > self.limit {
            self.exceeded = true;
            return Err(std::fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// Calls `f` on every expression in `list`, in source order.
fn collect_list(list: &ListNode, f: &mut dyn FnMut(&Expr)) {
    for node in &list.nodes {
        collect_node(node, f);
    }
}

fn collect_node(node: &Node, f: &mut dyn FnMut(&Expr)) {
    match node {
        Node::List(list) => collect_list(list, f),
        Node::Action(action) => collect_pipe(&action.pipe, f),
        Node::If(branch) | Node::Range(branch) | Node::With(branch) => {
            collect_pipe(&branch.pipe, f);
            collect_list(&branch.body, f);
            if let Some(else_body) = &branch.else_body {
                collect_list(else_body, f);
            }
        }
        Node::Template(t) => {
            if let Some(pipe) = &t.pipe {
                collect_pipe(pipe, f);
            }
        }
        Node::Define(define) => collect_list(&define.body, f),
        Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
    }
}

fn collect_pipe(pipe: &PipeNode, f: &mut dyn FnMut(&Expr)) {
    for command in &pipe.commands {
        for arg in &command.args {
            collect_expr(arg, f);
        }
    }
}

fn collect_expr(expr: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(expr);
    match expr {
        Expr::Pipe(_, pipe) => collect_pipe(pipe, f),
        Expr::Chain(_, inner, _) => collect_expr(inner, f),
        _ => {}
    }
}

/// Calls `f` on every `{{ template "name" }}` in `list`.
fn collect_template_calls(list: &ListNode, f: &mut dyn FnMut(Pos, &str)) {
    for node in &list.nodes {
        match node {
            Node::Template(t) => f(t.pos, t.name.as_str()),
            Node::List(inner) => collect_template_calls(inner, f),
            Node::If(b) | Node::Range(b) | Node::With(b) => {
                collect_template_calls(&b.body, f);
                if let Some(e) = &b.else_body {
                    collect_template_calls(e, f);
                }
            }
            Node::Define(d) => collect_template_calls(&d.body, f),
            _ => {}
        }
    }
}
