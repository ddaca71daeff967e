//! The instructions compiled plugin code may use, per architecture: a conservative baseline that
//! every node of a current Kubernetes distribution has, rather than this CPU's features. Every
//! such node then computes the same compatibility hash, so the built-ins compiled when the image
//! is built (on another machine, perhaps another architecture) load on any of them.
//!
//! Where Cranelift has no backend for this CPU (ppc64le), plugins run on Pulley, wasmtime's
//! portable interpreter: its bytecode is the same on every such machine. wasmtime 48 always
//! builds Cranelift's Pulley backend and, where Cranelift has no backend, its interpreter.

use wasmtime::Config;

/// The x86-64-v2 level (SSE3 to SSE4.2, POPCNT, CMPXCHG16B), which RHEL 9 requires.
const X86_64_V2: [(&str, bool); 19] = [
    ("has_sse3", true),
    ("has_ssse3", true),
    ("has_cmpxchg16b", true),
    ("has_sse41", true),
    ("has_sse42", true),
    ("has_popcnt", true),
    ("has_avx", false),
    ("has_avx2", false),
    ("has_fma", false),
    ("has_avx_vnni", false),
    ("has_avx512bitalg", false),
    ("has_avx512dq", false),
    ("has_avx512vl", false),
    ("has_avx512vbmi", false),
    ("has_avx512f", false),
    ("has_avx512vnni", false),
    ("has_bmi1", false),
    ("has_bmi2", false),
    ("has_lzcnt", false),
];

/// Armv8.0-A: none of the optional extensions Cranelift can detect. LSE atomics would only
/// speed up shared-memory atomics, which no plugin has (components are single-threaded);
/// pointer authentication and BTI are opt-in hardening Cranelift does not detect.
const AARCH64_V8_0: [(&str, bool); 5] = [
    ("has_lse", false),
    ("has_pauth", false),
    ("has_fp16", false),
    ("has_dotprod", false),
    ("has_i8mm", false),
];

/// z14 (arch12), the oldest machine RHEL 9 runs on: the z15 facilities (miscellaneous
/// instruction extensions 3, vector enhancements 2) and later are off.
const S390X_Z14: [(&str, bool); 4] = [
    ("has_mie3", false),
    ("has_vxrs_ext2", false),
    ("has_mie4", false),
    ("has_vxrs_ext3", false),
];

/// The target wasmtime compiles for on this machine when Cranelift cannot compile for its CPU:
/// Pulley (wasmtime picks it by itself there; naming it says so, and keeps it if that changes).
pub fn native_target() -> Option<&'static str> {
    if cfg!(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "s390x",
        target_arch = "riscv64"
    )) {
        None
    } else {
        Some(pulley_target())
    }
}

/// The Pulley target of this machine's word size and byte order.
pub fn pulley_target() -> &'static str {
    match (
        cfg!(target_pointer_width = "64"),
        cfg!(target_endian = "big"),
    ) {
        (true, false) => "pulley64",
        (true, true) => "pulley64be",
        (false, false) => "pulley32",
        (false, true) => "pulley32be",
    }
}

/// Restricts what Cranelift may use to the baseline of the architecture `target` names (this
/// machine's without one); Pulley has no such flags.
pub fn apply(config: &mut Config, target: Option<&str>) {
    let arch = target.map_or(std::env::consts::ARCH, |t| t.split('-').next().unwrap_or(t));
    let flags: &[(&str, bool)] = match arch {
        // Below x86-64-v2 this machine compiles for itself, as wasmtime does by default.
        "x86_64" if !x86_64_v2_here() => return,
        "x86_64" => &X86_64_V2,
        "aarch64" => &AARCH64_V8_0,
        "s390x" => &S390X_Z14,
        _ => return,
    };
    for (flag, on) in flags {
        // SAFETY: the only flags turned on are x86-64-v2's, on a CPU just seen to have them or
        // for code run elsewhere (the image's claim: every node has x86-64-v2); every other flag
        // only forbids instructions.
        unsafe {
            config.cranelift_flag_set(flag, if *on { "true" } else { "false" });
        }
    }
}

/// Whether this CPU has x86-64-v2 (true on other architectures: compiling for an x86 node).
fn x86_64_v2_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sse3")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1")
            && std::arch::is_x86_feature_detected!("sse4.2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("cmpxchg16b")
    }
    #[cfg(not(target_arch = "x86_64"))]
    true
}
