//! What the API server cannot check in a source object's spec, checked before a pass writes
//! anything: image references, resource quantities and Go durations. Pure functions; each
//! error names the object, the field path and the reason ([`Error::InvalidField`]), and the
//! controller writes it into the object's `Ready` condition.
//!
//! (Options that conflict, such as two Kubeconfig targets or `issuerRef` with `caSecretRef`,
//! are refused by the CRDs' CEL rules at admission, so they never reach a pass.)

use k8s_openapi::api::core::v1::ResourceRequirements;

use crate::api::*;
use crate::error::{Error, Result};
use crate::render::duration;

/// Collects the first invalid field of an object.
struct Check<'a> {
    object: &'a str,
    first: Option<Error>,
}

impl<'a> Check<'a> {
    fn new(object: &'a str) -> Self {
        Check {
            object,
            first: None,
        }
    }

    fn fail(&mut self, field: String, reason: String) {
        if self.first.is_none() {
            self.first = Some(Error::InvalidField {
                object: self.object.to_owned(),
                field,
                reason,
            });
        }
    }

    fn done(self) -> Result<()> {
        self.first.map_or(Ok(()), Err)
    }

    fn image(&mut self, field: &str, image: Option<&ImageSpec>) {
        let Some(image) = image else { return };
        if !image.repository.is_empty() && !is_repository(&image.repository) {
            self.fail(
                format!("{field}.repository"),
                format!("{:?} is not a valid image repository", image.repository),
            );
        }
        if !image.tag.is_empty() && !is_tag(&image.tag) {
            self.fail(
                format!("{field}.tag"),
                format!("{:?} is not a valid image tag", image.tag),
            );
        }
    }

    fn resources(&mut self, field: &str, resources: Option<&ResourceRequirements>) {
        let Some(r) = resources else { return };
        for (part, map) in [("limits", &r.limits), ("requests", &r.requests)] {
            for (name, quantity) in map.iter().flatten() {
                if !is_quantity(&quantity.0) {
                    self.fail(
                        format!("{field}.{part}.{name}"),
                        format!("{:?} is not a quantity", quantity.0),
                    );
                }
            }
        }
    }

    fn duration(&mut self, field: &str, value: Option<&str>) {
        match value {
            Some(v) if duration::parse(v).is_none() => self.fail(
                field.to_owned(),
                format!("{v:?} is not a Go duration (such as 8760h or 30m0s)"),
            ),
            _ => {}
        }
    }

    fn certificate_template(&mut self, field: &str, template: &CertificateTemplate) {
        let Some(spec) = &template.spec else { return };
        self.duration(&format!("{field}.spec.duration"), spec.duration.as_deref());
        self.duration(
            &format!("{field}.spec.renewBefore"),
            spec.renew_before.as_deref(),
        );
    }

    fn certificate_templates(&mut self, field: &str, templates: &CertificateTemplateMap) {
        for (key, template) in templates {
            self.certificate_template(&format!("{field}.{key}"), template);
        }
    }

    fn common(&mut self, c: &CommonShardSpec) {
        self.image("spec.image", c.image.as_ref());
        self.resources("spec.resources", c.resources.as_ref());
        self.certificate_templates("spec.certificateTemplates", &c.certificate_templates);
        let webhook = c.audit.as_ref().and_then(|a| a.webhook.as_ref());
        if let Some(w) = webhook {
            let field = "spec.audit.webhook";
            self.duration(
                &format!("{field}.batchMaxWait"),
                w.batch_max_wait.as_deref(),
            );
            self.duration(
                &format!("{field}.initialBackoff"),
                w.initial_backoff.as_deref(),
            );
        }
        let authz = c.authorization.as_ref().and_then(|a| a.webhook.as_ref());
        if let Some(w) = authz {
            let field = "spec.authorization.webhook";
            let ttl = w.cache_authorized_ttl.as_deref();
            self.duration(&format!("{field}.cacheAuthorizedTTL"), ttl);
            let ttl = w.cache_unauthorized_ttl.as_deref();
            self.duration(&format!("{field}.cacheUnauthorizedTTL"), ttl);
        }
        self.auth(c.auth.as_ref());
    }

    fn auth(&mut self, auth: Option<&AuthSpec>) {
        let webhook = auth.and_then(|a| a.webhook.as_ref());
        if let Some(w) = webhook {
            let ttl = w.cache_authentication_ttl.as_deref();
            self.duration("spec.auth.webhook.cacheAuthenticationTTL", ttl);
        }
    }
}

/// A RootShard's spec, including its internal proxy.
pub fn root_shard(object: &str, spec: &RootShardSpec) -> Result<()> {
    let mut check = Check::new(object);
    check.common(&spec.common);
    if let Some(proxy) = &spec.proxy {
        check.image("spec.proxy.image", proxy.image.as_ref());
        check.resources("spec.proxy.resources", proxy.resources.as_ref());
        let templates = &proxy.certificate_templates;
        check.certificate_templates("spec.proxy.certificateTemplates", templates);
    }
    check.done()
}

/// A Shard's spec.
pub fn shard(object: &str, spec: &ShardSpec) -> Result<()> {
    let mut check = Check::new(object);
    check.common(&spec.common);
    check.done()
}

/// A FrontProxy's spec.
pub fn front_proxy(object: &str, spec: &FrontProxySpec) -> Result<()> {
    let mut check = Check::new(object);
    check.image("spec.image", spec.image.as_ref());
    check.resources("spec.resources", spec.resources.as_ref());
    check.certificate_templates("spec.certificateTemplates", &spec.certificate_templates);
    check.auth(spec.auth.as_ref());
    check.done()
}

/// A CacheServer's spec.
pub fn cache_server(object: &str, spec: &CacheServerSpec) -> Result<()> {
    let mut check = Check::new(object);
    check.image("spec.image", spec.image.as_ref());
    check.resources("spec.resources", spec.resources.as_ref());
    check.certificate_templates("spec.certificateTemplates", &spec.certificate_templates);
    check.done()
}

/// A VirtualWorkspace's spec, including its init containers.
pub fn virtual_workspace(object: &str, spec: &VirtualWorkspaceSpec) -> Result<()> {
    let mut check = Check::new(object);
    check.image("spec.image", spec.image.as_ref());
    check.resources("spec.resources", spec.resources.as_ref());
    check.certificate_templates("spec.certificateTemplates", &spec.certificate_templates);
    for (i, init) in spec.init_containers.iter().enumerate() {
        let field = format!("spec.initContainers[{i}]");
        check.image(&format!("{field}.image"), init.image.as_ref());
        check.resources(&format!("{field}.resources"), init.resources.as_ref());
    }
    check.done()
}

/// A Kubeconfig's spec: its validity and certificate template.
pub fn kubeconfig(object: &str, spec: &KubeconfigSpec) -> Result<()> {
    let mut check = Check::new(object);
    match duration::parse(&spec.validity) {
        Some(d) if d > 0 => {}
        _ => check.fail(
            "spec.validity".into(),
            format!(
                "{:?} is not a positive Go duration (such as 8760h)",
                spec.validity
            ),
        ),
    }
    if let Some(template) = &spec.certificate_template {
        check.certificate_template("spec.certificateTemplate", template);
    }
    check.done()
}

/// Whether `s` is an image repository as the distribution reference grammar has it: an
/// optional registry host (with a port), then lower-case path components separated by `/`.
pub fn is_repository(s: &str) -> bool {
    let mut parts: Vec<&str> = s.split('/').collect();
    if parts.len() > 1 && is_registry(parts[0]) {
        parts.remove(0);
    }
    !parts.is_empty() && s.len() <= 255 && parts.iter().all(|p| is_path_component(p))
}

/// A registry host: contains a `.` or a `:` or is `localhost`, made of DNS labels, with an
/// optional numeric port.
fn is_registry(s: &str) -> bool {
    if !(s.contains('.') || s.contains(':') || s == "localhost") {
        return false;
    }
    let (host, port) = s.split_once(':').unwrap_or((s, ""));
    let port_ok = s.contains(':') != port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    let label = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    port_ok && host.split('.').all(label)
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or any number of `-`.
fn is_path_component(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    if !alnum(*first) || !alnum(*last) {
        return false;
    }
    let mut run = String::new();
    for &b in bytes {
        if alnum(b) {
            if !(run.is_empty() || run == "." || run == "_" || run == "__" || is_dashes(&run)) {
                return false;
            }
            run.clear();
        } else if matches!(b, b'.' | b'_' | b'-') {
            run.push(char::from(b));
        } else {
            return false;
        }
    }
    true
}

fn is_dashes(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b == b'-')
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
pub fn is_tag(s: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = s.as_bytes();
    bytes.first().is_some_and(|b| word(*b))
        && bytes.len() <= 128
        && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-')
}

/// Whether `s` is a Kubernetes quantity: a signed decimal number, then a binary-SI suffix
/// (`Ki` ... `Ei`), a decimal-SI suffix (`n`, `u`, `m`, `k`, `M` ... `E`) or an exponent.
pub fn is_quantity(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    is_number(number)
        && (matches!(
            suffix,
            "" | "Ki"
                | "Mi"
                | "Gi"
                | "Ti"
                | "Pi"
                | "Ei"
                | "n"
                | "u"
                | "m"
                | "k"
                | "M"
                | "G"
                | "T"
                | "P"
                | "E"
        ) || suffix
            .strip_prefix(['e', 'E'])
            .is_some_and(|e| is_integer(e.strip_prefix(['+', '-']).unwrap_or(e))))
}

fn is_number(s: &str) -> bool {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    (!whole.is_empty() || !frac.is_empty())
        && whole.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
}

fn is_integer(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_follow_the_distribution_grammar() {
        for good in [
            "ghcr.io/kcp-dev/kcp",
            "kcp",
            "localhost:5000/kcp",
            "registry.example.com:443/a/b__c/d-e",
            "a.b_c",
        ] {
            assert!(is_repository(good), "{good}");
        }
        for bad in [
            "Not A Repo!",
            "ghcr.io/Kcp",
            "",
            "a//b",
            "-kcp",
            "kcp-",
            "ghcr.io/",
            "a:b",
        ] {
            assert!(!is_repository(bad), "{bad}");
        }
    }

    #[test]
    fn tags_are_word_characters_dots_and_dashes() {
        assert!(is_tag("v0.30.0"));
        assert!(is_tag("latest_1-rc.2"));
        assert!(!is_tag(".v1"));
        assert!(!is_tag("sha256:abc"));
        assert!(!is_tag(&"a".repeat(129)));
    }

    #[test]
    fn quantities_are_numbers_with_a_suffix_or_an_exponent() {
        for good in [
            "1", "100m", "1.5Gi", "-2", ".5", "5.", "1e3", "1E-3", "2Ki", "+3k",
        ] {
            assert!(is_quantity(good), "{good}");
        }
        for bad in ["lots", "", "1GB", "1.2.3", "e3", "1e", "Gi", "1 Gi", "."] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }

    #[test]
    fn an_invalid_field_names_the_object_the_field_and_the_reason() {
        let spec = ShardSpec {
            common: CommonShardSpec {
                image: Some(ImageSpec {
                    repository: "Not A Repo!".into(),
                    ..ImageSpec::default()
                }),
                ..CommonShardSpec::default()
            },
            ..ShardSpec::default()
        };
        let message = shard("Shard kcp/beta", &spec).unwrap_err().to_string();
        assert_eq!(
            message,
            "Shard kcp/beta: field spec.image.repository: \"Not A Repo!\" is not a valid image repository"
        );
    }
}
