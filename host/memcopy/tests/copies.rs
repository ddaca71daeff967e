//! The copies against the standard library's, for every length up to a few hundred bytes at
//! every relative alignment, both directions of overlap, and long copies (the `rep movsb`
//! path); each byte of the buffers is distinct enough that a misplaced one shows.

#![cfg(target_arch = "x86_64")]

use odh_memcopy::{copy, copy_nonoverlapping};
use proptest::prelude::*;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// `copy_nonoverlapping` between two buffers; nothing outside the destination range changes.
fn disjoint(n: usize, src_at: usize, dst_at: usize) {
    let src = pattern(n + src_at + 32, 7);
    let mut dst = pattern(n + dst_at + 32, 101);
    let mut expected = dst.clone();
    expected[dst_at..dst_at + n].copy_from_slice(&src[src_at..src_at + n]);
    unsafe { copy_nonoverlapping(dst.as_mut_ptr().add(dst_at), src.as_ptr().add(src_at), n) };
    assert_eq!(dst, expected, "n={n} src_at={src_at} dst_at={dst_at}");
}

/// `copy` within one buffer, as `copy_within` does it.
fn within(len: usize, n: usize, from: usize, to: usize) {
    let mut buf = pattern(len, 3);
    let mut expected = buf.clone();
    expected.copy_within(from..from + n, to);
    let base = buf.as_mut_ptr();
    unsafe { copy(base.add(to), base.add(from), n) };
    assert_eq!(buf, expected, "n={n} from={from} to={to}");
}

#[test]
fn every_short_length_at_every_alignment() {
    for n in 0..=300 {
        for src_at in 0..16 {
            for dst_at in [0, 1, 3, 8, 15] {
                disjoint(n, src_at, dst_at);
            }
        }
    }
}

#[test]
fn overlapping_in_both_directions() {
    for n in 0..=300 {
        for shift in [1, 2, 7, 15, 16, 17, 31, 33, 63, 64, 65, 100] {
            within(n + shift + 8, n, shift, 0); // down: destination below the source
            within(n + shift + 8, n, 0, shift); // up: destination above the source
            within(n + shift + 8, n, 3, 3 + shift.min(4)); // small shifts off alignment
        }
        within(n + 4, n, 2, 2); // onto itself
    }
}

#[test]
fn long_copies_take_the_string_instruction_path() {
    for n in [2047, 2048, 2049, 4096, 65_537, 1 << 20] {
        for (src_at, dst_at) in [(0, 0), (1, 0), (0, 5), (13, 7)] {
            disjoint(n, src_at, dst_at);
        }
        within(n * 2 + 64, n, n + 32, 0); // disjoint, same buffer
        within(n + 64, n, 40, 0); // overlapping, down
        within(n + 64, n, 0, 40); // overlapping, up
    }
}

proptest! {
    #[test]
    fn any_copy_within_a_buffer(len in 1usize..6000, a in any::<prop::sample::Index>(),
                                b in any::<prop::sample::Index>(), c in any::<prop::sample::Index>()) {
        let from = a.index(len);
        let to = b.index(len);
        let n = c.index(len - from.max(to) + 1);
        within(len, n, from, to);
    }
}
