//! The `process_*` family Prometheus' Go client exports for every process (upstream's
//! controller has them by default), read from `/proc/self` at each scrape, and of its `go_*`
//! runtime family the one metric a Rust process has too: `go_threads`, the OS threads (what
//! dashboards and upstream's E2E-13 look for under `go_`). Elsewhere than Linux nothing is
//! rendered.

use std::fmt::Write as _;

/// The family in the Prometheus text format; empty where `/proc` is not there.
pub fn render() -> String {
    let Some(sample) = Sample::read() else {
        return String::new();
    };
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "{name} {value}");
    };
    metric(
        "process_cpu_seconds_total",
        "counter",
        "Total user and system CPU time spent in seconds.",
        sample.cpu_seconds,
    );
    metric(
        "process_resident_memory_bytes",
        "gauge",
        "Resident memory size in bytes.",
        sample.resident_bytes,
    );
    metric(
        "process_virtual_memory_bytes",
        "gauge",
        "Virtual memory size in bytes.",
        sample.virtual_bytes,
    );
    metric(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since unix epoch in seconds.",
        sample.start_time_seconds,
    );
    if let Some(open) = sample.open_fds {
        metric(
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            open,
        );
    }
    if let Some(max) = sample.max_fds {
        metric(
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
            max,
        );
    }
    if let Some(threads) = sample.threads {
        metric(
            "go_threads",
            "gauge",
            "Number of OS threads created.",
            threads,
        );
    }
    out
}

struct Sample {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    start_time_seconds: f64,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
    threads: Option<f64>,
}

/// Clock ticks per second and the page size: what `/proc/self/stat` counts in. Linux fixes
/// USER_HZ at 100 on every architecture the host is built for; pages are 4 KiB except where
/// the kernel says otherwise (read from the auxiliary vector through `/proc/self/auxv` would be
/// exact; `statm` × 4096 is what procfs readers assume on x86-64 and arm64's default).
const TICKS_PER_SECOND: f64 = 100.0;
const PAGE_SIZE: f64 = 4096.0;

impl Sample {
    fn read() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let fields = stat_fields(&stat)?;
        let field = |i: usize| -> Option<f64> { fields.get(i)?.parse().ok() };
        // After the command: state is field 3 (index 0 here); utime 14, stime 15,
        // starttime 22, vsize 23, rss 24 (1-based, proc(5)).
        let utime = field(14 - 3)?;
        let stime = field(15 - 3)?;
        let start_ticks = field(22 - 3)?;
        let vsize = field(23 - 3)?;
        let rss_pages = field(24 - 3)?;
        let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })?;
        Some(Self {
            cpu_seconds: (utime + stime) / TICKS_PER_SECOND,
            resident_bytes: rss_pages * PAGE_SIZE,
            virtual_bytes: vsize,
            start_time_seconds: boot + start_ticks / TICKS_PER_SECOND,
            open_fds: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|d| d.count() as f64),
            max_fds: std::fs::read_to_string("/proc/self/limits")
                .ok()
                .and_then(|l| max_open_files(&l)),
            threads: std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| threads(&s)),
        })
    }
}

/// The fields of `/proc/self/stat` after the command name (which may hold spaces and
/// parentheses: everything up to the last `)`).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let after = stat.get(stat.rfind(')')? + 1..)?;
    Some(after.split_whitespace().collect())
}

/// The soft limit of "Max open files" in `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<f64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The `Threads:` count of `/proc/self/status`.
fn threads(status: &str) -> Option<f64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse() {
        let stat = "42 (odh (model) ctl) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 1200 104857600 2560 18446744073709551615";
        let fields = stat_fields(stat).unwrap();
        assert_eq!(fields[0], "S");
        assert_eq!(fields[14 - 3], "250");
        assert_eq!(fields[24 - 3], "2560");
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\n";
        assert_eq!(max_open_files(limits), Some(1_048_576.0));
        assert_eq!(threads("Name:\todh\nThreads:\t7\nSigQ:\t0/1\n"), Some(7.0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_measured() {
        let text = render();
        for name in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
            "process_start_time_seconds",
            "process_open_fds",
            "process_max_fds",
            "go_threads",
        ] {
            let value: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name} ")))
                .unwrap_or_else(|| panic!("{name} in {text}"))
                .parse()
                .unwrap();
            assert!(value >= 0.0, "{name}");
        }
        assert!(text.contains("process_resident_memory_bytes "));
    }
}
