//! The execution budget for tera templates, planted in their source.
//!
//! tera's virtual machine offers no hook to count loop iterations or bound the values a template
//! builds, and a tera template is as much user input as a Go one (kcp-init's InitTemplates take
//! either). So before parsing, [`instrument`] rewrites the source:
//! - after every `{% for %}` and `{% component %}` tag it plants `{{ __kcp_tick() }}`, which
//!   renders nothing and counts one iteration (or call) against the budget, and checks the time;
//! - every `{% set name = expr %}` becomes `{% set name = __kcp_size(v=(expr)) %}`, which hands
//!   the value back unchanged unless it is larger than the budget allows (a string doubled in a
//!   loop stops at 16 MiB instead of exhausting memory);
//! - what the budget cannot see is refused with its line and column: list comprehensions
//!   (`[x for x in xs]` iterates inside one expression) and the block form of `set` (it captures
//!   output outside the output limit).
//!
//! Output is bounded by the writer the template renders into. Positions in tera's errors refer
//! to the planted source; [`Instrumented::original_column`] maps them back.

use super::meter;

/// What [`instrument`] made of a source.
#[derive(Debug)]
pub(crate) struct Instrumented {
    /// The source with the budget's calls planted.
    pub(crate) source: String,
    /// Every insertion as (line, column in the planted source, length), in order.
    insertions: Vec<(usize, usize, usize)>,
}

impl Instrumented {
    /// The column in the original source of `column` on `line` of the planted source.
    pub(crate) fn original_column(&self, line: usize, column: usize) -> usize {
        let shift: usize = self
            .insertions
            .iter()
            .filter(|(l, c, _)| *l == line && *c < column)
            .map(|(_, _, len)| len)
            .sum();
        column.saturating_sub(shift).max(1)
    }
}

/// A refusal: message, line and column (1-based) in the original source.
pub(crate) type Refusal = (String, usize, usize);

const TICK: &str = "{{ __kcp_tick() }}";
const TICK_TRIMMING: &str = "{{ __kcp_tick() -}}";
const SIZE_OPEN: &str = "__kcp_size(v=(";
const SIZE_CLOSE: &str = "))";

/// One `{{ }}` or `{% %}` tag as the scanner saw it.
struct Tag<'a> {
    /// The whole tag, delimiters included.
    text: &'a str,
    /// Byte offset of the tag in the source.
    start: usize,
    /// The words outside string literals, with their byte offsets in the source.
    words: Vec<(&'a str, usize)>,
    /// Whether it ends with `-%}` / `-}}`.
    trims_after: bool,
}

/// Plants the budget's calls in `source` (see the module docs).
pub(crate) fn instrument(source: &str) -> Result<Instrumented, Refusal> {
    let mut planted = Planter::new(source);
    let mut pos = 0;
    while let Some(found) = next_delimiter(source, pos) {
        planted.copy_to(found);
        let rest = &source[found..];
        if rest.starts_with("{#") {
            let end = rest.find("#}").map_or(source.len(), |e| found + e + 2);
            planted.copy_to(end);
            pos = end;
            continue;
        }
        let tag = scan_tag(source, found);
        pos = found + tag.text.len();
        planted.tag(&tag, source)?;
        if tag.text.starts_with("{%") && first_word(&tag) == Some("raw") {
            let end = end_of_raw(source, pos);
            planted.copy_to(end);
            pos = end;
        }
    }
    planted.copy_to(source.len());
    Ok(planted.finish())
}

fn first_word<'a>(tag: &Tag<'a>) -> Option<&'a str> {
    tag.words.first().map(|(w, _)| *w)
}

/// The offset of the next `{{`, `{%` or `{#` at or after `from`.
fn next_delimiter(source: &str, from: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    (from..bytes.len().saturating_sub(1))
        .find(|&i| bytes[i] == b'{' && matches!(bytes[i + 1], b'{' | b'%' | b'#'))
}

/// The tag starting at `start`: up to its closing delimiter, skipping string literals.
fn scan_tag(source: &str, start: usize) -> Tag<'_> {
    let bytes = source.as_bytes();
    let close = if bytes[start + 1] == b'%' { b'%' } else { b'}' };
    let mut words = Vec::new();
    let mut i = start + 2;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'\'' | b'`' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += 1;
                }
                i += 1;
            }
            c if c == close && bytes.get(i + 1) == Some(&b'}') => {
                let end = i + 2;
                return Tag {
                    text: &source[start..end],
                    start,
                    words,
                    trims_after: bytes[i - 1] == b'-',
                };
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let begin = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                words.push((&source[begin..i], begin));
            }
            _ => i += 1,
        }
    }
    Tag {
        text: &source[start..],
        start,
        words,
        trims_after: false,
    }
}

/// The end of the `{% endraw %}` tag after `from`, or the end of the source.
fn end_of_raw(source: &str, from: usize) -> usize {
    let mut pos = from;
    while let Some(found) = source[pos..].find("{%").map(|f| pos + f) {
        let tag = scan_tag(source, found);
        if first_word(&tag) == Some("endraw") {
            return found + tag.text.len();
        }
        pos = found + 2;
    }
    source.len()
}

/// Builds the planted source and records where it inserted.
struct Planter<'a> {
    source: &'a str,
    out: String,
    copied: usize,
    insertions: Vec<(usize, usize, usize)>,
}

impl<'a> Planter<'a> {
    fn new(source: &'a str) -> Self {
        Planter {
            source,
            out: String::with_capacity(source.len() + 64),
            copied: 0,
            insertions: Vec::new(),
        }
    }

    fn copy_to(&mut self, end: usize) {
        if end > self.copied {
            self.out.push_str(&self.source[self.copied..end]);
            self.copied = end;
        }
    }

    fn insert(&mut self, text: &str) {
        let line_start = self.out.rfind('\n').map_or(0, |n| n + 1);
        let line = self.out.matches('\n').count() + 1;
        let column = self.out[line_start..].chars().count() + 1;
        self.insertions.push((line, column, text.chars().count()));
        self.out.push_str(text);
    }

    fn tag(&mut self, tag: &Tag<'a>, source: &str) -> Result<(), Refusal> {
        let is_block = tag.text.starts_with("{%");
        let keyword = if is_block { first_word(tag) } else { None };
        let own_for = usize::from(keyword == Some("for"));
        let comprehension = tag.words.iter().filter(|(w, _)| *w == "for").nth(own_for);
        if let Some((_, at)) = comprehension {
            return Err(refusal(
                source,
                *at,
                "list comprehensions are not available in tera templates here: they iterate \
                 outside the execution budget; use a {% for %} loop",
            ));
        }
        match keyword {
            Some("for" | "component") => {
                self.copy_to(tag.start + tag.text.len());
                self.insert(if tag.trims_after { TICK_TRIMMING } else { TICK });
            }
            Some("set" | "set_global") => self.set(tag, source)?,
            _ => self.copy_to(tag.start + tag.text.len()),
        }
        Ok(())
    }

    /// `{% set name = expr %}` with `expr` wrapped in `__kcp_size`.
    fn set(&mut self, tag: &Tag<'a>, source: &str) -> Result<(), Refusal> {
        let after_name = tag.words.get(1).map(|(w, at)| at + w.len());
        let equals = after_name.and_then(|from| {
            let end = tag.start + tag.text.len();
            source[from..end].find('=').map(|e| from + e)
        });
        let Some(equals) = equals else {
            return Err(refusal(
                source,
                tag.start,
                "the block form of set is not available in tera templates here: it captures \
                 output outside the execution budget; use {% set name = expression %}",
            ));
        };
        let close = tag.start + tag.text.len() - if tag.trims_after { 3 } else { 2 };
        let after_equals = &source[equals + 1..close];
        let expr_start = equals + 1 + (after_equals.len() - after_equals.trim_start().len());
        let expr_end = source[expr_start..close].trim_end().len() + expr_start;
        self.copy_to(expr_start);
        self.insert(SIZE_OPEN);
        self.copy_to(expr_end);
        self.insert(SIZE_CLOSE);
        self.copy_to(tag.start + tag.text.len());
        Ok(())
    }

    fn finish(self) -> Instrumented {
        Instrumented {
            source: self.out,
            insertions: self.insertions,
        }
    }
}

fn refusal(source: &str, at: usize, message: &str) -> Refusal {
    let before = &source[..at];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before, |n| &before[n + 1..])
        .chars()
        .count()
        + 1;
    (message.to_owned(), line, column)
}

/// Registers the budget's functions on `tera`.
pub(crate) fn register(tera: &mut tera::Tera) {
    tera.register_function("__kcp_tick", |_: tera::Kwargs, _: &tera::State| {
        meter::tick().map_err(tera::Error::message)?;
        Ok::<_, tera::Error>(String::new())
    });
    tera.register_function("__kcp_size", |kwargs: tera::Kwargs, _: &tera::State| {
        let value: tera::Value = kwargs.must_get("v")?;
        let (bytes, items) = size_of(&value);
        meter::check_size(bytes, items).map_err(tera::Error::message)?;
        Ok::<_, tera::Error>(value)
    });
}

/// A string's length in bytes, or a collection's number of items (shallow: every value in it
/// went through `__kcp_size` or the output limit on its own way in).
fn size_of(value: &tera::Value) -> (usize, usize) {
    if let Some(text) = value.as_str() {
        return (text.len(), 0);
    }
    (0, value.len().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planted(source: &str) -> String {
        instrument(source).unwrap().source
    }

    #[test]
    fn a_for_loop_ticks_once_per_iteration_and_keeps_its_whitespace_control() {
        assert_eq!(
            planted("{% for x in xs %}{{ x }}{% endfor %}"),
            "{% for x in xs %}{{ __kcp_tick() }}{{ x }}{% endfor %}"
        );
        assert_eq!(
            planted("{%- for x in xs -%}\n {{ x }}{% endfor %}"),
            "{%- for x in xs -%}{{ __kcp_tick() -}}\n {{ x }}{% endfor %}"
        );
    }

    #[test]
    fn a_set_expression_goes_through_the_size_check() {
        assert_eq!(
            planted("{% set s = s ~ s -%}"),
            "{% set s = __kcp_size(v=(s ~ s)) -%}"
        );
    }

    #[test]
    fn strings_comments_and_raw_blocks_are_left_alone() {
        let source =
            "{{ \"{% for %}\" }}{# {% for x in y %} #}{% raw %}{% for a in b %}{% endraw %}";
        assert_eq!(planted(source), source);
    }

    #[test]
    fn a_list_comprehension_is_refused_where_it_is() {
        let (message, line, column) = instrument("a\n{{ [x for x in xs] }}").unwrap_err();
        assert!(message.contains("list comprehensions"), "{message}");
        assert_eq!((line, column), (2, 7));
        assert!(instrument("{% for a in [x for x in xs] %}{% endfor %}").is_err());
    }

    #[test]
    fn the_block_form_of_set_is_refused() {
        let (message, ..) = instrument("{% set x %}big{% endset %}").unwrap_err();
        assert!(message.contains("block form of set"), "{message}");
    }

    #[test]
    fn columns_after_an_insertion_map_back_to_the_source() {
        let instrumented = instrument("{% for x in xs %}{{ y }}").unwrap();
        let planted_column = "{% for x in xs %}{{ __kcp_tick() }}{{ ".chars().count() + 1;
        assert_eq!(
            instrumented.original_column(1, planted_column),
            "{% for x in xs %}{{ ".chars().count() + 1
        );
    }
}
