//! Go's `unicode` predicates and simple case mappings, as sprig's string functions use them.
//!
//! ASCII behaves exactly as in Go. Beyond ASCII, Rust's character properties stand in for
//! Go's tables: white space and numbers match, letters and punctuation are close.

/// Go's `unicode.IsSpace`.
pub(crate) fn is_go_space(c: char) -> bool {
    c.is_whitespace()
}

/// Go's `unicode.IsPunct` (general category P). In ASCII, `$ + < = > ^ ` | ~` are symbols,
/// not punctuation.
pub(crate) fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        return matches!(
            c,
            '!' | '"'
                | '#'
                | '%'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | ','
                | '-'
                | '.'
                | '/'
                | ':'
                | ';'
                | '?'
                | '@'
                | '['
                | '\\'
                | ']'
                | '_'
                | '{'
                | '}'
        );
    }
    !(c.is_alphanumeric() || c.is_whitespace() || c.is_control())
        && matches!(c as u32, 0xA1..=0xBF | 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x3003 | 0x3008..=0x3011)
}

/// Go's `unicode.IsPrint`: graphic characters and the ASCII space; other spaces, control
/// and format characters are not printable.
pub(crate) fn is_go_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    !matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0xD800..=0xDFFF
            | 0xE000..=0xF8FF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xFFFE
            | 0xFFFF
            | 0xF0000..=0x10FFFF
    )
}

/// Go's `unicode.ToUpper`: a one-to-one mapping; characters whose upper case is several
/// characters (`ß`) stay as they are.
pub(crate) fn to_upper_char(c: char) -> char {
    single(c.to_uppercase()).unwrap_or(c)
}

/// Go's `unicode.ToLower`, one-to-one like [`to_upper_char`].
pub(crate) fn to_lower_char(c: char) -> char {
    single(c.to_lowercase()).unwrap_or(c)
}

/// Go's `unicode.ToTitle`: upper case, except for the few digraphs with a title-case form.
pub(crate) fn to_title_char(c: char) -> char {
    match c {
        '\u{1C4}'..='\u{1C6}' => '\u{1C5}',
        '\u{1C7}'..='\u{1C9}' => '\u{1C8}',
        '\u{1CA}'..='\u{1CC}' => '\u{1CB}',
        '\u{1F1}'..='\u{1F3}' => '\u{1F2}',
        c => to_upper_char(c),
    }
}

fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let first = it.next()?;
    match it.next() {
        None => Some(first),
        Some(_) => None,
    }
}
