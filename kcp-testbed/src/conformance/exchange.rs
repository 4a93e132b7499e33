//! Sending a case's steps to a server and writing down its answers as they came.
//!
//! An answer is one JSON value: `{"status", "contentType", "warnings", "body"}`, where `body` is
//! the parsed JSON (a watch: `{"events": [...], "complete": bool}`), `{"protobuf": <object>}`
//! for a Kubernetes protobuf body (read through kcp-sim's decoder, which `kcp-sim/tests/protobuf.rs`
//! holds to the independent k8s-pb structs, into the object's JSON form so it is normalised
//! like any other), `{"text": ...}` for other text and `{"bytes": <length>}` for other binary
//! bodies.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use http_body_util::BodyExt as _;
use serde_json::{Value, json};

use super::case::{Case, Step, Until, WatchRead};
use crate::error::{Error, Result};

/// The names a case runs under on one server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseNames {
    /// The case's namespace (created before its first step).
    pub namespace: String,
    /// The case's workspace path (kcp).
    pub workspace: Option<String>,
    /// The logical cluster of that workspace (kcp).
    pub cluster: Option<String>,
    /// A kubeconfig for the case's server (and workspace), for kubectl steps.
    pub kubeconfig: Option<PathBuf>,
}

/// The clients a case's requests go through, both at the server's root URL.
#[derive(Clone)]
pub struct CaseClients {
    /// As the server's admin.
    pub admin: kube::Client,
    /// Without credentials: a step that sends its own `Authorization` header (a ServiceAccount's
    /// token) goes through this one, so that header is the request's only credential.
    pub bare: kube::Client,
}

impl CaseClients {
    /// The client for `step`.
    fn for_step(&self, step: &Step) -> &kube::Client {
        let own_credential = step
            .headers
            .keys()
            .any(|name| name.eq_ignore_ascii_case("authorization"));
        if own_credential {
            &self.bare
        } else {
            &self.admin
        }
    }
}

/// How long a kubectl step may run.
const KUBECTL_RUN: Duration = Duration::from_secs(60);
/// The first bytes of a Kubernetes protobuf body.
const PROTOBUF_MAGIC: &[u8] = b"k8s\0";
/// How long a watch is read before what came is written down as incomplete.
const WATCH_READ: Duration = Duration::from_secs(20);
/// What a case does when a step's `until` never holds or a step cannot be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// The real server: repeat for up to 60 s, then fail the case (its recording would be
    /// wrong).
    Oracle,
    /// kcp-sim, whose controllers act inside the request: a step whose `until` does not hold
    /// within 2 s keeps its last answer, and a step that cannot be sent is written down as
    /// `{"notRun": reason}`, so the case still shows every difference.
    Candidate,
}

impl Patience {
    fn until(self) -> Duration {
        match self {
            Patience::Oracle => Duration::from_secs(60),
            Patience::Candidate => Duration::from_secs(2),
        }
    }
}

/// Runs every step of `case` against `client` (whose base is the server's root URL), and
/// returns the answers as they came (not normalised).
pub async fn run_case(
    clients: &CaseClients,
    names: &CaseNames,
    case: &Case,
    case_id: &str,
    patience: Patience,
) -> Result<Vec<Value>> {
    let mut answers = Vec::with_capacity(case.steps.len());
    for (i, step) in case.steps.iter().enumerate() {
        let fail = |reason: String| Error::Conformance {
            case: case_id.to_string(),
            step: i + 1,
            reason,
        };
        let answer = match run_step(clients, names, step, &answers, patience).await {
            Ok(answer) => answer,
            Err(reason) if patience == Patience::Candidate => json!({"notRun": reason}),
            Err(reason) => {
                return Err(match answers.last() {
                    Some(previous) => {
                        fail(format!("{reason}; the step before answered {previous}"))
                    }
                    None => fail(reason),
                });
            }
        };
        answers.push(answer);
    }
    Ok(answers)
}

/// One step, repeated while its `until` does not hold.
async fn run_step(
    clients: &CaseClients,
    names: &CaseNames,
    step: &Step,
    earlier: &[Value],
    patience: Patience,
) -> Result<Value, String> {
    let deadline = Instant::now() + patience.until();
    // A kubectl step's text answer already shows the case's namespace as `{ns}`.
    let until = match (&step.until, &step.kubectl) {
        (Some(until), Some(_)) => Some(until.clone()),
        (until, None) => until
            .as_ref()
            .map(|until| with_names_in_wanted_value(until, names, earlier))
            .transpose()?,
        (None, _) => None,
    };
    let mut held: Option<Value> = None;
    loop {
        let answer = send(clients.for_step(step), names, step, earlier).await?;
        let Some(until) = &until else {
            return Ok(answer);
        };
        if until.holds(&answer) {
            if !until.stable || held.as_ref() == Some(&answer) {
                return Ok(answer);
            }
            held = Some(answer);
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        held = None;
        if Instant::now() > deadline && patience == Patience::Candidate {
            return Ok(answer);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} never became {:?} (last answer {answer})",
                until.path, until.equals
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `until` with the case's names (`{ws}`, `{ns}`, `{cluster}`, `{{step:pointer}}`) put into a
/// wanted string, so a step can wait for a message that names the case's workspace.
fn with_names_in_wanted_value(
    until: &Until,
    names: &CaseNames,
    earlier: &[Value],
) -> Result<Until, String> {
    let mut until = until.clone();
    if let Some(Value::String(wanted)) = &until.equals {
        until.equals = Some(Value::String(substitute(wanted, names, earlier)?));
    }
    Ok(until)
}

async fn send(
    client: &kube::Client,
    names: &CaseNames,
    step: &Step,
    earlier: &[Value],
) -> Result<Value, String> {
    if let Some(args) = &step.kubectl {
        let answer = run_kubectl(names, step, args, earlier).await?;
        return selected(step, names, earlier, answer);
    }
    let line = substitute(&step.request, names, earlier)?;
    let (method, path) = line
        .trim()
        .split_once(' ')
        .ok_or_else(|| format!("request {line:?} is not `<METHOD> <path>`"))?;
    let mut request = http::Request::builder().method(method).uri(path.trim());
    let mut protobuf_body = false;
    for (name, value) in &step.headers {
        let value = substitute(value, names, earlier)?;
        protobuf_body |=
            name.eq_ignore_ascii_case("content-type") && kcp_sim::protobuf::is_protobuf(&value);
        request = request.header(name, value);
    }
    let text = match (&step.body, &step.raw_body) {
        (Some(body), _) => Some(body.to_string()),
        (None, raw) => raw.clone(),
    };
    let body = match text {
        Some(text) => {
            if !step
                .headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case("content-type"))
            {
                request = request.header("Content-Type", "application/json");
            }
            let text = substitute(&text, names, earlier)?;
            if protobuf_body && step.body.is_some() {
                protobuf_of(&text)?
            } else {
                text.into_bytes()
            }
        }
        None => Vec::new(),
    };
    let request = request
        .body(kube::client::Body::from(body))
        .map_err(|e| format!("building {line:?}: {e}"))?;
    let response = client
        .send(request)
        .await
        .map_err(|e| format!("sending {line:?}: {e}"))?;
    let (parts, body) = response.into_parts();
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let warnings: Vec<String> = parts
        .headers
        .get_all(http::header::WARNING)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    let protobuf_stream = content_type
        .as_deref()
        .is_some_and(kcp_sim::protobuf::is_protobuf);
    let framing = if protobuf_stream {
        WatchFraming::Protobuf
    } else {
        WatchFraming::Lines
    };
    let body = match (&step.watch, parts.status.is_success()) {
        (Some(watch), true) => read_watch(body, watch, framing).await,
        _ => read_body(body).await?,
    };
    let answer = json!({
        "status": parts.status.as_u16(),
        "contentType": content_type,
        "warnings": warnings,
        "body": body,
    });
    selected(step, names, earlier, answer)
}

/// The part of a step's answer its `select` keeps (with the case's names in the kept values).
fn selected(
    step: &Step,
    names: &CaseNames,
    earlier: &[Value],
    answer: Value,
) -> Result<Value, String> {
    step.select.iter().try_fold(answer, |answer, select| {
        let mut select = select.clone();
        for kept in &mut select.keep {
            *kept = substitute(kept, names, earlier)?;
        }
        Ok(select.apply(answer))
    })
}

async fn read_body(body: kube::client::Body) -> Result<Value, String> {
    let bytes = tokio::time::timeout(WATCH_READ, body.collect())
        .await
        .map_err(|_| {
            format!("the answer did not end within {WATCH_READ:?} (a watch needs `watch:`)")
        })?
        .map_err(|e| format!("reading the answer: {e}"))?
        .to_bytes();
    Ok(parse_body(&bytes))
}

/// JSON when it parses, else a Kubernetes protobuf object, else text, else the length of the
/// binary body.
fn parse_body(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    if bytes.starts_with(PROTOBUF_MAGIC) {
        return match kcp_sim::protobuf::decode_envelope(bytes) {
            Ok(object) => json!({"protobuf": object}),
            Err(e) => json!({"protobufUnreadable": e.message, "bytes": bytes.len()}),
        };
    }
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return value;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({"text": text}),
        Err(_) => json!({"bytes": bytes.len()}),
    }
}

/// The pinned kubectl (`peers/PINS`), built once per test binary.
fn kubectl_binary() -> Result<PathBuf, String> {
    static KUBECTL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    KUBECTL
        .get_or_init(|| {
            crate::go_build::build("kubectl")
                .map(|built| built.binary)
                .map_err(|e| e.to_string())
        })
        .clone()
}

/// A kubectl step: `{"exit", "stdout", "stderr"}`, stdout read as a body (`-o json` is JSON),
/// ages in text (`5s`, `2m3s`) written `<age>`.
async fn run_kubectl(
    names: &CaseNames,
    step: &Step,
    args: &[String],
    earlier: &[Value],
) -> Result<Value, String> {
    let kubeconfig = names
        .kubeconfig
        .clone()
        .ok_or("a kubectl step needs the case's kubeconfig")?;
    let args = args
        .iter()
        .map(|a| substitute(a, names, earlier))
        .collect::<Result<Vec<_>, _>>()?;
    let stdin = step
        .stdin
        .as_deref()
        .map(|s| substitute(s, names, earlier))
        .transpose()?;
    let env = step
        .env
        .iter()
        .map(|(key, value)| Ok((key.clone(), substitute(value, names, earlier)?)))
        .collect::<Result<Vec<(String, String)>, String>>()?;
    let output = tokio::task::spawn_blocking(move || {
        let binary = kubectl_binary()?;
        kubectl_output(&binary, &kubeconfig, &args, stdin.as_deref(), &env)
    })
    .await
    .map_err(|e| format!("running kubectl: {e}"))??;
    // The case's names first, so no part of them is read as an age.
    let text = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).replace(&names.namespace, "{ns}");
        without_ages(&text)
    };
    let stdout = match parse_body(&output.stdout) {
        Value::Object(map) if map.contains_key("text") => json!({"text": text(&output.stdout)}),
        other => other,
    };
    Ok(json!({
        "exit": output.status.code(),
        "stdout": stdout,
        "stderr": text(&output.stderr),
    }))
}

fn kubectl_output(
    binary: &std::path::Path,
    kubeconfig: &std::path::Path,
    args: &[String],
    stdin: Option<&str>,
    env: &[(String, String)],
) -> Result<std::process::Output, String> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    // A discovery cache of the case's own: kubectl keys its cache by host and port, and a port
    // another server used before (another test's kcp-sim) would answer from that server's.
    let mut child = Command::new(binary)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache_dir(kubeconfig))
        .arg("--request-timeout=30s")
        .args(args)
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", binary.display()))?;
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        input
            .write_all(text.as_bytes())
            .map_err(|e| format!("writing kubectl's input: {e}"))?;
    }
    // A command that waits for what never comes (a deletion nobody finishes) is stopped.
    let deadline = Instant::now() + KUBECTL_RUN;
    while child
        .try_wait()
        .map_err(|e| format!("waiting for kubectl: {e}"))?
        .is_none()
    {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("kubectl {args:?} ran longer than {KUBECTL_RUN:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child
        .wait_with_output()
        .map_err(|e| format!("reading kubectl's output: {e}"))
}

/// The kubectl cache directory of the case whose kubeconfig is `kubeconfig`.
pub fn cache_dir(kubeconfig: &std::path::Path) -> PathBuf {
    kubeconfig.with_extension("kubectl-cache")
}

/// `text` with kubectl's ages (`0s`, `5m12s`, `3d`) written `<age>`, the times `describe`
/// prints (`Sun, 29 Nov 2026 10:58:39 +0000`, `2026-12-03 07:11:44 +0000 UTC`) written `<time>`, and the padding between table
/// columns (which follows the widths of values such as server URLs) written as three spaces.
fn without_ages(text: &str) -> String {
    type Patterns = (regex::Regex, regex::Regex, regex::Regex);
    static PATTERNS: OnceLock<Option<Patterns>> = OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        // An age is a cell of its own: between blanks or at a line's ends.
        let ages = regex::Regex::new(r"(?m)(^|[ \t])[0-9]+[smhdy]([0-9]+[smhd])?([ \t]|$)").ok()?;
        // RFC 1123 (`describe`'s), and Go's `time.Time` printed as it is (a NetworkPolicy's
        // `Created on: 2026-12-03 07:11:44 +0000 UTC`).
        let times = regex::Regex::new(
            r"[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{4}|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{4} [A-Z]{3}",
        )
        .ok()?;
        let padding = regex::Regex::new(r" {2,}").ok()?;
        Some((ages, times, padding))
    });
    match patterns {
        Some((ages, times, padding)) => {
            let timed = times.replace_all(text, "<time>");
            // Twice: two ages one blank apart share that blank.
            let aged = ages.replace_all(&timed, "${1}<age>${3}");
            let aged = ages.replace_all(&aged, "${1}<age>${3}");
            padding.replace_all(&aged, "   ").into_owned()
        }
        None => text.to_string(),
    }
}

/// How a watch stream is cut into events.
#[derive(Debug, Clone, Copy)]
enum WatchFraming {
    /// JSON events, one per line.
    Lines,
    /// Length-delimited protobuf `WatchEvent`s, each read into its JSON form
    /// `{"type", "object"}` in `{"protobuf": ...}`.
    Protobuf,
}

impl WatchFraming {
    /// The next whole event taken off `pending` (`Some(None)` for a blank line), when it came.
    fn next(self, pending: &mut Vec<u8>) -> Option<Option<Value>> {
        match self {
            WatchFraming::Lines => {
                let end = pending.iter().position(|b| *b == b'\n')?;
                let line: Vec<u8> = pending.drain(..=end).collect();
                let text = line.get(..line.len() - 1).unwrap_or_default();
                Some((!text.is_empty()).then(|| parse_body(text)))
            }
            WatchFraming::Protobuf => {
                let message = next_length_delimited(pending)?;
                Some(Some(
                    match kcp_sim::protobuf::decode_watch_event(&message) {
                        Ok(event) => json!({"protobuf": event}),
                        Err(e) => json!({"protobufUnreadable": e.message, "bytes": message.len()}),
                    },
                ))
            }
        }
    }
}

/// Reads watch events until `watch.events` came or [`WATCH_READ`] passed.
async fn read_watch(
    mut body: kube::client::Body,
    watch: &WatchRead,
    framing: WatchFraming,
) -> Value {
    let deadline = tokio::time::Instant::now() + WATCH_READ;
    let mut pending = Vec::new();
    let mut events = Vec::new();
    while events.len() < watch.events {
        let frame = tokio::time::timeout_at(deadline, body.frame()).await;
        let Ok(Some(Ok(frame))) = frame else { break };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while let Some(event) = framing.next(&mut pending) {
            if events.len() < watch.events {
                events.extend(event);
            }
        }
    }
    json!({"complete": events.len() == watch.events, "events": events})
}

/// The first whole frame (a 4-byte big-endian length, then that many bytes) taken off
/// `pending`, when it has come.
fn next_length_delimited(pending: &mut Vec<u8>) -> Option<Vec<u8>> {
    let (length, rest) = pending.split_first_chunk::<4>()?;
    let length = usize::try_from(u32::from_be_bytes(*length)).ok()?;
    let message = rest.get(..length)?.to_vec();
    pending.drain(..4 + length);
    Some(message)
}

/// The Kubernetes protobuf body of a step's JSON body.
fn protobuf_of(text: &str) -> Result<Vec<u8>, String> {
    let object: Value =
        serde_json::from_str(text).map_err(|e| format!("the body is not JSON: {e}"))?;
    kcp_sim::protobuf::encode_envelope(&object)
        .map(|bytes| bytes.to_vec())
        .map_err(|e| format!("the body has no protobuf form: {}", e.message))
}

/// `text` with `{ns}`, `{ws}`, `{cluster}` and `{{<step>:<pointer>}}` replaced. Braces that do
/// not start with a step number (a Go template's `{{.metadata.name}}`) are left as they are.
pub fn substitute(text: &str, names: &CaseNames, earlier: &[Value]) -> Result<String, String> {
    let mut out = text.replace("{ns}", &names.namespace);
    if let Some(ws) = &names.workspace {
        out = out.replace("{ws}", ws);
    }
    if let Some(cluster) = &names.cluster {
        out = out.replace("{cluster}", cluster);
    }
    let mut from = 0;
    while let Some(start) = out[from..].find("{{").map(|s| from + s) {
        let end = out[start..]
            .find("}}")
            .map(|e| start + e)
            .ok_or_else(|| format!("unclosed {{{{ in {text:?}"))?;
        let reference = &out[start + 2..end];
        if !reference
            .trim_start()
            .starts_with(|c: char| c.is_ascii_digit())
        {
            from = end + 2;
            continue;
        }
        let value = earlier_value(reference, earlier)?;
        out.replace_range(start..end + 2, &value);
        from = start + value.len();
    }
    Ok(out)
}

fn earlier_value(reference: &str, earlier: &[Value]) -> Result<String, String> {
    let (step, pointer) = reference
        .split_once(':')
        .ok_or_else(|| format!("{{{{{reference}}}}} is not {{{{<step>:<pointer>}}}}"))?;
    let index: usize = step
        .trim()
        .parse()
        .map_err(|_| format!("{{{{{reference}}}}}: {step:?} is not a step number"))?;
    let answer = index
        .checked_sub(1)
        .and_then(|i| earlier.get(i))
        .ok_or_else(|| format!("{{{{{reference}}}}}: no earlier step {index}"))?;
    // `<pointer>|path`: a URL's path only (a virtual workspace's URL, requested through the
    // client's own server).
    let (pointer, path_only) = match pointer.trim().strip_suffix("|path") {
        Some(p) => (p, true),
        None => (pointer.trim(), false),
    };
    let value = match answer.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => {
            return Err(format!(
                "{{{{{reference}}}}}: step {index}'s answer has no {pointer}"
            ));
        }
    };
    if !path_only {
        return Ok(value);
    }
    let uri: http::Uri = value
        .parse()
        .map_err(|e| format!("{{{{{reference}}}}}: {value:?} is not a URL: {e}"))?;
    Ok(uri.path().trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> CaseNames {
        CaseNames {
            namespace: "cf-1".into(),
            workspace: Some("root:cf-1".into()),
            cluster: Some("abc".into()),
            kubeconfig: None,
        }
    }

    #[test]
    fn names_and_earlier_answers_are_substituted() {
        let earlier = vec![json!({"body": {"metadata": {"resourceVersion": "42"}}})];
        let text =
            "PUT /clusters/{ws}/api/v1/namespaces/{ns}/x?rv={{1:/body/metadata/resourceVersion}}";
        assert_eq!(
            substitute(text, &names(), &earlier).unwrap(),
            "PUT /clusters/root:cf-1/api/v1/namespaces/cf-1/x?rv=42"
        );
    }

    #[test]
    fn a_wanted_string_waits_for_the_cases_own_names() {
        let until: Until = serde_json::from_value(
            json!({"path": "/body/message", "equals": "type {ws}:held in {ns}"}),
        )
        .unwrap();
        let until = with_names_in_wanted_value(&until, &names(), &[]).unwrap();
        assert!(until.holds(&json!({"body": {"message": "type root:cf-1:held in cf-1"}})));
        assert!(!until.holds(&json!({"body": {"message": "type {ws}:held in {ns}"}})));
    }

    #[test]
    fn a_url_is_cut_to_its_path_on_request() {
        let earlier = vec![json!({"url": "https://127.0.0.1:6443/services/apiexport/abc/w/"})];
        assert_eq!(
            substitute("GET {{1:/url|path}}/clusters/*", &names(), &earlier).unwrap(),
            "GET /services/apiexport/abc/w/clusters/*"
        );
    }

    #[test]
    fn go_template_braces_are_left_as_they_are() {
        let text = "go-template={{.metadata.name}}:{{len .data}} {ns}";
        assert_eq!(
            substitute(text, &names(), &[]).unwrap(),
            "go-template={{.metadata.name}}:{{len .data}} cf-1"
        );
    }

    #[test]
    fn a_reference_to_a_later_step_is_an_error_naming_it() {
        let err = substitute("{{2:/status}}", &names(), &[]).unwrap_err();
        assert!(err.contains("no earlier step 2"), "{err}");
    }

    #[test]
    fn kubectl_ages_are_written_alike() {
        assert_eq!(
            without_ages("one   1      0s\ntwo   2      5m12s\ncf-1234d 3s 4s"),
            "one   1   <age>\ntwo   2   <age>\ncf-1234d <age> <age>"
        );
    }

    #[test]
    fn describe_times_are_written_alike() {
        assert_eq!(
            without_ages("CreationTimestamp:   Sun, 29 Nov 2026 10:58:39 +0000\nLabels:   a=b"),
            "CreationTimestamp:   <time>\nLabels:   a=b"
        );
    }

    #[test]
    fn go_times_printed_as_they_are_are_written_alike() {
        assert_eq!(
            without_ages("Created on:   2026-12-03 07:11:44 +0000 UTC\nLabels:   a=b"),
            "Created on:   <time>\nLabels:   a=b"
        );
    }

    #[test]
    fn bodies_are_json_then_text_then_their_length() {
        assert_eq!(parse_body(br#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(parse_body(b"ok"), json!({"text": "ok"}));
        assert_eq!(parse_body(&[0xff, 0xfe]), json!({"bytes": 2}));
        assert_eq!(parse_body(b""), Value::Null);
    }

    #[test]
    fn a_protobuf_watch_frame_is_taken_only_when_whole() {
        let mut pending = vec![0, 0, 0, 3, b'a', b'b'];
        assert_eq!(next_length_delimited(&mut pending), None);
        pending.extend_from_slice(&[b'c', 0, 0]);
        assert_eq!(next_length_delimited(&mut pending), Some(b"abc".to_vec()));
        assert_eq!(pending, vec![0, 0]);
    }
}
