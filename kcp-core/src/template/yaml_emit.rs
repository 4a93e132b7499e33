//! YAML output as `toYaml` produces it upstream: `sigs.k8s.io/yaml`/`ghodss/yaml`
//! `Marshal`, i.e. JSON first, then go-yaml v2's emitter.
//!
//! The layout follows go-yaml v2: block style, two-space indentation, sequences inside
//! mappings not indented, empty collections as `{}` and `[]`, map keys in go-yaml's
//! "natural" order (`a2` before `a10`), strings that would read back as something else
//! double-quoted, multi-line strings as literal blocks, and long plain or quoted strings
//! folded at column 80.

use std::cmp::Ordering;

use gotmpl::Value;

use crate::template::go_value::format_float_g;
use crate::template::sprig::json::go_json_float;
use crate::template::yaml11::{Scalar, needs_quotes, resolve};

const BEST_WIDTH: usize = 80;
const BEST_INDENT: i64 = 2;

/// Encodes `v` as `yaml.Marshal` would, including the final newline. Values JSON cannot
/// hold (NaN, infinities, functions) are an error.
pub(crate) fn to_yaml(v: &Value) -> Result<String, String> {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
    };
    e.node(v, -1, Context::Root)?;
    e.put_break();
    Ok(e.out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Root,
    Sequence,
    MappingValue,
    Key,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Emitter {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_str(&mut self, s: &str) {
        for c in s.chars() {
            self.put(c);
        }
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_indent(&mut self, indent: i64) {
        let indent = indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        self.put_str(indicator);
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn node(&mut self, v: &Value, indent: i64, ctx: Context) -> Result<(), String> {
        match v {
            Value::Map(entries) if entries.is_empty() => {
                self.write_indicator("{}", true, false, false)
            }
            Value::List(items) if items.is_empty() => {
                self.write_indicator("[]", true, false, false)
            }
            Value::Map(entries) => {
                let indent = if indent < 0 { 0 } else { indent + BEST_INDENT };
                let mut keys: Vec<&str> = entries.keys().map(|k| k.as_ref()).collect();
                keys.sort_by(|a, b| natural_order(a, b));
                for key in keys {
                    self.write_indent(indent);
                    self.string_scalar(key, indent, Context::Key);
                    self.write_indicator(":", false, false, false);
                    if let Some(value) = entries.get(key) {
                        self.node(value, indent, Context::MappingValue)?;
                    }
                }
            }
            Value::List(items) => {
                let indentless = ctx == Context::MappingValue && !self.indention;
                let indent = if indent < 0 {
                    0
                } else if indentless {
                    indent
                } else {
                    indent + BEST_INDENT
                };
                for item in items.iter() {
                    self.write_indent(indent);
                    self.write_indicator("-", true, false, true);
                    self.node(item, indent, Context::Sequence)?;
                }
            }
            Value::String(s) => self.string_scalar(s, indent, ctx),
            Value::Nil => self.plain_scalar("null", indent, ctx),
            Value::Bool(b) => self.plain_scalar(if *b { "true" } else { "false" }, indent, ctx),
            Value::Int(i) => self.plain_scalar(&i.to_string(), indent, ctx),
            Value::Uint(u) => self.plain_scalar(&u.to_string(), indent, ctx),
            Value::Float(f) => {
                // The JSON step turns integral floats into integers.
                let json = go_json_float(*f)?;
                let text = match resolve(&json) {
                    Scalar::Float(f) => format_float_g(f),
                    _ => json,
                };
                self.plain_scalar(&text, indent, ctx);
            }
            _ => return Err("json: unsupported type: func".to_owned()),
        }
        Ok(())
    }

    fn plain_scalar(&mut self, text: &str, indent: i64, ctx: Context) {
        let scalar_indent = if indent < 0 {
            BEST_INDENT
        } else {
            indent + BEST_INDENT
        };
        self.write_plain(text, scalar_indent, ctx != Context::Key);
    }

    fn string_scalar(&mut self, s: &str, indent: i64, ctx: Context) {
        let scalar_indent = if indent < 0 {
            BEST_INDENT
        } else {
            indent + BEST_INDENT
        };
        let key = ctx == Context::Key;
        let analysis = analyze(s);
        let mut style = if s.contains('\n') {
            Style::Literal
        } else if !needs_quotes(s) {
            Style::Plain
        } else {
            Style::Double
        };
        if key && analysis.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!analysis.block_plain_allowed || (s.is_empty() && key)) {
            style = Style::Single;
        }
        if style == Style::Single && !analysis.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!analysis.block_allowed || key) {
            style = Style::Double;
        }
        let allow_breaks = !key;
        match style {
            Style::Plain => self.write_plain(s, scalar_indent, allow_breaks),
            Style::Single => self.write_single(s, scalar_indent, allow_breaks),
            Style::Double => self.write_double(s, scalar_indent, allow_breaks),
            Style::Literal => self.write_literal(s, scalar_indent),
        }
    }

    fn write_plain(&mut self, s: &str, indent: i64, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, c) in chars.iter().enumerate() {
            if *c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent(indent);
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else {
                self.put(*c);
                self.indention = false;
                spaces = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, s: &str, indent: i64, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, c) in chars.iter().enumerate() {
            if *c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent(indent);
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else {
                if *c == '\'' {
                    self.put('\'');
                }
                self.put(*c);
                self.indention = false;
                spaces = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, s: &str, indent: i64, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let starts_with_bom = s.starts_with('\u{feff}');
        let mut spaces = false;
        for (i, c) in chars.iter().enumerate() {
            let c = *c;
            if !is_printable(c) || starts_with_bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    c => {
                        let code = c as u32;
                        let text = if code <= 0xFF {
                            format!("x{code:02X}")
                        } else if code <= 0xFFFF {
                            format!("u{code:04X}")
                        } else {
                            format!("U{code:08X}")
                        };
                        self.put_str(&text);
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                {
                    self.write_indent(indent);
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, s: &str, indent: i64) {
        self.write_indicator("|", true, false, false);
        if s.starts_with([' ', '\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let chars: Vec<char> = s.chars().collect();
        let chomp = match chars.as_slice() {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in chars {
            if is_break(c) {
                if c == '\n' {
                    self.put_break();
                } else {
                    self.out.push(c);
                    self.column = 0;
                }
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent(indent);
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// go-yaml's `is_printable`.
fn is_printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
}

/// The parts of go-yaml's `analyze_scalar` that choose a block-context style.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let mut line_breaks = false;
    let mut special = false;
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars
            .get(i + 1)
            .is_none_or(|n| matches!(n, ' ' | '\t') || is_break(*n));
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == chars.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == chars.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// go-yaml v2's key order: letters after other characters, digit runs compared as numbers.
fn natural_order(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    if natural_less(a, b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

fn natural_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}
