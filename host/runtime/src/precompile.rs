//! Compiling components ahead of time, perhaps for another architecture (`plugin precompile
//! --target`, run when the image is built): the files a [`crate::PluginEngine`] of that
//! architecture finds in its `precompiled_dir`, named and digested as its cache names them.

use std::path::Path;

use sha2::{Digest, Sha256};
use wasmtime::Engine;

use crate::engine::{EngineOptions, cache_name, engine_config, write_compiled};

/// An engine that only compiles: for `target` (a Rust or Pulley triple) or, without one, for
/// this machine, in either case with the architecture's baseline ([`crate::isa_baseline`]).
pub struct Precompiler {
    engine: Engine,
}

impl Precompiler {
    pub fn new(target: Option<&str>) -> anyhow::Result<Self> {
        // The run engine's defaults: its settings are part of the compatibility hash.
        let config = engine_config(&EngineOptions::default(), target)?;
        let engine = Engine::new(&config).map_err(|e| {
            anyhow::Error::from(e).context(match target {
                // wasmtime's Cranelift has the backend of the machine it was built for and
                // Pulley's only (`all-arch` would rebuild it with every backend).
                Some(t) => format!(
                    "compiling for {t} (this build compiles for {} and pulley64: run the \
                     target's own binary, under qemu-user if need be)",
                    std::env::consts::ARCH
                ),
                None => "creating the wasmtime engine".to_string(),
            })
        })?;
        Ok(Self { engine })
    }

    /// Compiles a component into `dir`; returns the hex sha256 of its bytes.
    pub fn compile_into(&self, bytes: &[u8], dir: &Path) -> anyhow::Result<String> {
        let sha = hex::encode(Sha256::digest(bytes));
        let compiled = self
            .engine
            .precompile_component(bytes)
            .map_err(|e| anyhow::Error::from(e).context("not a valid WebAssembly component"))?;
        write_compiled(&dir.join(cache_name(&self.engine, &sha)), &compiled)?;
        Ok(sha)
    }

    /// The compatibility hash part of the names this writes (`<sha256>-<hash>.cwasm`).
    pub fn compatibility(&self) -> String {
        let name = cache_name(&self.engine, "");
        name.trim_start_matches('-')
            .trim_end_matches(".cwasm")
            .to_string()
    }
}
