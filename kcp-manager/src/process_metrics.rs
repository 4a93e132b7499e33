//! The process families Prometheus' Go client exports and dashboards read:
//! `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_cpu_seconds_total`,
//! `process_open_fds`, `process_max_fds` and `process_start_time_seconds`, read from `/proc` at
//! each scrape (Linux, where the binaries run). Where `/proc` cannot be read a family is left out
//! rather than reported as zero.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// The collector; register it once per registry.
#[derive(Debug, Default)]
pub struct ProcessCollector;

/// What `/proc/self` says now.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ProcessStats {
    /// Resident set size in bytes.
    pub resident_bytes: Option<f64>,
    /// Virtual memory size in bytes.
    pub virtual_bytes: Option<f64>,
    /// User and system CPU time in seconds.
    pub cpu_seconds: Option<f64>,
    /// Open file descriptors.
    pub open_fds: Option<f64>,
    /// The soft limit of file descriptors.
    pub max_fds: Option<f64>,
    /// Start time, seconds since the Unix epoch.
    pub start_time_seconds: Option<f64>,
}

/// Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on every Linux the binaries run on).
const TICKS_PER_SECOND: f64 = 100.0;
/// The page size `/proc/<pid>/stat`'s rss counts in (4 KiB on x86_64 and arm64 Linux).
const PAGE_BYTES: f64 = 4096.0;

impl ProcessStats {
    /// Reads `/proc/self`.
    pub fn read() -> Self {
        let stat = std::fs::read_to_string("/proc/self/stat").ok();
        let uptime = std::fs::read_to_string("/proc/uptime").ok();
        let limits = std::fs::read_to_string("/proc/self/limits").ok();
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as f64);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .ok();
        let mut stats = stat
            .as_deref()
            .map(|s| parse_stat(s, uptime.as_deref(), now))
            .unwrap_or_default();
        stats.open_fds = open_fds;
        stats.max_fds = limits.as_deref().and_then(parse_max_fds);
        stats
    }
}

/// The fields of `/proc/<pid>/stat` after the command name (which may hold spaces).
fn parse_stat(stat: &str, uptime: Option<&str>, now: Option<f64>) -> ProcessStats {
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return ProcessStats::default();
    };
    // After ")": state is field 3, so field n is at index n - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let number = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
    let cpu_seconds = number(14)
        .zip(number(15))
        .map(|(user, system)| (user + system) / TICKS_PER_SECOND);
    let boot = uptime
        .and_then(|u| u.split_whitespace().next())
        .and_then(|u| u.parse::<f64>().ok())
        .zip(now)
        .map(|(up, now)| now - up);
    ProcessStats {
        resident_bytes: number(24).map(|pages| pages * PAGE_BYTES),
        virtual_bytes: number(23),
        cpu_seconds,
        start_time_seconds: boot
            .zip(number(22))
            .map(|(boot, ticks)| boot + ticks / TICKS_PER_SECOND),
        ..ProcessStats::default()
    }
}

fn parse_max_fds(limits: &str) -> Option<f64> {
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|soft| soft.parse().ok())
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: Option<f64>,
) -> std::fmt::Result {
    let Some(value) = value else { return Ok(()) };
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let s = ProcessStats::read();
        let e = &mut encoder;
        gauge(
            e,
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            s.resident_bytes,
        )?;
        gauge(
            e,
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            s.virtual_bytes,
        )?;
        gauge(
            e,
            "process_open_fds",
            "Number of open file descriptors.",
            s.open_fds,
        )?;
        gauge(
            e,
            "process_max_fds",
            "Maximum number of open file descriptors.",
            s.max_fds,
        )?;
        gauge(
            e,
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            s.start_time_seconds,
        )?;
        if let Some(cpu) = s.cpu_seconds {
            let metric = ConstCounter::new(cpu);
            let help = "Total user and system CPU time spent in seconds.";
            metric.encode(e.encode_descriptor(
                "process_cpu_seconds",
                help,
                None,
                metric.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_spaces_in_the_name_is_read_field_by_field() {
        // pid (comm) state ppid ... utime=14 stime=15 ... starttime=22 vsize=23 rss=24
        let mut fields = vec!["S".to_owned()];
        fields.extend((4..=30).map(|n| n.to_string()));
        fields[14 - 3] = "250".into();
        fields[15 - 3] = "50".into();
        fields[22 - 3] = "1000".into();
        fields[23 - 3] = "8192".into();
        fields[24 - 3] = "3".into();
        let stat = format!("42 (my (odd) name) {}", fields.join(" "));
        let s = parse_stat(&stat, Some("100.0 50.0"), Some(1_000.0));
        assert_eq!(s.cpu_seconds, Some(3.0));
        assert_eq!(s.resident_bytes, Some(3.0 * 4096.0));
        assert_eq!(s.virtual_bytes, Some(8192.0));
        assert_eq!(s.start_time_seconds, Some(900.0 + 10.0));
    }

    #[test]
    fn the_soft_open_files_limit_is_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n";
        assert_eq!(parse_max_fds(limits), Some(1024.0));
    }

    #[test]
    fn this_process_reports_every_family() {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(ProcessCollector));
        let text = kcp_core::runtime::metrics::encode(&registry);
        for family in [
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_max_fds",
            "process_start_time_seconds",
            "process_virtual_memory_bytes",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(family)),
                "{family} missing:\n{text}"
            );
        }
    }
}
