//! A plugin's recorder: which calls are sampled, a bounded ring of their lines in memory, and
//! the files they are flushed to (`<dir>/<8 digits>.jsonl`, oldest removed past the bounds),
//! so a record survives a restart of the process but never fills the disk.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::RecordLine;

/// How often lines in memory are written to the files.
pub const FLUSH_EVERY: Duration = Duration::from_secs(2);
/// Files per record: the bounds are split over this many, so dropping the oldest frees a
/// quarter at a time.
const SEGMENTS: u64 = 4;

/// What an entry's `record` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordConfig {
    /// The share of calls recorded, 0 to 1.
    pub sample_rate: f64,
    /// The most lines kept (in memory, and on disk).
    pub max_entries: u64,
    /// The most bytes kept (in memory, and on disk).
    pub max_bytes: u64,
}

impl Default for RecordConfig {
    fn default() -> Self {
        Self {
            sample_rate: 0.01,
            max_entries: 10_000,
            max_bytes: 16 << 20,
        }
    }
}

pub struct Recorder {
    config: RecordConfig,
    /// Every `stride`-th call is recorded (0: none): deterministic, one atomic add per call.
    stride: u64,
    seen: AtomicU64,
    ring: Mutex<Ring>,
    dir: Option<PathBuf>,
    files: Mutex<Files>,
    recorded: AtomicU64,
    dropped: AtomicU64,
}

#[derive(Default)]
struct Ring {
    lines: VecDeque<String>,
    bytes: u64,
}

/// The segment files on disk, oldest first: (number, lines, bytes).
#[derive(Default)]
struct Files {
    segments: VecDeque<(u64, u64, u64)>,
}

/// What a recorder did, for its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecorderStats {
    pub recorded: u64,
    /// Lines dropped from memory before they were written (the ring was full).
    pub dropped: u64,
}

impl Recorder {
    /// A recorder writing under `dir` (created; files there already are kept, within the
    /// bounds), or in memory only without one. Flushes every [`FLUSH_EVERY`] from a task on the
    /// current Tokio runtime, if there is one, until the recorder is dropped.
    pub fn new(config: RecordConfig, dir: Option<&Path>) -> std::io::Result<Arc<Self>> {
        let stride = if config.sample_rate <= 0.0 {
            0
        } else {
            (1.0 / config.sample_rate.min(1.0)).round().max(1.0) as u64
        };
        let files = match dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                scan(dir)?
            }
            None => Files::default(),
        };
        let recorder = Arc::new(Self {
            config,
            stride,
            seen: AtomicU64::new(0),
            ring: Mutex::new(Ring::default()),
            dir: dir.map(Path::to_path_buf),
            files: Mutex::new(files),
            recorded: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        });
        recorder.prune()?;
        if recorder.dir.is_some()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(flush_loop(Arc::downgrade(&recorder)));
        }
        Ok(recorder)
    }

    pub fn config(&self) -> RecordConfig {
        self.config
    }

    /// Whether this call is recorded.
    pub fn sample(&self) -> bool {
        self.stride != 0
            && self
                .seen
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(self.stride)
    }

    /// Keeps a line; past the memory bounds the oldest is dropped.
    pub fn push(&self, line: &RecordLine) {
        let Ok(text) = serde_json::to_string(line) else {
            return;
        };
        let mut ring = self.ring.lock().expect("record ring lock");
        ring.bytes += text.len() as u64 + 1;
        ring.lines.push_back(text);
        while ring.lines.len() as u64 > self.config.max_entries
            || (ring.bytes > self.config.max_bytes && ring.lines.len() > 1)
        {
            if let Some(old) = ring.lines.pop_front() {
                ring.bytes -= old.len() as u64 + 1;
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.recorded.fetch_add(1, Ordering::Relaxed);
    }

    pub fn stats(&self) -> RecorderStats {
        RecorderStats {
            recorded: self.recorded.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }

    /// The lines in memory (not yet flushed, or all of them without a directory).
    pub fn in_memory(&self) -> Vec<String> {
        let ring = self.ring.lock().expect("record ring lock");
        ring.lines.iter().cloned().collect()
    }

    /// Every line the record holds, oldest first: its files' (a file pruned meanwhile is
    /// skipped), then those still in memory. Lines a flush is moving to a file while this
    /// reads may be missed: a sample of a sample, for a replay.
    pub fn all_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(dir) = &self.dir {
            // No file is appended to or pruned while they are read: flushing holds this lock.
            let _files = self.files.lock().expect("record files lock");
            for file in segment_files(dir).unwrap_or_default() {
                if let Ok(text) = std::fs::read_to_string(&file) {
                    lines.extend(text.lines().map(str::to_string));
                }
            }
        }
        lines.extend(self.in_memory());
        lines
    }

    /// Writes the lines in memory to the files (nothing without a directory).
    pub fn flush(&self) -> std::io::Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let lines: Vec<String> = {
            let mut ring = self.ring.lock().expect("record ring lock");
            ring.bytes = 0;
            ring.lines.drain(..).collect()
        };
        if lines.is_empty() {
            return Ok(());
        }
        let per_segment_lines = (self.config.max_entries / SEGMENTS).max(1);
        let per_segment_bytes = (self.config.max_bytes / SEGMENTS).max(1);
        let mut files = self.files.lock().expect("record files lock");
        let mut lines = lines.into_iter().peekable();
        while lines.peek().is_some() {
            let full = files
                .segments
                .back()
                .is_none_or(|&(_, n, b)| n >= per_segment_lines || b >= per_segment_bytes);
            if full {
                let next = files.segments.back().map_or(0, |s| s.0 + 1);
                files.segments.push_back((next, 0, 0));
            }
            let segment = files.segments.back_mut().expect("a segment was just made");
            let mut text = String::new();
            while segment.1 < per_segment_lines && segment.2 < per_segment_bytes {
                let Some(line) = lines.next() else { break };
                segment.1 += 1;
                segment.2 += line.len() as u64 + 1;
                text.push_str(&line);
                text.push('\n');
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(segment_path(dir, segment.0))?
                .write_all(text.as_bytes())?;
        }
        drop(files);
        self.prune()
    }

    /// Removes the oldest files while the record holds more than its bounds.
    fn prune(&self) -> std::io::Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let mut files = self.files.lock().expect("record files lock");
        loop {
            let (lines, bytes) = files
                .segments
                .iter()
                .fold((0, 0), |(l, b), s| (l + s.1, b + s.2));
            if files.segments.len() <= 1
                || (lines <= self.config.max_entries && bytes <= self.config.max_bytes)
            {
                return Ok(());
            }
            let (oldest, _, _) = files.segments.pop_front().expect("more than one");
            match std::fs::remove_file(segment_path(dir, oldest)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!("writing the last recorded calls: {e}");
        }
    }
}

async fn flush_loop(recorder: Weak<Recorder>) {
    loop {
        tokio::time::sleep(FLUSH_EVERY).await;
        let Some(r) = recorder.upgrade() else { return };
        let flushed = tokio::task::spawn_blocking(move || r.flush()).await;
        if let Ok(Err(e)) = flushed {
            tracing::warn!("writing recorded calls: {e}");
        }
    }
}

fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:08}.jsonl"))
}

/// The segment files in `dir`, oldest first, with their lines and bytes.
fn scan(dir: &Path) -> std::io::Result<Files> {
    let mut segments = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(n) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jsonl"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        let text = std::fs::read(&path)?;
        let lines = text.iter().filter(|b| **b == b'\n').count() as u64;
        segments.push((n, lines, text.len() as u64));
    }
    segments.sort();
    Ok(Files {
        segments: segments.into(),
    })
}

/// The record files under `dir`, oldest first (`plugin record export`).
pub fn segment_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    Ok(scan(dir)?
        .segments
        .into_iter()
        .map(|(n, _, _)| segment_path(dir, n))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Answer, ReconcileRecord, RecordedCall, RecordedError, RecordedPlugin};
    use crate::wire::RequestKey;

    fn line(i: usize) -> RecordLine {
        RecordLine {
            format: crate::record::FORMAT,
            time: "t".into(),
            plugin: RecordedPlugin {
                name: "p".into(),
                sha256: "s".into(),
            },
            latency_micros: 1,
            call: RecordedCall::Reconcile {
                input: ReconcileRecord {
                    controller: "c".into(),
                    key: RequestKey {
                        namespace: None,
                        name: format!("n{i}"),
                    },
                    object: None,
                    reads: vec![],
                },
                answer: Answer::Error(RecordedError {
                    kind: "k".into(),
                    message: "m".into(),
                }),
            },
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("odh-recorder-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn on_disk(dir: &Path) -> Vec<String> {
        segment_files(dir)
            .unwrap()
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap()
                    .lines()
                    .map(|l| RecordLine::parse(l).unwrap().name().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn sampling_records_one_call_in_a_stride() {
        let every = |rate| {
            let r = Recorder::new(
                RecordConfig {
                    sample_rate: rate,
                    ..Default::default()
                },
                None,
            )
            .unwrap();
            (0..1000).filter(|_| r.sample()).count()
        };
        assert_eq!(every(0.01), 10);
        assert_eq!(every(1.0), 1000);
        assert_eq!(every(0.0), 0);
        assert_eq!(every(0.25), 250);
    }

    #[test]
    fn memory_and_disk_keep_the_newest_within_their_bounds() {
        let dir = tmp("bounds");
        let config = RecordConfig {
            sample_rate: 1.0,
            max_entries: 8,
            max_bytes: 1 << 20,
        };
        let r = Recorder::new(config, Some(&dir)).unwrap();
        for i in 0..20 {
            r.push(&line(i));
        }
        assert_eq!(r.in_memory().len(), 8, "the ring holds max_entries");
        assert_eq!(r.stats().dropped, 12);
        r.flush().unwrap();
        assert!(r.in_memory().is_empty());
        for i in 20..27 {
            r.push(&line(i));
            r.flush().unwrap();
        }
        let kept = on_disk(&dir);
        assert!(kept.len() <= 8, "{kept:?}");
        assert_eq!(kept.last().map(String::as_str), Some("n26"));
        assert!(
            kept.len() >= 6,
            "at most a segment (2 lines) below the bound: {kept:?}"
        );
        // A new recorder (a restart) keeps what is there, within the bounds.
        drop(r);
        let r = Recorder::new(config, Some(&dir)).unwrap();
        r.push(&line(99));
        r.flush().unwrap();
        let kept = on_disk(&dir);
        assert!(kept.len() <= 8 && kept.last().map(String::as_str) == Some("n99"));

        let small = RecordConfig {
            max_bytes: 600,
            max_entries: 1000,
            ..config
        };
        let dir = tmp("bytes");
        let r = Recorder::new(small, Some(&dir)).unwrap();
        for i in 0..50 {
            r.push(&line(i));
            r.flush().unwrap();
        }
        let bytes: u64 = segment_files(&dir)
            .unwrap()
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum();
        assert!(bytes <= 600, "{bytes} bytes on disk");
    }
}
