// SPDX-License-Identifier: GPL-2.0

//! A section of an ELF64 little-endian file by name: what the module needs
//! to find the `.BTF` of a module's `.ko` on disk, before the module is
//! loaded. Every offset and size the file gives is checked against the
//! file's length; anything malformed is `None`.

/// `ELFMAG`, `ELFCLASS64`, `ELFDATA2LSB`.
const IDENT: [u8; 6] = [0x7f, b'E', b'L', b'F', 2, 1];
/// `sizeof(Elf64_Ehdr)`.
const EHDR_LEN: usize = 64;
/// `sizeof(Elf64_Shdr)`.
const SHDR_LEN: usize = 64;
/// `SHT_NOBITS`: a section with no bytes in the file.
const SHT_NOBITS: u32 = 8;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let w = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([w[0], w[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let w = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(w);
    Some(u64::from_le_bytes(a))
}

/// One section header: (name offset, type, file offset, size).
fn shdr(elf: &[u8], shoff: usize, i: usize) -> Option<(u32, u32, usize, usize)> {
    let at = shoff.checked_add(i.checked_mul(SHDR_LEN)?)?;
    Some((
        u32_at(elf, at)?,
        u32_at(elf, at + 4)?,
        usize::try_from(u64_at(elf, at + 24)?).ok()?,
        usize::try_from(u64_at(elf, at + 32)?).ok()?,
    ))
}

/// The bytes of the section `name` of `elf`, if it has one with bytes in
/// the file.
pub fn section<'a>(elf: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    if elf.get(..IDENT.len())? != IDENT || elf.len() < EHDR_LEN {
        return None;
    }
    let shoff = usize::try_from(u64_at(elf, 40)?).ok()?;
    if usize::from(u16_at(elf, 58)?) != SHDR_LEN {
        return None;
    }
    let shnum = usize::from(u16_at(elf, 60)?);
    let shstrndx = usize::from(u16_at(elf, 62)?);
    let (_, _, str_off, str_len) = shdr(elf, shoff, shstrndx)?;
    let names = elf.get(str_off..str_off.checked_add(str_len)?)?;
    for i in 0..shnum {
        let (name_off, ty, off, len) = shdr(elf, shoff, i)?;
        let n = names.get(name_off as usize..)?;
        let n = n.get(..n.iter().position(|&c| c == 0)?)?;
        if n == name && ty != SHT_NOBITS {
            return elf.get(off..off.checked_add(len)?);
        }
    }
    None
}
