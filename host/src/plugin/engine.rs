//! The one wasmtime `Engine` of the process: pooling allocator, epoch interruption, a linker
//! with the host's imports, and compiled components deduplicated by sha256 and cached on disk.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::bindings::ScopedPolicy;
use super::call_state::CallState;

/// The interval of the epoch ticker: deadlines are enforced to within about this much.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Bytes of each pooled memory reset in place (dirty pages only) rather than given back.
const KEEP_RESIDENT_BYTES: usize = 2 * 1024 * 1024;

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Instances that may exist at once across all plugins (pooling allocator slots).
    pub max_instances: u32,
    /// The largest memory limit any plugin may be given.
    pub max_memory_mib: usize,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            cache_dir: None,
            max_instances: 128,
            max_memory_mib: 512,
        }
    }
}

struct Ticker {
    stop: Arc<AtomicBool>,
    /// When the ticker started and how many ticks it has delivered: the epoch never runs ahead
    /// of `start + ticks * EPOCH_TICK`, which lets calls turn deadlines into epochs exactly.
    start: std::time::Instant,
    ticks: Arc<std::sync::atomic::AtomicU64>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Shared by every plugin; cheap to clone.
#[derive(Clone)]
pub struct PluginEngine {
    inner: Arc<EngineInner>,
}

struct EngineInner {
    engine: Engine,
    linker: Linker<CallState>,
    options: EngineOptions,
    compiled: Mutex<HashMap<String, Component>>,
    _ticker: Ticker,
}

impl PluginEngine {
    pub fn new(options: EngineOptions) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.parallel_compilation(true);
        let mut pool = PoolingAllocationConfig::default();
        let n = options.max_instances;
        pool.total_component_instances(n);
        // A Rust wasip2 component is a handful of core instances (the program, the WASI adapter
        // and its shims), with one or two memories and a few tables.
        pool.total_core_instances(n * 8);
        pool.total_memories(n * 2);
        pool.total_tables(n * 4);
        pool.max_core_instances_per_component(16);
        pool.max_memories_per_component(4);
        pool.max_tables_per_component(8);
        pool.max_memory_size(options.max_memory_mib * 1024 * 1024);
        // A fresh instance per call reuses a pooled slot. With PAGEMAP_SCAN (Linux 6.7+) the
        // pages the last call dirtied are reset in place with memset, instead of madvise +
        // page faults on every call; elsewhere `Auto` falls back to madvise.
        pool.pagemap_scan(wasmtime::Enabled::Auto);
        pool.linear_memory_keep_resident(KEEP_RESIDENT_BYTES);
        pool.table_keep_resident(KEEP_RESIDENT_BYTES / 64);
        // Bounds what warm slots keep resident: at most this many × KEEP_RESIDENT_BYTES.
        pool.max_unused_warm_slots(32);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config)
            .map_err(|e| anyhow::Error::from(e).context("creating the wasmtime engine"))?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
        ScopedPolicy::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;

        let stop = Arc::new(AtomicBool::new(false));
        let start = std::time::Instant::now();
        let delivered = Arc::new(std::sync::atomic::AtomicU64::new(0));
        {
            let delivered = delivered.clone();
            let engine = engine.weak();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("wasm-epoch".into())
                .spawn(move || {
                    // Ticks follow the wall clock, not the number of sleeps: a loaded machine
                    // oversleeps, and counting sleeps would let deadlines drift late.
                    let mut ticks = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        let Some(e) = engine.upgrade() else { break };
                        let due = (start.elapsed().as_nanos() / EPOCH_TICK.as_nanos()) as u64;
                        while ticks < due {
                            e.increment_epoch();
                            ticks += 1;
                            delivered.store(ticks, Ordering::Release);
                        }
                    }
                })?;
        }
        Ok(Self {
            inner: Arc::new(EngineInner {
                engine,
                linker,
                options,
                compiled: Mutex::new(HashMap::new()),
                _ticker: Ticker {
                    stop,
                    start,
                    ticks: delivered,
                },
            }),
        })
    }

    /// Epoch ticks from now until `deadline` has surely passed: never early, at most about one
    /// tick late (plus the ticker thread's wake-up latency).
    pub(super) fn deadline_ticks(&self, deadline: Duration) -> u64 {
        let t = &self.inner._ticker;
        let current = t.ticks.load(Ordering::Acquire);
        let target = ((t.start.elapsed() + deadline).as_nanos() / EPOCH_TICK.as_nanos()) as u64 + 1;
        target.saturating_sub(current).max(1)
    }

    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub(super) fn linker(&self) -> &Linker<CallState> {
        &self.inner.linker
    }

    pub fn options(&self) -> &EngineOptions {
        &self.inner.options
    }

    /// Compiles a component, reusing an earlier compilation of the same bytes (in memory, then
    /// on disk). Returns the component and the hex sha256 of the bytes.
    pub fn compile(&self, bytes: &[u8]) -> anyhow::Result<(Component, String)> {
        let sha = hex::encode(Sha256::digest(bytes));
        if let Some(c) = self
            .inner
            .compiled
            .lock()
            .expect("compiled cache lock")
            .get(&sha)
        {
            return Ok((c.clone(), sha));
        }
        let component = self.compile_uncached(bytes, &sha)?;
        self.inner
            .compiled
            .lock()
            .expect("compiled cache lock")
            .insert(sha.clone(), component.clone());
        Ok((component, sha))
    }

    /// Compiles distinct components in parallel (start-up: every plugin at once).
    pub fn compile_all(&self, sources: &[&[u8]]) -> Vec<anyhow::Result<(Component, String)>> {
        std::thread::scope(|s| {
            let handles: Vec<_> = sources
                .iter()
                .map(|b| s.spawn(move || self.compile(b)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("compilation panicked")))
                })
                .collect()
        })
    }

    fn cache_path(&self, sha: &str) -> Option<PathBuf> {
        let dir = self.inner.options.cache_dir.as_ref()?;
        let mut h = std::hash::DefaultHasher::new();
        self.inner
            .engine
            .precompile_compatibility_hash()
            .hash(&mut h);
        Some(dir.join(format!("{sha}-{:016x}.cwasm", h.finish())))
    }

    fn compile_uncached(&self, bytes: &[u8], sha: &str) -> anyhow::Result<Component> {
        let engine = &self.inner.engine;
        let cached = self.cache_path(sha);
        if let Some(path) = cached.as_ref().filter(|p| p.exists()) {
            // SAFETY: the file was written by `Component::serialize` of an engine with the same
            // compatibility hash (it is in the file name), into a directory only we write.
            match unsafe { Component::deserialize_file(engine, path) } {
                Ok(c) => return Ok(c),
                Err(e) => {
                    tracing::warn!(path = %path.display(), "ignoring a bad compiled-plugin cache entry: {e:#}")
                }
            }
        }
        let component = Component::new(engine, bytes)
            .map_err(|e| anyhow::Error::from(e).context("not a valid WebAssembly component"))?;
        if let Some(path) = cached
            && let Err(e) = write_cache(&path, &component)
        {
            tracing::warn!(path = %path.display(), "could not cache a compiled plugin: {e:#}");
        }
        Ok(component)
    }
}

fn write_cache(path: &std::path::Path, component: &Component) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, component.serialize()?)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
