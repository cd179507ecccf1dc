// SPDX-License-Identifier: GPL-2.0

//! The kernel's own tables in a vmlinux, read the way the running kernel
//! reads them, for host tools that decide as its kprobes do: the exception
//! table, ftrace's call sites (`__mcount_loc`), jump-label and static-call
//! sites, the kprobe blacklist (`_kprobe_blacklist` and the blacklisted
//! text areas), and the retpoline/return thunks.
//!
//! What only the running kernel knows is not here: modules, patching done
//! at boot (alternatives, retpoline and return sites, call-depth thunks),
//! the lock prefixes `alternatives_text_reserved()` looks at (only on a
//! uniprocessor boot), and symbols that kallsyms sizes differently.

use super::{u16_at, u32_at, u64_at};

/// A section header, with its name.
struct Section {
    name: String,
    typ: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
}

/// A symbol of the ELF symbol table.
pub struct Symbol {
    /// Its name.
    pub name: String,
    /// Its address.
    pub value: u64,
    /// Its `st_size`.
    pub size: u64,
    /// Its type (`STT_*`).
    pub typ: u8,
}

/// A vmlinux, its sections and symbols.
pub struct Kernel<'a> {
    data: &'a [u8],
    sections: Vec<Section>,
    /// Every symbol, sorted by address.
    pub symbols: Vec<Symbol>,
}

const SHT_SYMTAB: u32 = 2;
const SHT_NOBITS: u32 = 8;
const SHF_EXECINSTR: u64 = 4;
const STT_FUNC: u8 = 2;

fn cstr(strs: &[u8], off: usize) -> String {
    strs.get(off..)
        .and_then(|s| s.split(|&c| c == 0).next())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .unwrap_or_default()
}

impl<'a> Kernel<'a> {
    /// Reads the section headers and symbol table of `data`.
    pub fn parse(data: &'a [u8]) -> Result<Kernel<'a>, String> {
        if data.get(..4) != Some(b"\x7fELF") {
            return Err("not an ELF file".into());
        }
        let bad = || "truncated ELF".to_string();
        let shoff = u64_at(data, 0x28).ok_or_else(bad)? as usize;
        let shentsize = u16_at(data, 0x3a).ok_or_else(bad)? as usize;
        let shnum = u16_at(data, 0x3c).ok_or_else(bad)? as usize;
        let shstrndx = u16_at(data, 0x3e).ok_or_else(bad)? as usize;
        let mut raw = Vec::new();
        for i in 0..shnum {
            let b = shoff + i * shentsize;
            raw.push((
                u32_at(data, b).ok_or_else(bad)?,
                u32_at(data, b + 4).ok_or_else(bad)?,
                u64_at(data, b + 8).ok_or_else(bad)?,
                u64_at(data, b + 16).ok_or_else(bad)?,
                u64_at(data, b + 24).ok_or_else(bad)?,
                u64_at(data, b + 32).ok_or_else(bad)?,
                u32_at(data, b + 40).ok_or_else(bad)?,
            ));
        }
        let shstr = raw.get(shstrndx).ok_or_else(bad)?;
        let names = data
            .get(shstr.4 as usize..(shstr.4 + shstr.5) as usize)
            .ok_or_else(bad)?;
        let sections: Vec<Section> = raw
            .iter()
            .map(|r| Section {
                name: cstr(names, r.0 as usize),
                typ: r.1,
                flags: r.2,
                addr: r.3,
                offset: r.4,
                size: r.5,
            })
            .collect();
        let (symtab, link) = raw
            .iter()
            .find(|r| r.1 == SHT_SYMTAB)
            .map(|r| ((r.4, r.5), r.6))
            .ok_or("no symbol table")?;
        let strtab = raw.get(link as usize).ok_or_else(bad)?;
        let strs = data
            .get(strtab.4 as usize..(strtab.4 + strtab.5) as usize)
            .ok_or_else(bad)?;
        let mut symbols = Vec::new();
        for j in 0..symtab.1 as usize / 24 {
            let b = symtab.0 as usize + j * 24;
            let (Some(name), Some(&info), Some(value), Some(size)) = (
                u32_at(data, b),
                data.get(b + 4),
                u64_at(data, b + 8),
                u64_at(data, b + 16),
            ) else {
                return Err(bad());
            };
            symbols.push(Symbol {
                name: cstr(strs, name as usize),
                value,
                size,
                typ: info & 0xf,
            });
        }
        symbols.sort_by_key(|s| s.value);
        Ok(Kernel {
            data,
            sections,
            symbols,
        })
    }

    /// The address of the symbol `name`.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.value)
    }

    /// `len` bytes of the file at address `addr`.
    pub fn read(&self, addr: u64, len: usize) -> Option<&'a [u8]> {
        let s = self.sections.iter().find(|s| {
            s.typ != SHT_NOBITS
                && s.addr != 0
                && s.addr <= addr
                && addr + len as u64 <= s.addr + s.size
        })?;
        let off = (s.offset + (addr - s.addr)) as usize;
        self.data.get(off..off + len)
    }

    /// The bytes between two symbols (`__start_x`, `__stop_x`), and the
    /// start address.
    fn between(&self, start: &str, stop: &str) -> Option<(u64, &'a [u8])> {
        let a = self.symbol(start)?;
        let b = self.symbol(stop)?;
        Some((a, self.read(a, b.checked_sub(a)? as usize)?))
    }

    /// Entries of `size` bytes of a table of relative `s32` fields: for
    /// each entry, the address its field at `field` points to.
    fn relative(base: u64, bytes: &[u8], size: usize, field: usize) -> Vec<u64> {
        bytes
            .chunks_exact(size)
            .enumerate()
            .filter_map(|(i, e)| {
                let rel = i32::from_le_bytes(e.get(field..field + 4)?.try_into().ok()?);
                let at = base + (i * size + field) as u64;
                Some(at.wrapping_add(i64::from(rel) as u64))
            })
            .collect()
    }

    /// Addresses with an exception-table entry (`struct
    /// exception_table_entry`: `insn`, `fixup`, `data`, all `s32`), sorted.
    pub fn ex_table(&self) -> Vec<u64> {
        let Some((base, bytes)) = self.between("__start___ex_table", "__stop___ex_table") else {
            return Vec::new();
        };
        let mut v = Self::relative(base, bytes, 12, 0);
        v.sort_unstable();
        v
    }

    /// ftrace's call sites (`__mcount_loc`, absolute addresses), sorted.
    pub fn mcount_locs(&self) -> Vec<u64> {
        let Some((_, bytes)) = self.between("__start_mcount_loc", "__stop_mcount_loc") else {
            return Vec::new();
        };
        let mut v: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .filter(|&a| a != 0)
            .collect();
        v.sort_unstable();
        v
    }

    /// Jump-label sites (`struct jump_entry`: `s32 code`, `s32 target`,
    /// `long key`), with their instruction's length as the kernel's
    /// `jump_entry_size()` decodes it, sorted.
    pub fn jump_label_sites(&self) -> Vec<(u64, u64)> {
        let Some((base, bytes)) = self.between("__start___jump_table", "__stop___jump_table")
        else {
            return Vec::new();
        };
        let mut v: Vec<(u64, u64)> = Self::relative(base, bytes, 16, 0)
            .into_iter()
            .map(|code| {
                let len = self
                    .read(code, 5)
                    .map(|b| {
                        if b.first() == Some(&0xeb) || b.get(..2) == Some(&[0x66, 0x90]) {
                            2
                        } else {
                            5
                        }
                    })
                    .unwrap_or(5);
                (code, len)
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Inline static-call sites (`struct static_call_site`: `s32 addr`,
    /// `s32 key` whose low bits are flags), but those in init code, which
    /// the kernel no longer counts once it runs, sorted.
    pub fn static_call_sites(&self) -> Vec<u64> {
        let Some((base, bytes)) =
            self.between("__start_static_call_sites", "__stop_static_call_sites")
        else {
            return Vec::new();
        };
        let addrs = Self::relative(base, bytes, 8, 0);
        let keys = Self::relative(base, bytes, 8, 4);
        let mut v: Vec<u64> = addrs
            .into_iter()
            .zip(keys)
            .filter(|&(_, key)| key & 1 == 0)
            .map(|(a, _)| a)
            .collect();
        v.sort_unstable();
        v
    }

    /// The address ranges the kernel's kprobes blacklist from a vmlinux
    /// alone: every `NOKPROBE_SYMBOL()` function (`_kprobe_blacklist`,
    /// sized by the next function symbol, as kallsyms does), and the
    /// `__kprobes`, `noinstr` and entry text areas.
    pub fn kprobe_blacklist(&self, funcs: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        if let Some((_, bytes)) =
            self.between("__start_kprobe_blacklist", "__stop_kprobe_blacklist")
        {
            for c in bytes.chunks_exact(8) {
                let a = u64::from_le_bytes(c.try_into().unwrap());
                if let Some(&(s, e)) = funcs.iter().find(|&&(s, e)| s <= a && a < e) {
                    v.push((s, e));
                }
            }
        }
        for (s, e) in [
            ("__kprobes_text_start", "__kprobes_text_end"),
            ("__noinstr_text_start", "__noinstr_text_end"),
            ("__entry_text_start", "__entry_text_end"),
        ] {
            if let (Some(s), Some(e)) = (self.symbol(s), self.symbol(e)) {
                v.push((s, e));
            }
        }
        v.sort_unstable();
        v
    }

    /// Start addresses of the retpoline, call-depth and return thunks.
    pub fn thunks(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .symbols
            .iter()
            .filter(|s| s.typ == STT_FUNC || self.is_text(s.value))
            .filter(|s| {
                s.name.starts_with("__x86_indirect_")
                    || s.name.contains("return_thunk")
                    || s.name.starts_with("srso_")
                    || s.name.starts_with("retbleed_")
            })
            .map(|s| s.value)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Whether `addr` lies in an executable section.
    pub fn is_text(&self, addr: u64) -> bool {
        self.sections
            .iter()
            .any(|s| s.flags & SHF_EXECINSTR != 0 && s.addr <= addr && addr < s.addr + s.size)
    }
}

/// Whether a sorted list of addresses holds `a`.
pub fn holds(sorted: &[u64], a: u64) -> bool {
    sorted.binary_search(&a).is_ok()
}

/// Whether a site of `sorted` (start, length), or of a fixed `len` when
/// the list has plain addresses, overlaps `start..=end`, as the kernel's
/// `addr_conflict()` tests it.
pub fn conflicts(sorted: &[(u64, u64)], start: u64, end: u64) -> bool {
    let upto = sorted.partition_point(|&(code, _)| code <= end);
    sorted[..upto]
        .iter()
        .rev()
        .take_while(|&&(code, _)| code + 16 > start)
        .any(|&(code, len)| code + len > start)
}
