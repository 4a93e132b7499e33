//! Translation of the Go `text/template` subset used by upstream kcp tools into tera source.
//!
//! Upstream kcp tooling configures names and paths with small Go templates such as
//! `{{ .ClusterName | sha256sum | trunc 8 }}`. This module turns such templates into equivalent
//! tera 2 source that runs on the same sprig-named filters, so one engine renders both.
//!
//! The supported subset is documented on [`translate_go_template`].

use crate::error::{Error, Result};

use super::filters::KWARG_NAMES;

/// Name used in errors by [`translate_go_template`], which does not know the template's name.
const ANONYMOUS: &str = "go-template";

/// Words tera reserves, which cannot be a top-level variable name.
const TERA_RESERVED: &[&str] = &[
    "true",
    "True",
    "false",
    "False",
    "loop",
    "self",
    "and",
    "or",
    "not",
    "is",
    "in",
    "continue",
    "break",
    "none",
    "None",
    "null",
    "if",
    "else",
    "__tera_context",
];

/// Go keywords the translator rejects.
const UNSUPPORTED_KEYWORDS: &[&str] = &[
    "range", "with", "define", "template", "block", "break", "continue",
];

/// Translates a Go `text/template` source into tera source.
///
/// # Supported subset
/// - text outside actions, passed through byte for byte (tera delimiters in it are escaped);
/// - fields `.Field` and nested fields `.Object.metadata.name` (the context's top-level keys);
/// - string (`"..."` with Go escapes, `` `raw` ``), integer, decimal, `true`, `false` and `nil`
///   literals;
/// - pipelines `x | f a b` where, as in Go, the piped value becomes the *last* argument of `f`;
/// - function calls `f a b` and parenthesised sub-pipelines `trunc 8 (sha256sum .X)`;
/// - the sprig-named functions of [`TemplateEngine`](super::TemplateEngine) and the
///   comparison and logic functions `eq` (two or more arguments), `ne`, `and`, `or`, `not`;
/// - `if`, `else`, `else if`, `end`; trim markers `{{- ` and ` -}}`; comments `{{/* ... */}}`.
///
/// Everything else (`range`, `with`, `define`, `template`, `block`, `break`, `continue`,
/// variables such as `$x`, character constants, unknown functions, fields of a parenthesised
/// expression) is an [`Error::Template`] naming the 1-based line and column of the offending
/// action.
///
/// # Differences from Go that remain
/// - Missing fields are an error (tera's strict undefined), where Go prints `<no value>`.
/// - `and` and `or` evaluate to a boolean, where Go returns one of their operands; in `if`
///   conditions, the only place they are normally used, the result is the same.
/// - Values that are maps or arrays print in tera's notation, not Go's `map[...]`.
///
/// # Result
/// The result renders with [`super::TemplateEngine::render`] and produces the same output as
/// the Go template rendered with sprig. Errors are [`Error::Template`] with the line and column of the offending action
/// (the template is named `go-template` in them; [`super::TemplateEngine::render_with`] uses the
/// real name).
pub fn translate_go_template(source: &str) -> Result<String> {
    translate(ANONYMOUS, source).map(|t| t.tera)
}

/// A translated template and where its actions came from.
#[derive(Debug, Clone)]
pub(crate) struct Translation {
    /// The tera source.
    pub tera: String,
    /// For each tera tag emitted for a Go action, in increasing order of `tera_offset`.
    pub actions: Vec<ActionOrigin>,
}

/// Links the start of an emitted tera tag to the Go action it was translated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ActionOrigin {
    /// Byte offset of the tag in the tera source.
    pub tera_offset: usize,
    /// 1-based line of the Go action.
    pub line: usize,
    /// 1-based column of the Go action.
    pub column: usize,
}

impl Translation {
    /// The Go position of the action that produced the tera byte `offset`.
    pub fn origin_of(&self, offset: usize) -> Option<ActionOrigin> {
        let idx = self.actions.partition_point(|a| a.tera_offset <= offset);
        idx.checked_sub(1)
            .and_then(|i| self.actions.get(i))
            .copied()
    }
}

/// 1-based line and column (in characters) of byte `offset` in `source`.
pub(crate) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

fn is_go_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Translates with error positions naming `name`.
pub(crate) fn translate(name: &str, source: &str) -> Result<Translation> {
    Translator {
        name,
        source,
        out: String::with_capacity(source.len() + source.len() / 2),
        actions: Vec::new(),
        blocks: Vec::new(),
    }
    .run()
}

/// An open `if` block.
struct OpenIf {
    line: usize,
    column: usize,
    seen_else: bool,
}

struct Translator<'a> {
    name: &'a str,
    source: &'a str,
    out: String,
    actions: Vec<ActionOrigin>,
    blocks: Vec<OpenIf>,
}

/// One Go action, delimited.
struct Action<'a> {
    /// Byte offset of `{{`.
    start: usize,
    /// The text between the delimiters and trim markers.
    body: &'a str,
    /// Byte offset of `body` in the source.
    body_start: usize,
    trim_left: bool,
    trim_right: bool,
    /// Byte offset just past `}}`.
    end: usize,
}

impl<'a> Translator<'a> {
    fn err_at(&self, offset: usize, message: impl Into<String>) -> Error {
        let (line, column) = line_col(self.source, offset);
        Error::Template {
            template: self.name.to_owned(),
            line: Some(line),
            column: Some(column),
            message: message.into(),
        }
    }

    fn run(mut self) -> Result<Translation> {
        let source = self.source;
        let mut pos = 0;
        let mut trim_next_text = false;
        while pos <= source.len() {
            let rest = source.get(pos..).unwrap_or("");
            let Some(rel) = rest.find("{{") else {
                let mut text = rest;
                if trim_next_text {
                    text = text.trim_start_matches(is_go_space);
                }
                self.emit_text(text);
                break;
            };
            let action = self.delimit(pos + rel)?;
            let mut text = rest.get(..rel).unwrap_or("");
            if trim_next_text {
                text = text.trim_start_matches(is_go_space);
            }
            if action.trim_left {
                text = text.trim_end_matches(is_go_space);
            }
            self.emit_text(text);
            self.translate_action(&action)?;
            trim_next_text = action.trim_right;
            pos = action.end;
        }
        if let Some(open) = self.blocks.last() {
            return Err(Error::Template {
                template: self.name.to_owned(),
                line: Some(open.line),
                column: Some(open.column),
                message: "`if` is never closed by `{{ end }}`".into(),
            });
        }
        Ok(Translation {
            tera: self.out,
            actions: self.actions,
        })
    }

    /// Writes plain text so that tera outputs it unchanged: every `{` that could start a tera
    /// delimiter (followed by `{`, `%` or `#`, or last in the text and so followed by a tag) is
    /// written as an expression printing `{`.
    fn emit_text(&mut self, text: &str) {
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '{' && matches!(chars.peek(), None | Some('{' | '%' | '#')) {
                self.out.push_str("{{ \"{\" }}");
            } else {
                self.out.push(c);
            }
        }
    }

    /// Finds the end of the action starting at `start` (which points at `{{`).
    fn delimit(&self, start: usize) -> Result<Action<'a>> {
        let source = self.source;
        let mut body_start = start + 2;
        let after = source.get(body_start..).unwrap_or("");
        let trim_left = after.starts_with('-') && after[1..].starts_with(is_go_space);
        if trim_left {
            body_start += 2;
        }
        let inner = source.get(body_start..).unwrap_or("");

        // Comments: `/*` right after the delimiter (and trim marker), `*/` right before the
        // closing delimiter (and trim marker).
        if inner.starts_with("/*") {
            let Some(close) = inner.find("*/") else {
                return Err(self.err_at(start, "unclosed comment"));
            };
            let after_comment = &inner[close + 2..];
            let (trim_right, skip) = if after_comment.starts_with("}}") {
                (false, 2)
            } else if after_comment.starts_with(is_go_space)
                && after_comment[1..].starts_with("-}}")
            {
                (true, 4)
            } else {
                return Err(self.err_at(start, "comment ends before closing delimiter"));
            };
            let body_end = body_start + close + 2;
            return Ok(Action {
                start,
                body: &source[body_start..body_end],
                body_start,
                trim_left,
                trim_right,
                end: body_end + skip,
            });
        }

        // Scan to `}}`, skipping over quoted strings which may contain it.
        let bytes = inner.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                q @ (b'"' | b'`' | b'\'') => {
                    i += 1;
                    while i < bytes.len() && bytes[i] != q {
                        if q != b'`' && bytes[i] == b'\n' {
                            return Err(self.err_at(start, "unterminated quoted string"));
                        }
                        i += if q != b'`' && bytes[i] == b'\\' { 2 } else { 1 };
                    }
                    if i >= bytes.len() {
                        return Err(self.err_at(start, "unterminated quoted string"));
                    }
                    i += 1;
                }
                b'}' if bytes.get(i + 1) == Some(&b'}') => {
                    let trim_right = i >= 2
                        && bytes[i - 1] == b'-'
                        && matches!(bytes[i - 2], b' ' | b'\t' | b'\r' | b'\n');
                    let body_end = if trim_right { i - 2 } else { i };
                    return Ok(Action {
                        start,
                        body: &inner[..body_end],
                        body_start,
                        trim_left,
                        trim_right,
                        end: body_start + i + 2,
                    });
                }
                _ => i += 1,
            }
        }
        Err(self.err_at(start, "unclosed action: missing `}}`"))
    }

    fn record_origin(&mut self, action_start: usize) {
        let (line, column) = line_col(self.source, action_start);
        self.actions.push(ActionOrigin {
            tera_offset: self.out.len(),
            line,
            column,
        });
    }

    fn translate_action(&mut self, action: &Action<'a>) -> Result<()> {
        if action.body.starts_with("/*") {
            return Ok(());
        }
        let tokens = Lexer {
            src: action.body,
            base: action.body_start,
            pos: 0,
        }
        .tokens()
        .map_err(|(_, msg)| self.err_at(action.start, msg))?;
        let mut parser = Parser {
            tokens: &tokens,
            pos: 0,
        };
        let at_action = |t: &Self, msg: String| t.err_at(action.start, msg);
        match tokens.first().map(|t| &t.kind) {
            None => Err(at_action(self, "empty action `{{ }}`".into())),
            Some(Tok::Ident(kw)) if UNSUPPORTED_KEYWORDS.contains(&kw.as_str()) => Err(at_action(
                self,
                format!("`{kw}` is not supported by the Go template subset"),
            )),
            Some(Tok::Ident(kw)) if kw == "if" => {
                parser.pos = 1;
                let cond = parser.condition().map_err(|m| at_action(self, m))?;
                let (line, column) = line_col(self.source, action.start);
                self.blocks.push(OpenIf {
                    line,
                    column,
                    seen_else: false,
                });
                self.record_origin(action.start);
                self.out.push_str(&format!("{{% if {cond} %}}"));
                Ok(())
            }
            Some(Tok::Ident(kw)) if kw == "else" => {
                let Some(open) = self.blocks.last_mut() else {
                    return Err(at_action(self, "`else` outside of an `if`".into()));
                };
                if open.seen_else {
                    return Err(at_action(self, "`else` after the final `else`".into()));
                }
                match tokens.get(1).map(|t| &t.kind) {
                    None => {
                        open.seen_else = true;
                        self.record_origin(action.start);
                        self.out.push_str("{% else %}");
                        Ok(())
                    }
                    Some(Tok::Ident(kw)) if kw == "if" => {
                        parser.pos = 2;
                        let cond = parser.condition().map_err(|m| at_action(self, m))?;
                        self.record_origin(action.start);
                        self.out.push_str(&format!("{{% elif {cond} %}}"));
                        Ok(())
                    }
                    Some(Tok::Ident(kw)) => Err(at_action(
                        self,
                        format!("`else {kw}` is not supported (only `else` and `else if`)"),
                    )),
                    Some(_) => Err(at_action(self, "unexpected tokens after `else`".into())),
                }
            }
            Some(Tok::Ident(kw)) if kw == "end" => {
                if tokens.len() > 1 {
                    return Err(at_action(self, "unexpected tokens after `end`".into()));
                }
                if self.blocks.pop().is_none() {
                    return Err(at_action(self, "`end` without an open `if`".into()));
                }
                self.record_origin(action.start);
                self.out.push_str("{% endif %}");
                Ok(())
            }
            Some(_) => {
                let expr = parser.condition().map_err(|m| at_action(self, m))?;
                self.record_origin(action.start);
                self.out.push_str(&format!("{{{{ {expr} }}}}"));
                Ok(())
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// `.A.b.c` (empty for the lone dot).
    Field(Vec<String>),
    /// A function name or keyword.
    Ident(String),
    /// A decoded string literal.
    Str(String),
    /// A number literal, as written.
    Number(String),
    Pipe,
    LParen,
    RParen,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Tok,
    /// Byte offset in the whole source.
    offset: usize,
}

struct Lexer<'a> {
    src: &'a str,
    base: usize,
    pos: usize,
}

type LexResult<T> = std::result::Result<T, (usize, String)>;

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.src.get(self.pos..).and_then(|s| s.chars().next())
    }

    fn peek2(&self) -> Option<char> {
        self.src.get(self.pos..).and_then(|s| s.chars().nth(1))
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn ident(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(is_ident_char) {
            self.bump();
        }
        self.src.get(start..self.pos).unwrap_or("").to_owned()
    }

    fn tokens(mut self) -> LexResult<Vec<Token>> {
        let mut out: Vec<Token> = Vec::new();
        while let Some(c) = self.peek() {
            let offset = self.base + self.pos;
            let kind = match c {
                c if is_go_space(c) => {
                    self.bump();
                    continue;
                }
                '.' if self.peek2().is_some_and(|c| c.is_ascii_digit()) => self.number()?,
                '.' => {
                    if matches!(out.last(), Some(Token { kind: Tok::RParen, offset: o }) if o + 1 == offset)
                    {
                        return Err((
                            offset,
                            "fields of a parenthesised expression are not supported".into(),
                        ));
                    }
                    let mut path = Vec::new();
                    while self.peek() == Some('.') {
                        self.bump();
                        if !self.peek().is_some_and(is_ident_start) {
                            if path.is_empty() {
                                break;
                            }
                            return Err((offset, "a field name must follow `.`".into()));
                        }
                        path.push(self.ident());
                    }
                    Tok::Field(path)
                }
                '$' => {
                    return Err((offset, "template variables (`$x`) are not supported".into()));
                }
                '"' => Tok::Str(self.quoted()?),
                '`' => {
                    self.bump();
                    let start = self.pos;
                    while self.peek().is_some_and(|c| c != '`') {
                        self.bump();
                    }
                    let s = self.src.get(start..self.pos).unwrap_or("").to_owned();
                    self.bump();
                    Tok::Str(s)
                }
                '\'' => {
                    return Err((offset, "character constants are not supported".into()));
                }
                '|' => {
                    self.bump();
                    Tok::Pipe
                }
                '(' => {
                    self.bump();
                    Tok::LParen
                }
                ')' => {
                    self.bump();
                    Tok::RParen
                }
                '-' | '+' | '0'..='9' => self.number()?,
                c if is_ident_start(c) => Tok::Ident(self.ident()),
                ':' | '=' => {
                    return Err((
                        offset,
                        "variable declarations and assignments are not supported".into(),
                    ));
                }
                c => return Err((offset, format!("unexpected character {c:?} in action"))),
            };
            out.push(Token { kind, offset });
        }
        Ok(out)
    }

    fn number(&mut self) -> LexResult<Tok> {
        let offset = self.base + self.pos;
        let start = self.pos;
        if matches!(self.peek(), Some('-' | '+')) {
            self.bump();
        }
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        {
            self.bump();
        }
        let text = self.src.get(start..self.pos).unwrap_or("");
        let digits = text.trim_start_matches(['-', '+']);
        let valid = !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
            && digits.matches('.').count() <= 1
            && digits != ".";
        if !valid {
            return Err((
                offset,
                format!("unsupported number `{text}` (only decimal integers and decimals)"),
            ));
        }
        let mut normalized = text.trim_start_matches('+').to_owned();
        if normalized.ends_with('.') {
            normalized.push('0');
        }
        if let Some(rest) = normalized.strip_prefix("-.") {
            normalized = format!("-0.{rest}");
        } else if normalized.starts_with('.') {
            normalized.insert(0, '0');
        }
        Ok(Tok::Number(normalized))
    }

    /// Decodes a Go interpreted string literal; the cursor is on the opening quote.
    fn quoted(&mut self) -> LexResult<String> {
        let offset = self.base + self.pos;
        self.bump();
        let mut out = String::new();
        loop {
            match self.bump() {
                None => return Err((offset, "unterminated string".into())),
                Some('"') => return Ok(out),
                Some('\\') => {
                    let esc = self
                        .bump()
                        .ok_or_else(|| (offset, "unterminated string".to_owned()))?;
                    match esc {
                        'a' => out.push('\u{07}'),
                        'b' => out.push('\u{08}'),
                        'f' => out.push('\u{0c}'),
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        'v' => out.push('\u{0b}'),
                        '\\' => out.push('\\'),
                        '"' => out.push('"'),
                        'x' => out.push(self.hex_escape(2, offset)?),
                        'u' => out.push(self.hex_escape(4, offset)?),
                        'U' => out.push(self.hex_escape(8, offset)?),
                        '0'..='7' => {
                            let mut v = esc.to_digit(8).unwrap_or(0);
                            for _ in 0..2 {
                                let d = self
                                    .bump()
                                    .and_then(|c| c.to_digit(8))
                                    .ok_or_else(|| (offset, "invalid octal escape".to_owned()))?;
                                v = v * 8 + d;
                            }
                            out.push(ascii_char(v, offset)?);
                        }
                        other => {
                            return Err((offset, format!("unknown escape sequence `\\{other}`")));
                        }
                    }
                }
                Some(c) => out.push(c),
            }
        }
    }

    fn hex_escape(&mut self, digits: usize, offset: usize) -> LexResult<char> {
        let mut v: u32 = 0;
        for _ in 0..digits {
            let d = self
                .bump()
                .and_then(|c| c.to_digit(16))
                .ok_or_else(|| (offset, "invalid hexadecimal escape".to_owned()))?;
            v = v * 16 + d;
        }
        if digits == 2 {
            ascii_char(v, offset)
        } else {
            char::from_u32(v).ok_or_else(|| (offset, format!("invalid Unicode code point {v:#x}")))
        }
    }
}

/// Byte escapes must stay ASCII: the output is text, not arbitrary bytes.
fn ascii_char(v: u32, offset: usize) -> LexResult<char> {
    if v < 0x80 {
        char::from_u32(v).ok_or_else(|| (offset, "invalid escape".to_owned()))
    } else {
        Err((
            offset,
            "byte escapes above \\x7f are not supported (the output must be UTF-8)".into(),
        ))
    }
}

/// A Go expression.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Field(Vec<String>),
    Str(String),
    Number(String),
    Bool(bool),
    Nil,
    Call(String, Vec<Expr>),
}

struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
}

type ParseResult<T> = std::result::Result<T, String>;

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.kind)
    }

    /// A whole pipeline that must use up the remaining tokens, translated to tera.
    fn condition(&mut self) -> ParseResult<String> {
        if self.peek().is_none() {
            return Err("missing expression".into());
        }
        let expr = self.pipeline()?;
        if let Some(tok) = self.peek() {
            return Err(format!("unexpected {}", describe(tok)));
        }
        to_tera(&expr)
    }

    fn pipeline(&mut self) -> ParseResult<Expr> {
        let mut expr = self.command(None)?;
        while self.peek() == Some(&Tok::Pipe) {
            self.pos += 1;
            expr = self.command(Some(expr))?;
        }
        Ok(expr)
    }

    /// One command; `piped` is the value of the previous command, appended as last argument.
    fn command(&mut self, piped: Option<Expr>) -> ParseResult<Expr> {
        let mut operands = Vec::new();
        let mut func = None;
        if let Some(Tok::Ident(name)) = self.peek()
            && !matches!(name.as_str(), "true" | "false" | "nil")
        {
            func = Some(name.clone());
            self.pos += 1;
        }
        while let Some(tok) = self.peek() {
            match tok {
                Tok::Pipe | Tok::RParen => break,
                _ => operands.push(self.operand()?),
            }
        }
        match func {
            Some(name) => {
                operands.extend(piped);
                call(name, operands)
            }
            None => {
                if piped.is_some() {
                    return Err("only a function can follow `|`".into());
                }
                let mut it = operands.into_iter();
                match (it.next(), it.next()) {
                    (Some(only), None) => Ok(only),
                    (None, _) => Err("missing value".into()),
                    (Some(_), Some(_)) => {
                        Err("arguments given to a value that is not a function".into())
                    }
                }
            }
        }
    }

    fn operand(&mut self) -> ParseResult<Expr> {
        let tok = self.peek().cloned().ok_or("missing value")?;
        self.pos += 1;
        match tok {
            Tok::Field(path) if path.is_empty() => {
                Err("the dot `.` itself is not supported; name a field such as `.Name`".into())
            }
            Tok::Field(path) => Ok(Expr::Field(path)),
            Tok::Str(s) => Ok(Expr::Str(s)),
            Tok::Number(n) => Ok(Expr::Number(n)),
            Tok::Ident(name) => match name.as_str() {
                "true" => Ok(Expr::Bool(true)),
                "false" => Ok(Expr::Bool(false)),
                "nil" => Ok(Expr::Nil),
                // A function in argument position is called without arguments, as in Go.
                _ => call(name, Vec::new()),
            },
            Tok::LParen => {
                let inner = self.pipeline()?;
                if self.peek() != Some(&Tok::RParen) {
                    return Err("missing `)`".into());
                }
                self.pos += 1;
                Ok(inner)
            }
            Tok::Pipe | Tok::RParen => Err(format!("unexpected {}", describe(&tok))),
        }
    }
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Field(p) => format!("field `.{}`", p.join(".")),
        Tok::Ident(i) => format!("`{i}`"),
        Tok::Str(s) => format!("string {s:?}"),
        Tok::Number(n) => format!("number `{n}`"),
        Tok::Pipe => "`|`".into(),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
    }
}

/// Checks a function name and its number of arguments.
fn call(name: String, args: Vec<Expr>) -> ParseResult<Expr> {
    if UNSUPPORTED_KEYWORDS.contains(&name.as_str()) {
        return Err(format!(
            "`{name}` is not supported by the Go template subset"
        ));
    }
    if matches!(name.as_str(), "if" | "else" | "end") {
        return Err(format!("`{name}` must start its action"));
    }
    let (min, max) = match name.as_str() {
        "eq" => (2, usize::MAX),
        "ne" => (2, 2),
        "and" | "or" => (1, usize::MAX),
        "not" => (1, 1),
        "sha3short" => (1, 2),
        other => match KWARG_NAMES.iter().find(|(n, _)| *n == other) {
            Some((_, kwargs)) => (kwargs.len() + 1, kwargs.len() + 1),
            None => {
                let mut known: Vec<&str> = KWARG_NAMES.iter().map(|(n, _)| *n).collect();
                known.extend(["eq", "ne", "and", "or", "not"]);
                return Err(format!(
                    "function `{name}` is not supported (known functions: {})",
                    known.join(", ")
                ));
            }
        },
    };
    if args.len() < min || args.len() > max {
        let expected = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(format!(
            "function `{name}` takes {expected} argument(s), got {}",
            args.len()
        ));
    }
    Ok(Expr::Call(name, args))
}

/// A tera string literal.
fn tera_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn to_tera(expr: &Expr) -> ParseResult<String> {
    Ok(match expr {
        Expr::Field(path) => {
            let mut out = String::new();
            for (i, seg) in path.iter().enumerate() {
                let reserved = TERA_RESERVED.contains(&seg.as_str());
                if i == 0 {
                    if reserved {
                        return Err(format!(
                            "top-level field `.{seg}` is a reserved word in tera; nest it under another field"
                        ));
                    }
                    out.push_str(seg);
                } else if reserved || !seg.is_ascii() {
                    out.push('[');
                    out.push_str(&tera_string(seg));
                    out.push(']');
                } else {
                    out.push('.');
                    out.push_str(seg);
                }
            }
            out
        }
        Expr::Str(s) => tera_string(s),
        Expr::Number(n) => n.clone(),
        Expr::Bool(b) => b.to_string(),
        Expr::Nil => "none".into(),
        Expr::Call(name, args) => {
            let t: Vec<String> = args.iter().map(to_tera).collect::<ParseResult<_>>()?;
            match name.as_str() {
                "eq" => {
                    let (first, rest) = t.split_first().ok_or("`eq` needs arguments")?;
                    let parts: Vec<String> =
                        rest.iter().map(|r| format!("{first} == {r}")).collect();
                    format!("({})", parts.join(" or "))
                }
                "ne" => format!(
                    "({} != {})",
                    t.first().ok_or("`ne`")?,
                    t.get(1).ok_or("`ne`")?
                ),
                "and" => format!("({})", t.join(" and ")),
                "or" => format!("({})", t.join(" or ")),
                "not" => format!("(not {})", t.first().ok_or("`not`")?),
                filter => {
                    let (value, params) = t.split_last().ok_or("missing value")?;
                    let names = KWARG_NAMES
                        .iter()
                        .find(|(n, _)| *n == filter)
                        .map(|(_, k)| *k)
                        .unwrap_or(&[]);
                    let kwargs: Vec<String> = names
                        .iter()
                        .zip(params)
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    if kwargs.is_empty() {
                        format!("({value} | {filter})")
                    } else {
                        format!("({value} | {filter}({}))", kwargs.join(", "))
                    }
                }
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::template::{TemplateEngine, TemplateSyntax};
    use serde_json::{Value as Json, json};

    fn go(src: &str, ctx: Json) -> Result<String> {
        TemplateEngine::new().render_with("t", src, TemplateSyntax::Go, &ctx)
    }

    fn err_pos(src: &str) -> (usize, usize, String) {
        match translate_go_template(src).unwrap_err() {
            Error::Template {
                line: Some(l),
                column: Some(c),
                message,
                ..
            } => (l, c, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn field_and_nested_field_access() {
        assert_eq!(
            translate_go_template("{{ .Field }}").unwrap(),
            "{{ Field }}"
        );
        let ctx = json!({"Field": "f", "Object": {"metadata": {"name": "n"}}});
        assert_eq!(
            go("{{ .Field }}/{{.Object.metadata.name}}", ctx).unwrap(),
            "f/n"
        );
    }

    #[test]
    fn pipeline_passes_value_as_last_argument() {
        assert_eq!(
            translate_go_template("{{ .X | replace \":\" \",\" }}").unwrap(),
            "{{ (X | replace(old=\":\", new=\",\")) }}"
        );
        let ctx = json!({"X": "objname"});
        assert_eq!(
            go("{{ .X | sha3short 12 }}", ctx.clone()).unwrap(),
            "73d08a1ba188"
        );
        assert_eq!(
            go("{{ .X | sha3short }}", ctx).unwrap(),
            "73d08a1ba188f1340dae"
        );
    }

    #[test]
    fn function_call_form_with_parentheses() {
        let ctx = json!({"X": "abc"});
        assert_eq!(
            go("{{ trunc 8 (sha256sum .X) }}", ctx.clone()).unwrap(),
            go("{{ .X | sha256sum | trunc 8 }}", ctx.clone()).unwrap()
        );
        assert_eq!(go("{{ upper (trunc -2 .X) }}", ctx).unwrap(), "BC");
    }

    #[test]
    fn string_and_number_literals() {
        assert_eq!(go("{{ \"a\\\"b\\n\" }}", json!({})).unwrap(), "a\"b\n");
        assert_eq!(go("{{ `raw\\n` }}", json!({})).unwrap(), "raw\\n");
        assert_eq!(
            go("{{ 42 }} {{ -3 }} {{ 1.5 }}", json!({})).unwrap(),
            "42 -3 1.5"
        );
        assert_eq!(go("{{ \"\\u00e9\\x41\" }}", json!({})).unwrap(), "éA");
        assert_eq!(go("{{ trunc 3 \"abcdef\" }}", json!({})).unwrap(), "abc");
    }

    #[test]
    fn if_else_with_eq() {
        let src = "{{ if eq .Side \"kcp\" }}a{{ else }}b{{ end }}";
        assert_eq!(go(src, json!({"Side": "kcp"})).unwrap(), "a");
        assert_eq!(go(src, json!({"Side": "other"})).unwrap(), "b");
    }

    #[test]
    fn else_if_chains() {
        let src = "{{ if eq .N 1 }}one{{ else if eq .N 2 }}two{{ else }}many{{ end }}";
        assert_eq!(go(src, json!({"N": 1})).unwrap(), "one");
        assert_eq!(go(src, json!({"N": 2})).unwrap(), "two");
        assert_eq!(go(src, json!({"N": 3})).unwrap(), "many");
    }

    #[test]
    fn and_or_not_ne() {
        let src = "{{ if and (eq .A \"x\") (not .B) }}yes{{ else }}no{{ end }}";
        assert_eq!(go(src, json!({"A": "x", "B": false})).unwrap(), "yes");
        assert_eq!(go(src, json!({"A": "x", "B": true})).unwrap(), "no");
        let src = "{{ if or (ne .A \"x\") .B }}yes{{ else }}no{{ end }}";
        assert_eq!(go(src, json!({"A": "x", "B": ""})).unwrap(), "no");
        assert_eq!(go(src, json!({"A": "y", "B": ""})).unwrap(), "yes");
        let src = "{{ if eq .A \"a\" \"b\" \"c\" }}in{{ end }}";
        assert_eq!(go(src, json!({"A": "c"})).unwrap(), "in");
        assert_eq!(
            go("{{ if .A | eq \"z\" }}z{{ end }}", json!({"A": "z"})).unwrap(),
            "z"
        );
    }

    #[test]
    fn trim_markers_remove_adjacent_white_space() {
        let src = "a  \n {{- .X -}} \n\t b";
        assert_eq!(go(src, json!({"X": 1})).unwrap(), "a1b");
        // Without a space, `-` is part of a number, not a trim marker.
        assert_eq!(go("a {{-3}} b", json!({})).unwrap(), "a -3 b");
        let src = "items:\n{{- if .On }}\n  on\n{{- end }}\n";
        assert_eq!(go(src, json!({"On": true})).unwrap(), "items:\n  on\n");
    }

    #[test]
    fn comments_are_dropped() {
        assert_eq!(go("a{{/* c {{ }} */}}b", json!({})).unwrap(), "ab");
        assert_eq!(go("a {{- /* c */ -}} b", json!({})).unwrap(), "ab");
        assert!(translate_go_template("{{/* open").is_err());
    }

    #[test]
    fn plain_text_with_tera_syntax_passes_through() {
        let text = "{% raw %} {# not a comment #} {%- endraw %} { { %} { ";
        let src = format!("{text}{{{{ .X }}}}{text}");
        assert_eq!(
            go(&src, json!({"X": "!"})).unwrap(),
            format!("{text}!{text}")
        );
        assert_eq!(go("}} %} #}", json!({})).unwrap(), "}} %} #}");
        // After trimming, a `{` ends up right before the translated action.
        assert_eq!(go("a{ {{- .X }}", json!({"X": "!"})).unwrap(), "a{!");
    }

    #[test]
    fn strings_may_contain_closing_delimiters() {
        assert_eq!(go("{{ \"}}\" }}", json!({})).unwrap(), "}}");
    }

    #[test]
    fn unsupported_keywords_are_errors_with_position() {
        for (src, kw) in [
            ("x\n  {{ range .Items }}{{ end }}", "range"),
            ("x\n  {{ with .X }}{{ end }}", "with"),
            ("x\n  {{ define \"a\" }}{{ end }}", "define"),
            ("x\n  {{ template \"a\" }}", "template"),
            ("x\n  {{ block \"a\" . }}{{ end }}", "block"),
        ] {
            let (line, column, message) = err_pos(src);
            assert_eq!((line, column), (2, 3), "{src}");
            assert!(message.contains(kw), "{message}");
        }
    }

    #[test]
    fn variables_are_rejected() {
        let (line, column, message) = err_pos("ab {{ $x := .A }}");
        assert_eq!((line, column), (1, 4));
        assert!(message.contains("variables"), "{message}");
        assert!(err_pos("{{ $.A }}").2.contains("variables"));
    }

    #[test]
    fn unknown_functions_are_rejected() {
        let (_, _, message) = err_pos("{{ .A | frobnicate }}");
        assert!(message.contains("frobnicate"), "{message}");
        let (_, _, message) = err_pos("{{ printf \"%s\" .A }}");
        assert!(message.contains("printf"), "{message}");
    }

    #[test]
    fn wrong_argument_counts_are_rejected() {
        assert!(err_pos("{{ .A | trunc }}").2.contains("trunc"));
        assert!(err_pos("{{ .A | replace \"a\" }}").2.contains("replace"));
        assert!(err_pos("{{ not .A .B }}").2.contains("not"));
    }

    #[test]
    fn block_structure_is_checked() {
        let (line, column, message) = err_pos("a\n{{ if .A }}x");
        assert_eq!((line, column), (2, 1));
        assert!(message.contains("never closed"), "{message}");
        assert!(err_pos("{{ end }}").2.contains("without"));
        assert!(err_pos("{{ else }}").2.contains("outside"));
        assert!(
            err_pos("{{ if .A }}{{ else }}{{ else }}{{ end }}")
                .2
                .contains("final")
        );
        assert!(
            err_pos("{{ if .A }}{{ else with .B }}{{ end }}")
                .2
                .contains("else with")
        );
    }

    #[test]
    fn malformed_actions_are_errors() {
        for src in [
            "{{ .A",
            "{{ }}",
            "{{ \"unterminated }}",
            "{{ 'c' }}",
            "{{ 0x1F }}",
            "{{ .A .B }}",
            "{{ (.A }}",
            "{{ (.A).B }}",
            "{{ . }}",
            "{{ .A | .B }}",
            "{{ .in }}",
        ] {
            assert!(translate_go_template(src).is_err(), "{src} should fail");
        }
    }

    #[test]
    fn nested_reserved_words_are_subscripted() {
        assert_eq!(
            go("{{ .Spec.in }}", json!({"Spec": {"in": 1}})).unwrap(),
            "1"
        );
    }

    #[test]
    fn translation_snapshot() {
        let src = "name: {{ .Obj.name | trunc 8 }}\n{{- if and (eq .A \"x\") (not .B) }}\nx: {{ quote .C }}\n{{- end }}\n";
        insta::assert_snapshot!(translate_go_template(src).unwrap(), @r#"
        name: {{ (Obj.name | trunc(length=8)) }}{% if ((A == "x") and (not B)) %}
        x: {{ (C | quote) }}{% endif %}
        "#);
    }

    #[test]
    fn origins_map_tera_offsets_to_go_actions() {
        let t = translate("t", "ab\n  {{ .X }}{{ .Y }}").unwrap();
        assert_eq!(t.actions.len(), 2);
        let first = t.origin_of(t.actions[0].tera_offset + 3).unwrap();
        assert_eq!((first.line, first.column), (2, 3));
        let second = t.origin_of(t.tera.len() - 1).unwrap();
        assert_eq!((second.line, second.column), (2, 11));
        assert!(t.origin_of(0).is_none());
    }
}
