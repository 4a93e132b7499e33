//! The PKI of an installation (spec section 4) as cert-manager Issuers and Certificates.
//!
//! A RootShard has a root CA (`<rs>-ca`: a Certificate from `certificates.issuerRef`, or the
//! Secret named by `certificates.caSecretRef`) with a CA Issuer, four intermediate CAs with
//! their Issuers, and leaf certificates for itself, its shards, proxies, virtual workspaces and
//! Kubeconfigs. A CacheServer has its own root CA. Every key is RSA 4096; CAs live 10 years
//! (renewed 30 days before expiry), leaves 1 year (7 days). `certificateTemplates` are applied
//! last, by the rules of [`apply_template`].

use std::collections::BTreeMap;

use crate::api::MetadataTemplate;
use crate::api::{
    CacheServer, CertificateTemplate, CertificateTemplateMap, DEFAULT_CA_DURATION,
    DEFAULT_CA_RENEWAL, DEFAULT_CERTIFICATE_DURATION, DEFAULT_CERTIFICATE_RENEWAL, FrontProxy,
    Kubeconfig, ObjectReference, RootShard, Shard, VirtualWorkspace, X509Subject,
};
use crate::render::certmanager::{
    CaIssuer, Certificate, CertificatePrivateKey, CertificateSpec, Issuer, IssuerReference,
    IssuerSpec,
};
use crate::render::names::{self, Component};
use crate::render::{duration, labels, merge_maps, meta, name_ns, union_sorted};

/// Key usage `server auth`.
pub const USAGE_SERVER_AUTH: &str = "server auth";
/// Key usage `client auth`.
pub const USAGE_CLIENT_AUTH: &str = "client auth";
/// Key usage `digital signature`.
pub const USAGE_DIGITAL_SIGNATURE: &str = "digital signature";
/// Key usage `key encipherment`.
pub const USAGE_KEY_ENCIPHERMENT: &str = "key encipherment";

const SERVING: &[&str] = &[
    USAGE_SERVER_AUTH,
    USAGE_KEY_ENCIPHERMENT,
    USAGE_DIGITAL_SIGNATURE,
];
const CLIENT: &[&str] = &[USAGE_CLIENT_AUTH];

/// The four intermediate CAs of a root shard, in upstream's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntermediateCa {
    /// `<rs>-server-ca`: signs serving certificates.
    Server,
    /// `<rs>-requestheader-client-ca`: signs the proxies' request-header client certificates.
    RequestHeaderClient,
    /// `<rs>-client-ca`: signs client certificates.
    Client,
    /// `<rs>-service-account-ca`: signs ServiceAccount token keys.
    ServiceAccount,
}

impl IntermediateCa {
    /// All four, in upstream's order.
    pub const ALL: [IntermediateCa; 4] = [
        IntermediateCa::Server,
        IntermediateCa::RequestHeaderClient,
        IntermediateCa::Client,
        IntermediateCa::ServiceAccount,
    ];

    /// The CA's key (`server`, `requestheader-client`, `client`, `service-account`).
    pub fn as_str(self) -> &'static str {
        match self {
            IntermediateCa::Server => "server",
            IntermediateCa::RequestHeaderClient => "requestheader-client",
            IntermediateCa::Client => "client",
            IntermediateCa::ServiceAccount => "service-account",
        }
    }

    /// The Certificate, Secret and Issuer name of this CA of root shard `rs`.
    pub fn name(self, rs: &str) -> String {
        names::root_shard_ca_name(rs, self.as_str())
    }
}

/// Everything one Certificate is made of, before templating.
struct Request<'a> {
    name: String,
    labels: BTreeMap<String, String>,
    secret_labels: BTreeMap<String, String>,
    common_name: String,
    organizations: Vec<String>,
    usages: &'a [&'a str],
    dns_names: Vec<String>,
    issuer: IssuerReference,
    ca: bool,
    template: Option<&'a CertificateTemplate>,
}

/// What sets one leaf certificate apart from the other leaves of its owner: its subject, key
/// usages, DNS names, and which intermediate CA of the root shard signs it.
struct Leaf {
    common_name: String,
    organizations: &'static [&'static str],
    usages: &'static [&'static str],
    dns_names: Vec<String>,
    signer: IntermediateCa,
}

impl Leaf {
    /// A client certificate for `common_name` in `organizations`, signed by `signer`.
    fn client(
        common_name: impl Into<String>,
        organizations: &'static [&'static str],
        signer: IntermediateCa,
    ) -> Self {
        Leaf {
            common_name: common_name.into(),
            organizations,
            usages: CLIENT,
            dns_names: Vec::new(),
            signer,
        }
    }

    /// A certificate without a subject for `dns_names` with `usages`, signed by the server CA.
    fn server(usages: &'static [&'static str], dns_names: Vec<String>) -> Self {
        Leaf {
            common_name: String::new(),
            organizations: &[],
            usages,
            dns_names,
            signer: IntermediateCa::Server,
        }
    }

    /// The ServiceAccount signing key pair `common_name`.
    fn service_account(common_name: String) -> Self {
        Leaf {
            common_name,
            organizations: &[],
            usages: &[USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT],
            dns_names: Vec::new(),
            signer: IntermediateCa::ServiceAccount,
        }
    }

    /// The request of this leaf, named `name`, of the installation of root shard `root_shard`.
    fn request<'a>(
        self,
        name: String,
        root_shard: &str,
        labels: BTreeMap<String, String>,
        secret_labels: BTreeMap<String, String>,
        template: Option<&'a CertificateTemplate>,
    ) -> Request<'a> {
        Request {
            name,
            labels,
            secret_labels,
            common_name: self.common_name,
            organizations: self.organizations.iter().map(|o| (*o).to_owned()).collect(),
            usages: self.usages,
            dns_names: self.dns_names,
            issuer: issuer(self.signer.name(root_shard)),
            ca: false,
            template,
        }
    }
}

fn issuer(name: String) -> IssuerReference {
    IssuerReference {
        name,
        kind: "Issuer".to_owned(),
        group: "cert-manager.io".to_owned(),
    }
}

fn external_issuer(reference: &ObjectReference) -> IssuerReference {
    IssuerReference {
        name: reference.name.clone(),
        kind: reference.kind.clone(),
        group: reference.group.clone(),
    }
}

fn build(namespace: &str, req: Request<'_>) -> Certificate {
    let (duration, renew) = if req.ca {
        (DEFAULT_CA_DURATION, DEFAULT_CA_RENEWAL)
    } else {
        (DEFAULT_CERTIFICATE_DURATION, DEFAULT_CERTIFICATE_RENEWAL)
    };
    let spec = CertificateSpec {
        common_name: req.common_name,
        secret_name: req.name.clone(),
        secret_template: Some(MetadataTemplate {
            labels: req.secret_labels,
            ..MetadataTemplate::default()
        }),
        duration: Some(duration.to_owned()),
        renew_before: Some(renew.to_owned()),
        private_key: Some(CertificatePrivateKey {
            algorithm: "RSA".to_owned(),
            size: 4096,
            ..CertificatePrivateKey::default()
        }),
        subject: (!req.organizations.is_empty()).then(|| X509Subject {
            organizations: req.organizations,
            ..X509Subject::default()
        }),
        usages: req.usages.iter().map(|u| (*u).to_owned()).collect(),
        dns_names: req.dns_names,
        ip_addresses: Vec::new(),
        is_ca: req.ca,
        issuer_ref: req.issuer,
    };
    let mut cert = Certificate {
        metadata: meta(&req.name, namespace, req.labels),
        spec,
        status: None,
    };
    if let Some(template) = req.template {
        apply_template(&mut cert, template);
    }
    cert
}

/// Applies a certificate template (spec section 4): labels and annotations merged with the
/// operator's keys winning; `dnsNames` replace the defaults when the template also sets
/// `issuerRef`, else are unioned; `ipAddresses` unioned; durations, `issuerRef` and non-empty
/// private key fields override; subject lists unioned (sorted).
pub fn apply_template(cert: &mut Certificate, template: &CertificateTemplate) {
    if let Some(m) = &template.metadata {
        cert.metadata.annotations = merge_maps(cert.metadata.annotations.take(), &m.annotations);
        cert.metadata.labels = merge_maps(cert.metadata.labels.take(), &m.labels);
    }
    let Some(t) = &template.spec else { return };
    let spec = &mut cert.spec;
    if !t.dns_names.is_empty() {
        spec.dns_names = if t.issuer_ref.is_some() {
            t.dns_names.clone()
        } else {
            union_sorted(&spec.dns_names, &t.dns_names)
        };
    }
    spec.ip_addresses = union_sorted(&spec.ip_addresses, &t.ip_addresses);
    if let Some(d) = &t.duration {
        spec.duration = Some(duration::normalize(d));
    }
    if let Some(d) = &t.renew_before {
        spec.renew_before = Some(duration::normalize(d));
    }
    if let Some(st) = &t.secret_template {
        let target = spec.secret_template.get_or_insert_with(Default::default);
        target.annotations =
            merge_maps(Some(target.annotations.clone()), &st.annotations).unwrap_or_default();
        target.labels = merge_maps(Some(target.labels.clone()), &st.labels).unwrap_or_default();
    }
    if let Some(reference) = &t.issuer_ref {
        spec.issuer_ref = external_issuer(reference);
    }
    if let Some(pk) = &t.private_key {
        let target = spec.private_key.get_or_insert_with(Default::default);
        for (field, value) in [
            (&mut target.algorithm, &pk.algorithm),
            (&mut target.encoding, &pk.encoding),
            (&mut target.rotation_policy, &pk.rotation_policy),
        ] {
            if !value.is_empty() {
                field.clone_from(value);
            }
        }
        if pk.size > 0 {
            target.size = pk.size;
        }
    }
    if let Some(subject) = &t.subject {
        let s = spec.subject.get_or_insert_with(Default::default);
        s.organizations = union_sorted(&s.organizations, &subject.organizations);
        s.countries = union_sorted(&s.countries, &subject.countries);
        s.organizational_units =
            union_sorted(&s.organizational_units, &subject.organizational_units);
        s.localities = union_sorted(&s.localities, &subject.localities);
        s.provinces = union_sorted(&s.provinces, &subject.provinces);
        s.street_addresses = union_sorted(&s.street_addresses, &subject.street_addresses);
        s.postal_codes = union_sorted(&s.postal_codes, &subject.postal_codes);
        if !subject.serial_number.is_empty() {
            s.serial_number.clone_from(&subject.serial_number);
        }
    }
}

fn template<'a>(map: &'a CertificateTemplateMap, key: &str) -> Option<&'a CertificateTemplate> {
    map.get(key)
}

// ----- root shard CAs and issuers -------------------------------------------------------------

/// Certificate `<rs>-ca`, the root CA issued by `certificates.issuerRef`; `None` when the root
/// CA comes from `certificates.caSecretRef` instead.
pub fn render_root_ca_certificate(rs: &RootShard) -> Option<Certificate> {
    let reference = rs.spec.certificates.issuer_ref.as_ref()?;
    let (name, ns) = name_ns(&rs.metadata);
    let ca = names::root_shard_ca_name(name, "root");
    Some(build(
        ns,
        Request {
            common_name: ca.clone(),
            name: ca,
            labels: names::resource_labels(name, Component::RootShard),
            secret_labels: labels(&[(names::ROOT_SHARD_LABEL, name)]),
            organizations: Vec::new(),
            usages: &[],
            dns_names: Vec::new(),
            issuer: external_issuer(reference),
            ca: true,
            template: template(&rs.spec.common.certificate_templates, "root-ca"),
        },
    ))
}

/// Certificate of an intermediate CA (`<rs>-<ca>-ca`), issued by the root CA Issuer.
pub fn render_intermediate_ca_certificate(rs: &RootShard, ca: IntermediateCa) -> Certificate {
    let (name, ns) = name_ns(&rs.metadata);
    let cert_name = ca.name(name);
    build(
        ns,
        Request {
            common_name: cert_name.clone(),
            name: cert_name,
            labels: names::resource_labels(name, Component::RootShard),
            secret_labels: labels(&[(names::ROOT_SHARD_LABEL, name)]),
            organizations: Vec::new(),
            usages: &[],
            dns_names: Vec::new(),
            issuer: issuer(names::root_shard_ca_name(name, "root")),
            ca: true,
            template: template(
                &rs.spec.common.certificate_templates,
                &format!("{}-ca", ca.as_str()),
            ),
        },
    )
}

fn ca_issuer(
    name: String,
    namespace: &str,
    labels: BTreeMap<String, String>,
    secret: String,
) -> Issuer {
    Issuer {
        metadata: meta(&name, namespace, labels),
        spec: IssuerSpec {
            ca: Some(CaIssuer {
                secret_name: secret,
            }),
            self_signed: None,
        },
        status: None,
    }
}

/// Issuer `<rs>-ca`, signing with Secret `<rs>-ca` or the `caSecretRef`.
pub fn render_root_ca_issuer(rs: &RootShard) -> Issuer {
    let (name, ns) = name_ns(&rs.metadata);
    let secret = names::root_ca_secret_name(
        name,
        rs.spec
            .certificates
            .ca_secret_ref
            .as_ref()
            .map(|r| r.name.as_str()),
    );
    ca_issuer(
        names::root_shard_ca_name(name, "root"),
        ns,
        names::resource_labels(name, Component::RootShard),
        secret,
    )
}

/// Issuer of an intermediate CA, signing with the Secret of the same name.
pub fn render_intermediate_ca_issuer(rs: &RootShard, ca: IntermediateCa) -> Issuer {
    let (name, ns) = name_ns(&rs.metadata);
    ca_issuer(
        ca.name(name),
        ns,
        names::resource_labels(name, Component::RootShard),
        ca.name(name),
    )
}

// ----- root shard leaves --------------------------------------------------------------------

/// The leaf certificates of a root shard, in upstream's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootShardLeaf {
    /// `<rs>-server`: the serving certificate.
    Server,
    /// `<rs>-service-account`: the ServiceAccount token key pair.
    ServiceAccount,
    /// `<rs>-virtual-workspaces`: created as upstream does (not mounted there either).
    VirtualWorkspaces,
    /// `<rs>-logical-cluster-admin`.
    LogicalClusterAdmin,
    /// `<rs>-external-logical-cluster-admin`.
    ExternalLogicalClusterAdmin,
    /// `<rs>-client`: the shard client certificate (`system:masters`).
    Client,
    /// `<rs>-kcp-operator`: the operator's own identity.
    Operator,
}

impl RootShardLeaf {
    /// All leaves, in upstream's order.
    pub const ALL: [RootShardLeaf; 7] = [
        RootShardLeaf::Server,
        RootShardLeaf::ServiceAccount,
        RootShardLeaf::VirtualWorkspaces,
        RootShardLeaf::LogicalClusterAdmin,
        RootShardLeaf::ExternalLogicalClusterAdmin,
        RootShardLeaf::Client,
        RootShardLeaf::Operator,
    ];

    /// The certificate kind, used in its name and as template key.
    pub fn kind(self) -> &'static str {
        match self {
            RootShardLeaf::Server => "server",
            RootShardLeaf::ServiceAccount => "service-account",
            RootShardLeaf::VirtualWorkspaces => "virtual-workspaces",
            RootShardLeaf::LogicalClusterAdmin => "logical-cluster-admin",
            RootShardLeaf::ExternalLogicalClusterAdmin => "external-logical-cluster-admin",
            RootShardLeaf::Client => "client",
            RootShardLeaf::Operator => "kcp-operator",
        }
    }
}

/// A leaf certificate of a root shard (`<rs>-<kind>`).
pub fn render_root_shard_certificate(rs: &RootShard, leaf: RootShardLeaf) -> Certificate {
    let (name, ns) = name_ns(&rs.metadata);
    let cert_name = format!("{name}-{}", leaf.kind());
    let request = root_shard_leaf(rs, &cert_name, leaf).request(
        cert_name,
        name,
        names::resource_labels(name, Component::RootShard),
        labels(&[(names::ROOT_SHARD_LABEL, name)]),
        template(&rs.spec.common.certificate_templates, leaf.kind()),
    );
    build(ns, request)
}

/// The subject, usages, DNS names and signer of each leaf of a root shard (`cert_name` is
/// the ServiceAccount key's subject).
fn root_shard_leaf(rs: &RootShard, cert_name: &str, leaf: RootShardLeaf) -> Leaf {
    let name = name_ns(&rs.metadata).0;
    match leaf {
        RootShardLeaf::Server => Leaf::server(SERVING, root_shard_dns_names(rs)),
        RootShardLeaf::ServiceAccount => Leaf::service_account(cert_name.to_owned()),
        RootShardLeaf::VirtualWorkspaces => Leaf::server(
            &[USAGE_SERVER_AUTH],
            vec![rs.spec.external.hostname.clone()],
        ),
        RootShardLeaf::LogicalClusterAdmin => Leaf::client(
            "logical-cluster-admin",
            &["system:kcp:logical-cluster-admin"],
            IntermediateCa::Client,
        ),
        RootShardLeaf::ExternalLogicalClusterAdmin => Leaf::client(
            "external-logical-cluster-admin",
            &["system:kcp:external-logical-cluster-admin"],
            IntermediateCa::Client,
        ),
        RootShardLeaf::Client => Leaf::client(name, &["system:masters"], IntermediateCa::Client),
        RootShardLeaf::Operator => Leaf::client(
            names::OPERATOR_USERNAME,
            &["system:kcp:admin"],
            IntermediateCa::Client,
        ),
    }
}

/// The root shard's serving DNS names: its Service host, the external host name and the host
/// of `shardBaseURL`, sorted and deduplicated.
fn root_shard_dns_names(rs: &RootShard) -> Vec<String> {
    let (name, ns) = name_ns(&rs.metadata);
    let mut dns = vec![
        names::service_host(
            Component::RootShard,
            name,
            ns,
            &rs.spec.common.cluster_domain,
        ),
        rs.spec.external.hostname.clone(),
    ];
    let host = names::url_host(&rs.spec.common.shard_base_url);
    if !host.is_empty() {
        dns.push(host.to_owned());
    }
    union_sorted(&dns, &[])
}

/// Every Issuer and Certificate of a root shard (without the proxy's), in upstream's order:
/// the root CA certificate (issuerRef mode), the four intermediate CAs, the seven leaves; then
/// the five Issuers.
pub fn render_root_shard_pki(rs: &RootShard) -> (Vec<Certificate>, Vec<Issuer>) {
    let mut certs: Vec<Certificate> = RootShardLeaf::ALL
        .iter()
        .map(|leaf| render_root_shard_certificate(rs, *leaf))
        .collect();
    certs.extend(
        IntermediateCa::ALL
            .iter()
            .map(|ca| render_intermediate_ca_certificate(rs, *ca)),
    );
    certs.extend(render_root_ca_certificate(rs));
    let mut issuers = vec![render_root_ca_issuer(rs)];
    issuers.extend(
        IntermediateCa::ALL
            .iter()
            .map(|ca| render_intermediate_ca_issuer(rs, *ca)),
    );
    (certs, issuers)
}

// ----- shard leaves -------------------------------------------------------------------------

/// The leaf certificates of a shard, in upstream's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardLeaf {
    /// `<s>-server`.
    Server,
    /// `<s>-service-account`.
    ServiceAccount,
    /// `<s>-virtual-workspaces` (created, not mounted, as upstream).
    VirtualWorkspaces,
    /// `<s>-client`: the shard's identity towards the root shard (`shard-<s>`).
    Client,
    /// `<s>-mounts-proxy`.
    MountsProxy,
    /// `<s>-logical-cluster-admin`.
    LogicalClusterAdmin,
    /// `<s>-external-logical-cluster-admin`.
    ExternalLogicalClusterAdmin,
}

impl ShardLeaf {
    /// All leaves, in upstream's order.
    pub const ALL: [ShardLeaf; 7] = [
        ShardLeaf::Server,
        ShardLeaf::ServiceAccount,
        ShardLeaf::VirtualWorkspaces,
        ShardLeaf::Client,
        ShardLeaf::MountsProxy,
        ShardLeaf::LogicalClusterAdmin,
        ShardLeaf::ExternalLogicalClusterAdmin,
    ];

    /// The certificate kind, used in its name and as template key.
    pub fn kind(self) -> &'static str {
        match self {
            ShardLeaf::Server => "server",
            ShardLeaf::ServiceAccount => "service-account",
            ShardLeaf::VirtualWorkspaces => "virtual-workspaces",
            ShardLeaf::Client => "client",
            ShardLeaf::MountsProxy => "mounts-proxy",
            ShardLeaf::LogicalClusterAdmin => "logical-cluster-admin",
            ShardLeaf::ExternalLogicalClusterAdmin => "external-logical-cluster-admin",
        }
    }
}

/// A leaf certificate of a shard (`<s>-<kind>`), issued by the root shard's CAs.
pub fn render_shard_certificate(shard: &Shard, root_shard: &str, leaf: ShardLeaf) -> Certificate {
    let (name, ns) = name_ns(&shard.metadata);
    let cert_name = format!("{name}-{}", leaf.kind());
    let request = shard_leaf(shard, &cert_name, leaf).request(
        cert_name,
        root_shard,
        names::resource_labels(name, Component::Shard),
        labels(&[
            (names::ROOT_SHARD_LABEL, root_shard),
            (names::SHARD_LABEL, name),
        ]),
        template(&shard.spec.common.certificate_templates, leaf.kind()),
    );
    build(ns, request)
}

/// The subject, usages, DNS names and signer of each leaf of a shard (`cert_name` is the
/// ServiceAccount key's subject).
fn shard_leaf(shard: &Shard, cert_name: &str, leaf: ShardLeaf) -> Leaf {
    let (name, ns) = name_ns(&shard.metadata);
    let host = || {
        names::service_host(
            Component::Shard,
            name,
            ns,
            &shard.spec.common.cluster_domain,
        )
    };
    match leaf {
        ShardLeaf::Server => {
            let mut dns = vec!["localhost".to_owned(), host()];
            let base = names::url_host(&shard.spec.common.shard_base_url);
            if !base.is_empty() {
                dns.push(base.to_owned());
            }
            Leaf::server(SERVING, union_sorted(&dns, &[]))
        }
        ShardLeaf::ServiceAccount => Leaf::service_account(cert_name.to_owned()),
        ShardLeaf::VirtualWorkspaces => Leaf::server(&[USAGE_SERVER_AUTH], vec![host()]),
        ShardLeaf::Client => Leaf::client(
            format!("shard-{name}"),
            &["system:masters"],
            IntermediateCa::Client,
        ),
        ShardLeaf::MountsProxy => Leaf::client(
            names::MOUNTS_PROXY_COMMON_NAME,
            &[],
            IntermediateCa::RequestHeaderClient,
        ),
        ShardLeaf::LogicalClusterAdmin => Leaf::client(
            format!("logical-cluster-admin-shard-{name}"),
            &["system:kcp:logical-cluster-admin"],
            IntermediateCa::Client,
        ),
        ShardLeaf::ExternalLogicalClusterAdmin => Leaf::client(
            format!("external-logical-cluster-admin-shard-{name}"),
            &["system:kcp:external-logical-cluster-admin"],
            IntermediateCa::Client,
        ),
    }
}

// ----- proxies ------------------------------------------------------------------------------

/// The certificates of a front-proxy or of a root shard's internal proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyLeaf {
    /// `<pfx>-server`.
    Server,
    /// `<pfx>-kubeconfig`: the proxy's identity towards the shards (`system:masters`).
    Kubeconfig,
    /// `<pfx>-requestheader`: the request-header client certificate.
    RequestHeader,
}

impl ProxyLeaf {
    /// All three, in upstream's order.
    pub const ALL: [ProxyLeaf; 3] = [
        ProxyLeaf::Server,
        ProxyLeaf::Kubeconfig,
        ProxyLeaf::RequestHeader,
    ];

    /// The certificate kind, used in its name and as template key.
    pub fn kind(self) -> &'static str {
        match self {
            ProxyLeaf::Server => "server",
            ProxyLeaf::Kubeconfig => "kubeconfig",
            ProxyLeaf::RequestHeader => "requestheader",
        }
    }
}

/// The name prefix of a proxy's certificates: `<rs>-<fp>` or `<rs>-proxy`.
pub fn proxy_prefix(root_shard: &str, front_proxy: Option<&str>) -> String {
    match front_proxy {
        Some(fp) => format!("{root_shard}-{fp}"),
        None => format!("{root_shard}-proxy"),
    }
}

/// A certificate of the front-proxy `fp` of `rs`, or of the internal proxy when `fp` is
/// `None`.
///
/// The serving certificate's in-cluster name uses the RootShard's `clusterDomain` (upstream
/// hard-codes `svc.cluster.local`, spec section 9 item 4).
pub fn render_proxy_certificate(
    rs: &RootShard,
    fp: Option<&FrontProxy>,
    leaf: ProxyLeaf,
) -> Certificate {
    let (rs_name, ns) = name_ns(&rs.metadata);
    let fp_name = fp.map(|f| name_ns(&f.metadata).0);
    let cert_name = format!("{}-{}", proxy_prefix(rs_name, fp_name), leaf.kind());
    let (instance, component, cn) = match fp_name {
        Some(n) => (n, Component::FrontProxy, names::FRONT_PROXY_COMMON_NAME),
        None => (
            rs_name,
            Component::RootShardProxy,
            names::ROOT_SHARD_PROXY_COMMON_NAME,
        ),
    };
    let mut secret_labels = labels(&[(names::ROOT_SHARD_LABEL, rs_name)]);
    if let Some(n) = fp_name {
        secret_labels.insert(names::FRONT_PROXY_LABEL.to_owned(), n.to_owned());
    }
    let templates = match (fp, &rs.spec.proxy) {
        (Some(f), _) => Some(&f.spec.certificate_templates),
        (None, Some(p)) => Some(&p.certificate_templates),
        (None, None) => None,
    };
    let leaf_spec = match leaf {
        ProxyLeaf::Server => Leaf::server(
            SERVING,
            proxy_dns_names(rs, fp, &component.workload_name(instance)),
        ),
        ProxyLeaf::Kubeconfig => Leaf::client(cn, &["system:masters"], IntermediateCa::Client),
        ProxyLeaf::RequestHeader => Leaf::client(cn, &[], IntermediateCa::RequestHeaderClient),
    };
    let request = leaf_spec.request(
        cert_name,
        rs_name,
        names::resource_labels(instance, component),
        secret_labels,
        templates.and_then(|t| template(t, leaf.kind())),
    );
    build(ns, request)
}

fn proxy_dns_names(rs: &RootShard, fp: Option<&FrontProxy>, service: &str) -> Vec<String> {
    let ns = name_ns(&rs.metadata).1;
    let domain = names::cluster_domain(&rs.spec.common.cluster_domain);
    let mut dns = vec![
        service.to_owned(),
        format!("{service}.{ns}"),
        format!("{service}.{ns}.svc.{domain}"),
    ];
    if let Some(fp) = fp {
        dns.push(rs.spec.external.hostname.clone());
        if !rs.spec.external.private_hostname.is_empty() {
            dns.push(rs.spec.external.private_hostname.clone());
        }
        let external = fp
            .spec
            .external
            .as_ref()
            .map(|e| e.hostname.as_str())
            .unwrap_or_default();
        if !fp.spec.external_hostname.is_empty() {
            // The deprecated field may carry a `:port`, which is no DNS name (upstream puts it
            // into the SANs as is and cert-manager refuses the Certificate).
            dns.push(names::url_host(&fp.spec.external_hostname).to_owned());
        } else if !external.is_empty() {
            dns.push(external.to_owned());
        }
    }
    dns
}

// ----- cache server -------------------------------------------------------------------------

/// Certificate `<cs>-ca`, the cache server's root CA from `certificates.issuerRef`; `None`
/// when the CA comes from `caSecretRef` (upstream panics here, spec section 9 item 1).
pub fn render_cache_server_ca_certificate(cs: &CacheServer) -> Option<Certificate> {
    let reference = cs.spec.certificates.issuer_ref.as_ref()?;
    let (name, ns) = name_ns(&cs.metadata);
    let ca = format!("{name}-ca");
    Some(build(
        ns,
        Request {
            common_name: ca.clone(),
            name: ca,
            labels: names::resource_labels(name, Component::CacheServer),
            secret_labels: labels(&[(names::CACHE_SERVER_LABEL, name)]),
            organizations: Vec::new(),
            usages: &[],
            dns_names: Vec::new(),
            issuer: external_issuer(reference),
            ca: true,
            template: template(&cs.spec.certificate_templates, "root-ca"),
        },
    ))
}

/// Issuer `<cs>-ca`, signing with Secret `<cs>-ca` or the `caSecretRef`.
pub fn render_cache_server_issuer(cs: &CacheServer) -> Issuer {
    let (name, ns) = name_ns(&cs.metadata);
    let secret = names::root_ca_secret_name(
        name,
        cs.spec
            .certificates
            .ca_secret_ref
            .as_ref()
            .map(|r| r.name.as_str()),
    );
    ca_issuer(
        format!("{name}-ca"),
        ns,
        names::resource_labels(name, Component::CacheServer),
        secret,
    )
}

/// The cache server's leaves: `<cs>-server` (`server`) and `<cs>-client-certificate`
/// (`client`, CN `cache-client`, `system:masters`).
pub fn render_cache_server_certificate(cs: &CacheServer, server: bool) -> Certificate {
    let (name, ns) = name_ns(&cs.metadata);
    let (cert_name, cn, orgs, usages, dns, key): (
        String,
        &str,
        Vec<String>,
        &[&str],
        Vec<String>,
        &str,
    ) = if server {
        let host = names::service_host(Component::CacheServer, name, ns, &cs.spec.cluster_domain);
        (
            format!("{name}-server"),
            "",
            Vec::new(),
            SERVING,
            vec!["localhost".to_owned(), host],
            "server",
        )
    } else {
        (
            format!("{name}-client-certificate"),
            "cache-client",
            vec!["system:masters".to_owned()],
            &[
                USAGE_CLIENT_AUTH,
                USAGE_KEY_ENCIPHERMENT,
                USAGE_DIGITAL_SIGNATURE,
            ],
            Vec::new(),
            "client",
        )
    };
    build(
        ns,
        Request {
            name: cert_name,
            labels: names::resource_labels(name, Component::CacheServer),
            secret_labels: labels(&[(names::CACHE_SERVER_LABEL, name)]),
            common_name: cn.to_owned(),
            organizations: orgs,
            usages,
            dns_names: dns,
            issuer: issuer(format!("{name}-ca")),
            ca: false,
            template: template(&cs.spec.certificate_templates, key),
        },
    )
}

// ----- virtual workspaces and kubeconfigs ----------------------------------------------------

/// A VirtualWorkspace certificate: `<vw>-client` (`server` false; CN
/// `<vw>-virtual-workspace`, `system:masters`, labelled like the VirtualWorkspace) or
/// `<vw>-server`.
pub fn render_virtual_workspace_certificate(
    vw: &VirtualWorkspace,
    root_shard: &str,
    server: bool,
) -> Certificate {
    let (name, ns) = name_ns(&vw.metadata);
    let workload = Component::VirtualWorkspace.workload_name(name);
    let secret_labels = labels(&[
        (names::ROOT_SHARD_LABEL, root_shard),
        (names::VIRTUAL_WORKSPACE_LABEL, name),
    ]);
    let req = if server {
        let host = names::service_host(
            Component::VirtualWorkspace,
            name,
            ns,
            &vw.spec.cluster_domain,
        );
        Request {
            name: format!("{name}-server"),
            labels: names::resource_labels(name, Component::VirtualWorkspace),
            secret_labels,
            common_name: String::new(),
            organizations: Vec::new(),
            usages: SERVING,
            dns_names: vec!["localhost".to_owned(), host],
            issuer: issuer(IntermediateCa::Server.name(root_shard)),
            ca: false,
            template: template(&vw.spec.certificate_templates, "server"),
        }
    } else {
        Request {
            name: format!("{name}-client"),
            labels: vw.metadata.labels.clone().unwrap_or_default(),
            secret_labels,
            common_name: workload,
            organizations: vec!["system:masters".to_owned()],
            usages: CLIENT,
            dns_names: Vec::new(),
            issuer: issuer(IntermediateCa::Client.name(root_shard)),
            ca: false,
            template: template(&vw.spec.certificate_templates, "client"),
        }
    };
    build(ns, req)
}

/// The group every Kubeconfig's identity carries: `kubeconfig:<name>`.
pub fn kubeconfig_group(kc: &Kubeconfig) -> String {
    format!("kubeconfig:{}", name_ns(&kc.metadata).0)
}

/// Certificate `kubeconfig-cert-<kc>`: CN `spec.username`, O the sorted unique groups plus
/// `kubeconfig:<kc>`, lifetime `spec.validity` (no renewBefore), issued by `<rs>-client-ca`,
/// labelled like the Kubeconfig.
pub fn render_kubeconfig_certificate(kc: &Kubeconfig, root_shard: &str) -> Certificate {
    let (name, ns) = name_ns(&kc.metadata);
    let mut cert = build(
        ns,
        Request {
            name: kc.certificate_name(),
            labels: kc.metadata.labels.clone().unwrap_or_default(),
            secret_labels: labels(&[(names::KUBECONFIG_LABEL, name)]),
            common_name: kc.spec.username.clone(),
            organizations: union_sorted(&kc.spec.groups, &[kubeconfig_group(kc)]),
            usages: CLIENT,
            dns_names: Vec::new(),
            issuer: issuer(IntermediateCa::Client.name(root_shard)),
            ca: false,
            template: None,
        },
    );
    cert.spec.duration = Some(duration::normalize(&kc.spec.validity));
    cert.spec.renew_before = None;
    if let Some(t) = &kc.spec.certificate_template {
        apply_template(&mut cert, t);
    }
    cert
}
