//! `memcpy` and `memmove` for the static x86_64 musl build (the image's binary).
//!
//! musl's x86_64 `memcpy` is `rep movsq` for every size and its `memmove` falls back to it or
//! to a backward loop; glibc picks a vector routine per CPU. Compiling a plugin spent 12.7% of
//! its CPU in musl's two against 3.3% in glibc's, an admission request 5.6% against 2.2%
//! (docs/performance.md, "The image's binary"). These use SSE2 (part of x86_64 itself):
//! overlapping head and tail moves for up to 64 bytes, 64-byte blocks above that, and
//! `rep movsb` for long forward copies, which CPUs since 2013 run at full speed (ERMS).
//!
//! Only the musl build exports them under the C names, where they take the place of musl's
//! (the linker takes an archive member only for a symbol still undefined); elsewhere they are
//! plain functions, so the tests run everywhere. `no_builtins`: the compiler must not turn
//! these loops back into calls to `memcpy`, which would be themselves.

#![no_std]
#![no_builtins]

#[cfg(target_arch = "x86_64")]
mod x86_64;

#[cfg(target_arch = "x86_64")]
pub use x86_64::{copy, copy_nonoverlapping};

#[cfg(all(target_arch = "x86_64", target_env = "musl"))]
mod exported {
    /// # Safety
    /// As C's `memcpy`: `n` bytes readable at `src`, writable at `dst`, not overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        unsafe { super::copy_nonoverlapping(dst, src, n) };
        dst
    }

    /// # Safety
    /// As C's `memmove`: `n` bytes readable at `src`, writable at `dst`, overlapping or not.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
        unsafe { super::copy(dst, src, n) };
        dst
    }
}
