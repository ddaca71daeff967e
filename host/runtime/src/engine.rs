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

use crate::bindings::StagedPolicy;
use crate::call_state::CallState;

/// The interval of the epoch ticker: deadlines are enforced to within about this much.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Where the image keeps the built-ins `plugin precompile` compiled when it was built.
pub const PRECOMPILED_DIR: &str = "/usr/lib/odh-model-controller/plugins";

/// Bytes of each pooled memory reset in place (dirty pages only) rather than given back.
const KEEP_RESIDENT_BYTES: usize = 2 * 1024 * 1024;

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Components compiled ahead of time (`plugin precompile`, run when the image is built),
    /// named as in the cache and only read: looked up after `cache_dir`.
    pub precompiled_dir: Option<PathBuf>,
    /// Instances that may exist at once across all plugins (pooling allocator slots).
    pub max_instances: u32,
    /// The largest memory limit any plugin may be given.
    pub max_memory_mib: usize,
    /// The controller's identity, sent for plugins to the Services their grants name
    /// ([`crate::identity`]); never handed to a plugin.
    pub identity: crate::identity::Identity,
    /// The linear memory all calls in flight may hold together ([`crate::memory_budget`]).
    pub memory_budget: crate::MemoryBudget,
    /// Whom a plugin's HTTPS believes ([`crate::http_trust`]).
    pub http_trust: crate::HttpTrust,
    /// Compile for (and run on) this target rather than this machine: only a Pulley target
    /// (`pulley64`) runs here, and only in a build with wasmtime's `pulley` feature (wasmtime
    /// turns it on by itself where Cranelift has no backend); used to measure Pulley against
    /// Cranelift on one machine. `None`: this machine ([`crate::isa_baseline`]).
    pub target: Option<String>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            cache_dir: None,
            precompiled_dir: None,
            max_instances: 128,
            max_memory_mib: 512,
            identity: crate::identity::Identity::none(),
            memory_budget: crate::MemoryBudget::unbounded(),
            http_trust: crate::HttpTrust::default(),
            target: None,
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
    /// The same imports with WASI's and HTTP's waits asynchronous, for calls made on the
    /// executor's own thread ([`crate::loaded`]'s inline admission): a sync WASI import blocks
    /// on a Tokio runtime, which a worker thread may not do.
    inline_linker: Linker<CallState>,
    options: EngineOptions,
    compiled: Mutex<HashMap<String, Component>>,
    _ticker: Ticker,
}

impl PluginEngine {
    pub fn new(options: EngineOptions) -> anyhow::Result<Self> {
        let config = engine_config(&options, options.target.as_deref())?;
        let engine = Engine::new(&config)
            .map_err(|e| anyhow::Error::from(e).context("creating the wasmtime engine"))?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        crate::bounded_waits::add_to_linker(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
        StagedPolicy::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        let mut inline_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut inline_linker)?;
        crate::bounded_waits::add_to_linker(&mut inline_linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut inline_linker)?;
        StagedPolicy::add_to_linker::<_, HasSelf<_>>(&mut inline_linker, |s| s)?;

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
                inline_linker,
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

    pub(super) fn inline_linker(&self) -> &Linker<CallState> {
        &self.inner.inline_linker
    }

    pub fn options(&self) -> &EngineOptions {
        &self.inner.options
    }

    /// Compiles a component, reusing an earlier compilation of the same bytes (in memory, then
    /// on disk). Returns the component and the hex sha256 of the bytes.
    pub fn compile(&self, bytes: &[u8]) -> anyhow::Result<(Component, String)> {
        self.compile_digested(bytes, hex::encode(Sha256::digest(bytes)))
    }

    /// [`PluginEngine::compile`] of bytes whose hex sha256 the caller already holds (a
    /// built-in's, taken when the binary was built): they are not hashed again.
    pub fn compile_digested(
        &self,
        bytes: &[u8],
        sha: String,
    ) -> anyhow::Result<(Component, String)> {
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

    /// Compiles distinct components in parallel (start-up: every plugin at once), each with
    /// its hex sha256 when the caller holds it (a built-in's).
    pub fn compile_all(
        &self,
        sources: &[(&[u8], Option<&str>)],
    ) -> Vec<anyhow::Result<(Component, String)>> {
        crate::parallel::each_in_parallel(sources, |(bytes, sha)| match sha {
            Some(sha) => self.compile_digested(bytes, sha.to_string()),
            None => self.compile(bytes),
        })
    }

    /// The file name of a compiled component: its sha256 and the engine's compatibility hash
    /// (wasmtime's version, settings and instruction-set flags).
    fn cache_name(&self, sha: &str) -> String {
        cache_name(&self.inner.engine, sha)
    }

    fn compile_uncached(&self, bytes: &[u8], sha: &str) -> anyhow::Result<Component> {
        let engine = &self.inner.engine;
        let name = self.cache_name(sha);
        let cached = self.inner.options.cache_dir.as_ref().map(|d| d.join(&name));
        let precompiled = self
            .inner
            .options
            .precompiled_dir
            .as_ref()
            .map(|d| d.join(&name));
        for path in [&cached, &precompiled].into_iter().flatten() {
            if !path.exists() {
                continue;
            }
            let compiled = match read_verified(path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    tracing::warn!(path = %path.display(), "ignoring a compiled-plugin cache entry: {e:#}");
                    continue;
                }
            };
            // SAFETY: these are the exact bytes `Component::serialize` of an engine with the
            // same compatibility hash (it is in the file name) wrote, as the digest recorded
            // beside them when they were written shows, into a directory only we write (the
            // cache) or into the image with the binary (the precompiled built-ins).
            match unsafe { Component::deserialize(engine, &compiled) } {
                Ok(c) => {
                    tracing::debug!(path = %path.display(), "loaded a compiled plugin component");
                    return Ok(c);
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), "ignoring a bad compiled-plugin cache entry: {e:#}")
                }
            }
        }
        let started = std::time::Instant::now();
        let component = Component::new(engine, bytes)
            .map_err(|e| anyhow::Error::from(e).context("not a valid WebAssembly component"))?;
        // Seconds of CPU each: in the image no built-in should get here (a node below
        // x86-64-v2, or a binary without its precompiled directory, does).
        tracing::info!(
            sha256 = %sha,
            ms = started.elapsed().as_millis() as u64,
            "compiled a plugin component"
        );
        if let Some(path) = cached
            && let Err(e) = write_cache(&path, &component)
        {
            tracing::warn!(path = %path.display(), "could not cache a compiled plugin: {e:#}");
        }
        Ok(component)
    }
}

/// The engine's configuration; `target` compiles for another triple (`plugin precompile
/// --target`; a cross-compiling engine sees none of this CPU's features).
pub(crate) fn engine_config(
    options: &EngineOptions,
    target: Option<&str>,
) -> anyhow::Result<Config> {
    let mut config = Config::new();
    if let Some(target) = target.or(crate::isa_baseline::native_target()) {
        config.target(target).map_err(|e| {
            anyhow::Error::from(e).context(format!("compiling for target {target:?}"))
        })?;
    }
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.parallel_compilation(true);
    // `.eh_frame` for the plugins' code only helps a native unwinder walk through Wasm frames
    // (a debugger; `perf --call-graph dwarf` already stops at the fiber's stack); wasmtime's
    // own Wasm backtraces do without it. Every byte of a loaded component is resident: about 5%
    // of them (docs/performance.md, "Reconcile storm").
    config.native_unwind_info(false);
    // `perf` names the plugins' compiled functions from /tmp/perf-<pid>.map with this set; it
    // writes a line per function at every load, so it is for profiling sessions only.
    if std::env::var_os("ODH_PLUGIN_PERFMAP").is_some_and(|v| v == "1") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    crate::isa_baseline::apply(&mut config, target);
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
    // A call on the executor's thread runs on a fiber stack of its own, one per instance.
    pool.total_stacks(n);
    // A fresh instance per call reuses a pooled slot. With PAGEMAP_SCAN (Linux 6.7+) the
    // pages the last call dirtied are reset in place with memset, instead of madvise +
    // page faults on every call; elsewhere `Auto` falls back to madvise.
    pool.pagemap_scan(wasmtime::Enabled::Auto);
    pool.linear_memory_keep_resident(KEEP_RESIDENT_BYTES);
    pool.table_keep_resident(KEEP_RESIDENT_BYTES / 64);
    // Bounds what warm slots keep resident: at most this many × KEEP_RESIDENT_BYTES.
    pool.max_unused_warm_slots(32);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Ok(config)
}

/// The file name of a component compiled by `engine`: its sha256 and the engine's compatibility
/// hash, which differs between architectures and baselines, so an engine only finds its own.
pub(crate) fn cache_name(engine: &Engine, sha: &str) -> String {
    let mut h = std::hash::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{sha}-{:016x}.cwasm", h.finish())
}

/// Writes a compiled component and, beside it, the sha256 of its exact bytes: only bytes whose
/// digest matches are ever deserialized (deserializing is `unsafe`: wasmtime trusts them).
fn write_cache(path: &std::path::Path, component: &Component) -> anyhow::Result<()> {
    write_compiled(path, &component.serialize()?)
}

/// Writes compiled bytes and their digest, each by a rename (readers never see half a file).
pub(crate) fn write_compiled(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let digest = digest_path(path);
    let tmp = |p: &std::path::Path| {
        let mut name = p.as_os_str().to_os_string();
        name.push(format!(".tmp{}", std::process::id()));
        PathBuf::from(name)
    };
    std::fs::write(tmp(&digest), hex::encode(Sha256::digest(bytes)))?;
    std::fs::rename(tmp(&digest), &digest)?;
    std::fs::write(tmp(path), bytes)?;
    std::fs::rename(tmp(path), path)?;
    Ok(())
}

/// Where the digest of a compiled component's bytes is kept: `<name>.cwasm.sha256`.
fn digest_path(path: &std::path::Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".sha256");
    PathBuf::from(name)
}

/// The compiled component at `path`, if its bytes are those recorded when it was written.
fn read_verified(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context;
    let bytes = std::fs::read(path)?;
    let recorded =
        std::fs::read_to_string(digest_path(path)).context("no digest was recorded beside it")?;
    let actual = hex::encode(Sha256::digest(&bytes));
    anyhow::ensure!(
        recorded.trim() == actual,
        "its sha256 ({actual}) is not the one recorded when it was written"
    );
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compatibility(engine: &Engine) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        h.finish()
    }

    /// The triple the image of this machine's architecture gives `plugin precompile --target`
    /// (Containerfile, `make multiarch-check`).
    fn image_triple() -> &'static str {
        let musl = cfg!(target_env = "musl");
        match std::env::consts::ARCH {
            "x86_64" if musl => "x86_64-unknown-linux-musl",
            "x86_64" => "x86_64-unknown-linux-gnu",
            "aarch64" if musl => "aarch64-unknown-linux-musl",
            "aarch64" => "aarch64-unknown-linux-gnu",
            "s390x" => "s390x-unknown-linux-gnu",
            _ => crate::isa_baseline::pulley_target(),
        }
    }

    /// What the image's build machine compiles loads on a node with other CPU features: an
    /// engine compiling for this architecture from outside (it sees none of this CPU's
    /// features) has the same compatibility hash, and what it compiles deserialises here. One
    /// test per architecture, run where that architecture runs (x86_64 in `make test`, the
    /// others under qemu, whose CPUs have every optional feature: `make multiarch-check`).
    /// Fails when a wasmtime upgrade brings an instruction-set flag the baseline does not set.
    #[test]
    fn compiled_components_do_not_depend_on_this_cpu() {
        let options = EngineOptions::default();
        let here = Engine::new(&engine_config(&options, None).unwrap()).unwrap();
        let elsewhere =
            Engine::new(&engine_config(&options, Some(image_triple())).unwrap()).unwrap();
        assert_eq!(compatibility(&here), compatibility(&elsewhere));

        let bytes = fixture_component();
        let compiled = elsewhere.precompile_component(&bytes).unwrap();
        // SAFETY: bytes just produced by `precompile_component`.
        unsafe { Component::deserialize(&here, &compiled) }
            .expect("a component compiled elsewhere loads here");
    }

    /// `plugin precompile --target` of this machine's image writes what the run engine finds:
    /// it loads them without compiling (so writes nothing to its cache).
    #[test]
    fn precompiled_for_the_image_triple_loads_without_compiling() {
        let root = std::env::temp_dir().join(format!("odh-engine-cross-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (image, cache) = (root.join("image"), root.join("cache"));
        let bytes = fixture_component();
        let compiler = crate::precompile::Precompiler::new(Some(image_triple())).unwrap();
        let sha = compiler.compile_into(&bytes, &image).unwrap();
        assert!(
            files(&image)[0].ends_with(&format!("-{}.cwasm", compiler.compatibility())),
            "{:?}",
            files(&image)
        );
        let engine = test_engine(Some(cache.clone()), Some(image.clone()));
        assert_eq!(engine.compile(&bytes).unwrap().1, sha);
        assert!(files(&cache).is_empty(), "{:?}", files(&cache));
        let _ = std::fs::remove_dir_all(&root);
    }

    /// What each architecture's image gives `plugin precompile --target` (the Makefile's
    /// `TRIPLE_*` and `PRECOMPILE_TARGET_ppc64le`): amd64, arm64, s390x, ppc64le.
    const IMAGE_TARGETS: [&str; 4] = [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "s390x-unknown-linux-gnu",
        "pulley64",
    ];

    /// The architecture part of a target triple (`pulley64` is its own).
    fn arch_of(target: &str) -> &str {
        target.split('-').next().unwrap_or(target)
    }

    /// Each architecture's image engine has a compatibility hash of its own, and the engine here
    /// refuses another architecture's compiled code even under its own name with a valid digest
    /// (wasmtime's check of the artifact's target): it compiles the component again. This
    /// build has Cranelift's backend for this machine and Pulley's only (wasmtime's `all-arch`
    /// would rebuild it with every backend), so on x86_64 the pair checked here is x86_64 and
    /// Pulley (ppc64le's code); an engine for a backend this build lacks must fail to build
    /// with the error that says so. `make multiarch-check` checks all four pairwise, each
    /// architecture's own binary under qemu-user.
    #[test]
    fn each_architecture_has_its_own_compatibility_hash_and_refuses_the_others_code() {
        let here_arch = arch_of(image_triple());
        let mut compilers = Vec::new();
        for target in IMAGE_TARGETS {
            match crate::precompile::Precompiler::new(Some(target)) {
                Ok(c) => compilers.push((target, c)),
                Err(e) => {
                    assert_ne!(arch_of(target), here_arch, "{target}: {e:#}");
                    assert_ne!(target, "pulley64", "every build compiles Pulley: {e:#}");
                    assert!(
                        format!("{e:#}").contains("this build compiles for"),
                        "{target}: {e:#}"
                    );
                }
            }
        }
        assert!(compilers.len() >= 2, "this machine's target and pulley64");
        let hashes: std::collections::BTreeSet<String> =
            compilers.iter().map(|(_, c)| c.compatibility()).collect();
        assert_eq!(
            hashes.len(),
            compilers.len(),
            "{:?}",
            compilers
                .iter()
                .map(|(t, c)| (*t, c.compatibility()))
                .collect::<Vec<_>>()
        );

        let root = std::env::temp_dir().join(format!("odh-engine-arches-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let bytes = fixture_component();
        let own = root.join("own");
        let here = crate::precompile::Precompiler::new(Some(image_triple())).unwrap();
        let sha = here.compile_into(&bytes, &own).unwrap();
        let own_name = format!("{sha}-{}.cwasm", here.compatibility());
        assert!(own.join(&own_name).exists(), "{:?}", files(&own));
        let loads_without_compiling = |precompiled: &std::path::Path, cache: &std::path::Path| {
            let engine = test_engine(Some(cache.to_path_buf()), Some(precompiled.to_path_buf()));
            assert_eq!(
                engine.compile(&bytes).unwrap().1,
                sha,
                "compiled again if refused"
            );
            files(cache).is_empty()
        };
        assert!(
            loads_without_compiling(&own, &root.join("cache-own")),
            "its own code loads"
        );

        let mut refused = 0;
        for (target, compiler) in &compilers {
            if arch_of(target) == here_arch {
                continue;
            }
            let theirs = root.join(arch_of(target));
            compiler.compile_into(&bytes, &theirs).unwrap();
            let their_name = format!("{sha}-{}.cwasm", compiler.compatibility());
            let code = std::fs::read(theirs.join(&their_name)).unwrap();
            // Their bytes where this engine looks, with the digest of those bytes.
            let disguised = root.join(format!("{}-as-own", arch_of(target)));
            write_compiled(&disguised.join(&own_name), &code).unwrap();
            assert!(
                !loads_without_compiling(&disguised, &root.join(format!("cache-{target}"))),
                "the {here_arch} engine ran {target}'s code"
            );
            refused += 1;
        }
        assert!(refused >= 1, "no other architecture's code was tried");
        let _ = std::fs::remove_dir_all(&root);
    }

    /// An engine with a cache and a precompiled directory (either optional).
    fn test_engine(cache_dir: Option<PathBuf>, precompiled_dir: Option<PathBuf>) -> PluginEngine {
        PluginEngine::new(EngineOptions {
            cache_dir,
            precompiled_dir,
            max_instances: 2,
            ..Default::default()
        })
        .unwrap()
    }

    /// A small component of this crate's test fixtures.
    fn fixture_component() -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hello-wit-0.1.1.wasm");
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn files(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// A digest the caller holds (a built-in's, taken when the binary was built) is used as
    /// given: the bytes are not hashed again, so a start never reads a built-in's pages when
    /// its compiled form is found. Bytes without one are hashed.
    #[test]
    fn compile_all_takes_a_given_digest_without_hashing_the_bytes() {
        let bytes = fixture_component();
        let own = hex::encode(Sha256::digest(&bytes));
        let given = "0".repeat(64);
        let results =
            test_engine(None, None).compile_all(&[(&bytes, Some(&given)), (&bytes, None)]);
        let shas: Vec<String> = results.into_iter().map(|r| r.unwrap().1).collect();
        assert_eq!(shas, [given, own]);
    }

    /// The cache is looked up first, then the precompiled directory, which is only read; an
    /// unreadable entry in either is compiled again (and cached), not an error.
    #[test]
    fn precompiled_components_are_read_and_bad_entries_compiled_again() {
        let root =
            std::env::temp_dir().join(format!("odh-engine-precompiled-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (image, cache) = (root.join("image"), root.join("cache"));
        let bytes = &fixture_component();
        let engine = test_engine;
        // `plugin precompile` writes as the cache does: the component and its digest.
        engine(Some(image.clone()), None).compile(bytes).unwrap();
        let written = files(&image);
        assert_eq!(written.len(), 2, "{written:?}");
        assert!(written[1].ends_with(".cwasm.sha256"), "{written:?}");

        // Found in the image: nothing compiled, so nothing written to the cache.
        engine(Some(cache.clone()), Some(image.clone()))
            .compile(bytes)
            .unwrap();
        assert!(files(&cache).is_empty(), "{:?}", files(&cache));

        // A corrupt image entry: compiled again, cached, the image left alone.
        let good = std::fs::read(image.join(&written[0])).unwrap();
        std::fs::write(image.join(&written[0]), b"not a compiled component").unwrap();
        engine(Some(cache.clone()), Some(image.clone()))
            .compile(bytes)
            .unwrap();
        assert_eq!(files(&cache), written);
        assert_eq!(
            std::fs::read(image.join(&written[0])).unwrap(),
            b"not a compiled component"
        );

        // A tampered cache entry (one byte changed: it may still deserialize, and wasmtime would
        // run whatever it says) is refused by its digest and compiled again.
        let entry = cache.join(&written[0]);
        let mut tampered = good.clone();
        let middle = tampered.len() / 2;
        tampered[middle] ^= 0x01;
        std::fs::write(&entry, &tampered).unwrap();
        engine(Some(cache.clone()), None).compile(bytes).unwrap();
        assert_eq!(
            std::fs::read(&entry).unwrap(),
            good,
            "recompiled and rewritten"
        );
        // So is an entry without its digest.
        std::fs::remove_file(cache.join(&written[1])).unwrap();
        assert!(read_verified(&entry).is_err());
        engine(Some(cache.clone()), None).compile(bytes).unwrap();
        assert!(read_verified(&entry).is_ok(), "rewritten with its digest");
        let _ = std::fs::remove_dir_all(&root);
    }
}
