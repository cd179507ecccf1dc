// SPDX-License-Identifier: GPL-2.0

//! Shared support for the instruction-decoder oracle tests and the benchmark:
//! the kernel's C decoder behind `csrc/insn_shim.c` (built by `build.rs`), a
//! field-by-field comparison with the Rust decoder, a small ELF64 symbol
//! reader for vmlinux, and a seeded PRNG.

#![allow(dead_code)]

pub mod kernel_tables;

use rkprobes_host::pure::insn::{inat, DecodeError, Insn, InsnField};
use std::ffi::c_int;

/// Length of the shim's output array (`RK_OUT_LEN`).
pub const OUT_LEN: usize = 34;
const RK_RET: usize = 0;
const RK_FIELDS: usize = 1;
const RK_ATTR: usize = 28;
const RK_OPND_BYTES: usize = 29;
const RK_ADDR_BYTES: usize = 30;
const RK_LENGTH: usize = 31;
const RK_EMULATE_PREFIX_SIZE: usize = 32;
const RK_X86_64: usize = 33;

const FIELD_NAMES: [&str; 9] = [
    "prefixes",
    "rex_prefix",
    "vex_prefix",
    "opcode",
    "modrm",
    "sib",
    "displacement",
    "immediate1",
    "immediate2",
];

extern "C" {
    fn rk_insn_out_len() -> c_int;
    fn rk_insn_decode64(buf: *const u8, len: c_int, out: *mut c_int);
    fn rk_insn_length64(buf: *const u8, len: c_int) -> c_int;
    fn rk_inat_opcode(op: u8) -> u32;
    fn rk_inat_escape(op: u8, lpfx_id: c_int, esc_attr: u32) -> u32;
    fn rk_inat_group(modrm: u8, lpfx_id: c_int, grp_attr: u32) -> u32;
    fn rk_inat_avx(op: u8, m: u8, p: u8) -> u32;
}

fn clamp_len(buf: &[u8]) -> c_int {
    c_int::try_from(buf.len()).unwrap_or(c_int::MAX)
}

/// The kernel decoder's `struct insn`, flattened, after
/// `insn_decode(..., INSN_MODE_64)` of `buf`.
pub fn c_decode(buf: &[u8]) -> [i32; OUT_LEN] {
    let mut out = [0i32; OUT_LEN];
    // SAFETY: the shim reads at most min(len, 15) bytes of `buf` (insn_init()
    // caps the length) and writes exactly RK_OUT_LEN ints, checked below.
    unsafe {
        assert_eq!(rk_insn_out_len() as usize, OUT_LEN);
        rk_insn_decode64(buf.as_ptr(), clamp_len(buf), out.as_mut_ptr());
    }
    out
}

/// The kernel decoder's length of the instruction at `buf`, or its negative
/// errno.
pub fn c_length(buf: &[u8]) -> i32 {
    // SAFETY: reads at most min(len, 15) bytes of `buf`.
    unsafe { rk_insn_length64(buf.as_ptr(), clamp_len(buf)) }
}

/// `inat_get_opcode_attribute()` of the C tables.
pub fn c_inat_opcode(op: u8) -> u32 {
    // SAFETY: pure table look-up.
    unsafe { rk_inat_opcode(op) }
}

/// `inat_get_escape_attribute()` of the C tables (`lpfx_id` 0 to 3).
pub fn c_inat_escape(op: u8, lpfx_id: u8, esc_attr: u32) -> u32 {
    assert!(lpfx_id <= 3);
    // SAFETY: the escape id comes from esc_attr's 2-bit field and lpfx_id is
    // at most 3, within inat_escape_tables[4][4].
    unsafe { rk_inat_escape(op, c_int::from(lpfx_id), esc_attr) }
}

/// `inat_get_group_attribute()` of the C tables (`lpfx_id` 0 to 3).
pub fn c_inat_group(modrm: u8, lpfx_id: u8, grp_attr: u32) -> u32 {
    assert!(lpfx_id <= 3);
    // SAFETY: the group id is a 5-bit field and lpfx_id is at most 3, within
    // inat_group_tables[32][4].
    unsafe { rk_inat_group(modrm, c_int::from(lpfx_id), grp_attr) }
}

/// `inat_get_avx_attribute()` of the C tables.
pub fn c_inat_avx(op: u8, m: u8, p: u8) -> u32 {
    // SAFETY: the C function range-checks m and p itself.
    unsafe { rk_inat_avx(op, m, p) }
}

fn put(out: &mut [i32; OUT_LEN], idx: usize, f: InsnField, got: bool) {
    out[RK_FIELDS + 3 * idx] = f.value;
    out[RK_FIELDS + 3 * idx + 1] = i32::from(f.nbytes);
    out[RK_FIELDS + 3 * idx + 2] = i32::from(got);
}

/// Whether the C decoder sets `immediate2.got`: only the moffs, Iv and far
/// pointer paths do.
fn immediate2_got(attr: u32) -> bool {
    inat::has_moffset(attr)
        || (inat::has_immediate(attr)
            && matches!(
                inat::immediate_size(attr),
                inat::INAT_IMM_VWORD | inat::INAT_IMM_PTR
            ))
}

/// The Rust decoder's result in the shim's layout. On error only the return
/// value is meaningful (the C decoder leaves half-filled fields behind).
pub fn rust_decode(buf: &[u8]) -> (Result<Insn, DecodeError>, [i32; OUT_LEN]) {
    let res = Insn::decode(buf);
    let mut out = [0i32; OUT_LEN];
    match &res {
        Err(e) => out[RK_RET] = e.to_errno(),
        Ok(i) => {
            put(&mut out, 0, i.prefixes(), true);
            put(&mut out, 1, i.rex_prefix(), true);
            put(&mut out, 2, i.vex_prefix(), true);
            put(&mut out, 3, i.opcode(), true);
            put(&mut out, 4, i.modrm(), true);
            put(&mut out, 5, i.sib(), true);
            put(&mut out, 6, i.displacement(), true);
            put(&mut out, 7, i.immediate1(), true);
            put(&mut out, 8, i.immediate2(), immediate2_got(i.attr()));
            out[RK_ATTR] = i.attr() as i32;
            out[RK_OPND_BYTES] = i32::from(i.opnd_bytes());
            out[RK_ADDR_BYTES] = i32::from(i.addr_bytes());
            out[RK_LENGTH] = i.length() as i32;
            out[RK_EMULATE_PREFIX_SIZE] = i.emulate_prefix_size() as i32;
            out[RK_X86_64] = 1;
        }
    }
    (res, out)
}

/// Result of comparing both decoders on one buffer.
pub enum Verdict {
    /// Both decoded the same instruction, field for field.
    Same(Insn),
    /// Both refused it with the same errno.
    BothInvalid(i32),
    /// They differ; the text says how.
    Differ(String),
}

fn describe(out: &[i32; OUT_LEN]) -> String {
    let mut s = format!("ret={}", out[RK_RET]);
    for (i, name) in FIELD_NAMES.iter().enumerate() {
        let b = RK_FIELDS + 3 * i;
        s += &format!(
            " {name}=({:#x},{},{})",
            out[b] as u32,
            out[b + 1],
            out[b + 2]
        );
    }
    s += &format!(
        " attr={:#x} opnd={} addr={} len={} emul={} x86_64={}",
        out[RK_ATTR] as u32,
        out[RK_OPND_BYTES],
        out[RK_ADDR_BYTES],
        out[RK_LENGTH],
        out[RK_EMULATE_PREFIX_SIZE],
        out[RK_X86_64]
    );
    s
}

/// Compares the C and Rust decoders on `buf`: every `struct insn` field on
/// success, the errno on failure.
pub fn compare(buf: &[u8]) -> Verdict {
    let c = c_decode(buf);
    let (res, r) = rust_decode(buf);
    match res {
        Ok(insn) if c == r => Verdict::Same(insn),
        Err(e) if c[RK_RET] == e.to_errno() => Verdict::BothInvalid(c[RK_RET]),
        _ => {
            let n = buf.len().min(15);
            Verdict::Differ(format!(
                "bytes {:02x?}\n   C:    {}\n   Rust: {}",
                &buf[..n],
                describe(&c),
                describe(&r)
            ))
        }
    }
}

/// splitmix64: a small, seeded, reproducible PRNG.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A random byte.
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Iterations for the random tests: `RKPROBES_INSN_ITERS`, else `default`.
pub fn iterations(default: u64) -> u64 {
    match std::env::var("RKPROBES_INSN_ITERS") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("RKPROBES_INSN_ITERS={v} is not a number")),
        Err(_) => default,
    }
}

/// A function symbol of an ELF file with its bytes.
pub struct Func<'a> {
    /// Symbol name.
    pub name: &'a str,
    /// Start address.
    pub addr: u64,
    /// The function's bytes (`st_size` of them).
    pub code: &'a [u8],
    /// The bytes up to the next function symbol of the same section (at most
    /// 4 KiB past the end): the size kallsyms reports, padding included.
    pub padded: &'a [u8],
}

fn rd<const N: usize>(d: &[u8], off: usize) -> Option<[u8; N]> {
    d.get(off..off.checked_add(N)?)?.try_into().ok()
}
fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    rd::<2>(d, off).map(u16::from_le_bytes)
}
fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    rd::<4>(d, off).map(u32::from_le_bytes)
}
fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    rd::<8>(d, off).map(u64::from_le_bytes)
}

struct Shdr {
    typ: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    entsize: u64,
}

const SHT_SYMTAB: u32 = 2;
const SHT_PROGBITS: u32 = 1;
const SHF_EXECINSTR: u64 = 4;
const STT_FUNC: u8 = 2;

/// The `STT_FUNC` symbols of an x86-64 ELF file that lie in executable
/// `PROGBITS` sections and have a non-zero size, deduplicated by
/// (address, size) and sorted by address.
pub fn elf_functions(data: &[u8]) -> Result<Vec<Func<'_>>, String> {
    if data.get(..4) != Some(b"\x7fELF") || data.get(4) != Some(&2) || data.get(5) != Some(&1) {
        return Err("not a little-endian ELF64 file".into());
    }
    if u16_at(data, 18) != Some(62) {
        return Err("not an x86-64 ELF file".into());
    }
    let bad = || "truncated ELF header".to_string();
    let shoff = u64_at(data, 0x28).ok_or_else(bad)? as usize;
    let shentsize = u16_at(data, 0x3a).ok_or_else(bad)? as usize;
    let shnum = u16_at(data, 0x3c).ok_or_else(bad)? as usize;
    let mut shdrs = Vec::new();
    for i in 0..shnum {
        let b = shoff + i * shentsize;
        let bad = || format!("truncated section header {i}");
        shdrs.push(Shdr {
            typ: u32_at(data, b + 4).ok_or_else(bad)?,
            flags: u64_at(data, b + 8).ok_or_else(bad)?,
            addr: u64_at(data, b + 16).ok_or_else(bad)?,
            offset: u64_at(data, b + 24).ok_or_else(bad)?,
            size: u64_at(data, b + 32).ok_or_else(bad)?,
            link: u32_at(data, b + 40).ok_or_else(bad)?,
            entsize: u64_at(data, b + 56).ok_or_else(bad)?,
        });
    }
    let symtab = shdrs
        .iter()
        .find(|s| s.typ == SHT_SYMTAB)
        .ok_or("no symbol table (stripped vmlinux?)")?;
    let strtab = shdrs.get(symtab.link as usize).ok_or("bad symtab link")?;
    let strs = data
        .get(strtab.offset as usize..(strtab.offset + strtab.size) as usize)
        .ok_or("truncated strtab")?;
    let entsize = if symtab.entsize == 0 {
        24
    } else {
        symtab.entsize as usize
    };
    let nsyms = symtab.size as usize / entsize;
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for i in 0..nsyms {
        let b = symtab.offset as usize + i * entsize;
        let (Some(name), Some(&info), Some(shndx), Some(value), Some(size)) = (
            u32_at(data, b),
            data.get(b + 4),
            u16_at(data, b + 6),
            u64_at(data, b + 8),
            u64_at(data, b + 16),
        ) else {
            return Err(format!("truncated symbol {i}"));
        };
        if info & 0xf != STT_FUNC || size == 0 {
            continue;
        }
        let Some(sec) = shdrs.get(shndx as usize) else {
            continue;
        };
        if sec.typ != SHT_PROGBITS || sec.flags & SHF_EXECINSTR == 0 {
            continue;
        }
        if value < sec.addr || value + size > sec.addr + sec.size {
            continue;
        }
        if !seen.insert((value, size)) {
            continue;
        }
        let start = (sec.offset + (value - sec.addr)) as usize;
        let Some(code) = data.get(start..start + size as usize) else {
            continue;
        };
        let sec_end = (sec.offset + sec.size) as usize;
        let name = strs
            .get(name as usize..)
            .and_then(|s| s.split(|&c| c == 0).next())
            .and_then(|s| std::str::from_utf8(s).ok())
            .unwrap_or("?");
        out.push((
            Func {
                name,
                addr: value,
                code,
                padded: code,
            },
            start,
            sec_end,
        ));
    }
    out.sort_by_key(|f| f.0.addr);
    // kallsyms' size runs to the next symbol: extend each function over the
    // padding that follows it.
    let starts: Vec<u64> = out.iter().map(|f| f.0.addr).collect();
    let mut funcs = Vec::with_capacity(out.len());
    for (i, (mut f, start, sec_end)) in out.into_iter().enumerate() {
        let next = starts[i + 1..]
            .iter()
            .copied()
            .find(|&a| a > f.addr)
            .unwrap_or(u64::MAX);
        let want = (next - f.addr).min(f.code.len() as u64 + 4096) as usize;
        let end = (start + want).min(sec_end).max(start + f.code.len());
        if let Some(p) = data.get(start..end) {
            f.padded = p;
        }
        funcs.push(f);
    }
    Ok(funcs)
}

/// Addresses of all symbols of an ELF file that lie in executable sections,
/// sorted (objdump never lets an instruction run across one of these).
pub fn elf_exec_symbol_addrs(data: &[u8]) -> Vec<u64> {
    let mut v = Vec::new();
    let Some(shoff) = u64_at(data, 0x28) else {
        return v;
    };
    let (Some(shentsize), Some(shnum)) = (u16_at(data, 0x3a), u16_at(data, 0x3c)) else {
        return v;
    };
    let sh = |i: usize, off: usize, wide: bool| -> u64 {
        let b = shoff as usize + i * shentsize as usize + off;
        if wide {
            u64_at(data, b).unwrap_or(0)
        } else {
            u64::from(u32_at(data, b).unwrap_or(0))
        }
    };
    for i in 0..shnum as usize {
        if sh(i, 4, false) != u64::from(SHT_SYMTAB) {
            continue;
        }
        let (off, size) = (sh(i, 24, true) as usize, sh(i, 32, true) as usize);
        for j in 0..size / 24 {
            let b = off + j * 24;
            let (Some(shndx), Some(value)) = (u16_at(data, b + 6), u64_at(data, b + 8)) else {
                continue;
            };
            let sec = shndx as usize;
            if sec == 0 || sec >= shnum as usize {
                continue;
            }
            if sh(sec, 8, true) & SHF_EXECINSTR != 0 {
                v.push(value);
            }
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Reads the vmlinux named by `RKPROBES_VMLINUX`, failing loudly when the
/// variable is unset or the file unreadable: this test must never pass by
/// comparing nothing.
pub fn read_vmlinux() -> (String, Vec<u8>) {
    let path = match std::env::var("RKPROBES_VMLINUX") {
        Ok(p) if !p.is_empty() => p,
        _ => panic!(
            "RKPROBES_VMLINUX is not set: point it at an x86-64 vmlinux with symbols \
             (e.g. $(cat /root/.cache/rkprobes/kdir)/vmlinux)"
        ),
    };
    match std::fs::read(&path) {
        Ok(d) => (path, d),
        Err(e) => panic!("RKPROBES_VMLINUX={path}: {e}"),
    }
}
