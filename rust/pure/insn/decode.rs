// SPDX-License-Identifier: GPL-2.0

//! The x86-64 instruction decoder: a port of the kernel's
//! `arch/x86/lib/insn.c` (Linux 6.12) for 64-bit mode.
//!
//! It reproduces `insn_decode(..., INSN_MODE_64)` field for field, quirks
//! included (the last-prefix swap, the fifth distinct legacy prefix being taken
//! as the opcode, the EVEX.W test on the wrong byte, REX before VEX, REX2
//! escaping only to map 1 and never checking `(!REX2)`), because the probe
//! engine must agree with the kernel on where instructions start and end. The
//! host tests compare it with the kernel's C decoder on every instruction of a
//! vmlinux and on millions of random byte strings.
//!
//! Decoding reads only the given buffer and at most [`MAX_INSN_SIZE`] bytes of
//! it, never panics, and does a bounded amount of work.

use super::inat;

/// Longest x86 instruction, in bytes (`MAX_INSN_SIZE`).
pub const MAX_INSN_SIZE: usize = 15;

/// `ud2; .ascii "xen"`: Xen's forced-emulation prefix.
const XEN_EMULATE_PREFIX: [u8; 5] = [0x0f, 0x0b, 0x78, 0x65, 0x6e];
/// `ud2; .ascii "kvm"`: KVM's forced-emulation prefix.
const KVM_EMULATE_PREFIX: [u8; 5] = [0x0f, 0x0b, 0x6b, 0x76, 0x6d];

/// Why an instruction could not be decoded; the kernel returns these as
/// negative errno values from `insn_decode()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The instruction runs past the end of the buffer or past 15 bytes, or
    /// has an operand form that does not exist (a far pointer with a 64-bit
    /// operand size): `-ENODATA`.
    NoData,
    /// A VEX/EVEX prefix on an opcode that does not accept it, an
    /// EVEX-only opcode with VEX, or a VEX-only opcode without VEX:
    /// `-EINVAL`.
    Invalid,
}

impl DecodeError {
    /// The errno the kernel's `insn_decode()` returns for this error.
    pub const fn to_errno(self) -> i32 {
        match self {
            DecodeError::NoData => -61,
            DecodeError::Invalid => -22,
        }
    }
}

/// One part of an instruction, like the kernel's `struct insn_field`: a value
/// and how many bytes of the instruction it took.
///
/// `value` is the little-endian interpretation of the field's bytes: for the
/// prefix, REX, VEX and opcode fields each byte is stored in turn (see
/// [`InsnField::byte`]); displacements and immediates are sign-extended, the
/// segment part of a far pointer is zero-extended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InsnField {
    /// The field's value (`insn_field.value`).
    pub value: i32,
    /// Bytes of the instruction this field occupies (`insn_field.nbytes`).
    pub nbytes: u8,
}

impl InsnField {
    /// The four bytes of `value` (`insn_field.bytes[]`).
    pub const fn bytes(&self) -> [u8; 4] {
        self.value.to_le_bytes()
    }

    /// Byte `n` of `value`, or 0 when `n` is 4 or more.
    pub fn byte(&self, n: usize) -> u8 {
        self.bytes().get(n).copied().unwrap_or(0)
    }

    fn set_byte(&mut self, n: usize, b: u8) {
        let mut bytes = self.bytes();
        if let Some(slot) = bytes.get_mut(n) {
            *slot = b;
        }
        self.value = i32::from_le_bytes(bytes);
    }

    const fn set(&mut self, value: i32, nbytes: u8) {
        self.value = value;
        self.nbytes = nbytes;
    }
}

/// A decoded x86-64 instruction, with the fields of the kernel's
/// `struct insn` and a copy of its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    bytes: [u8; MAX_INSN_SIZE],
    prefixes: InsnField,
    rex_prefix: InsnField,
    vex_prefix: InsnField,
    opcode: InsnField,
    modrm: InsnField,
    sib: InsnField,
    displacement: InsnField,
    immediate1: InsnField,
    immediate2: InsnField,
    emulate_prefix_size: u8,
    attr: u32,
    opnd_bytes: u8,
    addr_bytes: u8,
    length: u8,
}

/// Reads bytes the way `insn.c`'s `get_next`/`peek_nbyte_next` do: never
/// beyond the buffer, never beyond 15 bytes from the start.
struct Cursor<'a> {
    buf: &'a [u8],
    next: usize,
    end: usize,
}

impl Cursor<'_> {
    /// `validate_next(t, insn, n)`: `next + size + n <= end`.
    fn has(&self, size: usize, n: usize) -> bool {
        self.next
            .checked_add(size)
            .and_then(|v| v.checked_add(n))
            .is_some_and(|v| v <= self.end)
    }

    fn peek(&self, n: usize) -> Result<u8, DecodeError> {
        if !self.has(1, n) {
            return Err(DecodeError::NoData);
        }
        self.next
            .checked_add(n)
            .and_then(|i| self.buf.get(i))
            .copied()
            .ok_or(DecodeError::NoData)
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        if !self.has(N, 0) {
            return Err(DecodeError::NoData);
        }
        let end = self.next.checked_add(N).ok_or(DecodeError::NoData)?;
        let src = self.buf.get(self.next..end).ok_or(DecodeError::NoData)?;
        let mut out = [0u8; N];
        out.copy_from_slice(src);
        self.next = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(u8::from_le_bytes(self.take::<1>()?))
    }

    fn i8(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from(i8::from_le_bytes(self.take::<1>()?)))
    }

    fn i16(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from(i16::from_le_bytes(self.take::<2>()?)))
    }

    fn u16(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from(u16::from_le_bytes(self.take::<2>()?)))
    }

    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_le_bytes(self.take::<4>()?))
    }

    fn skip(&mut self, n: usize) {
        self.next = self.next.saturating_add(n).min(self.end);
    }
}

impl Insn {
    const fn empty() -> Self {
        Insn {
            bytes: [0; MAX_INSN_SIZE],
            prefixes: InsnField {
                value: 0,
                nbytes: 0,
            },
            rex_prefix: InsnField {
                value: 0,
                nbytes: 0,
            },
            vex_prefix: InsnField {
                value: 0,
                nbytes: 0,
            },
            opcode: InsnField {
                value: 0,
                nbytes: 0,
            },
            modrm: InsnField {
                value: 0,
                nbytes: 0,
            },
            sib: InsnField {
                value: 0,
                nbytes: 0,
            },
            displacement: InsnField {
                value: 0,
                nbytes: 0,
            },
            immediate1: InsnField {
                value: 0,
                nbytes: 0,
            },
            immediate2: InsnField {
                value: 0,
                nbytes: 0,
            },
            emulate_prefix_size: 0,
            attr: 0,
            // insn_init(): 32-bit operands, 64-bit addresses in 64-bit mode.
            opnd_bytes: 4,
            addr_bytes: 8,
            length: 0,
        }
    }

    /// Decodes the 64-bit-mode instruction at the start of `buf`, like the
    /// kernel's `insn_decode(insn, buf, len, INSN_MODE_64)`.
    ///
    /// At most [`MAX_INSN_SIZE`] bytes are looked at; bytes after the
    /// instruction are ignored.
    pub fn decode(buf: &[u8]) -> Result<Insn, DecodeError> {
        let mut insn = Insn::empty();
        let mut cur = Cursor {
            buf,
            next: 0,
            end: buf.len().min(MAX_INSN_SIZE),
        };
        insn.get_prefixes(&mut cur)?;
        insn.get_opcode(&mut cur)?;
        insn.get_modrm(&mut cur)?;
        insn.get_sib(&mut cur)?;
        insn.get_displacement(&mut cur)?;
        insn.get_immediate(&mut cur)?;
        // `next` never passes `end`, which is at most 15.
        insn.length = u8::try_from(cur.next).map_err(|_| DecodeError::NoData)?;
        if let (Some(dst), Some(src)) = (insn.bytes.get_mut(..cur.next), buf.get(..cur.next)) {
            dst.copy_from_slice(src);
        }
        Ok(insn)
    }

    fn get_emulate_prefix(&mut self, cur: &mut Cursor<'_>) {
        for prefix in [XEN_EMULATE_PREFIX, KVM_EMULATE_PREFIX] {
            let matches = prefix
                .iter()
                .enumerate()
                .all(|(i, &b)| cur.peek(i) == Ok(b));
            if matches {
                self.emulate_prefix_size = prefix.len() as u8;
                cur.skip(prefix.len());
                return;
            }
        }
    }

    /// `insn_get_prefixes()`: emulate prefix, legacy prefixes, REX or REX2,
    /// VEX or EVEX.
    fn get_prefixes(&mut self, cur: &mut Cursor<'_>) -> Result<(), DecodeError> {
        self.get_emulate_prefix(cur);

        let mut nb: usize = 0;
        let mut lb: u8 = 0;
        let mut b = cur.peek(0)?;
        let mut attr = inat::get_opcode_attribute(b);
        while inat::is_legacy_prefix(attr) {
            // A repeated prefix is counted but stored once.
            let seen = self.prefixes.bytes().iter().take(nb).any(|&p| p == b);
            if !seen {
                if nb == 4 {
                    // A fifth distinct prefix: the kernel stops here and
                    // takes this byte as the opcode.
                    break;
                }
                self.prefixes.set_byte(nb, b);
                nb += 1;
                if inat::is_address_size_prefix(attr) {
                    // Address size switches 8 <-> 4 in 64-bit mode.
                    self.addr_bytes ^= 12;
                } else if inat::is_operand_size_prefix(attr) {
                    // Operand size switches 4 <-> 2.
                    self.opnd_bytes ^= 6;
                }
            }
            self.prefixes.nbytes = self.prefixes.nbytes.wrapping_add(1);
            cur.skip(1);
            lb = b;
            b = cur.peek(0)?;
            attr = inat::get_opcode_attribute(b);
        }
        // The last prefix goes to bytes[3]; if bytes[3] held another prefix,
        // that one takes the last prefix's old slot.
        let last = self.prefixes.byte(3);
        if lb != 0 && lb != last {
            if last != 0 {
                for i in 0..nb {
                    if self.prefixes.byte(i) == lb {
                        self.prefixes.set_byte(i, last);
                    }
                }
            }
            self.prefixes.set_byte(3, lb);
        }

        b = cur.peek(0)?;
        attr = inat::get_opcode_attribute(b);
        if inat::is_rex_prefix(attr) {
            self.rex_prefix.set(i32::from(b), 1);
            cur.skip(1);
            if b & 8 != 0 {
                // REX.W overrides the operand size.
                self.opnd_bytes = 8;
            }
        } else if inat::is_rex2_prefix(attr) {
            self.rex_prefix.set_byte(0, b);
            let b1 = cur.peek(1)?;
            self.rex_prefix.set_byte(1, b1);
            self.rex_prefix.nbytes = 2;
            cur.skip(2);
            if b1 & 8 != 0 {
                self.opnd_bytes = 8;
            }
            // REX2 is never followed by VEX.
            return Ok(());
        }

        b = cur.peek(0)?;
        attr = inat::get_opcode_attribute(b);
        if inat::is_vex_prefix(attr) {
            let b1 = cur.peek(1)?;
            self.vex_prefix.set_byte(0, b);
            self.vex_prefix.set_byte(1, b1);
            if inat::is_evex_prefix(attr) {
                let b2 = cur.peek(2)?;
                self.vex_prefix.set_byte(2, b2);
                let b3 = cur.peek(3)?;
                self.vex_prefix.set_byte(3, b3);
                self.vex_prefix.nbytes = 4;
                cur.skip(4);
                // The kernel tests bit 7 of the *fourth* EVEX byte (EVEX.z)
                // here, not EVEX.W; kept for field-for-field agreement.
                if b3 & 0x80 != 0 {
                    self.opnd_bytes = 8;
                }
            } else if inat::is_vex3_prefix(attr) {
                let b2 = cur.peek(2)?;
                self.vex_prefix.set_byte(2, b2);
                self.vex_prefix.nbytes = 3;
                cur.skip(3);
                if b2 & 0x80 != 0 {
                    // VEX.W overrides the operand size.
                    self.opnd_bytes = 8;
                }
            } else {
                // VEX2: a VEX3-like byte 2 with W = 0 eases decoding of
                // W, vvvv, L and pp.
                self.vex_prefix.set_byte(2, b1 & 0x7f);
                self.vex_prefix.nbytes = 2;
                cur.skip(2);
            }
        }
        Ok(())
    }

    /// `insn_get_opcode()`: one to three opcode bytes and the attribute.
    fn get_opcode(&mut self, cur: &mut Cursor<'_>) -> Result<(), DecodeError> {
        let mut op = cur.u8()?;
        self.opcode.set_byte(0, op);
        self.opcode.nbytes = 1;

        if self.is_avx() {
            let m = self.vex_m_bits();
            let p = self.vex_p_bits();
            self.attr = inat::get_avx_attribute(op, m, p);
            // Scalable EVEX uses pp to encode the operand size.
            if inat::evex_scalable(self.attr)
                && self.vex_w_bit() == 0
                && u32::from(p) == inat::INAT_PFX_OPNDSZ
            {
                self.opnd_bytes = 2;
            }
            if (inat::must_evex(self.attr) && !self.is_evex())
                || (!inat::accept_vex(self.attr) && !inat::is_group(self.attr))
            {
                self.attr = 0;
                return Err(DecodeError::Invalid);
            }
            // VEX has only one opcode byte.
            return Ok(());
        }

        if self.is_rex2() {
            if self.rex2_m_bit() {
                // REX2.M0 = 1 selects map 1, as if escaped by 0x0f.
                let esc_attr = inat::get_opcode_attribute(0x0f);
                let pfx_id = self.last_prefix_id();
                self.attr = inat::get_escape_attribute(op, pfx_id, esc_attr);
            } else {
                self.attr = inat::get_opcode_attribute(op);
            }
            return Ok(());
        }

        self.attr = inat::get_opcode_attribute(op);
        while inat::is_escape(self.attr) {
            op = cur.u8()?;
            self.opcode.set_byte(usize::from(self.opcode.nbytes), op);
            self.opcode.nbytes = self.opcode.nbytes.saturating_add(1);
            let pfx_id = self.last_prefix_id();
            self.attr = inat::get_escape_attribute(op, pfx_id, self.attr);
        }
        if inat::must_vex(self.attr) {
            self.attr = 0;
            return Err(DecodeError::Invalid);
        }
        Ok(())
    }

    /// `insn_get_modrm()`: the ModRM byte, the group member, forced 64-bit
    /// operand size.
    fn get_modrm(&mut self, cur: &mut Cursor<'_>) -> Result<(), DecodeError> {
        if inat::has_modrm(self.attr) {
            let m = cur.u8()?;
            self.modrm.set(i32::from(m), 1);
            if inat::is_group(self.attr) {
                let pfx_id = self.last_prefix_id();
                self.attr = inat::get_group_attribute(m, pfx_id, self.attr);
                if self.is_avx() && !inat::accept_vex(self.attr) {
                    self.attr = 0;
                    return Err(DecodeError::Invalid);
                }
            }
        }
        if inat::is_force64(self.attr) {
            self.opnd_bytes = 8;
        }
        Ok(())
    }

    /// `insn_get_sib()`.
    fn get_sib(&mut self, cur: &mut Cursor<'_>) -> Result<(), DecodeError> {
        if self.modrm.nbytes != 0 {
            let m = self.modrm_byte();
            if self.addr_bytes != 2 && inat::modrm_mod(m) != 3 && inat::modrm_rm(m) == 4 {
                let s = cur.u8()?;
                self.sib.set(i32::from(s), 1);
            }
        }
        Ok(())
    }

    /// `insn_get_displacement()`.
    fn get_displacement(&mut self, cur: &mut Cursor<'_>) -> Result<(), DecodeError> {
        if self.modrm.nbytes == 0 {
            return Ok(());
        }
        let m = self.modrm_byte();
        let md = inat::modrm_mod(m);
        let rm = inat::modrm_rm(m);
        let base = inat::sib_base(self.sib.byte(0));
        if md == 3 {
            return Ok(());
        }
        if md == 1 {
            let v = cur.i8()?;
            self.displacement.set(v, 1);
        } else if self.addr_bytes == 2 {
            if (md == 0 && rm == 6) || md == 2 {
                let v = cur.i16()?;
                self.displacement.set(v, 2);
            }
        } else if (md == 0 && rm == 5) || md == 2 || (md == 0 && base == 5) {
            let v = cur.i32()?;
            self.displacement.set(v, 4);
        }
        Ok(())
    }

    /// `insn_get_immediate()`: moffs, immediates by kind and operand size,
    /// the second immediate.
    fn get_immediate(&mut self, cur: &mut Cursor<'_>) -> Result<(), DecodeError> {
        if inat::has_moffset(self.attr) {
            match self.addr_bytes {
                2 => {
                    let v = cur.i16()?;
                    self.immediate1.set(v, 2);
                }
                4 => {
                    let v = cur.i32()?;
                    self.immediate1.set(v, 4);
                }
                8 => {
                    let lo = cur.i32()?;
                    self.immediate1.set(lo, 4);
                    let hi = cur.i32()?;
                    self.immediate2.set(hi, 4);
                }
                _ => return Err(DecodeError::NoData),
            }
            return Ok(());
        }
        if !inat::has_immediate(self.attr) {
            return Ok(());
        }
        match inat::immediate_size(self.attr) {
            inat::INAT_IMM_BYTE => {
                let v = cur.i8()?;
                self.immediate1.set(v, 1);
            }
            inat::INAT_IMM_WORD => {
                let v = cur.i16()?;
                self.immediate1.set(v, 2);
            }
            inat::INAT_IMM_DWORD => {
                let v = cur.i32()?;
                self.immediate1.set(v, 4);
            }
            inat::INAT_IMM_QWORD => {
                let lo = cur.i32()?;
                self.immediate1.set(lo, 4);
                let hi = cur.i32()?;
                self.immediate2.set(hi, 4);
            }
            inat::INAT_IMM_PTR => {
                match self.opnd_bytes {
                    2 => {
                        let v = cur.i16()?;
                        self.immediate1.set(v, 2);
                    }
                    4 => {
                        let v = cur.i32()?;
                        self.immediate1.set(v, 4);
                    }
                    // ptr16:64 does not exist.
                    _ => return Err(DecodeError::NoData),
                }
                let seg = cur.u16()?;
                self.immediate2.set(seg, 2);
            }
            inat::INAT_IMM_VWORD32 => match self.opnd_bytes {
                2 => {
                    let v = cur.i16()?;
                    self.immediate1.set(v, 2);
                }
                4 | 8 => {
                    let v = cur.i32()?;
                    self.immediate1.set(v, 4);
                }
                _ => return Err(DecodeError::NoData),
            },
            inat::INAT_IMM_VWORD => match self.opnd_bytes {
                2 => {
                    let v = cur.i16()?;
                    self.immediate1.set(v, 2);
                }
                4 => {
                    let v = cur.i32()?;
                    self.immediate1.set(v, 4);
                }
                8 => {
                    let lo = cur.i32()?;
                    self.immediate1.set(lo, 4);
                    let hi = cur.i32()?;
                    self.immediate2.set(hi, 4);
                }
                _ => return Err(DecodeError::NoData),
            },
            _ => return Err(DecodeError::NoData),
        }
        if inat::has_second_immediate(self.attr) {
            let v = cur.i8()?;
            self.immediate2.set(v, 1);
        }
        Ok(())
    }

    /// The instruction's bytes (`length` of them).
    pub fn bytes(&self) -> &[u8] {
        self.bytes
            .get(..usize::from(self.length))
            .unwrap_or(&self.bytes)
    }

    /// Total length in bytes, 1 to 15 (`insn->length`).
    pub const fn length(&self) -> usize {
        self.length as usize
    }

    /// Legacy prefixes (`insn->prefixes`): up to four distinct prefix bytes,
    /// `bytes()[3]` being the last one; `nbytes` counts repeats too.
    pub const fn prefixes(&self) -> InsnField {
        self.prefixes
    }

    /// REX (one byte) or REX2 (two bytes, 0xd5 first) prefix.
    pub const fn rex_prefix(&self) -> InsnField {
        self.rex_prefix
    }

    /// VEX (2 or 3 bytes; for VEX2 byte 2 is synthesised as in VEX3 with
    /// W = 0) or EVEX (4 bytes) prefix.
    pub const fn vex_prefix(&self) -> InsnField {
        self.vex_prefix
    }

    /// Opcode bytes: one with VEX/EVEX/REX2, else one to three
    /// (0x0f, 0x0f 0x38, 0x0f 0x3a escapes included).
    pub const fn opcode(&self) -> InsnField {
        self.opcode
    }

    /// ModRM byte, if any.
    pub const fn modrm(&self) -> InsnField {
        self.modrm
    }

    /// SIB byte, if any.
    pub const fn sib(&self) -> InsnField {
        self.sib
    }

    /// Displacement (sign-extended), 0, 1 or 4 bytes.
    pub const fn displacement(&self) -> InsnField {
        self.displacement
    }

    /// First immediate (`immediate`, `immediate1`, `moffset1`): the low 4
    /// bytes of an 8-byte immediate or moffs, the offset of a far pointer.
    pub const fn immediate1(&self) -> InsnField {
        self.immediate1
    }

    /// Second immediate (`immediate2`, `moffset2`): the high 4 bytes of an
    /// 8-byte immediate or moffs, the segment of a far pointer, or ENTER's
    /// nesting level and similar second one-byte immediates.
    pub const fn immediate2(&self) -> InsnField {
        self.immediate2
    }

    /// Size of a Xen/KVM forced-emulation prefix (`ud2` plus "xen"/"kvm"),
    /// 0 or 5.
    pub const fn emulate_prefix_size(&self) -> usize {
        self.emulate_prefix_size as usize
    }

    /// Has a forced-emulation prefix (`insn_has_emulate_prefix`).
    pub const fn has_emulate_prefix(&self) -> bool {
        self.emulate_prefix_size != 0
    }

    /// Attribute word, bit for bit the kernel's `insn->attr`.
    pub const fn attr(&self) -> u32 {
        self.attr
    }

    /// Operand size in bytes: 2, 4 or 8.
    pub const fn opnd_bytes(&self) -> u8 {
        self.opnd_bytes
    }

    /// Address size in bytes: 4 or 8.
    pub const fn addr_bytes(&self) -> u8 {
        self.addr_bytes
    }

    /// Byte `n` of the opcode field.
    pub fn opcode_byte(&self, n: usize) -> u8 {
        self.opcode.byte(n)
    }

    /// The ModRM byte (0 if there is none).
    pub fn modrm_byte(&self) -> u8 {
        self.modrm.byte(0)
    }

    /// Has a VEX or EVEX prefix (`insn_is_avx`).
    pub const fn is_avx(&self) -> bool {
        self.vex_prefix.value != 0
    }

    /// Has an EVEX prefix (`insn_is_evex`).
    pub const fn is_evex(&self) -> bool {
        self.vex_prefix.nbytes == 4
    }

    /// Has a REX2 prefix (`insn_is_rex2`).
    pub const fn is_rex2(&self) -> bool {
        self.rex_prefix.nbytes == 2
    }

    /// REX2.M0: the opcode is in map 1 (`insn_rex2_m_bit`).
    pub fn rex2_m_bit(&self) -> bool {
        self.rex_prefix.byte(1) & 0x80 != 0
    }

    /// REX.B or REX2.B3: extends ModRM.rm (and SIB.base, opcode reg).
    pub fn rex_b(&self) -> bool {
        let rex = if self.is_rex2() {
            self.rex_prefix.byte(1)
        } else {
            self.rex_prefix.byte(0)
        };
        rex & 1 != 0
    }

    /// VEX/EVEX map number (`insn_vex_m_bits`).
    pub fn vex_m_bits(&self) -> u8 {
        match self.vex_prefix.nbytes {
            2 => 1,
            3 => self.vex_prefix.byte(1) & 0x1f,
            _ => self.vex_prefix.byte(1) & 0x07,
        }
    }

    /// VEX/EVEX pp: the implied SIMD prefix id (`insn_vex_p_bits`).
    pub fn vex_p_bits(&self) -> u8 {
        if self.vex_prefix.nbytes == 2 {
            self.vex_prefix.byte(1) & 0x03
        } else {
            self.vex_prefix.byte(2) & 0x03
        }
    }

    /// VEX/EVEX W bit, 0 or 0x80 (`insn_vex_w_bit`).
    pub fn vex_w_bit(&self) -> u8 {
        if self.vex_prefix.nbytes < 3 {
            0
        } else {
            self.vex_prefix.byte(2) & 0x80
        }
    }

    /// Last-prefix id, 0 to 3, from VEX.pp or the last legacy prefix
    /// (`insn_last_prefix_id`).
    pub fn last_prefix_id(&self) -> u8 {
        if self.is_avx() {
            return self.vex_p_bits();
        }
        match self.prefixes.byte(3) {
            0 => 0,
            b => inat::get_last_prefix_id(b),
        }
    }

    /// Offset of the REX prefix from the start of the instruction; unlike the
    /// kernel's `insn_offset_rex_prefix()`, this counts a forced-emulation
    /// prefix (all offsets here are true offsets into [`Insn::bytes`]).
    pub const fn offset_rex_prefix(&self) -> usize {
        self.emulate_prefix_size as usize + self.prefixes.nbytes as usize
    }

    /// Offset of the VEX prefix.
    pub const fn offset_vex_prefix(&self) -> usize {
        self.offset_rex_prefix() + self.rex_prefix.nbytes as usize
    }

    /// Offset of the first opcode byte.
    pub const fn offset_opcode(&self) -> usize {
        self.offset_vex_prefix() + self.vex_prefix.nbytes as usize
    }

    /// Offset of the ModRM byte.
    pub const fn offset_modrm(&self) -> usize {
        self.offset_opcode() + self.opcode.nbytes as usize
    }

    /// Offset of the SIB byte.
    pub const fn offset_sib(&self) -> usize {
        self.offset_modrm() + self.modrm.nbytes as usize
    }

    /// Offset of the displacement.
    pub const fn offset_displacement(&self) -> usize {
        self.offset_sib() + self.sib.nbytes as usize
    }

    /// Offset of the first immediate.
    pub const fn offset_immediate(&self) -> usize {
        self.offset_displacement() + self.displacement.nbytes as usize
    }

    /// Uses RIP-relative addressing: ModRM.mod = 0 and ModRM.rm = 5
    /// (`insn_rip_relative`).
    pub fn rip_relative(&self) -> bool {
        self.modrm.nbytes != 0 && self.modrm_byte() & 0xc7 == 0x05
    }

    /// Offset of the 32-bit RIP-relative displacement inside the
    /// instruction, if the instruction is RIP-relative.
    pub fn rip_displacement_offset(&self) -> Option<usize> {
        if self.rip_relative() && self.displacement.nbytes == 4 {
            Some(self.offset_displacement())
        } else {
            None
        }
    }

    /// Address the RIP-relative operand refers to when the instruction is at
    /// `addr`, if it is RIP-relative.
    pub fn rip_relative_target(&self, addr: u64) -> Option<u64> {
        self.rip_displacement_offset()?;
        Some(
            addr.wrapping_add(self.length() as u64)
                .wrapping_add(i64::from(self.displacement.value) as u64),
        )
    }

    /// POP SS or MOV to SS, after which the CPU suppresses a single-step trap
    /// (`insn_masking_exception`). Like the kernel, this looks at the first
    /// opcode byte whatever the encoding.
    pub fn masking_exception(&self) -> bool {
        let op = self.opcode_byte(0);
        op == 0x1f || (op == 0x8e && inat::modrm_reg(self.modrm_byte()) == 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(bytes: &[u8]) -> Insn {
        match Insn::decode(bytes) {
            Ok(i) => i,
            Err(e) => panic!("{bytes:02x?}: {e:?}"),
        }
    }

    #[test]
    fn simple_lengths() {
        assert_eq!(d(&[0x90]).length(), 1);
        assert_eq!(d(&[0xc3]).length(), 1);
        // push %rbp; mov %rsp,%rbp
        assert_eq!(d(&[0x55]).opnd_bytes(), 8);
        assert_eq!(d(&[0x48, 0x89, 0xe5]).length(), 3);
        // movabs $imm64, %rax
        let i = d(&[0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(i.length(), 10);
        assert_eq!(i.immediate1().value, 0x0403_0201);
        assert_eq!(i.immediate2().value, 0x0807_0605);
        // mov 0x1234(%rip),%rax
        let i = d(&[0x48, 0x8b, 0x05, 0x34, 0x12, 0, 0]);
        assert!(i.rip_relative());
        assert_eq!(i.rip_displacement_offset(), Some(3));
        assert_eq!(i.rip_relative_target(0x1000), Some(0x1000 + 7 + 0x1234));
        // endbr64
        let i = d(&[0xf3, 0x0f, 0x1e, 0xfa]);
        assert_eq!(i.length(), 4);
        assert_eq!(i.prefixes().bytes(), [0xf3, 0, 0, 0xf3]);
    }

    #[test]
    fn moffs_enter_and_far_pointer() {
        // movabs 0x...,%al: moffs64
        assert_eq!(d(&[0xa0, 1, 2, 3, 4, 5, 6, 7, 8]).length(), 9);
        // addr32 moffs: 4 bytes
        assert_eq!(d(&[0x67, 0xa0, 1, 2, 3, 4]).length(), 6);
        // enter $0x10,$0
        let i = d(&[0xc8, 0x10, 0x00, 0x00]);
        assert_eq!((i.immediate1().nbytes, i.immediate2().nbytes), (2, 1));
        // ljmp ptr16:32 (decodes, like the kernel, although #UD in 64-bit)
        assert_eq!(d(&[0xea, 1, 2, 3, 4, 5, 6]).length(), 7);
        assert_eq!(d(&[0x66, 0xea, 1, 2, 3, 4]).length(), 6);
        assert_eq!(
            Insn::decode(&[0x48, 0xea, 1, 2, 3, 4, 5, 6]),
            Err(DecodeError::NoData)
        );
    }

    #[test]
    fn prefix_rules() {
        // 5 distinct legacy prefixes: the fifth becomes the opcode.
        let i = d(&[0x26, 0x2e, 0x36, 0x3e, 0x64, 0x90]);
        assert_eq!(i.length(), 5);
        assert_eq!(i.opcode_byte(0), 0x64);
        // Repeats count in nbytes, the last one goes to bytes[3].
        let i = d(&[0x66, 0x66, 0xf3, 0x66, 0x90]);
        assert_eq!(i.prefixes().nbytes, 4);
        // bytes[3] was empty, so 0x66 stays in slot 0 too.
        assert_eq!(i.prefixes().bytes(), [0x66, 0xf3, 0, 0x66]);
        // With four distinct prefixes the last one swaps with bytes[3].
        let i = d(&[0x26, 0x2e, 0x36, 0x3e, 0x26, 0x90]);
        assert_eq!(i.prefixes().bytes(), [0x3e, 0x2e, 0x36, 0x26]);
        // Too many prefixes to fit in 15 bytes.
        assert_eq!(Insn::decode(&[0x66; 20]), Err(DecodeError::NoData));
    }

    #[test]
    fn truncation_and_limits() {
        assert_eq!(Insn::decode(&[]), Err(DecodeError::NoData));
        assert_eq!(Insn::decode(&[0xe8, 0, 0]), Err(DecodeError::NoData));
        assert_eq!(Insn::decode(&[0x0f]), Err(DecodeError::NoData));
        // VEX-only opcode without VEX.
        assert_eq!(
            Insn::decode(&[0x0f, 0x38, 0xf2, 0xc0]),
            Err(DecodeError::Invalid)
        );
        // The decoder never looks beyond 15 bytes.
        let mut long = [0x66u8; 16];
        long[14] = 0x90;
        assert_eq!(Insn::decode(&long).map(|i| i.length()), Ok(15));
    }

    #[test]
    fn vex_evex_rex2() {
        // vzeroupper
        let i = d(&[0xc5, 0xf8, 0x77]);
        assert!(i.is_avx());
        assert_eq!(i.vex_m_bits(), 1);
        // vpxor %ymm0,%ymm0,%ymm0 (VEX3)
        assert_eq!(d(&[0xc4, 0xe1, 0x7d, 0xef, 0xc0]).length(), 5);
        // vmovdqu64 (%rax),%zmm0 (EVEX)
        let i = d(&[0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x00]);
        assert!(i.is_evex());
        assert_eq!(i.length(), 6);
        // REX2 push (APX)
        let i = d(&[0xd5, 0x00, 0x50]);
        assert!(i.is_rex2());
        assert_eq!(i.length(), 3);
    }

    #[test]
    fn emulate_prefix() {
        let i = d(&[0x0f, 0x0b, 0x78, 0x65, 0x6e, 0x0f, 0xa2]);
        assert_eq!(i.emulate_prefix_size(), 5);
        assert_eq!(i.length(), 7);
        assert_eq!(i.offset_opcode(), 5);
        // A bare ud2 is an ordinary instruction.
        assert_eq!(d(&[0x0f, 0x0b, 0x78]).length(), 2);
    }
}
