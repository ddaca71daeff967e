//! What the benchmarks that run the host binary share: which binary, its CPU and memory, free
//! ports, where results go.

#![allow(dead_code)] // each bench uses part of it

use std::path::PathBuf;

/// The host binary to measure: `ODH_BENCH_HOST_BIN` (e.g. an older build, to compare side by
/// side in one run) or the one this bench was built with.
pub fn host_binary() -> PathBuf {
    std::env::var_os("ODH_BENCH_HOST_BIN")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_odh-model-controller")))
}

/// Which C library the code measured in this process was built for: a bench built with
/// `--target x86_64-unknown-linux-musl` measures the image's allocator.
pub fn bench_binary_kind() -> &'static str {
    if cfg!(target_env = "musl") {
        "musl (static, in-process)"
    } else {
        "glibc (in-process)"
    }
}

/// The measured host binary for the results: its path, and whether it is the static musl build
/// (no program interpreter, like the image's) or a dynamically linked glibc one.
pub fn host_binary_info() -> serde_json::Value {
    let path = host_binary();
    // The interpreter's path sits in the first page of a dynamically linked ELF.
    let head = std::fs::File::open(&path)
        .and_then(|f| {
            use std::io::Read;
            let mut head = Vec::with_capacity(4096);
            f.take(4096).read_to_end(&mut head).map(|_| head)
        })
        .unwrap_or_default();
    let dynamic = head.windows(8).any(|w| w == b"ld-linux");
    let modified = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    serde_json::json!({
        "path": path.display().to_string(),
        "kind": if dynamic { "glibc (dynamic)" } else { "musl (static)" },
        "modified_unix": modified,
    })
}

/// A name for the measured binary in the results: `ODH_BENCH_LABEL`, else `current`.
pub fn label() -> String {
    std::env::var("ODH_BENCH_LABEL").unwrap_or_else(|_| "current".into())
}

/// (user + system CPU seconds, peak RSS in MiB) of a process so far.
pub fn usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let hz = 100.0; // USER_HZ on Linux
    let cpu = (ticks(11) + ticks(12)) / hz;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm_kib = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    (cpu, hwm_kib / 1024.0)
}

/// Waits until process `pid` is idle: `QUIET` polls in a row, `POLL` apart, in which it used at
/// most one clock tick of CPU (4% of a core), or `max`. A server that answers before its
/// start-up work is done (caches listing, first reconciles) would otherwise bill that work to
/// whatever is measured first. Two seconds, because a start-up waits too: ours serves webhooks
/// about a second before its caches have synced and its controllers start, idle in between.
/// Returns how long it took and whether it settled.
pub async fn settled(pid: u32, max: std::time::Duration) -> (std::time::Duration, bool) {
    const POLL: std::time::Duration = std::time::Duration::from_millis(250);
    const QUIET: u32 = 8;
    let started = std::time::Instant::now();
    let (mut last, _) = usage(pid);
    let mut quiet = 0;
    while started.elapsed() < max {
        tokio::time::sleep(POLL).await;
        let (now, _) = usage(pid);
        quiet = if now - last <= 0.011 { quiet + 1 } else { 0 };
        last = now;
        if quiet == QUIET {
            return (started.elapsed(), true);
        }
    }
    (started.elapsed(), false)
}

/// A loopback address with a port nobody listens on now.
pub fn free_addr() -> String {
    format!("127.0.0.1:{}", odh_test_support::net::free_port())
}

/// Where results go: `ODH_BENCH_OUT_DIR`, else target/bench; created.
pub fn out_dir() -> PathBuf {
    let dir = std::env::var_os("ODH_BENCH_OUT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| odh_test_support::workspace_root().join("target/bench"));
    std::fs::create_dir_all(&dir).expect("target/bench");
    dir
}

/// Writes `value` to target/bench/`name`.json.
pub fn write_json(name: &str, value: &serde_json::Value) {
    let mut value = value.clone();
    if let Some(fields) = value.as_object_mut() {
        // Every figure says which build it came from (issue #35: the image runs the musl one).
        fields.insert("bench_process".into(), bench_binary_kind().into());
    }
    let value = &value;
    let out = out_dir().join(format!("{name}.json"));
    std::fs::write(&out, serde_json::to_string_pretty(value).expect("json")).expect("write");
    println!("wrote {}", out.display());
}

/// A self-signed serving certificate for 127.0.0.1 in `dir` (tls.crt, tls.key).
pub fn write_serving_cert(dir: &std::path::Path) {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
        .expect("certificate");
    std::fs::create_dir_all(dir).expect("cert dir");
    std::fs::write(dir.join("tls.crt"), cert.cert.pem()).expect("tls.crt");
    std::fs::write(dir.join("tls.key"), cert.signing_key.serialize_pem()).expect("tls.key");
}

/// A metric's value summed over its series in a Prometheus text exposition.
pub fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// `GET http://addr/path` with a plain TCP stream: (status code, body).
pub fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    let code = reply
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = reply
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((code, body))
}

/// A test apiserver of this run's own (`ODH_TEST_DIR`), so objects earlier runs left behind
/// (the test apiserver runs no garbage collector or namespace controller) do not add to what
/// the host reconciles at start. Call first thing in `main`, before any thread exists.
pub fn own_apiserver(name: &str) -> PathBuf {
    let dir = out_dir().join("clusters").join(name);
    stop_apiserver(&dir);
    std::fs::create_dir_all(&dir).expect("cluster dir");
    // SAFETY: called at the start of main, while the process has a single thread.
    unsafe { std::env::set_var("ODH_TEST_DIR", &dir) };
    dir
}

/// The process of the apiserver (and its etcd) of [`own_apiserver`], once started.
pub fn apiserver_pid(dir: &std::path::Path) -> anyhow::Result<u32> {
    let ready = std::fs::read_to_string(dir.join("ready.json"))?;
    serde_json::from_str::<serde_json::Value>(&ready)?
        .get("pid")
        .and_then(|p| p.as_u64())
        .and_then(|p| u32::try_from(p).ok())
        .ok_or_else(|| anyhow::anyhow!("no pid in {}", dir.join("ready.json").display()))
}

/// Stops the apiserver of [`own_apiserver`] and removes its data.
pub fn stop_apiserver(dir: &std::path::Path) {
    if let Ok(pid) = apiserver_pid(dir) {
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
        for _ in 0..100 {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

pub mod floor;
pub mod load;
pub mod peer;
pub mod storm;
