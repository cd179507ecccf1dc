// SPDX-License-Identifier: GPL-2.0

//! Parsing of the kernel's symbolised addresses.
//!
//! `sprint_symbol()` is the only symbol lookup exported to modules in 6.12. It
//! writes `NAME+0xOFF/0xSIZE` for an address inside a vmlinux symbol,
//! `NAME+0xOFF/0xSIZE [MODULE]` inside a module (a build id may follow the
//! module name), and just the address in hex when no symbol covers it.
//! rkprobes walks the kernel's text with it to find the symbols it needs that
//! are not exported, and uses it to validate every address found that way.

/// One symbolised address, borrowing from the text it was parsed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolAddr<'a> {
    /// The symbol's name.
    pub name: &'a str,
    /// Offset of the address from the symbol's start.
    pub offset: u64,
    /// The symbol's size, as kallsyms computes it (distance to the next symbol).
    pub size: u64,
    /// The module the symbol belongs to, or `None` for vmlinux.
    pub module: Option<&'a str>,
}

impl SymbolAddr<'_> {
    /// Start address of the symbol, given the address that was symbolised.
    ///
    /// `None` when the offset is larger than the address, which a well-formed
    /// answer for that address cannot contain.
    pub fn start(&self, addr: u64) -> Option<u64> {
        addr.checked_sub(self.offset)
    }

    /// First address after the symbol, given the address that was symbolised.
    pub fn end(&self, addr: u64) -> Option<u64> {
        self.start(addr)?.checked_add(self.size)
    }
}

/// Whether `name` is a function's padding or CFI preamble symbol
/// (`__pfx_*`, `__cfi_*`): the bytes before a function that the kernel may
/// rewrite (FineIBT, call depth tracking) and never lets kprobes touch.
pub fn is_preamble_symbol(name: &str) -> bool {
    name.starts_with("__pfx_") || name.starts_with("__cfi_")
}

/// Parses a hexadecimal number written as `0x...`.
fn parse_hex(s: &str) -> Option<u64> {
    let digits = s.strip_prefix("0x")?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Parses the output of `sprint_symbol()`.
///
/// Returns `None` when the address was not inside any symbol (the kernel then
/// prints the bare address) or when the text is not in the expected form.
pub fn parse_sprint_symbol(s: &str) -> Option<SymbolAddr<'_>> {
    let (sym, module) = match s.split_once(" [") {
        Some((sym, rest)) => {
            let inner = rest.strip_suffix(']')?;
            // A build id, when configured, follows the module name.
            let module = inner.split(' ').next()?;
            if module.is_empty() {
                return None;
            }
            (sym, Some(module))
        }
        None => (s, None),
    };
    // Symbol names may contain '+' (never in practice in C, but Rust's v0
    // mangling can contain almost anything): the offset is after the last one.
    let (name, off_size) = sym.rsplit_once('+')?;
    let (off, size) = off_size.split_once('/')?;
    if name.is_empty() {
        return None;
    }
    Some(SymbolAddr {
        name,
        offset: parse_hex(off)?,
        size: parse_hex(size)?,
        module,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmlinux_symbol() {
        let s = parse_sprint_symbol("kernel_clone+0x4/0x3a0").unwrap();
        assert_eq!(s.name, "kernel_clone");
        assert_eq!(s.offset, 4);
        assert_eq!(s.size, 0x3a0);
        assert_eq!(s.module, None);
        assert_eq!(s.start(0xffff_ffff_8100_0004), Some(0xffff_ffff_8100_0000));
        assert_eq!(s.end(0xffff_ffff_8100_0004), Some(0xffff_ffff_8100_03a0));
    }

    #[test]
    fn module_symbol_with_and_without_build_id() {
        let s = parse_sprint_symbol("lkdtm_WARNING+0x0/0x20 [lkdtm]").unwrap();
        assert_eq!(
            (s.name, s.offset, s.size, s.module),
            ("lkdtm_WARNING", 0, 0x20, Some("lkdtm"))
        );
        let s = parse_sprint_symbol("f+0x10/0x40 [m 0123456789abcdef]").unwrap();
        assert_eq!(s.module, Some("m"));
    }

    #[test]
    fn unsymbolised_and_malformed() {
        for bad in [
            "0xffffffff81000000",
            "",
            "+0x0/0x10",
            "f+0x/0x10",
            "f+10/0x10",
            "f+0x0",
            "f+0x0/0x10 [",
            "f+0x0/0x10 []",
            "f+0x0/0x10000000000000000",
        ] {
            assert_eq!(parse_sprint_symbol(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn preamble_symbols() {
        assert!(is_preamble_symbol("__pfx_kernel_clone"));
        assert!(is_preamble_symbol("__cfi_kernel_clone"));
        assert!(!is_preamble_symbol("kernel_clone"));
        assert!(!is_preamble_symbol("__pf_x"));
    }

    #[test]
    fn offset_larger_than_address() {
        let s = parse_sprint_symbol("f+0x10/0x20").unwrap();
        assert_eq!(s.start(8), None);
        let s = parse_sprint_symbol("f+0x0/0xffffffffffffffff").unwrap();
        assert_eq!(s.end(2), None);
    }
}
