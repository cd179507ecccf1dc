// SPDX-License-Identifier: GPL-2.0

//! What a decoded instruction means for probing: its control flow (with the
//! branch target), whether it may be single-stepped out of line, whether it
//! changes IF or TF, whether it can be boosted, ENDBR recognition.
//!
//! The kernel (`arch/x86/kernel/kprobes/core.c`, `opt.c`, Linux 6.12) tests
//! raw opcode bytes (`insn->opcode.bytes[0]`) whatever the encoding, so a
//! VEX/EVEX instruction whose single opcode byte happens to be 0xe8 or 0xc3
//! is emulated there as a call or a return. Here control flow is classified
//! by opcode *map* and byte, which is what the CPU does; the refusal list is
//! the union of the kernel's raw-byte tests and the map-aware ones, so it
//! refuses at least everything the kernel refuses. The differences are listed
//! in `Documentation/insn-decoder.rst`.

use super::decode::Insn;
use super::inat;

/// `EILSEQ`: the kernel's `arch_prepare_kprobe()` error when `can_probe()`
/// fails.
pub const EILSEQ: i32 = 84;
/// `EINVAL`: `arch_copy_kprobe()`'s error when `__copy_instruction()` fails.
pub const EINVAL: i32 = 22;
/// `EOPNOTSUPP`: `prepare_emulation()`'s error for unsupported instructions.
pub const EOPNOTSUPP: i32 = 95;
/// `ENOSPC`: `prepare_singlestep()`'s error when no int3 fits after the copy.
pub const ENOSPC: i32 = 28;

/// Which opcode map an instruction's opcode byte belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpcodeMap {
    /// The one-byte map (also REX2 with M0 = 0).
    OneByte,
    /// The 0x0f map (also REX2 with M0 = 1).
    Map0f,
    /// The 0x0f 0x38 map.
    Map0f38,
    /// The 0x0f 0x3a map.
    Map0f3a,
    /// A VEX map (VEX.mmmmm).
    Vex(u8),
    /// An EVEX map (EVEX.mmm).
    Evex(u8),
}

/// Kind of LOOP/JrCXZ instruction (`ainsn.loop.type` in the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    /// 0xe0: decrement rCX, branch if rCX != 0 and ZF = 0.
    Loopne,
    /// 0xe1: decrement rCX, branch if rCX != 0 and ZF = 1.
    Loope,
    /// 0xe2: decrement rCX, branch if rCX != 0.
    Loop,
    /// 0xe3: branch if rCX = 0 (JRCXZ, or JECXZ with 0x67).
    Jrcxz,
}

/// Operand of an indirect near call or jump (FF /2, FF /4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndirectOperand {
    /// Through a register: 0 (rax) to 15 (r15), 16 to 31 with REX2.B4.
    Register(u8),
    /// Through memory.
    Memory {
        /// The memory operand is RIP-relative.
        rip_relative: bool,
    },
}

/// Which undefined-instruction opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdKind {
    /// 0x0f 0xff.
    Ud0,
    /// 0x0f 0xb9.
    Ud1,
    /// 0x0f 0x0b.
    Ud2,
}

/// Control-flow kind of an instruction; targets are absolute, computed from
/// the address the instruction was decoded at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlFlow {
    /// Execution continues with the next instruction.
    None,
    /// CALL rel32 (0xe8).
    CallRel {
        /// Called address.
        target: u64,
    },
    /// JMP rel8 (0xeb) or rel32 (0xe9).
    JmpRel {
        /// Jump target.
        target: u64,
    },
    /// Jcc rel8 (0x70..=0x7f) or rel32 (0x0f 0x80..=0x8f).
    Jcc {
        /// Condition code, the low nibble of the opcode (`ainsn.jcc.type`).
        cond: u8,
        /// Target when the condition holds.
        target: u64,
    },
    /// LOOPNE/LOOPE/LOOP/JrCXZ rel8 (0xe0..=0xe3).
    Loop {
        /// Which one.
        kind: LoopKind,
        /// Target when taken.
        target: u64,
        /// Width of the count register in bytes: 8 (rCX) or 4 (eCX, 0x67).
        addr_bytes: u8,
    },
    /// Near indirect CALL (FF /2).
    CallIndirect(IndirectOperand),
    /// Near indirect JMP (FF /4).
    JmpIndirect(IndirectOperand),
    /// Far indirect CALL (FF /3).
    CallFarIndirect,
    /// Far indirect JMP (FF /5).
    JmpFarIndirect,
    /// Far absolute CALL ptr16:32 (0x9a; #UD in 64-bit mode).
    CallFar,
    /// Far absolute JMP ptr16:32 (0xea; #UD in 64-bit mode).
    JmpFar,
    /// APX JMPABS imm64 (REX2 0xa1).
    JmpAbs {
        /// Jump target.
        target: u64,
    },
    /// Near RET (0xc3) or RET imm16 (0xc2).
    Ret {
        /// Bytes released from the stack after popping the return address.
        pop: u16,
    },
    /// Far RET (0xcb) or LRET imm16 (0xca).
    RetFar {
        /// Bytes released from the stack after popping CS:RIP.
        pop: u16,
    },
    /// IRET (0xcf).
    Iret,
    /// FRED ERETU/ERETS (0xf3/0xf2 0x0f 0x01 0xca) or UIRET (0xf3 0x0f 0x01
    /// 0xec).
    EventReturn,
    /// INT3 (0xcc).
    Int3,
    /// INT imm8 (0xcd).
    Int(u8),
    /// INTO (0xce; #UD in 64-bit mode).
    Into,
    /// INT1/ICEBP (0xf1).
    Int1,
    /// UD0, UD1 or UD2.
    Ud(UdKind),
    /// SYSCALL (0x0f 0x05).
    Syscall,
    /// SYSRET (0x0f 0x07).
    Sysret,
    /// SYSENTER (0x0f 0x34).
    Sysenter,
    /// SYSEXIT (0x0f 0x35).
    Sysexit,
}

/// An instruction that changes or exposes EFLAGS.IF/TF and so must be
/// emulated rather than single-stepped (`kprobe_emulate_ifmodifiers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IfModifier {
    /// CLI (0xfa).
    Cli,
    /// STI (0xfb).
    Sti,
    /// PUSHF (0x9c): would push the single-step TF.
    Pushf,
    /// POPF (0x9d): loads IF and TF.
    Popf,
}

/// Why an instruction must not be probed; see [`Refusal::errno`] for the
/// error the kernel's kprobes return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// INT3/INT n/INTO/INT1/UD0/UD1/UD2 (`can_probe()`'s
    /// `is_exception_insn()`): -EILSEQ. This also covers the int3 "put by
    /// another subsystem" that `__copy_instruction()` and
    /// `prepare_emulation()` test for again later.
    ExceptionInsn,
    /// Xen/KVM forced-emulation prefix (`__copy_instruction()`): -EINVAL.
    EmulatePrefix,
    /// POP SS / MOV to SS, which suppress the single-step trap
    /// (`insn_masking_exception()` in `__copy_instruction()`): -EINVAL.
    MaskingException,
    /// Far absolute CALL/JMP 0x9a/0xea (`prepare_emulation()`): -EOPNOTSUPP.
    FarAbsolute,
    /// IRET (`prepare_emulation()`): -EOPNOTSUPP.
    Iret,
    /// 0x0f 0x01 with ModRM.reg = 0 and mod = 3: VMCALL, VMLAUNCH, VMRESUME,
    /// VMXOFF, PCONFIG, ENCLV, WRMSRNS, RDMSRLIST/WRMSRLIST, PBNDKB
    /// (`prepare_emulation()`): -EOPNOTSUPP.
    Vmx,
    /// Far indirect CALL/JMP FF /3, FF /5 (`prepare_emulation()`):
    /// -EOPNOTSUPP.
    FarIndirect,
    /// Near indirect CALL/JMP FF /2, FF /4 through memory or with a 32-bit
    /// address size, which the kernel does not emulate
    /// (`prepare_emulation()`): -EOPNOTSUPP.
    IndirectNotEmulated,
    /// rkprobes only: LRET. The kernel emulates 0xca/0xcb as a near RET,
    /// which does not pop CS; refused here instead: -EOPNOTSUPP.
    FarReturn,
    /// rkprobes only: ERETU/ERETS/UIRET, returns from events that
    /// the kernel does not know of: -EOPNOTSUPP.
    EventReturn,
    /// rkprobes only: a REX2 prefix on an opcode marked `(!REX2)` in the
    /// opcode map, which raises #UD: -EILSEQ.
    InvalidRex2,
}

impl Refusal {
    /// Negative errno the kernel's `arch_prepare_kprobe()` path returns.
    pub const fn errno(self) -> i32 {
        match self {
            Refusal::ExceptionInsn | Refusal::InvalidRex2 => -EILSEQ,
            Refusal::EmulatePrefix | Refusal::MaskingException => -EINVAL,
            Refusal::FarAbsolute
            | Refusal::Iret
            | Refusal::Vmx
            | Refusal::FarIndirect
            | Refusal::IndirectNotEmulated
            | Refusal::FarReturn
            | Refusal::EventReturn => -EOPNOTSUPP,
        }
    }

    /// Whether Linux 6.12's kprobes refuse this too (false for the
    /// rkprobes-only refusals).
    pub const fn kernel_refuses(self) -> bool {
        !matches!(
            self,
            Refusal::FarReturn | Refusal::EventReturn | Refusal::InvalidRex2
        )
    }
}

/// `twobyte_is_boostable[]` of `arch/x86/kernel/kprobes/core.c`, one bit per
/// second opcode byte, 16 rows of 16 bits.
const TWOBYTE_IS_BOOSTABLE: [u16; 16] = [
    // Row values are bit i = column i, as the kernel's W() macro builds them.
    0b0000_0011_0100_1100, // 00: 02 03 06 08 09
    0b1000_0000_0000_0000, // 10: 1f
    0b0000_0000_0000_1111, // 20: 20 21 22 23
    0b0000_0000_0000_0010, // 30: 31
    0b1111_1111_1111_1111, // 40: cmovcc
    0b0000_0000_0000_0000, // 50
    0b1100_1111_1111_1111, // 60: 60-6b 6e 6f
    0b1100_0000_1111_0000, // 70: 74-77 7e 7f
    0b0000_0000_0000_0000, // 80: jcc
    0b1111_1111_1111_1111, // 90: setcc
    0b1011_1011_0011_1011, // a0: a0 a1 a3 a4 a5 a8 a9 ab ac ad af
    0b1111_1000_1111_1111, // b0: b0-b7 bb-bf
    0b1111_1111_0000_0011, // c0: c0 c1 c8-cf
    0b1011_1011_0010_1110, // d0: d1 d2 d3 d5 d8 d9 db dc dd df
    0b1011_1011_0010_0110, // e0: e1 e2 e5 e8 e9 eb ec ed ef
    0b0111_0111_0010_1110, // f0: f1 f2 f3 f5 f8 f9 fa fc fd fe
];

/// Is the kernel's ENDBR64 (`f3 0f 1e fa`), ENDBR32 (`f3 0f 1e fb`) or the
/// ENDBR poison `66 0f 1f 00` at the start of `bytes` (`is_endbr()` of
/// `arch/x86/include/asm/ibt.h`).
pub fn is_endbr(bytes: &[u8]) -> bool {
    matches!(
        bytes.get(..4),
        Some([0xf3, 0x0f, 0x1e, 0xfa | 0xfb]) | Some([0x66, 0x0f, 0x1f, 0x00])
    )
}

/// `arch_adjust_kprobe_addr()`: where a probe on `symbol + offset` goes when
/// the function starts with `first_bytes`, and whether it counts as being on
/// the function entry. A probe at the symbol or at symbol + 4 of a function
/// starting with ENDBR goes after the ENDBR.
pub fn adjust_probe_offset(first_bytes: &[u8], offset: u64) -> (u64, bool) {
    if is_endbr(first_bytes) {
        let on_entry = offset == 0 || offset == 4;
        (if on_entry { 4 } else { offset }, on_entry)
    } else {
        (offset, offset == 0)
    }
}

fn rel_target(insn: &Insn, addr: u64) -> u64 {
    addr.wrapping_add(insn.length() as u64)
        .wrapping_add(i64::from(insn.immediate1().value) as u64)
}

impl Insn {
    /// The opcode map and the opcode byte within it.
    pub fn opcode_map(&self) -> (OpcodeMap, u8) {
        if self.is_avx() {
            let m = self.vex_m_bits();
            let map = if self.is_evex() {
                OpcodeMap::Evex(m)
            } else {
                OpcodeMap::Vex(m)
            };
            return (map, self.opcode_byte(0));
        }
        if self.is_rex2() {
            let map = if self.rex2_m_bit() {
                OpcodeMap::Map0f
            } else {
                OpcodeMap::OneByte
            };
            return (map, self.opcode_byte(0));
        }
        match self.opcode().nbytes {
            2 => (OpcodeMap::Map0f, self.opcode_byte(1)),
            3 if self.opcode_byte(1) == 0x38 => (OpcodeMap::Map0f38, self.opcode_byte(2)),
            3 => (OpcodeMap::Map0f3a, self.opcode_byte(2)),
            _ => (OpcodeMap::OneByte, self.opcode_byte(0)),
        }
    }

    /// Register number of ModRM.rm extended by REX.B / REX2.B3 and REX2.B4.
    fn rm_register(&self) -> u8 {
        let rm = inat::modrm_rm(self.modrm_byte());
        let rex = self.rex_prefix();
        if self.is_rex2() {
            let payload = rex.byte(1);
            rm | ((payload & 1) << 3) | (payload & 0x10)
        } else {
            rm | ((rex.byte(0) & 1) << 3)
        }
    }

    /// The instruction's control flow when it is at address `addr`.
    pub fn control_flow(&self, addr: u64) -> ControlFlow {
        let modrm = self.modrm_byte();
        let reg = inat::modrm_reg(modrm);
        let md = inat::modrm_mod(modrm);
        match self.opcode_map() {
            (OpcodeMap::OneByte, op) => match op {
                0xe8 => ControlFlow::CallRel {
                    target: rel_target(self, addr),
                },
                0xe9 | 0xeb => ControlFlow::JmpRel {
                    target: rel_target(self, addr),
                },
                0x70..=0x7f => ControlFlow::Jcc {
                    cond: op & 0xf,
                    target: rel_target(self, addr),
                },
                0xe0..=0xe3 => ControlFlow::Loop {
                    kind: match op {
                        0xe0 => LoopKind::Loopne,
                        0xe1 => LoopKind::Loope,
                        0xe2 => LoopKind::Loop,
                        _ => LoopKind::Jrcxz,
                    },
                    target: rel_target(self, addr),
                    addr_bytes: self.addr_bytes(),
                },
                0xff => {
                    let operand = if md == 3 {
                        IndirectOperand::Register(self.rm_register())
                    } else {
                        IndirectOperand::Memory {
                            rip_relative: self.rip_relative(),
                        }
                    };
                    match reg {
                        2 => ControlFlow::CallIndirect(operand),
                        3 => ControlFlow::CallFarIndirect,
                        4 => ControlFlow::JmpIndirect(operand),
                        5 => ControlFlow::JmpFarIndirect,
                        _ => ControlFlow::None,
                    }
                }
                0x9a => ControlFlow::CallFar,
                0xea => ControlFlow::JmpFar,
                0xa1 if self.is_rex2() && self.rex_prefix().byte(1) & 0x08 == 0 => {
                    let lo = u64::from(self.immediate1().value as u32);
                    let hi = u64::from(self.immediate2().value as u32);
                    ControlFlow::JmpAbs {
                        target: lo | (hi << 32),
                    }
                }
                0xc3 => ControlFlow::Ret { pop: 0 },
                0xc2 => ControlFlow::Ret {
                    pop: self.immediate1().value as u16,
                },
                0xcb => ControlFlow::RetFar { pop: 0 },
                0xca => ControlFlow::RetFar {
                    pop: self.immediate1().value as u16,
                },
                0xcf => ControlFlow::Iret,
                0xcc => ControlFlow::Int3,
                0xcd => ControlFlow::Int(self.immediate1().value as u8),
                0xce => ControlFlow::Into,
                0xf1 => ControlFlow::Int1,
                _ => ControlFlow::None,
            },
            (OpcodeMap::Map0f, op) => match op {
                0x80..=0x8f => ControlFlow::Jcc {
                    cond: op & 0xf,
                    target: rel_target(self, addr),
                },
                0x05 => ControlFlow::Syscall,
                0x07 => ControlFlow::Sysret,
                0x34 => ControlFlow::Sysenter,
                0x35 => ControlFlow::Sysexit,
                0x0b => ControlFlow::Ud(UdKind::Ud2),
                0xb9 => ControlFlow::Ud(UdKind::Ud1),
                0xff => ControlFlow::Ud(UdKind::Ud0),
                0x01 if self.is_event_return() => ControlFlow::EventReturn,
                _ => ControlFlow::None,
            },
            _ => ControlFlow::None,
        }
    }

    /// ERETU (f3 0f 01 ca), ERETS (f2 0f 01 ca), UIRET (f3 0f 01 ec).
    fn is_event_return(&self) -> bool {
        let pfx = self.last_prefix_id();
        let modrm = self.modrm_byte();
        (modrm == 0xca && (pfx == 2 || pfx == 3)) || (modrm == 0xec && pfx == 2)
    }

    /// Relative displacement of a direct branch (CALL/JMP/Jcc/LOOP/JrCXZ),
    /// sign-extended, as the kernel stores it in `ainsn.rel32`.
    pub fn branch_displacement(&self) -> Option<i32> {
        match self.control_flow(0) {
            ControlFlow::CallRel { .. }
            | ControlFlow::JmpRel { .. }
            | ControlFlow::Jcc { .. }
            | ControlFlow::Loop { .. } => Some(self.immediate1().value),
            _ => None,
        }
    }

    /// INT3/INT n/INTO/INT1/UD0/UD1/UD2: the kernel's `is_exception_insn()`
    /// (raw opcode bytes) or the same opcodes by map.
    pub fn is_exception_insn(&self) -> bool {
        let raw = if self.opcode_byte(0) == 0x0f {
            matches!(self.opcode_byte(1), 0xff | 0xb9 | 0x0b)
        } else {
            matches!(self.opcode_byte(0), 0xcc | 0xcd | 0xce | 0xf1)
        };
        raw || matches!(
            self.control_flow(0),
            ControlFlow::Int3
                | ControlFlow::Int(_)
                | ControlFlow::Into
                | ControlFlow::Int1
                | ControlFlow::Ud(_)
        )
    }

    /// The instruction changes or exposes IF/TF and must be emulated
    /// (`prepare_emulation()`'s first case).
    pub fn if_modifier(&self) -> Option<IfModifier> {
        match self.opcode_map() {
            (OpcodeMap::OneByte, 0xfa) => Some(IfModifier::Cli),
            (OpcodeMap::OneByte, 0xfb) => Some(IfModifier::Sti),
            (OpcodeMap::OneByte, 0x9c) => Some(IfModifier::Pushf),
            (OpcodeMap::OneByte, 0x9d) => Some(IfModifier::Popf),
            _ => None,
        }
    }

    /// Why this instruction must not be probed, if it must not; the checks
    /// run in the order the kernel makes them (`can_probe()`,
    /// `__copy_instruction()`, `prepare_emulation()`). A RIP-relative
    /// displacement that does not reach from the copy is reported by
    /// [`super::relocate::copy_insn`] instead.
    pub fn probe_refusal(&self) -> Option<Refusal> {
        if self.is_exception_insn() {
            return Some(Refusal::ExceptionInsn);
        }
        if self.has_emulate_prefix() {
            return Some(Refusal::EmulatePrefix);
        }
        // The kernel's POP_SS_OPCODE is 0x1f (really POP DS); 0x17 is POP SS.
        // Both are #UD in 64-bit mode; refuse both.
        if self.masking_exception() || self.opcode_map() == (OpcodeMap::OneByte, 0x17) {
            return Some(Refusal::MaskingException);
        }
        let modrm = self.modrm_byte();
        let reg = inat::modrm_reg(modrm);
        let md = inat::modrm_mod(modrm);
        // prepare_emulation(), on the raw first opcode byte as the kernel
        // does, then by map.
        let raw = self.opcode_byte(0);
        let (map, op) = self.opcode_map();
        let one_byte = |b: u8| raw == b || (map == OpcodeMap::OneByte && op == b);
        if one_byte(0x9a) || one_byte(0xea) {
            return Some(Refusal::FarAbsolute);
        }
        if one_byte(0xcf) {
            return Some(Refusal::Iret);
        }
        let vmx_raw = raw == 0x0f && self.opcode_byte(1) == 0x01;
        let vmx_map = map == OpcodeMap::Map0f && op == 0x01;
        if (vmx_raw || vmx_map) && reg == 0 && md == 3 {
            return Some(Refusal::Vmx);
        }
        if one_byte(0xff) {
            match reg {
                3 | 5 => return Some(Refusal::FarIndirect),
                2 | 4 if self.addr_bytes() != 8 || md != 3 => {
                    return Some(Refusal::IndirectNotEmulated)
                }
                _ => {}
            }
        }
        match self.control_flow(0) {
            ControlFlow::RetFar { .. } => return Some(Refusal::FarReturn),
            ControlFlow::EventReturn => return Some(Refusal::EventReturn),
            _ => {}
        }
        if self.is_rex2() && inat::no_rex2(self.attr()) {
            return Some(Refusal::InvalidRex2);
        }
        None
    }

    /// The kernel's `can_boost()`: may the out-of-line copy be followed by a
    /// jump back instead of a single-step trap. `in_exception_table` is
    /// whether the probed address is in an exception table
    /// (`search_exception_tables()`), which makes it unboostable.
    ///
    /// This is the kernel's rule exactly, raw opcode bytes included; it is
    /// only asked about instructions that are single-stepped (emulated ones
    /// never run out of line).
    pub fn can_boost(&self, in_exception_table: bool) -> bool {
        if in_exception_table {
            return false;
        }
        let opcode = self.opcode();
        if opcode.nbytes == 2 {
            let b = self.opcode_byte(1);
            let row = TWOBYTE_IS_BOOSTABLE
                .get(usize::from(b >> 4))
                .copied()
                .unwrap_or(0);
            return row & (1 << (b & 0xf)) != 0;
        }
        if opcode.nbytes != 1 {
            return false;
        }
        // for_each_insn_prefix(): stored prefixes up to the first empty slot.
        for p in self.prefixes().bytes() {
            if p == 0 {
                break;
            }
            if p == 0x2e || inat::is_address_size_prefix(inat::get_opcode_attribute(p)) {
                return false;
            }
        }
        let reg = inat::modrm_reg(self.modrm_byte());
        match self.opcode_byte(0) {
            0x62 | 0x70..=0x7f | 0x9a | 0xcc..=0xce | 0xd6 | 0xd8..=0xdf | 0xe0..=0xe3 => false,
            0xe8 | 0xe9 | 0xeb | 0xf0..=0xf4 => false,
            // Grp2: AMD's SHL/SAL alias /6 is reserved on Intel.
            0xc0 | 0xc1 | 0xd0..=0xd3 => reg != 0b110,
            // Grp3: AMD's TEST alias /1 is reserved on Intel.
            0xf6 | 0xf7 => reg != 0b001,
            // Grp4: only INC and DEC.
            0xfe => reg == 0b000 || reg == 0b001,
            // Grp5: only INC, DEC and indirect JMP.
            0xff => reg == 0b000 || reg == 0b001 || reg == 0b100,
            _ => true,
        }
    }

    /// Is ENDBR64 (`f3 0f 1e fa`).
    pub fn is_endbr64(&self) -> bool {
        self.bytes() == [0xf3, 0x0f, 0x1e, 0xfa]
    }

    /// With `CONFIG_CFI_CLANG`, `can_probe()` refuses the `movl -id, %r10d`
    /// (0xba) and `addl -4(%reg), %r10d` (0x03) of a CFI check when a CFI
    /// trap (ud2) follows at this many bytes from the instruction; the
    /// caller must then consult its CFI trap table.
    pub fn cfi_trap_offset(&self) -> Option<u64> {
        match self.opcode().value {
            0xba => Some(12),
            0x03 => Some(6),
            _ => None,
        }
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

    const A: u64 = 0xffff_ffff_8100_0000;

    #[test]
    fn twobyte_table_matches_kernel_rows() {
        // Spot checks against core.c's W() rows.
        let boost = |b: u8| d(&[0x0f, b, 0xc0, 0, 0, 0, 0]).can_boost(false);
        assert!(boost(0x1f)); // nopl
        assert!(boost(0x40)); // cmovo
        assert!(boost(0x90)); // seto
        assert!(boost(0xaf)); // imul
        assert!(boost(0xb6)); // movzbl
        assert!(!boost(0x84)); // je rel32
        assert!(!boost(0x0b)); // ud2
        assert!(!boost(0xa2)); // cpuid
        assert!(!boost(0x05)); // syscall
        assert!(!boost(0xb9)); // ud1
        assert!(!boost(0xff)); // ud0
                               // Count of set bits matches the kernel table (126).
        let n: u32 = TWOBYTE_IS_BOOSTABLE.iter().map(|r| r.count_ones()).sum();
        assert_eq!(n, 126);
    }

    #[test]
    fn control_flow_kinds() {
        let cf = |b: &[u8]| d(b).control_flow(A);
        assert_eq!(
            cf(&[0xe8, 0x10, 0, 0, 0]),
            ControlFlow::CallRel {
                target: A + 5 + 0x10
            }
        );
        assert_eq!(
            cf(&[0xe9, 0xfb, 0xff, 0xff, 0xff]),
            ControlFlow::JmpRel { target: A }
        );
        assert_eq!(cf(&[0xeb, 0xfe]), ControlFlow::JmpRel { target: A });
        assert_eq!(
            cf(&[0x74, 0x02]),
            ControlFlow::Jcc {
                cond: 4,
                target: A + 4
            }
        );
        assert_eq!(
            cf(&[0x0f, 0x85, 0x00, 0x01, 0, 0]),
            ControlFlow::Jcc {
                cond: 5,
                target: A + 6 + 0x100
            }
        );
        assert_eq!(
            cf(&[0xe2, 0x80]),
            ControlFlow::Loop {
                kind: LoopKind::Loop,
                target: A + 2 - 128,
                addr_bytes: 8
            }
        );
        assert_eq!(
            cf(&[0x67, 0xe3, 0x00]),
            ControlFlow::Loop {
                kind: LoopKind::Jrcxz,
                target: A + 3,
                addr_bytes: 4
            }
        );
        assert!(matches!(
            cf(&[0xe0, 0]),
            ControlFlow::Loop {
                kind: LoopKind::Loopne,
                ..
            }
        ));
        assert!(matches!(
            cf(&[0xe1, 0]),
            ControlFlow::Loop {
                kind: LoopKind::Loope,
                ..
            }
        ));
        assert_eq!(cf(&[0xc3]), ControlFlow::Ret { pop: 0 });
        assert_eq!(cf(&[0xc2, 0x08, 0x00]), ControlFlow::Ret { pop: 8 });
        assert_eq!(cf(&[0xcb]), ControlFlow::RetFar { pop: 0 });
        assert_eq!(cf(&[0xca, 0x10, 0x00]), ControlFlow::RetFar { pop: 16 });
        assert_eq!(cf(&[0x48, 0xcf]), ControlFlow::Iret);
        // call *%rax, call *%r11, jmp *%rcx, call *0x10(%rip), jmp *(%rax)
        assert_eq!(
            cf(&[0xff, 0xd0]),
            ControlFlow::CallIndirect(IndirectOperand::Register(0))
        );
        assert_eq!(
            cf(&[0x41, 0xff, 0xd3]),
            ControlFlow::CallIndirect(IndirectOperand::Register(11))
        );
        assert_eq!(
            cf(&[0xff, 0xe1]),
            ControlFlow::JmpIndirect(IndirectOperand::Register(1))
        );
        assert_eq!(
            cf(&[0xff, 0x15, 0x10, 0, 0, 0]),
            ControlFlow::CallIndirect(IndirectOperand::Memory { rip_relative: true })
        );
        assert_eq!(
            cf(&[0xff, 0x20]),
            ControlFlow::JmpIndirect(IndirectOperand::Memory {
                rip_relative: false
            })
        );
        assert_eq!(cf(&[0xff, 0x18]), ControlFlow::CallFarIndirect);
        assert_eq!(cf(&[0xff, 0x28]), ControlFlow::JmpFarIndirect);
        assert_eq!(cf(&[0x9a, 1, 2, 3, 4, 5, 6]), ControlFlow::CallFar);
        assert_eq!(cf(&[0xea, 1, 2, 3, 4, 5, 6]), ControlFlow::JmpFar);
        assert_eq!(cf(&[0xcc]), ControlFlow::Int3);
        assert_eq!(cf(&[0xcd, 0x80]), ControlFlow::Int(0x80));
        assert_eq!(cf(&[0xce]), ControlFlow::Into);
        assert_eq!(cf(&[0xf1]), ControlFlow::Int1);
        assert_eq!(cf(&[0x0f, 0x0b]), ControlFlow::Ud(UdKind::Ud2));
        assert_eq!(cf(&[0x0f, 0xb9, 0xc0]), ControlFlow::Ud(UdKind::Ud1));
        assert_eq!(cf(&[0x0f, 0xff, 0xc0]), ControlFlow::Ud(UdKind::Ud0));
        assert_eq!(cf(&[0x0f, 0x05]), ControlFlow::Syscall);
        assert_eq!(cf(&[0x48, 0x0f, 0x07]), ControlFlow::Sysret);
        assert_eq!(cf(&[0x0f, 0x34]), ControlFlow::Sysenter);
        assert_eq!(cf(&[0x0f, 0x35]), ControlFlow::Sysexit);
        assert_eq!(cf(&[0xf3, 0x0f, 0x01, 0xca]), ControlFlow::EventReturn);
        assert_eq!(cf(&[0xf2, 0x0f, 0x01, 0xca]), ControlFlow::EventReturn);
        assert_eq!(cf(&[0x0f, 0x01, 0xca]), ControlFlow::None); // clac
                                                                // APX JMPABS.
        assert_eq!(
            cf(&[0xd5, 0x00, 0xa1, 8, 7, 6, 5, 4, 3, 2, 1]),
            ControlFlow::JmpAbs {
                target: 0x0102_0304_0506_0708
            }
        );
        // Ordinary instructions, including a VEX one whose opcode byte is
        // 0xe8 (vpsubsb), which the kernel would emulate as a call.
        assert_eq!(cf(&[0x48, 0x89, 0xe5]), ControlFlow::None);
        assert_eq!(cf(&[0xc5, 0xf9, 0xe8, 0xc0]), ControlFlow::None);
        assert_eq!(d(&[0xe8, 1, 0, 0, 0]).branch_displacement(), Some(1));
        assert_eq!(d(&[0x90]).branch_displacement(), None);
    }

    #[test]
    fn refusal_list() {
        let r = |b: &[u8]| d(b).probe_refusal();
        for ex in [
            &[0xcc][..],
            &[0xcd, 3],
            &[0xce],
            &[0xf1],
            &[0x0f, 0x0b],
            &[0x0f, 0xb9, 0xc0],
            &[0x0f, 0xff, 0xc0],
        ] {
            assert_eq!(r(ex), Some(Refusal::ExceptionInsn), "{ex:02x?}");
        }
        assert_eq!(Refusal::ExceptionInsn.errno(), -84);
        assert_eq!(
            r(&[0x0f, 0x0b, 0x6b, 0x76, 0x6d, 0x0f, 0xa2]),
            Some(Refusal::EmulatePrefix)
        );
        assert_eq!(Refusal::EmulatePrefix.errno(), -22);
        assert_eq!(r(&[0x1f]), Some(Refusal::MaskingException));
        assert_eq!(r(&[0x17]), Some(Refusal::MaskingException));
        assert_eq!(r(&[0x8e, 0xd0]), Some(Refusal::MaskingException)); // mov %eax,%ss
        assert_eq!(r(&[0x8e, 0xd8]), None); // mov %eax,%ds
        assert_eq!(r(&[0x9a, 1, 2, 3, 4, 5, 6]), Some(Refusal::FarAbsolute));
        assert_eq!(r(&[0xea, 1, 2, 3, 4, 5, 6]), Some(Refusal::FarAbsolute));
        assert_eq!(r(&[0x48, 0xcf]), Some(Refusal::Iret));
        assert_eq!(Refusal::Iret.errno(), -95);
        for vmx in [0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc0, 0xc6, 0xc7] {
            assert_eq!(r(&[0x0f, 0x01, vmx]), Some(Refusal::Vmx), "{vmx:x}");
        }
        assert_eq!(r(&[0x0f, 0x01, 0xd0]), None); // xgetbv
        assert_eq!(r(&[0x0f, 0x01, 0x00]), None); // sgdt (%rax)
        assert_eq!(r(&[0xff, 0x18]), Some(Refusal::FarIndirect));
        assert_eq!(r(&[0xff, 0x28]), Some(Refusal::FarIndirect));
        assert_eq!(r(&[0xff, 0x10]), Some(Refusal::IndirectNotEmulated));
        assert_eq!(r(&[0x67, 0xff, 0xd0]), Some(Refusal::IndirectNotEmulated));
        assert_eq!(r(&[0xff, 0xd0]), None);
        assert_eq!(r(&[0xff, 0xe0]), None);
        assert_eq!(r(&[0xcb]), Some(Refusal::FarReturn));
        assert!(!Refusal::FarReturn.kernel_refuses());
        assert_eq!(r(&[0xf3, 0x0f, 0x01, 0xca]), Some(Refusal::EventReturn));
        assert_eq!(
            r(&[0xd5, 0x00, 0xe8, 0, 0, 0, 0]),
            Some(Refusal::InvalidRex2)
        );
        assert_eq!(Refusal::InvalidRex2.errno(), -84);
        // Ordinary and emulated instructions are accepted.
        for ok in [
            &[0x90][..],
            &[0xc3],
            &[0xe8, 0, 0, 0, 0],
            &[0x74, 0],
            &[0xfa],
            &[0x9c],
            &[0x48, 0x8b, 0x05, 1, 2, 3, 4],
            &[0xf3, 0x0f, 0x1e, 0xfa],
        ] {
            assert_eq!(r(ok), None, "{ok:02x?}");
        }
    }

    #[test]
    fn if_tf_modifiers() {
        assert_eq!(d(&[0xfa]).if_modifier(), Some(IfModifier::Cli));
        assert_eq!(d(&[0xfb]).if_modifier(), Some(IfModifier::Sti));
        assert_eq!(d(&[0x9c]).if_modifier(), Some(IfModifier::Pushf));
        assert_eq!(d(&[0x9d]).if_modifier(), Some(IfModifier::Popf));
        assert_eq!(d(&[0x66, 0x9c]).if_modifier(), Some(IfModifier::Pushf));
        assert_eq!(d(&[0x90]).if_modifier(), None);
    }

    #[test]
    fn boostable() {
        let b = |x: &[u8]| d(x).can_boost(false);
        assert!(b(&[0x55])); // push %rbp
        assert!(b(&[0x48, 0x89, 0xe5])); // mov %rsp,%rbp
        assert!(b(&[0x48, 0x8b, 0x05, 1, 2, 3, 4])); // rip-relative mov
        assert!(b(&[0x0f, 0x1f, 0x44, 0, 0])); // nopl
        assert!(b(&[0xff, 0xe0])); // jmp *%rax
        assert!(b(&[0xff, 0xc0])); // inc %eax
        assert!(!b(&[0xff, 0xd0])); // call *%rax
        assert!(!b(&[0xe8, 0, 0, 0, 0]));
        assert!(!b(&[0xe9, 0, 0, 0, 0]));
        assert!(!b(&[0xeb, 0]));
        assert!(!b(&[0x75, 0]));
        assert!(!b(&[0x0f, 0x85, 0, 0, 0, 0]));
        assert!(!b(&[0xe2, 0]));
        assert!(!b(&[0xcc]));
        assert!(!b(&[0xf4])); // hlt
                              // Two-byte opcodes go by the table alone, prefixes unchecked: the
                              // kernel boosts lock cmpxchg.
        assert!(b(&[0xf0, 0x48, 0x0f, 0xb1, 0x11]));
        assert!(b(&[0xf0, 0xff, 0x00])); // lock incl: the lock prefix is not checked
        assert!(!b(&[0x2e, 0x90])); // cs prefix
        assert!(!b(&[0x67, 0x8b, 0x00])); // addr32
        assert!(!b(&[0xd1, 0xf0])); // grp2 /6
        assert!(b(&[0xd1, 0xe0])); // shl
        assert!(!b(&[0xf7, 0xc8, 1, 0, 0, 0])); // grp3 /1
        assert!(b(&[0xf7, 0xd8])); // neg
        assert!(b(&[0xfe, 0xc0]));
        assert!(!b(&[0xfe, 0xd0]));
        assert!(!b(&[0x0f, 0x38, 0xf0, 0x00])); // 3-byte opcode
        assert!(!d(&[0x90]).can_boost(true)); // exception table
    }

    #[test]
    fn endbr() {
        assert!(d(&[0xf3, 0x0f, 0x1e, 0xfa]).is_endbr64());
        assert!(!d(&[0xf3, 0x0f, 0x1e, 0xfb]).is_endbr64());
        assert!(is_endbr(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55]));
        assert!(is_endbr(&[0xf3, 0x0f, 0x1e, 0xfb]));
        assert!(is_endbr(&[0x66, 0x0f, 0x1f, 0x00]));
        assert!(!is_endbr(&[0xf3, 0x0f, 0x1e]));
        assert!(!is_endbr(&[0x55, 0x48, 0x89, 0xe5]));
        let endbr = [0xf3, 0x0f, 0x1e, 0xfa];
        assert_eq!(adjust_probe_offset(&endbr, 0), (4, true));
        assert_eq!(adjust_probe_offset(&endbr, 4), (4, true));
        assert_eq!(adjust_probe_offset(&endbr, 9), (9, false));
        assert_eq!(adjust_probe_offset(&[0x55], 0), (0, true));
        assert_eq!(adjust_probe_offset(&[0x55], 1), (1, false));
    }

    #[test]
    fn cfi_offsets() {
        assert_eq!(d(&[0x41, 0xba, 1, 2, 3, 4]).cfi_trap_offset(), Some(12));
        assert_eq!(d(&[0x44, 0x03, 0x50, 0xfc]).cfi_trap_offset(), Some(6));
        assert_eq!(d(&[0x90]).cfi_trap_offset(), None);
    }
}
