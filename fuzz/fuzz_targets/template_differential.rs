//! Differential fuzzing: templates generated from fuzzer input are rendered by kcp-core and
//! by Go (the `gotmpl-oracle` test tool); the first template on which they disagree (one
//! fails and the other does not, or the outputs differ by a byte) stops the run with both
//! results.
//!
//! Needs the oracle binary in `KCP_GO_ORACLE` (build it as described in
//! `kcp-core/tests/gotmpl-oracle/main.go`). The generated templates use the functions and
//! constructs on which kcp-core promises Go's behaviour (see `kcp_core::template::sprig`
//! for the documented differences, which the generator avoids).
#![no_main]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{LazyLock, Mutex};

use kcp_core::template::TemplateEngine;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

struct Oracle {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

static ORACLE: LazyLock<Mutex<Oracle>> = LazyLock::new(|| {
    let path = std::env::var("KCP_GO_ORACLE")
        .expect("set KCP_GO_ORACLE to the gotmpl-oracle binary (see kcp-core/tests/gotmpl-oracle/main.go)");
    let mut child = Command::new(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the oracle");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    Mutex::new(Oracle {
        _child: child,
        stdin,
        stdout,
    })
});

static ENGINE: LazyLock<TemplateEngine> = LazyLock::new(|| TemplateEngine::with_capacity(64));

static DATA: LazyLock<serde_json::Value> = LazyLock::new(|| {
    serde_json::json!({
        "s": "Hello World", "p": "root:org:ws", "e": "", "n": 42, "z": 0, "f": 1.5,
        "b": true, "l": ["b", "a", "c"], "m": {"k": "v", "x": "y"}, "nil": null,
    })
});

/// A string-valued expression. Strings are ASCII: cutting multi-byte characters apart
/// (`trunc`) is a documented difference.
fn string_expr(u: &mut Unstructured, depth: u32) -> Result<String> {
    const LEAVES: &[&str] = &[
        ".s", ".p", ".e", "\"a-b_c\"", "\"  padded  \"", "\"CamelCase\"", "\"x:y:z\"",
        ".m.k", "\"a, b; c!\"", "\"a\\nb\"", "`raw`",
    ];
    if depth == 0 || u.ratio(1, 3)? {
        return Ok((*u.choose(LEAVES)?).to_owned());
    }
    let inner = string_expr(u, depth - 1)?;
    let small = u.int_in_range(0..=12)?;
    let unary = [
        "upper", "lower", "trim", "title", "untitle", "quote", "squote", "b64enc", "sha1sum",
        "sha256sum", "adler32sum", "snakecase", "camelcase", "kebabcase", "swapcase",
        "nospace", "initials", "toString", "sha3sum", "shortHash", "base", "dir", "clean",
        "ext", "toJson", "b32enc",
    ];
    Ok(match u.int_in_range(0..=9)? {
        0..=3 => format!("({} {inner})", u.choose(&unary)?),
        4 => format!("(trunc {small} {inner})"),
        5 => format!("(replace \"{}\" \"-\" {inner})", u.choose(&["a", ":", " ", "o"])?),
        6 => format!("(printf \"%s|%d|%q\" {inner} {small} {inner})"),
        7 => format!("(splitList \":\" {inner} | join \",\")"),
        8 => format!("(indent {small} {inner})"),
        _ => format!("(default \"dflt\" {inner})"),
    })
}

/// A value of any type.
fn any_expr(u: &mut Unstructured, depth: u32) -> Result<String> {
    const LEAVES: &[&str] = &[
        // No integer literals: Go types them `int`, kcp-core `int64` (a documented difference
        // that `kindOf`/`typeOf` would show).
        ".n", ".z", ".f", ".b", ".l", ".m", ".nil", ".missing", "true", "(list .n .z)",
        "(dict \"a\" 1 \"b\" \"c\")",
    ];
    if depth == 0 || u.ratio(1, 2)? {
        return match u.ratio(1, 2)? {
            true => string_expr(u, depth),
            false => Ok((*u.choose(LEAVES)?).to_owned()),
        };
    }
    let a = any_expr(u, depth - 1)?;
    let b = any_expr(u, depth - 1)?;
    Ok(match u.int_in_range(0..=9)? {
        0 => format!("(len {a})"),
        1 => format!("(empty {a})"),
        2 => format!("(coalesce {a} {b})"),
        3 => format!("(ternary {a} {b} {})", u.choose(&["true", "false", ".b"])?),
        4 => format!("(and {a} {b})"),
        5 => format!("(or {a} {b})"),
        6 => format!("(not {a})"),
        7 => format!("(list {a} {b})"),
        8 => format!("(toJson {a})"),
        _ => format!("(typeIs \"string\" {a})"),
    })
}

/// A template body.
fn body(u: &mut Unstructured, depth: u32) -> Result<String> {
    let mut out = String::new();
    for _ in 0..u.int_in_range(1..=4)? {
        let trim_l = if u.ratio(1, 4)? { "- " } else { " " };
        let trim_r = if u.ratio(1, 4)? { " -" } else { " " };
        match u.int_in_range(0..=7)? {
            0 => out.push_str(u.choose(&["text ", "\n", "  ", "a: b\n", "{{\"{{\"}}"])?),
            1 | 2 => out.push_str(&format!("{{{{{trim_l}{}{trim_r}}}}}", string_expr(u, 3)?)),
            3 => out.push_str(&format!("{{{{{trim_l}{}{trim_r}}}}}", any_expr(u, 2)?)),
            4 if depth > 0 => out.push_str(&format!(
                "{{{{ if {} }}}}{}{{{{ else }}}}{}{{{{ end }}}}",
                any_expr(u, 1)?,
                body(u, depth - 1)?,
                body(u, depth - 1)?
            )),
            5 if depth > 0 => out.push_str(&format!(
                "{{{{ range $i, $v := {} }}}}{{{{ $i }}}}={{{{ $v }}}};{}{{{{ end }}}}",
                u.choose(&[".l", ".m", "(list 1 2)", "(until 3)", "(splitList \":\" .p)"])?,
                body(u, depth - 1)?
            )),
            6 if depth > 0 => out.push_str(&format!(
                "{{{{ with {} }}}}[{{{{ . }}}}]{}{{{{ end }}}}",
                any_expr(u, 1)?,
                body(u, depth - 1)?
            )),
            _ => out.push_str(&format!("{{{{ $x := {} }}}}{{{{ $x }}}}", string_expr(u, 2)?)),
        }
    }
    Ok(out)
}

fn ask_go(template: &str) -> serde_json::Value {
    let mut oracle = ORACLE.lock().expect("oracle lock");
    let request = serde_json::json!({"template": template, "data": *DATA});
    writeln!(oracle.stdin, "{request}").expect("write to the oracle");
    oracle.stdin.flush().expect("flush");
    let mut line = String::new();
    oracle.stdout.read_line(&mut line).expect("read from the oracle");
    serde_json::from_str(&line).expect("oracle answer")
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(template) = body(&mut u, 2) else {
        return;
    };
    let ours = ENGINE.render("fuzz", &template, &DATA);
    let go = ask_go(&template);
    match (&ours, go["output"].as_str()) {
        (Ok(a), Some(b)) if a == b => {}
        (Err(_), None) => {}
        _ => panic!(
            "divergence on template {template:?}\n  go:   {go}\n  ours: {ours:?}"
        ),
    }
});
