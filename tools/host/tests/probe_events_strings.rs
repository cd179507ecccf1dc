// SPDX-License-Identifier: GPL-2.0
//! The chunked string reads of the hit path (`strncpy_chunked`,
//! `strnlen_chunked`) against the byte-by-byte reads they replace: over a
//! simulated address space of readable and unreadable pages, strings of
//! every length placed at every offset around page boundaries, each buffer
//! size, the same result (length, bytes, or EFAULT).

use rkprobes_host::pure::probe_events::{
    exec::{strncpy_chunked, strnlen_chunked, STR_CHUNK},
    Errno,
};

const PAGE: u64 = 4096;
const BASE: u64 = 0x7f00_0000_0000;

/// Four pages from `BASE`; page `hole` is unreadable. Bytes are a pattern
/// with NULs where `nuls` says.
struct Mem {
    bytes: Vec<u8>,
    hole: u64,
}

impl Mem {
    fn readable(&self, a: u64) -> bool {
        a >= BASE && a < BASE + self.bytes.len() as u64 && (a - BASE) / PAGE != self.hole
    }

    /// A non-faulting read: all the bytes or none (and `buf` untouched).
    fn read(&self, a: u64, buf: &mut [u8]) -> bool {
        let n = buf.len() as u64;
        if n == 0 || !(a..a + n).all(|x| self.readable(x)) {
            return n == 0;
        }
        let at = (a - BASE) as usize;
        buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
        true
    }
}

/// The byte-by-byte oracle of `strncpy_from_*_nofault()`.
fn strncpy_bytes(m: &Mem, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let n = buf.len();
    for (i, slot) in buf.iter_mut().enumerate() {
        let mut c = [0u8];
        if !m.read(addr + i as u64, &mut c) {
            return Err(Errno::EFAULT);
        }
        *slot = c[0];
        if c[0] == 0 {
            return Ok(i + 1);
        }
    }
    if let Some(l) = buf.last_mut() {
        *l = 0;
    }
    Ok(n)
}

/// The byte-by-byte oracle of `strnlen_user_nofault()`.
fn strnlen_bytes(m: &Mem, addr: u64, max: usize) -> Result<usize, Errno> {
    for i in 0..max {
        let mut c = [0u8];
        if !m.read(addr + i as u64, &mut c) {
            return Err(Errno::EFAULT);
        }
        if c[0] == 0 {
            return Ok(i + 1);
        }
    }
    Ok(max)
}

/// Memory with a string of `len` bytes (then a NUL) at `at`, the rest
/// non-NUL, page `hole` unreadable.
fn mem(at: u64, len: usize, hole: u64) -> Mem {
    let mut bytes: Vec<u8> = (0..4 * PAGE).map(|i| b'a' + (i % 23) as u8).collect();
    let nul = (at - BASE) as usize + len;
    if nul < bytes.len() {
        bytes[nul] = 0;
    }
    Mem { bytes, hole }
}

#[test]
fn chunked_reads_equal_byte_by_byte_reads() {
    let mut cases = 0u64;
    let mut faults = 0u64;
    for hole in [1u64, 2, 9] {
        // Strings ending before, at and after the boundary of page 1 and 2.
        for start in (PAGE - 2 * STR_CHUNK as u64 - 3..PAGE + 5).chain(2 * PAGE - 70..2 * PAGE + 3)
        {
            let at = BASE + start;
            for len in [0usize, 1, 2, 7, 8, 63, 64, 65, 127, 128, 129, 200] {
                let m = mem(at, len, hole);
                for size in [1usize, 2, 8, 64, 65, 100, 300] {
                    let mut got = vec![0xeeu8; size];
                    let mut want = vec![0xeeu8; size];
                    let g = strncpy_chunked(at, &mut got, PAGE, |a, b| m.read(a, b));
                    let w = strncpy_bytes(&m, at, &mut want);
                    assert_eq!(
                        g, w,
                        "strncpy at {start:#x} len {len} size {size} hole {hole}"
                    );
                    if let Ok(n) = w {
                        assert_eq!(
                            got[..n],
                            want[..n],
                            "bytes at {start:#x} len {len} size {size}"
                        );
                    } else {
                        faults += 1;
                    }
                    assert_eq!(
                        strnlen_chunked(at, size, PAGE, |a, b| m.read(a, b)),
                        strnlen_bytes(&m, at, size),
                        "strnlen at {start:#x} len {len} max {size} hole {hole}"
                    );
                    cases += 1;
                }
            }
        }
    }
    // Both outcomes were exercised.
    assert!(
        faults > 1000 && faults < cases - 1000,
        "{faults} faults of {cases}"
    );
}

#[test]
fn find_nul_finds_the_first_nul() {
    use rkprobes_host::pure::probe_events::exec::find_nul;
    // Every length up to 40, every NUL position, with bytes around the NUL
    // that trip the word test's false flags (0x01 after a 0x00, 0x80, 0xff).
    for len in 0..40usize {
        for fill in [b'a', 0x01, 0x80, 0xff] {
            let base = vec![fill; len];
            assert_eq!(find_nul(&base), None, "len {len} fill {fill:#x}");
            for nul in 0..len {
                let mut b = base.clone();
                b[nul] = 0;
                if nul + 1 < len {
                    b[nul + 1] = 0x01;
                }
                if nul + 2 < len {
                    b[nul + 2] = 0;
                }
                assert_eq!(
                    find_nul(&b),
                    b.iter().position(|&c| c == 0),
                    "len {len} fill {fill:#x} nul {nul}"
                );
            }
        }
    }
}

#[test]
fn a_chunk_never_crosses_a_page() {
    use rkprobes_host::pure::probe_events::exec::chunk_len;
    assert_eq!(chunk_len(BASE, 1000, PAGE), STR_CHUNK);
    assert_eq!(chunk_len(BASE + PAGE - 1, 1000, PAGE), 1);
    assert_eq!(chunk_len(BASE + PAGE - 10, 5, PAGE), 5);
    assert_eq!(chunk_len(u64::MAX, 100, PAGE), 1);
}
