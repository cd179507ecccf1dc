// SPDX-License-Identifier: GPL-2.0

//! DWARF register numbers of x86-64 as kprobe_events names them.
//!
//! The numbering is the psABI's (DWARF numbers 0-15 are the general purpose
//! registers, in an order that is not the instruction encoding's); the names
//! are the `struct pt_regs` fields kprobe_events accepts after `%`, the same
//! table perf's `dwarf-regs.c` uses, so that `DW_OP_reg5` becomes `%di`.

/// Names of DWARF registers 0 to 15 on x86-64.
const X86_64: [&str; 16] = [
    "%ax", "%dx", "%cx", "%bx", "%si", "%di", "%bp", "%sp", "%r8", "%r9", "%r10", "%r11", "%r12",
    "%r13", "%r14", "%r15",
];

/// The kprobe_events name of DWARF register `regno`, or `None` for registers
/// a fetcharg cannot read (return address column, SSE, x87, segment
/// registers).
pub fn name(regno: u16) -> Option<&'static str> {
    X86_64.get(usize::from(regno)).copied()
}

#[cfg(test)]
mod tests {
    use super::name;

    #[test]
    fn psabi_order() {
        assert_eq!(name(0), Some("%ax"));
        assert_eq!(name(1), Some("%dx"));
        assert_eq!(name(2), Some("%cx"));
        assert_eq!(name(3), Some("%bx"));
        assert_eq!(name(4), Some("%si"));
        assert_eq!(name(5), Some("%di"));
        assert_eq!(name(6), Some("%bp"));
        assert_eq!(name(7), Some("%sp"));
        assert_eq!(name(8), Some("%r8"));
        assert_eq!(name(15), Some("%r15"));
        // 16 is the return address column, 17 on the SSE registers.
        assert_eq!(name(16), None);
        assert_eq!(name(17), None);
    }
}
