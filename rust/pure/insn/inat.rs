// SPDX-License-Identifier: GPL-2.0

//! Instruction attributes: the bit layout and look-ups of the kernel's
//! `arch/x86/include/asm/inat.h` and `arch/x86/lib/inat.c`.
//!
//! An attribute word describes one opcode (or one ModRM.reg slot of an opcode
//! group): whether it is a prefix, an escape to another map, a group, which
//! immediate it takes, whether it has a ModRM byte and so on. The decoder
//! walks these words exactly as `insn.c` does, and the bit layout is the
//! kernel's so that [`crate::pure::insn::Insn::attr`] can be compared with
//! `struct insn`'s `attr` field bit for bit.

use super::tables::{INAT_AVX_TABLES, INAT_ESCAPE_TABLES, INAT_GROUP_TABLES, INAT_PRIMARY_TABLE};

/// Number of entries of an opcode map (`INAT_OPCODE_TABLE_SIZE`).
pub const INAT_OPCODE_TABLE_SIZE: usize = 256;
/// Number of entries of a group table (`INAT_GROUP_TABLE_SIZE`).
pub const INAT_GROUP_TABLE_SIZE: usize = 8;

/// Last-prefix id of 0x66 (`INAT_PFX_OPNDSZ`).
pub const INAT_PFX_OPNDSZ: u32 = 1;
/// Last-prefix id of 0xf3 (`INAT_PFX_REPE`).
pub const INAT_PFX_REPE: u32 = 2;
/// Last-prefix id of 0xf2 (`INAT_PFX_REPNE`).
pub const INAT_PFX_REPNE: u32 = 3;
/// Prefix id of 0xf0 (`INAT_PFX_LOCK`).
pub const INAT_PFX_LOCK: u32 = 4;
/// Prefix id of 0x2e (`INAT_PFX_CS`).
pub const INAT_PFX_CS: u32 = 5;
/// Prefix id of 0x3e (`INAT_PFX_DS`).
pub const INAT_PFX_DS: u32 = 6;
/// Prefix id of 0x26 (`INAT_PFX_ES`).
pub const INAT_PFX_ES: u32 = 7;
/// Prefix id of 0x64 (`INAT_PFX_FS`).
pub const INAT_PFX_FS: u32 = 8;
/// Prefix id of 0x65 (`INAT_PFX_GS`).
pub const INAT_PFX_GS: u32 = 9;
/// Prefix id of 0x36 (`INAT_PFX_SS`).
pub const INAT_PFX_SS: u32 = 10;
/// Prefix id of 0x67 (`INAT_PFX_ADDRSZ`).
pub const INAT_PFX_ADDRSZ: u32 = 11;
/// Prefix id of REX, 0x40..=0x4f (`INAT_PFX_REX`).
pub const INAT_PFX_REX: u32 = 12;
/// Prefix id of the 2-byte VEX prefix 0xc5 (`INAT_PFX_VEX2`).
pub const INAT_PFX_VEX2: u32 = 13;
/// Prefix id of the 3-byte VEX prefix 0xc4 (`INAT_PFX_VEX3`).
pub const INAT_PFX_VEX3: u32 = 14;
/// Prefix id of the EVEX prefix 0x62 (`INAT_PFX_EVEX`).
pub const INAT_PFX_EVEX: u32 = 15;
/// Prefix id of the APX REX2 prefix 0xd5 (`INAT_PFX_REX2`).
pub const INAT_PFX_REX2: u32 = 16;

/// Highest last-prefix id (`INAT_LSTPFX_MAX`).
pub const INAT_LSTPFX_MAX: u32 = 3;
/// Highest legacy prefix id (`INAT_LGCPFX_MAX`).
pub const INAT_LGCPFX_MAX: u32 = 11;

/// Immediate kind: one byte (`INAT_IMM_BYTE`).
pub const INAT_IMM_BYTE: u32 = 1;
/// Immediate kind: two bytes (`INAT_IMM_WORD`).
pub const INAT_IMM_WORD: u32 = 2;
/// Immediate kind: four bytes (`INAT_IMM_DWORD`).
pub const INAT_IMM_DWORD: u32 = 3;
/// Immediate kind: eight bytes (`INAT_IMM_QWORD`).
pub const INAT_IMM_QWORD: u32 = 4;
/// Immediate kind: far pointer ptr16:16/32 (`INAT_IMM_PTR`).
pub const INAT_IMM_PTR: u32 = 5;
/// Immediate kind: 2 or 4 bytes by operand size (`INAT_IMM_VWORD32`, Iz/Jz).
pub const INAT_IMM_VWORD32: u32 = 6;
/// Immediate kind: 2, 4 or 8 bytes by operand size (`INAT_IMM_VWORD`, Iv).
pub const INAT_IMM_VWORD: u32 = 7;

/// Bit offset of the prefix id.
pub const INAT_PFX_OFFS: u32 = 0;
/// Width of the prefix id.
pub const INAT_PFX_BITS: u32 = 5;
/// Mask of the prefix id.
pub const INAT_PFX_MASK: u32 = ((1 << INAT_PFX_BITS) - 1) << INAT_PFX_OFFS;
/// Bit offset of the escape id.
pub const INAT_ESC_OFFS: u32 = INAT_PFX_OFFS + INAT_PFX_BITS;
/// Width of the escape id.
pub const INAT_ESC_BITS: u32 = 2;
/// Highest escape id.
pub const INAT_ESC_MAX: u32 = (1 << INAT_ESC_BITS) - 1;
/// Mask of the escape id.
pub const INAT_ESC_MASK: u32 = INAT_ESC_MAX << INAT_ESC_OFFS;
/// Bit offset of the group id.
pub const INAT_GRP_OFFS: u32 = INAT_ESC_OFFS + INAT_ESC_BITS;
/// Width of the group id.
pub const INAT_GRP_BITS: u32 = 5;
/// Highest group id.
pub const INAT_GRP_MAX: u32 = (1 << INAT_GRP_BITS) - 1;
/// Mask of the group id.
pub const INAT_GRP_MASK: u32 = INAT_GRP_MAX << INAT_GRP_OFFS;
/// Bit offset of the immediate kind.
pub const INAT_IMM_OFFS: u32 = INAT_GRP_OFFS + INAT_GRP_BITS;
/// Width of the immediate kind.
pub const INAT_IMM_BITS: u32 = 3;
/// Mask of the immediate kind.
pub const INAT_IMM_MASK: u32 = ((1 << INAT_IMM_BITS) - 1) << INAT_IMM_OFFS;
/// Bit offset of the first flag.
pub const INAT_FLAG_OFFS: u32 = INAT_IMM_OFFS + INAT_IMM_BITS;
/// Has a ModRM byte.
pub const INAT_MODRM: u32 = 1 << INAT_FLAG_OFFS;
/// Operand size is 64 bits in 64-bit mode (`(d64)`/`(f64)` in the map).
pub const INAT_FORCE64: u32 = 1 << (INAT_FLAG_OFFS + 1);
/// Has a second, one-byte immediate (ENTER, EXTRQ, ...).
pub const INAT_SCNDIMM: u32 = 1 << (INAT_FLAG_OFFS + 2);
/// Has a memory offset (moffs) instead of ModRM (MOV AL/rAX, Ob/Ov).
pub const INAT_MOFFSET: u32 = 1 << (INAT_FLAG_OFFS + 3);
/// Meaning depends on the last prefix: look up the prefix-variant table.
pub const INAT_VARIANT: u32 = 1 << (INAT_FLAG_OFFS + 4);
/// Accepts a VEX/EVEX prefix.
pub const INAT_VEXOK: u32 = 1 << (INAT_FLAG_OFFS + 5);
/// Valid only with a VEX prefix.
pub const INAT_VEXONLY: u32 = 1 << (INAT_FLAG_OFFS + 6);
/// Valid only with an EVEX prefix.
pub const INAT_EVEXONLY: u32 = 1 << (INAT_FLAG_OFFS + 7);
/// Not allowed with a REX2 prefix (`(!REX2)`; the kernel decoder records but
/// does not enforce it).
pub const INAT_NO_REX2: u32 = 1 << (INAT_FLAG_OFFS + 8);
/// Has a REX2-only variant (`(REX2)`).
pub const INAT_REX2_VARIANT: u32 = 1 << (INAT_FLAG_OFFS + 9);
/// EVEX instruction whose W and pp bits select the operand size (`(es)`).
pub const INAT_EVEX_SCALABLE: u32 = 1 << (INAT_FLAG_OFFS + 10);

/// Highest VEX.mmmmm value (`X86_VEX_M_MAX`).
pub const X86_VEX_M_MAX: u8 = 0x1f;

/// Attribute of a one-byte-map opcode (`inat_get_opcode_attribute`).
pub fn get_opcode_attribute(opcode: u8) -> u32 {
    INAT_PRIMARY_TABLE
        .get(usize::from(opcode))
        .copied()
        .unwrap_or(0)
}

/// Last-prefix id (0 to 3) of a legacy prefix byte (`inat_get_last_prefix_id`).
pub fn get_last_prefix_id(last_pfx: u8) -> u8 {
    last_prefix_id(get_opcode_attribute(last_pfx))
}

/// Attribute of `opcode` in the map reached through the escape described by
/// `esc_attr`, for last-prefix id `lpfx_id` (`inat_get_escape_attribute`).
pub fn get_escape_attribute(opcode: u8, lpfx_id: u8, esc_attr: u32) -> u32 {
    let row = INAT_ESCAPE_TABLES.get(escape_id(esc_attr) as usize);
    let Some(row) = row else { return 0 };
    let Some(Some(mut table)) = row.first().copied() else {
        return 0;
    };
    let entry = table.get(usize::from(opcode)).copied().unwrap_or(0);
    if has_variant(entry) && lpfx_id != 0 {
        match row.get(usize::from(lpfx_id)).copied().flatten() {
            Some(t) => table = t,
            None => return 0,
        }
    }
    table.get(usize::from(opcode)).copied().unwrap_or(0)
}

/// Attribute of the group member selected by ModRM.reg of `modrm`, merged with
/// the group's common attribute (`inat_get_group_attribute`).
pub fn get_group_attribute(modrm: u8, lpfx_id: u8, grp_attr: u32) -> u32 {
    let common = group_common_attribute(grp_attr);
    let row = INAT_GROUP_TABLES.get(group_id(grp_attr) as usize);
    let Some(row) = row else { return common };
    let Some(Some(mut table)) = row.first().copied() else {
        return common;
    };
    let reg = usize::from(modrm_reg(modrm));
    let entry = table.get(reg).copied().unwrap_or(0);
    if has_variant(entry) && lpfx_id != 0 {
        match row.get(usize::from(lpfx_id)).copied().flatten() {
            Some(t) => table = t,
            None => return common,
        }
    }
    table.get(reg).copied().unwrap_or(0) | common
}

/// Attribute of `opcode` in VEX/EVEX map `vex_m` with SIMD prefix `vex_p`
/// (`inat_get_avx_attribute`).
pub fn get_avx_attribute(opcode: u8, vex_m: u8, vex_p: u8) -> u32 {
    if vex_m > X86_VEX_M_MAX || u32::from(vex_p) > INAT_LSTPFX_MAX {
        return 0;
    }
    let Some(row) = INAT_AVX_TABLES.get(usize::from(vex_m)) else {
        return 0;
    };
    let Some(Some(mut table)) = row.first().copied() else {
        return 0;
    };
    let entry = table.get(usize::from(opcode)).copied().unwrap_or(0);
    if !is_group(entry) && vex_p != 0 {
        // Groups are looked up by ModRM later; everything else per prefix.
        match row.get(usize::from(vex_p)).copied().flatten() {
            Some(t) => table = t,
            None => return 0,
        }
    }
    table.get(usize::from(opcode)).copied().unwrap_or(0)
}

/// ModRM.reg, bits 5:3 (`X86_MODRM_REG`).
pub const fn modrm_reg(modrm: u8) -> u8 {
    (modrm & 0x38) >> 3
}

/// ModRM.mod, bits 7:6 (`X86_MODRM_MOD`).
pub const fn modrm_mod(modrm: u8) -> u8 {
    (modrm & 0xc0) >> 6
}

/// ModRM.rm, bits 2:0 (`X86_MODRM_RM`).
pub const fn modrm_rm(modrm: u8) -> u8 {
    modrm & 0x07
}

/// SIB.base, bits 2:0 (`X86_SIB_BASE`).
pub const fn sib_base(sib: u8) -> u8 {
    sib & 0x07
}

/// Is a legacy prefix (`inat_is_legacy_prefix`).
pub const fn is_legacy_prefix(attr: u32) -> bool {
    let pfx = attr & INAT_PFX_MASK;
    pfx != 0 && pfx <= INAT_LGCPFX_MAX
}

/// Is the address-size prefix 0x67 (`inat_is_address_size_prefix`).
pub const fn is_address_size_prefix(attr: u32) -> bool {
    attr & INAT_PFX_MASK == INAT_PFX_ADDRSZ
}

/// Is the operand-size prefix 0x66 (`inat_is_operand_size_prefix`).
pub const fn is_operand_size_prefix(attr: u32) -> bool {
    attr & INAT_PFX_MASK == INAT_PFX_OPNDSZ
}

/// Is a REX prefix (`inat_is_rex_prefix`).
pub const fn is_rex_prefix(attr: u32) -> bool {
    attr & INAT_PFX_MASK == INAT_PFX_REX
}

/// Is the REX2 prefix (`inat_is_rex2_prefix`).
pub const fn is_rex2_prefix(attr: u32) -> bool {
    attr & INAT_PFX_MASK == INAT_PFX_REX2
}

/// Last-prefix id (1 to 3) of a 0x66/0xf3/0xf2 attribute, else 0
/// (`inat_last_prefix_id`).
pub const fn last_prefix_id(attr: u32) -> u8 {
    let pfx = attr & INAT_PFX_MASK;
    if pfx > INAT_LSTPFX_MAX {
        0
    } else {
        // At most INAT_LSTPFX_MAX (3) here, so the narrowing is lossless.
        pfx as u8
    }
}

/// Is a VEX2, VEX3 or EVEX prefix (`inat_is_vex_prefix`).
pub const fn is_vex_prefix(attr: u32) -> bool {
    let pfx = attr & INAT_PFX_MASK;
    pfx == INAT_PFX_VEX2 || pfx == INAT_PFX_VEX3 || pfx == INAT_PFX_EVEX
}

/// Is the EVEX prefix (`inat_is_evex_prefix`).
pub const fn is_evex_prefix(attr: u32) -> bool {
    attr & INAT_PFX_MASK == INAT_PFX_EVEX
}

/// Is the 3-byte VEX prefix (`inat_is_vex3_prefix`).
pub const fn is_vex3_prefix(attr: u32) -> bool {
    attr & INAT_PFX_MASK == INAT_PFX_VEX3
}

/// Is an escape to another opcode map (`inat_is_escape`).
pub const fn is_escape(attr: u32) -> bool {
    attr & INAT_ESC_MASK != 0
}

/// Escape id: 1 for 0x0f, 2 for 0x0f 0x38, 3 for 0x0f 0x3a (`inat_escape_id`).
pub const fn escape_id(attr: u32) -> u32 {
    (attr & INAT_ESC_MASK) >> INAT_ESC_OFFS
}

/// Is an opcode group (`inat_is_group`).
pub const fn is_group(attr: u32) -> bool {
    attr & INAT_GRP_MASK != 0
}

/// Group id (`inat_group_id`).
pub const fn group_id(attr: u32) -> u32 {
    (attr & INAT_GRP_MASK) >> INAT_GRP_OFFS
}

/// Attribute shared by all members of a group (`inat_group_common_attribute`).
pub const fn group_common_attribute(attr: u32) -> u32 {
    attr & !INAT_GRP_MASK
}

/// Has an immediate (`inat_has_immediate`).
pub const fn has_immediate(attr: u32) -> bool {
    attr & INAT_IMM_MASK != 0
}

/// Immediate kind, one of the `INAT_IMM_*` values (`inat_immediate_size`).
pub const fn immediate_size(attr: u32) -> u32 {
    (attr & INAT_IMM_MASK) >> INAT_IMM_OFFS
}

/// Has a ModRM byte (`inat_has_modrm`).
pub const fn has_modrm(attr: u32) -> bool {
    attr & INAT_MODRM != 0
}

/// Operand size is forced to 64 bits (`inat_is_force64`).
pub const fn is_force64(attr: u32) -> bool {
    attr & INAT_FORCE64 != 0
}

/// Has a second immediate (`inat_has_second_immediate`).
pub const fn has_second_immediate(attr: u32) -> bool {
    attr & INAT_SCNDIMM != 0
}

/// Has a moffs operand (`inat_has_moffset`).
pub const fn has_moffset(attr: u32) -> bool {
    attr & INAT_MOFFSET != 0
}

/// Has prefix variants (`inat_has_variant`).
pub const fn has_variant(attr: u32) -> bool {
    attr & INAT_VARIANT != 0
}

/// Accepts VEX (`inat_accept_vex`).
pub const fn accept_vex(attr: u32) -> bool {
    attr & INAT_VEXOK != 0
}

/// Requires VEX or EVEX (`inat_must_vex`).
pub const fn must_vex(attr: u32) -> bool {
    attr & (INAT_VEXONLY | INAT_EVEXONLY) != 0
}

/// Requires EVEX (`inat_must_evex`).
pub const fn must_evex(attr: u32) -> bool {
    attr & INAT_EVEXONLY != 0
}

/// EVEX-scalable (`inat_evex_scalable`).
pub const fn evex_scalable(attr: u32) -> bool {
    attr & INAT_EVEX_SCALABLE != 0
}

/// Not allowed with REX2 (flag recorded by the map; see [`INAT_NO_REX2`]).
pub const fn no_rex2(attr: u32) -> bool {
    attr & INAT_NO_REX2 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_attributes() {
        // 0x0f escapes to the 2-byte map.
        assert_eq!(escape_id(get_opcode_attribute(0x0f)), 1);
        // 0x66/0xf3/0xf2 are the three last prefixes.
        assert_eq!(get_last_prefix_id(0x66), 1);
        assert_eq!(get_last_prefix_id(0xf3), 2);
        assert_eq!(get_last_prefix_id(0xf2), 3);
        assert_eq!(get_last_prefix_id(0x2e), 0);
        assert!(is_legacy_prefix(get_opcode_attribute(0x2e)));
        assert!(is_rex_prefix(get_opcode_attribute(0x48)));
        assert!(is_rex2_prefix(get_opcode_attribute(0xd5)));
        assert!(is_vex_prefix(get_opcode_attribute(0xc4)));
        assert!(is_evex_prefix(get_opcode_attribute(0x62)));
        // call rel32: Jz, forced 64-bit operand size.
        let call = get_opcode_attribute(0xe8);
        assert_eq!(immediate_size(call), INAT_IMM_VWORD32);
        assert!(is_force64(call));
        // ENTER: Iw then Ib.
        let enter = get_opcode_attribute(0xc8);
        assert_eq!(immediate_size(enter), INAT_IMM_WORD);
        assert!(has_second_immediate(enter));
        // 0xff is group 5; /2 (call) is forced 64-bit.
        let ff = get_opcode_attribute(0xff);
        assert!(is_group(ff) && has_modrm(ff));
        assert!(is_force64(get_group_attribute(0xd0, 0, ff)));
        // Out-of-range VEX map or prefix gives no attribute.
        assert_eq!(get_avx_attribute(0x10, 0x1f, 0), 0);
        assert_eq!(get_avx_attribute(0x10, 1, 4), 0);
    }
}
