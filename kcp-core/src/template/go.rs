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

use std::sync::Arc;

use gotmpl::parse::{CommandNode, Expr, ListNode, Node, PipeNode, Pos, SmolStr};
use gotmpl::{FuncMap, MissingKey, TemplateError, Value, ValueFunc};

use super::options::{Budget, Escaping, MissingKeys, TemplateOptions};
use super::sprig::exclusion_reason;
use crate::error::{Error, Result};

/// The name every Go template is parsed under (as in the upstream init-agent), so that a
/// cached template behaves the same whatever name the caller gives it.
const INTERNAL_NAME: &str = "template";

/// The function every printing action ends with (see [`print_like_go`]).
const PRINT: &str = "kcp.print";

/// The function that gives `{{ template "x" }}` its nil data.
const NIL: &str = "kcp.nil";

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
    /// Whether the main template has actions (and so was rewritten under its name); an
    /// empty or text-only template executes its original tree.
    has_main: bool,
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
        let mut all: FuncMap = funcs
            .iter()
            .map(|(n, f)| (n.clone(), within_time(f.clone())))
            .collect();
        all.insert(PRINT.to_owned(), Arc::new(print_like_go));
        all.insert(NIL.to_owned(), Arc::new(|_: &[Value]| Ok(Value::Nil)));
        let parsed = match options.escaping {
            Escaping::Text => gotmpl::Template::new(INTERNAL_NAME)
                .funcs(all)
                .missing_key(missing)
                .max_range_iters(budget.max_range_iterations)
                .parse(source)
                .map(Parsed::Text),
            Escaping::Html => gotmpl::html::Template::new(INTERNAL_NAME)
                .funcs(all)
                .missing_key(missing)
                .max_range_iters(budget.max_range_iterations)
                .parse(source)
                .map(Parsed::Html),
        }
        .map_err(|e| parse_error(name, e))?;
        let mut template = Self {
            parsed,
            source: source.to_owned(),
            has_main: false,
        };
        template.check_functions(name, funcs)?;
        check_blocks_closed(name, source)?;
        template.rewrite().map_err(|e| parse_error(name, e))?;
        Ok(template)
    }

    /// Rewrites every tree so that gotmpl executes it the way Go does: printing actions
    /// format their value with Go's `fmt` rules (gotmpl prints floats in Rust's format),
    /// and `{{ template "x" }}` without data passes nil (gotmpl passes dot).
    fn rewrite(&mut self) -> std::result::Result<(), TemplateError> {
        let names: Vec<String> = match &self.parsed {
            Parsed::Text(t) => t.templates().iter().map(|n| (*n).to_owned()).collect(),
            Parsed::Html(t) => t.templates().iter().map(|n| (*n).to_owned()).collect(),
        };
        let mut rewritten = Vec::with_capacity(names.len());
        for n in names {
            let tree = match &self.parsed {
                Parsed::Text(t) => t.lookup(&n).cloned(),
                Parsed::Html(t) => t.lookup(&n).cloned(),
            };
            if let Some(mut tree) = tree {
                rewrite_list(&mut tree);
                rewritten.push((n, tree));
            }
        }
        self.has_main = rewritten.iter().any(|(n, _)| n == INTERNAL_NAME);
        let placeholder = Parsed::Text(gotmpl::Template::new(INTERNAL_NAME));
        self.parsed = match std::mem::replace(&mut self.parsed, placeholder) {
            Parsed::Text(mut t) => {
                for (n, tree) in rewritten {
                    t = t.add_parse_tree(&n, tree);
                }
                Parsed::Text(t)
            }
            Parsed::Html(mut t) => {
                for (n, tree) in rewritten {
                    t = t.add_parse_tree(&n, tree)?;
                }
                Parsed::Html(t)
            }
        };
        Ok(())
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
            timed_out: None,
        };
        let result = super::meter::metered(budget, || match (&self.parsed, self.has_main) {
            (Parsed::Text(t), true) => t.execute_template_fmt(&mut out, INTERNAL_NAME, data),
            (Parsed::Text(t), false) => t.execute_fmt(&mut out, data),
            (Parsed::Html(t), true) => t.execute_template_fmt(&mut out, INTERNAL_NAME, data),
            (Parsed::Html(t), false) => t.execute_fmt(&mut out, data),
        });
        match result {
            Ok(()) => Ok(out.text),
            Err(_) if out.timed_out.is_some() => Err(template_error(
                name,
                None,
                out.timed_out.unwrap_or_default(),
            )),
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
                    .map(|f| Anchor::Function(f.to_owned()))
                    .or_else(|| builtin_anchor(&message));
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
            TemplateError::UndefinedVariable(v) => (
                format!("undefined variable {v:?}"),
                Some(Anchor::Variable(v)),
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
            TemplateError::IndexOutOfRange { index } => (
                format!("error calling index: index out of range: {index}"),
                Some(Anchor::AnyFunction(&["index"])),
            ),
            other => {
                let message = other.to_string();
                let anchor = builtin_anchor(&message);
                (message, anchor)
            }
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
                (Anchor::AnyFunction(names), Expr::Identifier(pos, ident))
                    if names.contains(&ident.as_str()) =>
                {
                    consider(*pos);
                }
                (Anchor::Variable(v), Expr::Variable(pos, name, _)) if name.as_str() == v => {
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
    Variable(String),
    AnyFunction(&'static [&'static str]),
    Function(String),
    Key(String),
    Template(String),
}

/// The builtin function an execution error without a function name most likely comes from
/// (gotmpl does not prefix builtin errors with "error calling NAME").
fn builtin_anchor(message: &str) -> Option<Anchor> {
    const COMPARISONS: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge"];
    let names: &'static [&'static str] =
        if message.contains("comparison") || message.contains("incompatible types") {
            COMPARISONS
        } else if message.contains("len") || message.contains("length") {
            &["len"]
        } else if message.contains("call") {
            &["call"]
        } else if message.contains("index") {
            &["index", "slice"]
        } else if message.contains("printf") || message.contains("format") {
            &["printf"]
        } else {
            return None;
        };
    Some(Anchor::AnyFunction(names))
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
/// `f`, first checking that the execution is within its time (see [`super::meter`]).
fn within_time(f: ValueFunc) -> ValueFunc {
    Arc::new(move |args: &[Value]| {
        super::meter::check_time().map_err(TemplateError::Exec)?;
        f(args)
    })
}

struct Bounded {
    text: String,
    limit: usize,
    exceeded: bool,
    timed_out: Option<String>,
}

impl std::fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.text.len() + s.len() > self.limit {
            self.exceeded = true;
            return Err(std::fmt::Error);
        }
        if let Err(refusal) = super::meter::check_time() {
            self.timed_out = Some(refusal);
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

/// Go's `printValue`: what an action prints for its value.
fn print_like_go(args: &[Value]) -> gotmpl::Result<Value> {
    Ok(match args.last() {
        None | Some(Value::Nil) => Value::String(Arc::from("<no value>")),
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(other) => Value::String(Arc::from(crate::template::go_value::format_v(other))),
    })
}

fn rewrite_list(list: &mut ListNode) {
    for node in &mut list.nodes {
        match node {
            Node::List(inner) => rewrite_list(inner),
            Node::Action(action) if action.pipe.decl.is_empty() => {
                let pos = action.pipe.pos;
                action.pipe.commands.push(CommandNode {
                    pos,
                    args: vec![Expr::Identifier(pos, SmolStr::new(PRINT))],
                });
            }
            Node::If(b) | Node::Range(b) | Node::With(b) => {
                rewrite_list(&mut b.body);
                if let Some(e) = &mut b.else_body {
                    rewrite_list(e);
                }
            }
            Node::Template(t) if t.pipe.is_none() => {
                let pos = t.pos;
                t.pipe = Some(PipeNode {
                    pos,
                    decl: Vec::new(),
                    commands: vec![CommandNode {
                        pos,
                        args: vec![Expr::Identifier(pos, SmolStr::new(NIL))],
                    }],
                    is_assign: false,
                });
            }
            Node::Define(d) => rewrite_list(&mut d.body),
            _ => {}
        }
    }
}

/// Go rejects a template whose `if`, `range`, `with`, `define` or `block` is never closed
/// ("unexpected EOF"); gotmpl closes it silently at the end. Counts the block keywords that
/// start actions against the `end`s.
fn check_blocks_closed(name: &str, source: &str) -> Result<()> {
    let mut open: usize = 0;
    let mut rest = source;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let body = after.strip_prefix('-').map_or(after, |b| {
            if b.starts_with([' ', '\t', '\r', '\n']) {
                b
            } else {
                after
            }
        });
        let body = body.trim_start();
        let word: String = body
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        match word.as_str() {
            "if" | "range" | "with" | "define" | "block" => open += 1,
            "end" => open = open.saturating_sub(1),
            _ => {}
        }
        // Skip to the end of this action, jumping over quoted strings and comments.
        let Some(end) = action_end(after) else {
            break;
        };
        rest = &after[end..];
    }
    if open > 0 {
        let line = source.lines().count().max(1);
        return Err(template_error(
            name,
            Some((line, 1)),
            "unexpected EOF".to_owned(),
        ));
    }
    Ok(())
}

/// Byte offset just past the `}}` closing the action that `text` (after its `{{`) starts.
fn action_end(text: &str) -> Option<usize> {
    if let Some(comment) = text.trim_start_matches('-').trim_start().strip_prefix("/*") {
        let close = comment.find("*/")?;
        let consumed = text.len() - comment.len() + close + 2;
        return text[consumed..].find("}}").map(|i| consumed + i + 2);
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'`' {
                    i += 1;
                }
            }
            b'\'' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => return Some(i + 2),
            _ => {}
        }
        i += 1;
    }
    None
}
