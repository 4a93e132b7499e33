//! Sprig-named filters for tera 2.
//!
//! Each filter keeps the name and the semantics of the [sprig] function of the same name, so that
//! templates ported from Go tooling render the same bytes. Sprig passes the piped value as the
//! *last* positional argument; in tera the piped value is the filter input and the other
//! arguments are keyword arguments, whose names are listed per filter in the
//! [template module documentation](super).
//!
//! String filters accept strings, numbers and booleans (the latter two are formatted the way
//! tera prints them); `undefined`, `none`, arrays and maps are an error, because silently hashing
//! or quoting "undefined" would hide a template bug.
//!
//! [sprig]: https://masterminds.github.io/sprig/

use std::borrow::Cow;

use base64::Engine as _;
use sha1::Digest as _;
use tera::{Error, Kwargs, State, Tera, TeraResult, Value};

/// Default length of `sha3short`.
const SHA3SHORT_DEFAULT_LEN: i64 = 20;
/// Length of a hex-encoded SHA3-256 digest, the cap of `sha3short`.
const SHA3_HEX_LEN: usize = 64;
/// Length of `shortHash`.
const SHORT_HASH_LEN: usize = 20;
/// Largest indentation `indent`/`nindent` accept, to keep output size proportional to input.
const MAX_INDENT: i64 = 1000;

/// Registers every filter of this module on `tera`, replacing tera's builtins of the same name
/// (`default`, `replace`, `lower`, `upper`, `indent`, `trim`).
pub(crate) fn register(tera: &mut Tera) {
    tera.register_filter("sha1sum", sha1sum);
    tera.register_filter("sha256sum", sha256sum);
    tera.register_filter("sha3sum", sha3sum);
    tera.register_filter("sha3short", sha3short);
    tera.register_filter("shortHash", short_hash);
    tera.register_filter("trunc", trunc);
    tera.register_filter("replace", replace);
    tera.register_filter("lower", lower);
    tera.register_filter("upper", upper);
    tera.register_filter("quote", quote);
    tera.register_filter("b64enc", b64enc);
    tera.register_filter("b64dec", b64dec);
    tera.register_filter("default", default);
    tera.register_filter("toJson", to_json);
    tera.register_filter("toYaml", to_yaml);
    tera.register_filter("indent", indent);
    tera.register_filter("nindent", nindent);
    tera.register_filter("trim", trim);
}

/// The text of a scalar value; an error for anything that has no obvious text.
fn text<'a>(value: &'a Value, filter: &str) -> TeraResult<Cow<'a, str>> {
    if let Some(s) = value.as_str() {
        Ok(Cow::Borrowed(s))
    } else if value.is_number() || value.is_bool() {
        Ok(Cow::Owned(value.to_string()))
    } else if value.is_undefined() {
        Err(Error::message(format!(
            "filter `{filter}` got an undefined value (a missing variable or field?)"
        )))
    } else {
        Err(Error::message(format!(
            "filter `{filter}` expects a string, got {}",
            value.name()
        )))
    }
}

/// An integer keyword argument.
fn int_kwarg(kwargs: &Kwargs, filter: &str, name: &str) -> TeraResult<Option<i64>> {
    kwargs
        .get::<i64>(name)
        .map_err(|e| Error::message(format!("filter `{filter}`: argument `{name}`: {e}")))
}

/// A required integer keyword argument.
fn must_int_kwarg(kwargs: &Kwargs, filter: &str, name: &str) -> TeraResult<i64> {
    int_kwarg(kwargs, filter, name)?.ok_or_else(|| {
        Error::message(format!(
            "filter `{filter}` needs the integer argument `{name}`"
        ))
    })
}

/// A required string keyword argument, also accepted under an alias.
fn must_str_kwarg<'k>(
    kwargs: &'k Kwargs,
    filter: &str,
    name: &'k str,
    alias: &'k str,
) -> TeraResult<Cow<'k, str>> {
    for key in [name, alias] {
        if let Some(v) = kwargs.get::<&Value>(key)? {
            return text(v, filter);
        }
    }
    Err(Error::message(format!(
        "filter `{filter}` needs the string argument `{name}`"
    )))
}

/// `sha1sum`: lowercase hex SHA-1 of the input.
pub(crate) fn sha1sum(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    Ok(hex::encode(sha1::Sha1::digest(
        text(value, "sha1sum")?.as_bytes(),
    )))
}

/// `sha256sum`: lowercase hex SHA-256 of the input.
pub(crate) fn sha256sum(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    Ok(hex::encode(sha2::Sha256::digest(
        text(value, "sha256sum")?.as_bytes(),
    )))
}

fn sha3_hex(input: &str) -> String {
    hex::encode(sha3::Sha3_256::digest(input.as_bytes()))
}

/// `sha3sum`: lowercase hex SHA3-256 of the input (64 characters).
pub(crate) fn sha3sum(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    Ok(sha3_hex(&text(value, "sha3sum")?))
}

/// `sha3short(length=20)`: the first `length` hex characters of SHA3-256; `length` is capped at
/// 64 and must be positive.
pub(crate) fn sha3short(value: &Value, kwargs: Kwargs, _: &State) -> TeraResult<String> {
    let length = int_kwarg(&kwargs, "sha3short", "length")?.unwrap_or(SHA3SHORT_DEFAULT_LEN);
    if length <= 0 {
        return Err(Error::message(format!(
            "filter `sha3short`: length must be positive, got {length}"
        )));
    }
    let mut hash = sha3_hex(&text(value, "sha3short")?);
    hash.truncate(
        usize::try_from(length)
            .unwrap_or(SHA3_HEX_LEN)
            .min(SHA3_HEX_LEN),
    );
    Ok(hash)
}

/// `shortHash`: the first 20 hex characters of SHA-1.
pub(crate) fn short_hash(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    let mut hash = hex::encode(sha1::Sha1::digest(text(value, "shortHash")?.as_bytes()));
    hash.truncate(SHORT_HASH_LEN);
    Ok(hash)
}

/// `trunc(length=n)`: keeps the first `n` characters, or the last `|n|` when `n` is negative.
pub(crate) fn trunc(value: &Value, kwargs: Kwargs, _: &State) -> TeraResult<String> {
    let n = must_int_kwarg(&kwargs, "trunc", "length")?;
    let s = text(value, "trunc")?;
    let count = s.chars().count();
    let keep = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
    if keep >= count {
        return Ok(s.into_owned());
    }
    Ok(if n >= 0 {
        s.chars().take(keep).collect()
    } else {
        s.chars().skip(count - keep).collect()
    })
}

/// `replace(old=.., new=..)`: replaces every occurrence (`from`/`to` accepted as aliases).
pub(crate) fn replace(value: &Value, kwargs: Kwargs, _: &State) -> TeraResult<String> {
    let old = must_str_kwarg(&kwargs, "replace", "old", "from")?;
    let new = must_str_kwarg(&kwargs, "replace", "new", "to")?;
    let s = text(value, "replace")?;
    // An empty `old` matches between every character: the result can be quadratic.
    let matches = if old.is_empty() {
        s.chars().count().saturating_add(1)
    } else {
        s.matches(old.as_ref()).count()
    };
    let grows = new.len().saturating_sub(old.len());
    within_budget(s.len().saturating_add(matches.saturating_mul(grows)))?;
    Ok(s.replace(old.as_ref(), new.as_ref()))
}

/// `Err` when a string of `bytes` bytes would exceed the execution's budget.
fn within_budget(bytes: usize) -> TeraResult<()> {
    super::meter::check_size(bytes, 0).map_err(Error::message)
}

/// `lower`: lowercase.
pub(crate) fn lower(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    Ok(text(value, "lower")?.to_lowercase())
}

/// `upper`: uppercase.
pub(crate) fn upper(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    Ok(text(value, "upper")?.to_uppercase())
}

/// Quotes `s` the way Go's `strconv.Quote` (and so `%q`) does: one implementation, sprig's.
pub(crate) use super::sprig::strings::go_quote;

/// `quote`: wraps in double quotes, escaping like Go's `%q`.
pub(crate) fn quote(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    Ok(go_quote(&text(value, "quote")?))
}

/// `b64enc`: standard base64 with padding.
pub(crate) fn b64enc(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    Ok(base64::engine::general_purpose::STANDARD.encode(text(value, "b64enc")?.as_bytes()))
}

/// `b64dec`: decodes standard base64; invalid base64 or non-UTF-8 content is an error.
pub(crate) fn b64dec(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text(value, "b64dec")?.as_bytes())
        .map_err(|e| Error::message(format!("filter `b64dec`: invalid base64: {e}")))?;
    String::from_utf8(bytes)
        .map_err(|_| Error::message("filter `b64dec`: decoded bytes are not UTF-8"))
}

/// Whether sprig considers a value empty: undefined, none, false, zero, or an empty
/// string, array or map.
fn is_empty(value: &Value) -> bool {
    if value.is_undefined() || value.is_none() {
        return true;
    }
    if let Some(b) = value.as_bool() {
        return !b;
    }
    if value.is_number() {
        return !value.is_truthy();
    }
    value.len().is_some_and(|l| l == 0)
}

/// `default(value=..)`: the input, or `value` when the input is missing or empty.
pub(crate) fn default(value: &Value, kwargs: Kwargs, _: &State) -> TeraResult<Value> {
    let fallback = kwargs
        .get::<Value>("value")?
        .ok_or_else(|| Error::message("filter `default` needs the argument `value`"))?;
    Ok(if is_empty(value) {
        fallback
    } else {
        value.clone()
    })
}

/// Converts a tera value to JSON with map keys sorted, as Go's encoders sort them.
fn to_sorted_json(value: &Value, filter: &str) -> TeraResult<serde_json::Value> {
    if value.is_undefined() {
        return Err(Error::message(format!(
            "filter `{filter}`: the value is undefined"
        )));
    }
    let json = serde_json::to_value(value)
        .map_err(|e| Error::message(format!("filter `{filter}`: {e}")))?;
    Ok(sort_keys(json))
}

fn sort_keys(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect(),
            )
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sort_keys).collect())
        }
        other => other,
    }
}

/// `toJson`: compact JSON with sorted map keys.
pub(crate) fn to_json(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    serde_json::to_string(&to_sorted_json(value, "toJson")?)
        .map_err(|e| Error::message(format!("filter `toJson`: {e}")))
}

/// `toYaml`: YAML with sorted map keys and without the trailing newline.
pub(crate) fn to_yaml(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    let mut yaml = serde_saphyr::to_string(&to_sorted_json(value, "toYaml")?)
        .map_err(|e| Error::message(format!("filter `toYaml`: {e}")))?;
    while yaml.ends_with('\n') {
        yaml.pop();
    }
    Ok(yaml)
}

fn indent_text(value: &Value, kwargs: &Kwargs, filter: &str) -> TeraResult<String> {
    let width = must_int_kwarg(kwargs, filter, "width")?;
    if !(0..=MAX_INDENT).contains(&width) {
        return Err(Error::message(format!(
            "filter `{filter}`: width must be between 0 and {MAX_INDENT}, got {width}"
        )));
    }
    let pad = " ".repeat(usize::try_from(width).unwrap_or(0));
    let s = text(value, filter)?;
    let lines = s.matches('\n').count().saturating_add(1);
    within_budget(s.len().saturating_add(lines.saturating_mul(pad.len())))?;
    let mut out = String::with_capacity(s.len() + pad.len());
    out.push_str(&pad);
    out.push_str(&s.replace('\n', &format!("\n{pad}")));
    Ok(out)
}

/// `indent(width=n)`: prefixes every line (the first one and blank ones included) with `n`
/// spaces.
pub(crate) fn indent(value: &Value, kwargs: Kwargs, _: &State) -> TeraResult<String> {
    indent_text(value, &kwargs, "indent")
}

/// `nindent(width=n)`: a newline followed by `indent(width=n)`.
pub(crate) fn nindent(value: &Value, kwargs: Kwargs, _: &State) -> TeraResult<String> {
    Ok(format!("\n{}", indent_text(value, &kwargs, "nindent")?))
}

/// `trim`: removes leading and trailing white space.
pub(crate) fn trim(value: &Value, _: Kwargs, _: &State) -> TeraResult<String> {
    Ok(text(value, "trim")?.trim().to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use crate::template::{TemplateEngine, TemplateOptions};
    use serde_json::{Value as Json, json};
    use sha1::Digest as _;

    fn render(src: &str, ctx: Json) -> crate::Result<String> {
        TemplateEngine::new().render_with("t", src, &TemplateOptions::tera(), &ctx)
    }

    fn ok(src: &str, ctx: Json) -> String {
        render(src, ctx).unwrap()
    }

    #[test]
    fn sha1sum_is_hex_sha1() {
        assert_eq!(
            ok("{{ x | sha1sum }}", json!({"x": "my-test-thing"})),
            "c346c8ceb5d104cc783d09b95e8ea7032c190948"
        );
    }

    #[test]
    fn sha256sum_is_hex_sha256() {
        let expected = hex::encode(sha2::Sha256::digest(b"abc"));
        assert_eq!(ok("{{ x | sha256sum }}", json!({"x": "abc"})), expected);
    }

    #[test]
    fn sha3sum_is_64_hex_chars_of_sha3_256() {
        let out = ok("{{ x | sha3sum }}", json!({"x": "objname"}));
        assert_eq!(out.len(), 64);
        assert_eq!(out, hex::encode(sha3::Sha3_256::digest(b"objname")));
        assert!(out.starts_with("73d08a1ba188f1340dae"));
    }

    #[test]
    fn sha3short_defaults_to_20_chars_and_matches_upstream_vector() {
        let out = ok(
            "{{ ns | sha3short }}-{{ name | sha3short }}",
            json!({"ns": "objnamespace", "name": "objname"}),
        );
        assert_eq!(out, "2928c2aa0e510f017f07-73d08a1ba188f1340dae");
    }

    #[test]
    fn sha3short_length_is_capped_at_64_and_must_be_positive() {
        let ctx = json!({"x": "objname"});
        assert_eq!(
            ok("{{ x | sha3short(length=12) }}", ctx.clone()),
            "73d08a1ba188"
        );
        assert_eq!(ok("{{ x | sha3short(length=100) }}", ctx.clone()).len(), 64);
        assert!(render("{{ x | sha3short(length=0) }}", ctx.clone()).is_err());
        assert!(render("{{ x | sha3short(length=-3) }}", ctx).is_err());
    }

    #[test]
    fn short_hash_is_first_20_hex_of_sha1() {
        assert_eq!(
            ok("{{ x | shortHash }}", json!({"x": "default"})),
            "7505d64a54e061b7acd5"
        );
    }

    #[test]
    fn trunc_keeps_prefix_for_positive_and_suffix_for_negative() {
        let ctx = json!({"x": "abcdef"});
        assert_eq!(ok("{{ x | trunc(length=3) }}", ctx.clone()), "abc");
        assert_eq!(ok("{{ x | trunc(length=-2) }}", ctx.clone()), "ef");
        assert_eq!(ok("{{ x | trunc(length=10) }}", ctx.clone()), "abcdef");
        assert_eq!(ok("{{ x | trunc(length=-10) }}", ctx.clone()), "abcdef");
        assert_eq!(ok("{{ x | trunc(length=0) }}", ctx.clone()), "");
        assert_eq!(ok("{{ x | trunc(length=2) }}", json!({"x": "héllo"})), "hé");
        assert!(render("{{ x | trunc }}", ctx).is_err());
    }

    #[test]
    fn replace_replaces_every_occurrence() {
        let ctx = json!({"x": "root:a:b"});
        assert_eq!(
            ok("{{ x | replace(old=\":\", new=\",\") }}", ctx.clone()),
            "root,a,b"
        );
        assert_eq!(
            ok("{{ x | replace(from=\":\", to=\"\") }}", ctx.clone()),
            "rootab"
        );
        assert!(render("{{ x | replace(old=\":\") }}", ctx).is_err());
    }

    #[test]
    fn lower_lowercases() {
        assert_eq!(ok("{{ x | lower }}", json!({"x": "AbC"})), "abc");
    }

    #[test]
    fn upper_uppercases_and_accepts_numbers() {
        assert_eq!(ok("{{ x | upper }}", json!({"x": "AbC"})), "ABC");
        assert_eq!(ok("{{ x | upper }}", json!({"x": 12})), "12");
    }

    #[test]
    fn quote_escapes_like_go_percent_q() {
        assert_eq!(ok("{{ x | quote }}", json!({"x": "a"})), "\"a\"");
        assert_eq!(
            ok("{{ x | quote }}", json!({"x": "say \"hi\"\\\n\t"})),
            r#""say \"hi\"\\\n\t""#
        );
        assert_eq!(
            ok("{{ x | quote }}", json!({"x": "é\u{7}\u{0}"})),
            r#""é\a\x00""#
        );
        assert_eq!(ok("{{ x | quote }}", json!({"x": true})), "\"true\"");
    }

    #[test]
    fn b64enc_uses_standard_padded_alphabet() {
        assert_eq!(
            ok("{{ x | b64enc }}", json!({"x": "hello?>"})),
            "aGVsbG8/Pg=="
        );
    }

    #[test]
    fn b64dec_decodes_and_rejects_invalid_input() {
        assert_eq!(
            ok("{{ x | b64dec }}", json!({"x": "aGVsbG8/Pg=="})),
            "hello?>"
        );
        assert!(render("{{ x | b64dec }}", json!({"x": "not base64!"})).is_err());
        // Valid base64 of bytes that are not UTF-8.
        assert!(render("{{ x | b64dec }}", json!({"x": "/w=="})).is_err());
    }

    #[test]
    fn default_replaces_missing_and_empty_values_like_sprig() {
        for v in [
            json!(""),
            json!(0),
            json!(false),
            json!(null),
            json!([]),
            json!({}),
        ] {
            assert_eq!(ok("{{ x | default(value=\"d\") }}", json!({ "x": v })), "d");
        }
        assert_eq!(ok("{{ y | default(value=\"d\") }}", json!({})), "d");
        assert_eq!(ok("{{ x | default(value=\"d\") }}", json!({"x": "v"})), "v");
        assert_eq!(ok("{{ x | default(value=\"d\") }}", json!({"x": 3})), "3");
        assert!(render("{{ x | default }}", json!({"x": ""})).is_err());
    }

    #[test]
    fn to_json_is_compact_with_sorted_keys() {
        let ctx = json!({"x": {"b": 1, "a": [true, null, "s"], "c": {"z": 1, "y": 2}}});
        assert_eq!(
            ok("{{ x | toJson }}", ctx),
            r#"{"a":[true,null,"s"],"b":1,"c":{"y":2,"z":1}}"#
        );
        assert!(render("{{ nope | toJson }}", json!({})).is_err());
    }

    #[test]
    fn to_yaml_has_sorted_keys_and_no_trailing_newline() {
        let out = ok(
            "{{ x | toYaml }}",
            json!({"x": {"b": "two", "a": 1, "list": ["x", "y"]}}),
        );
        assert!(!out.ends_with('\n'), "{out:?}");
        let a = out.find("a:").unwrap();
        let b = out.find("b:").unwrap();
        let l = out.find("list:").unwrap();
        assert!(a < b && b < l, "{out}");
        let parsed: Json = serde_saphyr::from_str(&out).unwrap();
        assert_eq!(parsed, json!({"a": 1, "b": "two", "list": ["x", "y"]}));
    }

    #[test]
    fn to_yaml_quotes_ambiguous_scalars_and_uses_block_style() {
        let out = ok(
            "{{ x | toYaml }}",
            json!({"x": {"s": "yes", "n": "1", "m": "a\nb", "e": "", "l": [], "nested": {"a": [{"b": 1}]}}}),
        );
        insta::assert_snapshot!(out, @r#"
        e: ""
        l: []
        m: |-
          a
          b
        "n": "1"
        nested:
          a:
          - b: 1
        s: "yes"
        "#);
    }

    #[test]
    fn indent_prefixes_every_line_including_first_and_blank() {
        assert_eq!(
            ok("{{ x | indent(width=2) }}", json!({"x": "a\n\nb"})),
            "  a\n  \n  b"
        );
        assert!(render("{{ x | indent(width=-1) }}", json!({"x": "a"})).is_err());
    }

    #[test]
    fn nindent_starts_with_newline_then_indents() {
        assert_eq!(
            ok("k:{{ x | nindent(width=4) }}", json!({"x": "a: 1\nb: 2"})),
            "k:\n    a: 1\n    b: 2"
        );
    }

    #[test]
    fn trim_strips_surrounding_white_space() {
        assert_eq!(ok("[{{ x | trim }}]", json!({"x": " \t a b \n"})), "[a b]");
    }

    #[test]
    fn string_filters_reject_maps_and_undefined() {
        assert!(render("{{ x | sha256sum }}", json!({"x": {"a": 1}})).is_err());
        let err = render("{{ obj.nope | sha256sum }}", json!({"obj": {}})).unwrap_err();
        assert!(err.to_string().contains("undefined"), "{err}");
    }

    #[test]
    fn go_quote_matches_strconv_quote_for_unicode() {
        assert_eq!(super::go_quote("日本"), "\"日本\"");
        assert_eq!(super::go_quote("\u{a0}\u{feff}"), "\"\\u00a0\\ufeff\"");
        assert_eq!(super::go_quote("\u{7f}"), "\"\\x7f\"");
    }
}
