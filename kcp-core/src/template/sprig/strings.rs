//! sprig's string functions: case, trimming, cutting, wrapping, quoting, splitting.
//!
//! Go strings are byte sequences and sprig cuts them by bytes (`trunc`, `substr`, `wrap`);
//! these functions do the same. Where a Go cut would split a multi-byte character the
//! partial character becomes U+FFFD, since a Rust string cannot hold the stray bytes.

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::Value;

use super::Limits;
use super::args::{Outcome, byte_slice, int_arg, str_arg, strval, want};
use super::unicode::{is_go_space, is_punct, to_lower_char, to_title_char, to_upper_char};
use crate::template::go_value::{format_v, map, string, string_list};

pub(super) fn hello(args: &[Value]) -> Outcome {
    want("hello", args, 0)?;
    Ok(string("Hello!"))
}

pub(super) fn upper(args: &[Value]) -> Outcome {
    want("upper", args, 1)?;
    Ok(string(
        str_arg(&args[0])?
            .chars()
            .map(to_upper_char)
            .collect::<String>(),
    ))
}

pub(super) fn lower(args: &[Value]) -> Outcome {
    want("lower", args, 1)?;
    Ok(string(
        str_arg(&args[0])?
            .chars()
            .map(to_lower_char)
            .collect::<String>(),
    ))
}

pub(super) fn trim(args: &[Value]) -> Outcome {
    want("trim", args, 1)?;
    Ok(string(str_arg(&args[0])?.trim_matches(is_go_space)))
}

/// Go's `strings.Title`: the first letter after a separator is title-cased.
pub(super) fn title(args: &[Value]) -> Outcome {
    want("title", args, 1)?;
    let mut prev = ' ';
    let out: String = str_arg(&args[0])?
        .chars()
        .map(|c| {
            let mapped = if is_title_separator(prev) {
                to_title_char(c)
            } else {
                c
            };
            prev = c;
            mapped
        })
        .collect();
    Ok(string(out))
}

fn is_title_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if c.is_alphabetic() || c.is_numeric() {
        return false;
    }
    is_go_space(c)
}

/// goutils' `Uncapitalize`: the first letter of every white-space separated word is lowered.
pub(super) fn untitle(args: &[Value]) -> Outcome {
    want("untitle", args, 1)?;
    let mut next = true;
    let out: String = str_arg(&args[0])?
        .chars()
        .map(|c| {
            if is_go_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                to_lower_char(c)
            } else {
                c
            }
        })
        .collect();
    Ok(string(out))
}

/// goutils' `SwapCase`.
pub(super) fn swapcase(args: &[Value]) -> Outcome {
    want("swapcase", args, 1)?;
    let mut after_space = true;
    let out: String = str_arg(&args[0])?
        .chars()
        .map(|c| {
            if c.is_uppercase() {
                after_space = false;
                to_lower_char(c)
            } else if c.is_lowercase() {
                if after_space {
                    after_space = false;
                    to_title_char(c)
                } else {
                    to_upper_char(c)
                }
            } else {
                after_space = is_go_space(c);
                c
            }
        })
        .collect();
    Ok(string(out))
}

/// `trunc n s`: the first `n` bytes, or the last `-n` bytes when `n` is negative.
pub(super) fn trunc(args: &[Value]) -> Outcome {
    want("trunc", args, 2)?;
    let c = int_arg(&args[0])?;
    let s = str_arg(&args[1])?;
    let len = s.len() as i64;
    let out = if c < 0 && len + c > 0 {
        byte_slice(s, (len + c) as usize, s.len())
    } else if c >= 0 && len > c {
        byte_slice(s, 0, c as usize)
    } else {
        s.to_owned()
    };
    Ok(string(out))
}

/// `substr start end s`, with sprig's rules for negative and out-of-range bounds; bounds Go
/// would reject are an error, as in Go.
pub(super) fn substr(args: &[Value]) -> Outcome {
    want("substr", args, 3)?;
    let start = int_arg(&args[0])?;
    let end = int_arg(&args[1])?;
    let s = str_arg(&args[2])?;
    let len = s.len() as i64;
    let (from, to) = if start < 0 {
        (0, end)
    } else if end < 0 || end > len {
        (start, len)
    } else {
        (start, end)
    };
    if to < 0 || to > len {
        return Err(format!(
            "runtime error: slice bounds out of range [:{to}] with length {len}"
        ));
    }
    if from > to {
        return Err(format!(
            "runtime error: slice bounds out of range [{from}:{to}]"
        ));
    }
    Ok(string(byte_slice(s, from as usize, to as usize)))
}

/// `repeat count s`; the result is bounded by the execution budget.
pub(super) fn repeat(limits: &Limits, args: &[Value]) -> Outcome {
    want("repeat", args, 2)?;
    let count = int_arg(&args[0])?;
    let s = str_arg(&args[1])?;
    if count < 0 {
        return Err("strings: negative Repeat count".to_owned());
    }
    let size = (count as u128) * (s.len() as u128);
    if size > limits.max_string_bytes as u128 {
        return Err(limits.string_too_long(size));
    }
    Ok(string(s.repeat(count as usize)))
}

/// `trimAll cutset s`: Go's `strings.Trim(s, cutset)`.
pub(super) fn trim_all(args: &[Value]) -> Outcome {
    want("trimAll", args, 2)?;
    let cutset: Vec<char> = str_arg(&args[0])?.chars().collect();
    Ok(string(str_arg(&args[1])?.trim_matches(cutset.as_slice())))
}

pub(super) fn trim_suffix(args: &[Value]) -> Outcome {
    want("trimSuffix", args, 2)?;
    let suffix = str_arg(&args[0])?;
    let s = str_arg(&args[1])?;
    Ok(string(s.strip_suffix(suffix).unwrap_or(s)))
}

pub(super) fn trim_prefix(args: &[Value]) -> Outcome {
    want("trimPrefix", args, 2)?;
    let prefix = str_arg(&args[0])?;
    let s = str_arg(&args[1])?;
    Ok(string(s.strip_prefix(prefix).unwrap_or(s)))
}

/// goutils' `DeleteWhiteSpace`, which works byte by byte: each remaining byte is written
/// back as the character of that code point, so non-ASCII text comes out as Latin-1
/// (exactly as in Go) whenever some white space was removed.
pub(super) fn nospace(args: &[Value]) -> Outcome {
    want("nospace", args, 1)?;
    let s = str_arg(&args[0])?;
    let kept: Vec<u8> = s.bytes().filter(|b| !is_go_space(char::from(*b))).collect();
    if kept.len() == s.len() {
        return Ok(string(s));
    }
    Ok(string(kept.into_iter().map(char::from).collect::<String>()))
}

/// goutils' `Initials`, byte by byte like the original.
pub(super) fn initials(args: &[Value]) -> Outcome {
    want("initials", args, 1)?;
    let mut gap = true;
    let mut out = String::new();
    for b in str_arg(&args[0])?.bytes() {
        let c = char::from(b);
        if is_go_space(c) {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    Ok(string(out))
}

pub(super) fn wrap(args: &[Value]) -> Outcome {
    want("wrap", args, 2)?;
    let width = int_arg(&args[0])?;
    Ok(string(wrap_custom(str_arg(&args[1])?, width, "", false)))
}

pub(super) fn wrap_with(args: &[Value]) -> Outcome {
    want("wrapWith", args, 3)?;
    let width = int_arg(&args[0])?;
    let sep = str_arg(&args[1])?;
    Ok(string(wrap_custom(str_arg(&args[2])?, width, sep, true)))
}

/// goutils' `WrapCustom`: breaks at the last space before `width` bytes; long words are cut
/// when `wrap_long` is set and kept whole otherwise.
fn wrap_custom(s: &str, width: i64, newline: &str, wrap_long: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = width.max(1) as usize;
    let bytes = s.as_bytes();
    let len = bytes.len();
    let mut offset = 0;
    let mut out = String::new();
    while len - offset > width {
        if bytes[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = width + offset + 1;
        let window = &bytes[offset..end.min(len)];
        match window.iter().rposition(|b| *b == b' ') {
            Some(space) => {
                out.push_str(&byte_slice(s, offset, offset + space));
                out.push_str(newline);
                offset += space + 1;
            }
            None if wrap_long => {
                let cut = width + offset;
                out.push_str(&byte_slice(s, offset, cut));
                out.push_str(newline);
                offset += width;
            }
            None => {
                let from = width + offset;
                match bytes[from..].iter().position(|b| *b == b' ') {
                    None => {
                        out.push_str(&byte_slice(s, offset, len));
                        offset = len;
                    }
                    Some(index) => {
                        let space = index + from;
                        out.push_str(&byte_slice(s, offset, space));
                        out.push_str(newline);
                        offset = space + 1;
                    }
                }
            }
        }
    }
    out.push_str(&byte_slice(s, offset, len));
    out
}

pub(super) fn contains(args: &[Value]) -> Outcome {
    want("contains", args, 2)?;
    Ok(Value::Bool(str_arg(&args[1])?.contains(str_arg(&args[0])?)))
}

pub(super) fn has_prefix(args: &[Value]) -> Outcome {
    want("hasPrefix", args, 2)?;
    Ok(Value::Bool(
        str_arg(&args[1])?.starts_with(str_arg(&args[0])?),
    ))
}

pub(super) fn has_suffix(args: &[Value]) -> Outcome {
    want("hasSuffix", args, 2)?;
    Ok(Value::Bool(
        str_arg(&args[1])?.ends_with(str_arg(&args[0])?),
    ))
}

/// `quote a b ...`: each non-nil argument as a Go double-quoted string, space separated.
pub(super) fn quote(args: &[Value]) -> Outcome {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(|v| go_quote(&strval(v)))
        .collect();
    Ok(string(parts.join(" ")))
}

/// `squote a b ...`: each non-nil argument in single quotes, unescaped.
pub(super) fn squote(args: &[Value]) -> Outcome {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(|v| format!("'{}'", format_v(v)))
        .collect();
    Ok(string(parts.join(" ")))
}

/// `cat a b ...`: the non-nil arguments printed with `%v`, space separated.
pub(super) fn cat(args: &[Value]) -> Outcome {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| !matches!(v, Value::Nil))
        .map(format_v)
        .collect();
    Ok(string(parts.join(" ")))
}

pub(super) fn indent(args: &[Value]) -> Outcome {
    want("indent", args, 2)?;
    let spaces = int_arg(&args[0])?;
    Ok(string(indent_text(spaces, str_arg(&args[1])?)))
}

pub(super) fn nindent(args: &[Value]) -> Outcome {
    want("nindent", args, 2)?;
    let spaces = int_arg(&args[0])?;
    Ok(string(format!(
        "\n{}",
        indent_text(spaces, str_arg(&args[1])?)
    )))
}

fn indent_text(spaces: i64, text: &str) -> String {
    let pad = " ".repeat(spaces.max(0) as usize);
    format!("{pad}{}", text.replace('\n', &format!("\n{pad}")))
}

/// `replace old new s`: every occurrence.
pub(super) fn replace(args: &[Value]) -> Outcome {
    want("replace", args, 3)?;
    let old = str_arg(&args[0])?;
    let new = str_arg(&args[1])?;
    let s = str_arg(&args[2])?;
    Ok(string(go_replace_all(s, old, new)))
}

/// Go's `strings.Replace(s, old, new, -1)`; an empty `old` inserts `new` around every
/// character.
fn go_replace_all(s: &str, old: &str, new: &str) -> String {
    if !old.is_empty() {
        return s.replace(old, new);
    }
    let mut out = String::with_capacity(s.len() + new.len() * (s.len() + 1));
    out.push_str(new);
    for c in s.chars() {
        out.push(c);
        out.push_str(new);
    }
    out
}

pub(super) fn plural(args: &[Value]) -> Outcome {
    want("plural", args, 3)?;
    let one = str_arg(&args[0])?;
    let many = str_arg(&args[1])?;
    let count = int_arg(&args[2])?;
    Ok(string(if count == 1 { one } else { many }))
}

/// Go's `strings.SplitN(s, sep, n)` (`n < 0`: all parts); an empty separator splits into
/// characters.
pub(crate) fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let limit = if n < 0 {
            chars.len()
        } else {
            (n as usize).min(chars.len())
        };
        let mut parts: Vec<String> = Vec::with_capacity(limit);
        for (i, c) in chars.iter().enumerate() {
            if n > 0 && i + 1 == limit && i + 1 < chars.len() {
                parts.push(chars[i..].iter().collect());
                break;
            }
            parts.push(c.to_string());
        }
        return parts;
    }
    if n < 0 {
        s.split(sep).map(str::to_owned).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_owned).collect()
    }
}

fn parts_map(parts: Vec<String>) -> Value {
    let entries: BTreeMap<Arc<str>, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (Arc::from(format!("_{i}")), string(p)))
        .collect();
    map(entries)
}

/// `split sep s`: a dict `_0`, `_1`, ... of the parts.
pub(super) fn split(args: &[Value]) -> Outcome {
    want("split", args, 2)?;
    let sep = str_arg(&args[0])?;
    Ok(parts_map(go_split(str_arg(&args[1])?, sep, -1)))
}

/// `splitn sep n s`: like `split`, at most `n` parts.
pub(super) fn splitn(args: &[Value]) -> Outcome {
    want("splitn", args, 3)?;
    let sep = str_arg(&args[0])?;
    let n = int_arg(&args[1])?;
    Ok(parts_map(go_split(str_arg(&args[2])?, sep, n)))
}

/// `splitList sep s`: the parts as a list.
pub(super) fn split_list(args: &[Value]) -> Outcome {
    want("splitList", args, 2)?;
    let sep = str_arg(&args[0])?;
    Ok(string_list(go_split(str_arg(&args[1])?, sep, -1)))
}

pub(crate) use crate::go_quote::quote as go_quote;

/// Word classes of xstrings' case conversions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Word {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || is_go_space(c)
}

/// xstrings' `isAlphabet`: letters, except the CJK ideographs.
fn is_alphabet(c: char) -> bool {
    if !c.is_alphabetic() {
        return false;
    }
    let u = c as u32;
    !((0x4E00..=0x9FCC).contains(&u)
        || (0x3400..=0x4D85).contains(&u)
        || (0x20000..=0x2B81D).contains(&u))
}

/// xstrings' `nextWord`: splits off the next word of `s`, returning its class, the word and
/// the rest.
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut chars = s.char_indices().peekable();
    let Some((_, first)) = chars.next() else {
        return (Word::Invalid, "", "");
    };
    let mut end = first.len_utf8();
    let take_while = |end: &mut usize, pred: &dyn Fn(char) -> bool| {
        for (i, c) in s[*end..].char_indices() {
            if !pred(c) {
                *end += i;
                return;
            }
        }
        *end = s.len();
    };
    let class = if is_connector(first) {
        take_while(&mut end, &is_connector);
        Word::Connector
    } else if is_punct(first) {
        take_while(&mut end, &is_punct);
        Word::Punct
    } else if first.is_uppercase() {
        let rest = &s[end..];
        match rest.chars().next() {
            None => {}
            Some(second) if second.is_uppercase() => {
                // "HTTPStatus": the run of capitals, minus the last when a lowercase letter
                // follows it.
                let mut run_end = end;
                let mut last_len = 0;
                let mut after: Option<char> = None;
                for c in rest.chars() {
                    if c.is_uppercase() {
                        run_end += c.len_utf8();
                        last_len = c.len_utf8();
                    } else {
                        after = Some(c);
                        break;
                    }
                }
                end = run_end;
                if after.is_some_and(is_alphabet) {
                    end -= last_len;
                }
            }
            Some(second) if is_alphabet(second) => {
                take_while(&mut end, &|c| is_alphabet(c) && !c.is_uppercase());
            }
            Some(_) => {}
        }
        Word::Upper
    } else if is_alphabet(first) {
        take_while(&mut end, &|c| is_alphabet(c) && !c.is_uppercase());
        Word::Alphabet
    } else if first.is_numeric() {
        take_while(&mut end, &char::is_numeric);
        Word::Number
    } else {
        take_while(&mut end, &|c| {
            !(is_connector(c) || is_alphabet(c) || c.is_numeric() || is_punct(c))
        });
        Word::Other
    };
    (class, &s[..end], &s[end..])
}

fn push_lower(out: &mut String, class: Word, word: &str, connector: char) {
    if class != Word::Upper && class != Word::Connector {
        out.push_str(word);
        return;
    }
    for c in word.chars() {
        if is_connector(c) {
            out.push(connector);
        } else if c.is_uppercase() {
            out.push(to_lower_char(c));
        } else {
            out.push(c);
        }
    }
}

/// xstrings' `camelCaseToLowerCase`, behind `snakecase` and `kebabcase`.
fn to_lower_case_words(s: &str, connector: char) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    if s.is_empty() {
        return out;
    }
    let (mut class, mut word, mut rest) = next_word(s);
    while !rest.is_empty() {
        if class != Word::Connector {
            push_lower(&mut out, class, word, connector);
        }
        let prev = class;
        let last = word;
        (class, word, rest) = next_word(rest);
        match prev {
            Word::Number => {
                while class == Word::Alphabet || class == Word::Number {
                    push_lower(&mut out, class, word, connector);
                    (class, word, rest) = next_word(rest);
                }
                if class != Word::Invalid && class != Word::Punct && class != Word::Connector {
                    out.push(connector);
                }
            }
            Word::Connector => push_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if class != Word::Number {
                    if class != Word::Connector && class != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                if rest.is_empty() {
                    continue;
                }
                let number = word;
                (class, word, rest) = next_word(rest);
                if class != Word::Alphabet {
                    push_lower(&mut out, Word::Number, number, connector);
                    if class != Word::Connector && class != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                out.push(connector);
                push_lower(&mut out, Word::Number, number, connector);
                while class == Word::Alphabet || class == Word::Number {
                    push_lower(&mut out, class, word, connector);
                    (class, word, rest) = next_word(rest);
                }
                if class != Word::Invalid && class != Word::Connector && class != Word::Punct {
                    out.push(connector);
                }
            }
        }
    }
    push_lower(&mut out, class, word, connector);
    out
}

pub(super) fn snakecase(args: &[Value]) -> Outcome {
    want("snakecase", args, 1)?;
    Ok(string(to_lower_case_words(str_arg(&args[0])?, '_')))
}

pub(super) fn kebabcase(args: &[Value]) -> Outcome {
    want("kebabcase", args, 1)?;
    Ok(string(to_lower_case_words(str_arg(&args[0])?, '-')))
}

/// xstrings' `ToCamelCase`: connectors removed, the letter after them upper-cased, the rest
/// lower-cased; leading connectors are kept.
pub(super) fn camelcase(args: &[Value]) -> Outcome {
    want("camelcase", args, 1)?;
    let s = str_arg(&args[0])?;
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut r0 = None;
    for c in chars.by_ref() {
        if !is_connector(c) {
            r0 = Some(to_upper_char(c));
            break;
        }
        out.push(c);
    }
    let Some(mut r0) = r0 else {
        // Only connectors: xstrings writes the last one a second time.
        if let Some(last) = s.chars().last() {
            out.push(last);
        }
        return Ok(string(out));
    };
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            r0 = to_upper_char(r0);
        } else {
            r0 = to_lower_char(r0);
            out.push(r1);
        }
    }
    out.push(r0);
    Ok(string(out))
}

/// goutils' `AbbreviateFull`.
fn abbreviate_full(s: &str, offset: i64, width: i64) -> Result<String, String> {
    if s.is_empty() {
        return Ok(String::new());
    }
    if width < 4 {
        return Err("stringutils illegal argument: Minimum abbreviation width is 4".to_owned());
    }
    let len = s.len() as i64;
    if len <= width {
        return Ok(s.to_owned());
    }
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        return Ok(format!("{}...", byte_slice(s, 0, (width - 3) as usize)));
    }
    if width < 7 {
        return Err(
            "stringutils illegal argument: Minimum abbreviation width with offset is 7".to_owned(),
        );
    }
    if offset + width - 3 < len {
        let rest = byte_slice(s, offset as usize, s.len());
        let inner = abbreviate_full(&rest, 0, width - 3).unwrap_or_default();
        return Ok(format!("...{inner}"));
    }
    Ok(format!(
        "...{}",
        byte_slice(s, (len - (width - 3)) as usize, s.len())
    ))
}

pub(super) fn abbrev(args: &[Value]) -> Outcome {
    want("abbrev", args, 2)?;
    let width = int_arg(&args[0])?;
    let s = str_arg(&args[1])?;
    if width < 4 {
        return Ok(string(s));
    }
    Ok(string(abbreviate_full(s, 0, width).unwrap_or_default()))
}

pub(super) fn abbrevboth(args: &[Value]) -> Outcome {
    want("abbrevboth", args, 3)?;
    let left = int_arg(&args[0])?;
    let right = int_arg(&args[1])?;
    let s = str_arg(&args[2])?;
    if right < 4 || (left > 0 && right < 7) {
        return Ok(string(s));
    }
    Ok(string(abbreviate_full(s, left, right).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(f: fn(&[Value]) -> Outcome, args: &[&str]) -> String {
        let args: Vec<Value> = args.iter().map(|s| string(*s)).collect();
        format_v(&f(&args).unwrap_or_else(|e| string(format!("error: {e}"))))
    }

    #[test]
    fn snakecase_splits_acronyms_and_numbers_like_xstrings() {
        assert_eq!(call(snakecase, &["FirstName"]), "first_name");
        assert_eq!(call(snakecase, &["HTTPServer"]), "http_server");
        assert_eq!(call(snakecase, &["Bld4Floor"]), "bld4_floor");
        assert_eq!(call(snakecase, &["HTTP2xx"]), "http_2xx");
        assert_eq!(call(kebabcase, &["FirstName"]), "first-name");
    }

    #[test]
    fn camelcase_joins_words() {
        assert_eq!(call(camelcase, &["http_server"]), "HttpServer");
        assert_eq!(call(camelcase, &["_complex__case_"]), "_Complex_Case_");
        // Found by the differential fuzzer: a string of connectors gets its last one twice.
        assert_eq!(call(camelcase, &["  "]), "   ");
    }

    #[test]
    fn go_quote_escapes_like_strconv() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
    }
}
