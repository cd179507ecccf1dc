// SPDX-License-Identifier: GPL-2.0

//! The registers a fetcharg can name (`%REG`) and where `pt_regs` keeps
//! them.

/// An x86-64 register a fetcharg can name as `%REG`: exactly the kernel's
/// `regoffset_table` (names are case-sensitive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Register {
    /// `%r15`
    R15 = 0,
    /// `%r14`
    R14 = 1,
    /// `%r13`
    R13 = 2,
    /// `%r12`
    R12 = 3,
    /// `%r11`
    R11 = 6,
    /// `%r10`
    R10 = 7,
    /// `%r9`
    R9 = 8,
    /// `%r8`
    R8 = 9,
    /// `%bx`
    Bx = 5,
    /// `%cx`
    Cx = 11,
    /// `%dx`
    Dx = 12,
    /// `%si`
    Si = 13,
    /// `%di`
    Di = 14,
    /// `%bp`
    Bp = 4,
    /// `%ax`
    Ax = 10,
    /// `%orig_ax`
    OrigAx = 15,
    /// `%ip`
    Ip = 16,
    /// `%cs`
    Cs = 17,
    /// `%flags`
    Flags = 18,
    /// `%sp`
    Sp = 19,
    /// `%ss`
    Ss = 20,
}

impl Register {
    /// Every register, in the kernel's table order.
    pub const ALL: [Register; 21] = [
        Register::R15,
        Register::R14,
        Register::R13,
        Register::R12,
        Register::R11,
        Register::R10,
        Register::R9,
        Register::R8,
        Register::Bx,
        Register::Cx,
        Register::Dx,
        Register::Si,
        Register::Di,
        Register::Bp,
        Register::Ax,
        Register::OrigAx,
        Register::Ip,
        Register::Cs,
        Register::Flags,
        Register::Sp,
        Register::Ss,
    ];

    /// The name after `%`.
    pub fn name(self) -> &'static str {
        match self {
            Register::R15 => "r15",
            Register::R14 => "r14",
            Register::R13 => "r13",
            Register::R12 => "r12",
            Register::R11 => "r11",
            Register::R10 => "r10",
            Register::R9 => "r9",
            Register::R8 => "r8",
            Register::Bx => "bx",
            Register::Cx => "cx",
            Register::Dx => "dx",
            Register::Si => "si",
            Register::Di => "di",
            Register::Bp => "bp",
            Register::Ax => "ax",
            Register::OrigAx => "orig_ax",
            Register::Ip => "ip",
            Register::Cs => "cs",
            Register::Flags => "flags",
            Register::Sp => "sp",
            Register::Ss => "ss",
        }
    }

    /// Byte offset of the register in x86-64 `struct pt_regs`.
    #[inline]
    pub const fn pt_regs_offset(self) -> u16 {
        // The discriminants are the words' indices in `struct pt_regs`:
        // one multiplication, where a `match` was a chain of compares on
        // every register fetch. `rust/events/hit.rs` asserts each against
        // the kernel's layout when rkprobes is built.
        (self as u8 as u16) * 8
    }

    /// `regs_query_register_offset()`.
    pub fn from_name(name: &[u8]) -> Option<Register> {
        Register::ALL
            .iter()
            .copied()
            .find(|r| r.name().as_bytes() == name)
    }
}
