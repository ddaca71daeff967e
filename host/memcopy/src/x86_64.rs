//! The copies. Every path loads a block before it stores it, and the blocks go in the
//! direction that never stores over source bytes not yet loaded, so `copy` is correct for
//! overlapping ranges; `copy_nonoverlapping` only adds `rep movsb` for long copies.

use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
use core::ptr::{read_unaligned, write_unaligned};

/// From this many bytes a forward copy of disjoint ranges is `rep movsb`: below it the string
/// instruction's start-up costs more than the vector loop (glibc's threshold for 16-byte
/// vectors is the same).
const REP_MOVSB_FROM: usize = 2048;

#[inline(always)]
unsafe fn load(p: *const u8) -> __m128i {
    unsafe { _mm_loadu_si128(p.cast()) }
}

#[inline(always)]
unsafe fn store(p: *mut u8, v: __m128i) {
    unsafe { _mm_storeu_si128(p.cast(), v) }
}

/// Copies `n` bytes from `src` to `dst`, which may overlap.
///
/// # Safety
/// As `core::ptr::copy`: `n` bytes readable at `src` and writable at `dst`.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    unsafe {
        if n <= 64 {
            small(dst, src, n);
        } else if (dst as usize).wrapping_sub(src as usize) >= n {
            // `dst` below `src`, or past its end: forward never stores over unread source.
            let disjoint = (src as usize).wrapping_sub(dst as usize) >= n;
            forward(dst, src, n, disjoint);
        } else {
            backward(dst, src, n);
        }
    }
}

/// Copies `n` bytes from `src` to `dst`, which do not overlap.
///
/// # Safety
/// As `core::ptr::copy_nonoverlapping`.
#[inline]
pub unsafe fn copy_nonoverlapping(dst: *mut u8, src: *const u8, n: usize) {
    unsafe {
        if n <= 64 {
            small(dst, src, n);
        } else {
            forward(dst, src, n, true);
        }
    }
}

/// Up to 64 bytes: a head and a tail move that overlap in the middle, all loaded first.
#[inline(always)]
unsafe fn small(dst: *mut u8, src: *const u8, n: usize) {
    unsafe {
        if n <= 16 {
            if n >= 8 {
                let head = read_unaligned(src.cast::<u64>());
                let tail = read_unaligned(src.add(n - 8).cast::<u64>());
                write_unaligned(dst.cast::<u64>(), head);
                write_unaligned(dst.add(n - 8).cast::<u64>(), tail);
            } else if n >= 4 {
                let head = read_unaligned(src.cast::<u32>());
                let tail = read_unaligned(src.add(n - 4).cast::<u32>());
                write_unaligned(dst.cast::<u32>(), head);
                write_unaligned(dst.add(n - 4).cast::<u32>(), tail);
            } else if n >= 2 {
                let head = read_unaligned(src.cast::<u16>());
                let tail = read_unaligned(src.add(n - 2).cast::<u16>());
                write_unaligned(dst.cast::<u16>(), head);
                write_unaligned(dst.add(n - 2).cast::<u16>(), tail);
            } else if n == 1 {
                *dst = *src;
            }
        } else if n <= 32 {
            let head = load(src);
            let tail = load(src.add(n - 16));
            store(dst, head);
            store(dst.add(n - 16), tail);
        } else {
            let a = load(src);
            let b = load(src.add(16));
            let c = load(src.add(n - 32));
            let d = load(src.add(n - 16));
            store(dst, a);
            store(dst.add(16), b);
            store(dst.add(n - 32), c);
            store(dst.add(n - 16), d);
        }
    }
}

/// More than 64 bytes, lowest address first.
#[inline(always)]
unsafe fn forward(dst: *mut u8, src: *const u8, n: usize, disjoint: bool) {
    unsafe {
        if disjoint && n >= REP_MOVSB_FROM {
            // SAFETY: the direction flag is clear at every call (the ABI's rule).
            core::arch::asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") dst => _,
                inout("rsi") src => _,
                options(nostack, preserves_flags)
            );
            return;
        }
        // Read first: with `dst` just below `src` the blocks reach the source's last bytes.
        let tail = load(src.add(n - 16));
        let mut i = 0;
        while n - i > 64 + 16 {
            let a = load(src.add(i));
            let b = load(src.add(i + 16));
            let c = load(src.add(i + 32));
            let d = load(src.add(i + 48));
            store(dst.add(i), a);
            store(dst.add(i + 16), b);
            store(dst.add(i + 32), c);
            store(dst.add(i + 48), d);
            i += 64;
        }
        while n - i > 16 {
            let a = load(src.add(i));
            store(dst.add(i), a);
            i += 16;
        }
        store(dst.add(n - 16), tail);
    }
}

/// More than 64 bytes, highest address first (`dst` above `src`, overlapping).
#[inline(always)]
unsafe fn backward(dst: *mut u8, src: *const u8, n: usize) {
    unsafe {
        // Read first: the blocks reach the source's first bytes before the copy ends.
        let head = load(src);
        let mut end = n;
        while end > 64 + 16 {
            let a = load(src.add(end - 16));
            let b = load(src.add(end - 32));
            let c = load(src.add(end - 48));
            let d = load(src.add(end - 64));
            store(dst.add(end - 16), a);
            store(dst.add(end - 32), b);
            store(dst.add(end - 48), c);
            store(dst.add(end - 64), d);
            end -= 64;
        }
        while end > 16 {
            let a = load(src.add(end - 16));
            store(dst.add(end - 16), a);
            end -= 16;
        }
        store(dst, head);
    }
}
