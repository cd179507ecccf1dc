// SPDX-License-Identifier: GPL-2.0

//! The site index (`rust/pure/sites.rs`) against the kernel's own rule, a
//! walk of every site with `addr_conflict()`'s test, on random site sets
//! (sparse and dense, overlapping, at the ends of the address space) and
//! random ranges.

mod common;

use common::Rng;
use rkprobes_host::pure::sites::{overlaps, pack, sort, unpack};

/// The kernel's `__jump_label_text_reserved()` walk.
fn walk(sites: &[(u64, u8)], start: u64, end: u64) -> bool {
    sites
        .iter()
        .any(|&(code, len)| code <= end && code + u64::from(len) > start)
}

fn index(sites: &[(u64, u8)], base: u64) -> Vec<u64> {
    let mut v: Vec<u64> = sites
        .iter()
        .map(|&(code, len)| pack(code - base, len).expect("fits"))
        .collect();
    sort(&mut v);
    v
}

#[test]
fn sort_agrees_with_std() {
    let mut rng = Rng(0x50f7);
    for n in (0..64).chain([255, 256, 1000, 6171]) {
        let mut v: Vec<u64> = (0..n)
            .map(|_| {
                if rng.below(4) == 0 {
                    rng.below(8) as u64
                } else {
                    rng.next_u64()
                }
            })
            .collect();
        let mut want = v.clone();
        want.sort_unstable();
        sort(&mut v);
        assert_eq!(v, want, "n = {n}");
    }
}

#[test]
fn pack_round_trips_and_refuses_what_does_not_fit() {
    assert_eq!(unpack(pack(0x1234, 5).unwrap()), (0x1234, 5));
    assert_eq!(
        unpack(pack((1 << 56) - 1, 255).unwrap()),
        ((1 << 56) - 1, 255)
    );
    assert_eq!(pack(1 << 56, 2), None);
    assert_eq!(pack(7, 0), None);
}

#[test]
fn edges_of_a_site_as_the_kernel() {
    // One 5-byte site at 0x1000 (base 0x1000), one 2-byte site at 0x1010.
    let sites = [(0x1000, 5), (0x1010, 2)];
    let idx = index(&sites, 0x1000);
    for (start, end, want) in [
        (0xfff, 0xfff, false),
        (0xffb, 0x1000, true),
        (0x1000, 0x1000, true),
        (0x1004, 0x1004, true),
        (0x1005, 0x1005, false),
        (0x1005, 0x100f, false),
        (0x1005, 0x1010, true),
        (0x1011, 0x1011, true),
        (0x1012, 0x1012, false),
        (0, u64::MAX, true),
        (0x2000, 0x1000, false),
    ] {
        assert_eq!(
            overlaps(&idx, 0x1000, start, end),
            want,
            "{start:#x}..={end:#x}"
        );
        assert_eq!(
            walk(&sites, start, end),
            want,
            "oracle {start:#x}..={end:#x}"
        );
    }
    assert!(!overlaps(&[], 0, 0, u64::MAX));
}

#[test]
fn random_sets_agree_with_the_walk() {
    let mut rng = Rng(0x5173_5173);
    let mut checked = 0u64;
    for round in 0..2000 {
        let base = match round % 3 {
            0 => 0,
            1 => 0xffff_ffff_8100_0000,
            _ => rng.next_u64() >> 9,
        };
        let span = [16u64, 256, 4096, 1 << 20][rng.below(4)];
        let n = rng.below(64);
        let sites: Vec<(u64, u8)> = (0..n)
            .map(|_| {
                let len = match rng.below(8) {
                    0 => rng.byte().max(1),
                    1..=3 => 2,
                    _ => 5,
                };
                (base + rng.next_u64() % span, len)
            })
            .collect();
        let idx = index(&sites, base);
        for _ in 0..200 {
            let around = |rng: &mut Rng| match sites.get(rng.below(sites.len().max(1))) {
                Some(&(c, _)) if rng.below(2) == 0 => {
                    c.wrapping_add(rng.below(16) as u64).wrapping_sub(8)
                }
                _ => base
                    .wrapping_add(rng.next_u64() % (span + 512))
                    .wrapping_sub(256),
            };
            let start = around(&mut rng);
            let end = match rng.below(3) {
                0 => start,
                1 => start.saturating_add(rng.below(24) as u64),
                _ => around(&mut rng),
            };
            assert_eq!(
                overlaps(&idx, base, start, end),
                walk(&sites, start, end),
                "base {base:#x} sites {sites:x?} query {start:#x}..={end:#x}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 400_000);
}
