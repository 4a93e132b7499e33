//! The sprig v3 function library for Go templates, hermetic.
//!
//! Every function of `sprig.TxtFuncMap()` (sprig 3.2.3) is listed below: supported with
//! sprig's argument order and behaviour, or excluded because its result depends on
//! something other than the template and its data. Using an excluded function is an error
//! when the template is parsed, naming the function and saying why it is not allowed.
//! kcp adds `sha3sum`, `sha3short` and `shortHash` (as api-syncagent defines them) and
//! `toYaml` (as helm and kcp tooling define it).
//!
//! Known differences from Go, all from Go's static types or mutable maps:
//! - Integers are one type here: `typeOf 3` is `int64` (Go: `int`), `duration 90` with a
//!   literal counts seconds (Go: `0s`, since a literal is not an `int64`), and functions
//!   taking Go `int` parameters accept any integer, including `int64` results of `add`
//!   that Go would refuse. For the same reason `has 1 .list`, `without` and `uniq` treat a
//!   literal `1` and a data integer `1` as equal (Go: an `int` never equals an `int64`).
//! - `set`, `unset`, `merge`, `mergeOverwrite` return the changed dict but do not change
//!   their argument in place: assign the result (`{{ $d = set $d "k" "v" }}`).
//! - `keys` and `values` come in key order (Go: random order).
//! - `semver` returns a dict with `Major`, `Minor`, `Patch`, `Prerelease`, `Metadata`,
//!   `Original`; printing it shows the dict rather than the version.
//! - Cutting a string inside a multi-byte character (`trunc`, `substr`, `wrap`) yields
//!   U+FFFD for the partial character where Go yields the raw bytes.
//!
//! | function | status |
//! |---|---|
//! | `abbrev` | supported |
//! | `abbrevboth` | supported |
//! | `add` | supported |
//! | `add1` | supported |
//! | `add1f` | supported |
//! | `addf` | supported |
//! | `adler32sum` | supported |
//! | `ago` | excluded: reads the clock |
//! | `all` | supported |
//! | `any` | supported |
//! | `append` | supported |
//! | `atoi` | supported |
//! | `b32dec` | supported |
//! | `b32enc` | supported |
//! | `b64dec` | supported |
//! | `b64enc` | supported |
//! | `base` | supported |
//! | `bcrypt` | excluded: random salt |
//! | `biggest` | supported |
//! | `buildCustomCert` | excluded: handles private keys (keep them in Secrets) |
//! | `camelcase` | supported |
//! | `cat` | supported |
//! | `ceil` | supported |
//! | `chunk` | supported |
//! | `clean` | supported |
//! | `coalesce` | supported |
//! | `compact` | supported |
//! | `concat` | supported |
//! | `contains` | supported |
//! | `date` | excluded: formats times in the agent's local time zone |
//! | `dateInZone` | excluded: needs a time value, which only the clock or `toDate` provide |
//! | `dateModify` | excluded: needs a time value, which only the clock or `toDate` provide |
//! | `date_in_zone` | excluded: needs a time value, which only the clock or `toDate` provide |
//! | `date_modify` | excluded: needs a time value, which only the clock or `toDate` provide |
//! | `decryptAES` | excluded: handles secret keys (keep them in Secrets) |
//! | `deepCopy` | supported |
//! | `deepEqual` | supported |
//! | `default` | supported |
//! | `derivePassword` | excluded: scrypt costs 32 MiB and ~0.1 s per call by design; passwords do not belong in manifests |
//! | `dict` | supported |
//! | `dig` | supported |
//! | `dir` | supported |
//! | `div` | supported |
//! | `divf` | supported |
//! | `duration` | supported |
//! | `durationRound` | supported |
//! | `empty` | supported |
//! | `encryptAES` | excluded: random initialisation vector |
//! | `env` | excluded: reads the agent's environment |
//! | `expandenv` | excluded: reads the agent's environment |
//! | `ext` | supported |
//! | `fail` | supported |
//! | `first` | supported |
//! | `float64` | supported |
//! | `floor` | supported |
//! | `fromJson` | supported |
//! | `genCA` | excluded: generates keys (random) |
//! | `genCAWithKey` | excluded: random serial numbers; handles private keys |
//! | `genPrivateKey` | excluded: generates keys (random) |
//! | `genSelfSignedCert` | excluded: generates keys (random) |
//! | `genSelfSignedCertWithKey` | excluded: random serial numbers; handles private keys |
//! | `genSignedCert` | excluded: generates keys (random) |
//! | `genSignedCertWithKey` | excluded: random serial numbers; handles private keys |
//! | `get` | supported |
//! | `getHostByName` | excluded: looks names up in DNS |
//! | `has` | supported |
//! | `hasKey` | supported |
//! | `hasPrefix` | supported |
//! | `hasSuffix` | supported |
//! | `hello` | supported |
//! | `htmlDate` | excluded: formats times in the agent's local time zone |
//! | `htmlDateInZone` | excluded: needs a time value, which only the clock or `toDate` provide |
//! | `htpasswd` | excluded: random salt |
//! | `indent` | supported |
//! | `initial` | supported |
//! | `initials` | supported |
//! | `int` | supported |
//! | `int64` | supported |
//! | `isAbs` | supported |
//! | `join` | supported |
//! | `kebabcase` | supported |
//! | `keys` | supported |
//! | `kindIs` | supported |
//! | `kindOf` | supported |
//! | `last` | supported |
//! | `list` | supported |
//! | `lower` | supported |
//! | `max` | supported |
//! | `maxf` | supported |
//! | `merge` | supported |
//! | `mergeOverwrite` | supported |
//! | `min` | supported |
//! | `minf` | supported |
//! | `mod` | supported |
//! | `mul` | supported |
//! | `mulf` | supported |
//! | `mustAppend` | supported |
//! | `mustChunk` | supported |
//! | `mustCompact` | supported |
//! | `mustDateModify` | excluded: needs a time value, which only the clock or `toDate` provide |
//! | `mustDeepCopy` | supported |
//! | `mustFirst` | supported |
//! | `mustFromJson` | supported |
//! | `mustHas` | supported |
//! | `mustInitial` | supported |
//! | `mustLast` | supported |
//! | `mustMerge` | supported |
//! | `mustMergeOverwrite` | supported |
//! | `mustPrepend` | supported |
//! | `mustPush` | supported |
//! | `mustRegexFind` | supported |
//! | `mustRegexFindAll` | supported |
//! | `mustRegexMatch` | supported |
//! | `mustRegexReplaceAll` | supported |
//! | `mustRegexReplaceAllLiteral` | supported |
//! | `mustRegexSplit` | supported |
//! | `mustRest` | supported |
//! | `mustReverse` | supported |
//! | `mustSlice` | supported |
//! | `mustToDate` | excluded: parses times in the agent's local time zone |
//! | `mustToJson` | supported |
//! | `mustToPrettyJson` | supported |
//! | `mustToRawJson` | supported |
//! | `mustUniq` | supported |
//! | `mustWithout` | supported |
//! | `must_date_modify` | excluded: needs a time value, which only the clock or `toDate` provide |
//! | `nindent` | supported |
//! | `nospace` | supported |
//! | `now` | excluded: reads the clock |
//! | `omit` | supported |
//! | `osBase` | supported |
//! | `osClean` | supported |
//! | `osDir` | supported |
//! | `osExt` | supported |
//! | `osIsAbs` | supported |
//! | `pick` | supported |
//! | `pluck` | supported |
//! | `plural` | supported |
//! | `prepend` | supported |
//! | `push` | supported |
//! | `quote` | supported |
//! | `randAlpha` | excluded: random |
//! | `randAlphaNum` | excluded: random |
//! | `randAscii` | excluded: random |
//! | `randBytes` | excluded: random |
//! | `randInt` | excluded: random |
//! | `randNumeric` | excluded: random |
//! | `regexFind` | supported |
//! | `regexFindAll` | supported |
//! | `regexMatch` | supported |
//! | `regexQuoteMeta` | supported |
//! | `regexReplaceAll` | supported |
//! | `regexReplaceAllLiteral` | supported |
//! | `regexSplit` | supported |
//! | `repeat` | supported |
//! | `replace` | supported |
//! | `rest` | supported |
//! | `reverse` | supported |
//! | `round` | supported |
//! | `semver` | supported |
//! | `semverCompare` | supported |
//! | `seq` | supported |
//! | `set` | supported |
//! | `sha1sum` | supported |
//! | `sha256sum` | supported |
//! | `sha512sum` | supported (sprig 3.3) |
//! | `shuffle` | excluded: random |
//! | `slice` | supported |
//! | `snakecase` | supported |
//! | `sortAlpha` | supported |
//! | `split` | supported |
//! | `splitList` | supported |
//! | `splitn` | supported |
//! | `squote` | supported |
//! | `sub` | supported |
//! | `subf` | supported |
//! | `substr` | supported |
//! | `swapcase` | supported |
//! | `ternary` | supported |
//! | `title` | supported |
//! | `toDate` | excluded: parses times in the agent's local time zone |
//! | `toDecimal` | supported |
//! | `toJson` | supported |
//! | `toPrettyJson` | supported |
//! | `toRawJson` | supported |
//! | `toString` | supported |
//! | `toStrings` | supported |
//! | `trim` | supported |
//! | `trimAll` | supported |
//! | `trimPrefix` | supported |
//! | `trimSuffix` | supported |
//! | `trimall` | supported |
//! | `trunc` | supported |
//! | `tuple` | supported |
//! | `typeIs` | supported |
//! | `typeIsLike` | supported |
//! | `typeOf` | supported |
//! | `uniq` | supported |
//! | `unixEpoch` | excluded: needs a time value, which only the clock or `toDate` provide |
//! | `unset` | supported |
//! | `until` | supported |
//! | `untilStep` | supported |
//! | `untitle` | supported |
//! | `upper` | supported |
//! | `urlJoin` | supported |
//! | `urlParse` | supported |
//! | `uuidv4` | excluded: random |
//! | `values` | supported |
//! | `without` | supported |
//! | `wrap` | supported |
//! | `wrapWith` | supported |

pub(crate) mod args;
mod conversion;
mod defaults;
mod dicts;
mod durations;
mod encoding;
mod hashes;
pub(crate) mod json;
mod lists;
mod math;
mod paths;
mod reflection;
mod regex;
mod semver;
pub(crate) mod strings;
mod unicode;
pub(crate) use unicode::is_go_print;
mod urls;

use std::sync::Arc;

use gotmpl::{FuncMap, TemplateError, Value};

use args::Outcome;

/// Sizes the functions that build strings and lists may reach, from the engine's
/// execution budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Longest string a function may build, in bytes.
    pub max_string_bytes: usize,
    /// Longest list a function may build.
    pub max_list_items: usize,
}

impl Limits {
    fn string_too_long(&self, size: u128) -> String {
        format!(
            "execution budget exhausted: the result would be {size} bytes, more than the {} allowed",
            self.max_string_bytes
        )
    }

    fn list_too_long(&self, len: u128) -> String {
        format!(
            "execution budget exhausted: the list would have {len} items, more than the {} allowed",
            self.max_list_items
        )
    }
}

/// Why an excluded sprig function is not available, or `None` for a function that is.
pub(crate) fn exclusion_reason(name: &str) -> Option<&'static str> {
    const CLOCK: &str = "it reads the clock";
    const TIME_VALUE: &str =
        "it needs a time value, which only the clock or `toDate` (the agent's time zone) provide";
    const LOCAL_ZONE: &str = "it depends on the agent's local time zone";
    const RANDOM: &str = "its result is random";
    const KEYS: &str = "it generates or handles keys and certificates, which are random or secret";
    Some(match name {
        "now" | "ago" => CLOCK,
        "date" | "htmlDate" | "toDate" | "mustToDate" => LOCAL_ZONE,
        "dateInZone" | "date_in_zone" | "dateModify" | "date_modify" | "mustDateModify"
        | "must_date_modify" | "htmlDateInZone" | "unixEpoch" => TIME_VALUE,
        "randAlpha" | "randAlphaNum" | "randAscii" | "randNumeric" | "randBytes" | "randInt"
        | "uuidv4" | "shuffle" | "bcrypt" | "htpasswd" | "encryptAES" => RANDOM,
        "env" | "expandenv" => "it reads the agent's environment",
        "getHostByName" => "it looks names up in DNS",
        "genPrivateKey"
        | "genCA"
        | "genCAWithKey"
        | "genSelfSignedCert"
        | "genSelfSignedCertWithKey"
        | "genSignedCert"
        | "genSignedCertWithKey"
        | "buildCustomCert"
        | "decryptAES" => KEYS,
        "derivePassword" => {
            "its scrypt costs 32 MiB and about 0.1 s per call by design, and passwords do not belong in manifests"
        }
        _ => return None,
    })
}

fn wrap(
    name: &'static str,
    f: impl Fn(&[Value]) -> Outcome + Send + Sync + 'static,
) -> gotmpl::ValueFunc {
    Arc::new(move |args: &[Value]| {
        f(args).map_err(|message| TemplateError::Exec(format!("error calling {name}: {message}")))
    })
}

/// The function map of Go templates: sprig's hermetic functions plus kcp's.
pub(crate) fn function_map(limits: Limits) -> FuncMap {
    let mut m = FuncMap::new();
    let mut add = |name: &'static str, f: fn(&[Value]) -> Outcome| {
        m.insert(name.to_owned(), wrap(name, f));
    };
    // strings
    add("hello", strings::hello);
    add("abbrev", strings::abbrev);
    add("abbrevboth", strings::abbrevboth);
    add("trunc", strings::trunc);
    add("trim", strings::trim);
    add("upper", strings::upper);
    add("lower", strings::lower);
    add("title", strings::title);
    add("untitle", strings::untitle);
    add("substr", strings::substr);
    add("trimall", strings::trim_all);
    add("trimAll", strings::trim_all);
    add("trimSuffix", strings::trim_suffix);
    add("trimPrefix", strings::trim_prefix);
    add("nospace", strings::nospace);
    add("initials", strings::initials);
    add("swapcase", strings::swapcase);
    add("snakecase", strings::snakecase);
    add("camelcase", strings::camelcase);
    add("kebabcase", strings::kebabcase);
    add("wrap", strings::wrap);
    add("wrapWith", strings::wrap_with);
    add("contains", strings::contains);
    add("hasPrefix", strings::has_prefix);
    add("hasSuffix", strings::has_suffix);
    add("quote", strings::quote);
    add("squote", strings::squote);
    add("cat", strings::cat);
    add("indent", strings::indent);
    add("nindent", strings::nindent);
    add("replace", strings::replace);
    add("plural", strings::plural);
    add("split", strings::split);
    add("splitList", strings::split_list);
    add("splitn", strings::splitn);
    // hashes and encodings
    add("sha1sum", hashes::sha1sum);
    add("sha256sum", hashes::sha256sum);
    add("sha512sum", hashes::sha512sum);
    add("adler32sum", hashes::adler32sum);
    add("sha3sum", hashes::sha3sum);
    add("sha3short", hashes::sha3short);
    add("shortHash", hashes::short_hash);
    add("b64enc", encoding::b64enc);
    add("b64dec", encoding::b64dec);
    add("b32enc", encoding::b32enc);
    add("b32dec", encoding::b32dec);
    add("toJson", encoding::to_json);
    add("mustToJson", encoding::must_to_json);
    add("toPrettyJson", encoding::to_pretty_json);
    add("mustToPrettyJson", encoding::must_to_pretty_json);
    add("toRawJson", encoding::to_raw_json);
    add("mustToRawJson", encoding::must_to_raw_json);
    add("fromJson", encoding::from_json);
    add("mustFromJson", encoding::must_from_json);
    add("toYaml", encoding::to_yaml_fn);
    // conversions
    add("toString", conversion::to_string);
    add("atoi", conversion::atoi);
    add("int64", conversion::int64);
    add("int", conversion::int64);
    add("float64", conversion::float64);
    add("toDecimal", conversion::to_decimal);
    add("toStrings", lists::to_strings);
    // math
    add("add1", math::add1);
    add("add", math::add);
    add("sub", math::sub);
    add("div", math::div);
    add("mod", math::modulo);
    add("mul", math::mul);
    add("max", math::max);
    add("biggest", math::max);
    add("min", math::min);
    add("maxf", math::maxf);
    add("minf", math::minf);
    add("add1f", math::add1f);
    add("addf", math::addf);
    add("subf", math::subf);
    add("divf", math::divf);
    add("mulf", math::mulf);
    add("ceil", math::ceil);
    add("floor", math::floor);
    add("round", math::round);
    // defaults and flow
    add("default", defaults::default);
    add("empty", defaults::empty);
    add("coalesce", defaults::coalesce);
    add("all", defaults::all);
    add("any", defaults::any);
    add("ternary", defaults::ternary);
    add("fail", defaults::fail);
    add("deepCopy", dicts::deep_copy);
    add("mustDeepCopy", dicts::deep_copy);
    // reflection
    add("typeOf", reflection::type_of);
    add("typeIs", reflection::type_is);
    add("typeIsLike", reflection::type_is_like);
    add("kindOf", reflection::kind_of);
    add("kindIs", reflection::kind_is);
    add("deepEqual", reflection::deep_equal_fn);
    // paths (path and filepath behave alike on Linux)
    add("base", paths::base);
    add("dir", paths::dir);
    add("clean", paths::clean_fn);
    add("ext", paths::ext);
    add("isAbs", paths::is_abs);
    add("osBase", paths::base);
    add("osDir", paths::dir);
    add("osClean", paths::clean_fn);
    add("osExt", paths::ext);
    add("osIsAbs", paths::is_abs);
    // lists
    add("list", lists::list_fn);
    add("tuple", lists::list_fn);
    add("append", lists::append);
    add("push", lists::append);
    add("mustAppend", lists::append);
    add("mustPush", lists::append);
    add("prepend", lists::prepend);
    add("mustPrepend", lists::prepend);
    add("first", lists::first);
    add("mustFirst", lists::first);
    add("rest", lists::rest);
    add("mustRest", lists::rest);
    add("last", lists::last);
    add("mustLast", lists::last);
    add("initial", lists::initial);
    add("mustInitial", lists::initial);
    add("reverse", lists::reverse);
    add("mustReverse", lists::reverse);
    add("uniq", lists::uniq);
    add("mustUniq", lists::uniq);
    add("without", lists::without);
    add("mustWithout", lists::without);
    add("has", lists::has);
    add("mustHas", lists::has);
    add("slice", lists::slice);
    add("mustSlice", lists::slice);
    add("concat", lists::concat);
    add("chunk", lists::chunk);
    add("mustChunk", lists::chunk);
    add("compact", lists::compact);
    add("mustCompact", lists::compact);
    add("join", lists::join);
    add("sortAlpha", lists::sort_alpha);
    // dicts
    add("dict", dicts::dict);
    add("get", dicts::get);
    add("set", dicts::set);
    add("unset", dicts::unset);
    add("hasKey", dicts::has_key);
    add("pluck", dicts::pluck);
    add("keys", dicts::keys);
    add("pick", dicts::pick);
    add("omit", dicts::omit);
    add("merge", dicts::merge);
    add("mustMerge", dicts::merge);
    add("mergeOverwrite", dicts::merge_overwrite);
    add("mustMergeOverwrite", dicts::merge_overwrite);
    add("values", dicts::values);
    add("dig", dicts::dig);
    // semver, urls, durations
    add("semver", semver::semver);
    add("semverCompare", semver::semver_compare);
    add("urlParse", urls::url_parse);
    add("urlJoin", urls::url_join);
    add("duration", durations::duration);
    add("durationRound", durations::duration_round);
    // regular expressions
    add("regexMatch", |a| regex::regex_match(false, a));
    add("mustRegexMatch", |a| regex::regex_match(true, a));
    add("regexFindAll", regex::regex_find_all);
    add("mustRegexFindAll", regex::regex_find_all);
    add("regexFind", regex::regex_find);
    add("mustRegexFind", regex::regex_find);
    add("regexReplaceAll", |a| regex::regex_replace_all(false, a));
    add("mustRegexReplaceAll", |a| {
        regex::regex_replace_all(false, a)
    });
    add("regexReplaceAllLiteral", |a| {
        regex::regex_replace_all(true, a)
    });
    add("mustRegexReplaceAllLiteral", |a| {
        regex::regex_replace_all(true, a)
    });
    add("regexSplit", regex::regex_split);
    add("mustRegexSplit", regex::regex_split);
    add("regexQuoteMeta", regex::regex_quote_meta);
    // functions whose output size depends on their arguments
    m.insert(
        "repeat".to_owned(),
        wrap("repeat", move |a| strings::repeat(&limits, a)),
    );
    m.insert(
        "until".to_owned(),
        wrap("until", move |a| lists::until(&limits, a)),
    );
    m.insert(
        "untilStep".to_owned(),
        wrap("untilStep", move |a| lists::until_step_fn(&limits, a)),
    );
    m.insert(
        "seq".to_owned(),
        wrap("seq", move |a| lists::seq(&limits, a)),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of the table in this module's documentation: (name, supported).
    fn documented() -> Vec<(String, bool)> {
        include_str!("sprig.rs")
            .lines()
            .filter_map(|line| line.strip_prefix("//! | `"))
            .filter_map(|row| {
                let (name, rest) = row.split_once("` | ")?;
                Some((name.to_owned(), rest.starts_with("supported")))
            })
            .collect()
    }

    #[test]
    fn documentation_table_matches_the_function_map() {
        let map = function_map(Limits {
            max_string_bytes: 1,
            max_list_items: 1,
        });
        let rows = documented();
        assert!(rows.len() >= 200, "{} rows", rows.len());
        for (name, supported) in &rows {
            assert_eq!(
                map.contains_key(name),
                *supported,
                "{name}: documented as supported={supported}"
            );
            assert_eq!(
                exclusion_reason(name).is_none(),
                *supported,
                "{name}: exclusion reason does not match the table"
            );
        }
        let kcp_additions = ["sha3sum", "sha3short", "shortHash", "toYaml"];
        for name in map.keys() {
            assert!(
                rows.iter().any(|(n, _)| n == name) || kcp_additions.contains(&name.as_str()),
                "{name} is registered but missing from the table"
            );
        }
    }
}
