// SPDX-License-Identifier: GPL-2.0

//! Running fetch programs (`rust/pure/probe_events/exec.rs`) on a model of a
//! hit: registers, a stack and memory. Each case parses a real command,
//! runs its programs as the module will, and checks the record byte by byte
//! against the layout the kernel's `store_trace_args()` produces.

use rkprobes_host::pure::probe_events::{
    exec::{data_loc_len, data_loc_offset, data_size, process, store_args, ArgLayout, FetchEnv},
    fetch::{FetchInsn, Register},
    parse_command, Command, Errno, ProbeDef, SyntaxOnlyEnv,
};
use std::collections::BTreeMap;

/// Kernel memory as a map of readable bytes; user memory likewise.
#[derive(Default)]
struct Model {
    regs: BTreeMap<&'static str, u64>,
    stack: Vec<u64>,
    kernel: BTreeMap<u64, u8>,
    user: BTreeMap<u64, u8>,
    retval: u64,
    comm: u64,
}

impl Model {
    fn put(&mut self, addr: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.kernel.insert(addr + i as u64, *b);
        }
    }

    fn put_user(&mut self, addr: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.user.insert(addr + i as u64, *b);
        }
    }

    fn read(map: &BTreeMap<u64, u8>, addr: u64, buf: &mut [u8]) -> bool {
        for (i, b) in buf.iter_mut().enumerate() {
            match map.get(&addr.wrapping_add(i as u64)) {
                Some(v) => *b = *v,
                None => return false,
            }
        }
        true
    }

    fn strncpy(map: &BTreeMap<u64, u8>, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        for (i, slot) in buf.iter_mut().enumerate() {
            let Some(&c) = map.get(&(addr + i as u64)) else {
                return Err(Errno(14));
            };
            *slot = c;
            if c == 0 {
                return Ok(i + 1);
            }
        }
        // Cut: the kernel NUL-terminates at the end of the room.
        let n = buf.len();
        buf[n - 1] = 0;
        Ok(n)
    }
}

impl FetchEnv for Model {
    fn register(&self, r: Register) -> u64 {
        *self.regs.get(r.name()).unwrap_or(&0)
    }
    fn stack_nth(&self, n: u32) -> u64 {
        *self.stack.get(n as usize).unwrap_or(&0)
    }
    fn stack_pointer(&self) -> u64 {
        0xffff_c900_0000_1000
    }
    fn return_value(&self) -> u64 {
        self.retval
    }
    fn argument(&self, n: u32) -> u64 {
        let r = ["di", "si", "dx", "cx", "r8", "r9"];
        r.get(n as usize)
            .map_or(0, |name| *self.regs.get(name).unwrap_or(&0))
    }
    fn entry_argument(&self, n: u32) -> u64 {
        0x1000 + u64::from(n)
    }
    fn comm_address(&self) -> u64 {
        self.comm
    }
    fn read_kernel(&self, addr: u64, buf: &mut [u8]) -> bool {
        Self::read(&self.kernel, addr, buf)
    }
    fn read_user(&self, addr: u64, buf: &mut [u8]) -> bool {
        Self::read(&self.user, addr, buf)
    }
    fn strncpy_kernel(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        Self::strncpy(&self.kernel, addr, buf)
    }
    fn strncpy_user(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        Self::strncpy(&self.user, addr, buf)
    }
    fn strnlen_user(&self, addr: u64, max: usize) -> Result<usize, Errno> {
        for i in 0..max {
            match self.user.get(&(addr + i as u64)) {
                Some(0) => return Ok(i + 1),
                Some(_) => {}
                None => return Err(Errno(14)),
            }
        }
        Ok(max)
    }
    fn sprint_symbol(&self, addr: u64, buf: &mut [u8]) -> usize {
        let s = format!("func+{:#x}/0x100", addr & 0xff);
        let b = s.as_bytes();
        buf[..b.len()].copy_from_slice(b);
        buf[b.len()] = 0;
        b.len()
    }
}

/// The probe of `cmd`.
fn def(cmd: &str) -> ProbeDef<'_> {
    match parse_command(cmd.as_bytes(), &SyntaxOnlyEnv) {
        Ok(Command::Probe(d)) => d,
        other => panic!("{cmd}: {other:?}"),
    }
}

/// The resolved programs of `d`: immediate strings at `data_base`, one
/// after the other, written into `m`.
fn programs(
    d: &ProbeDef<'_>,
    m: &mut Model,
    data_base: u64,
) -> Vec<(Vec<FetchInsn<u64>>, u32, bool)> {
    let mut next = data_base;
    d.args()
        .map(|a| {
            let a = a.unwrap();
            let code: Vec<FetchInsn<u64>> = a
                .program
                .insns()
                .iter()
                .map(|i| {
                    i.map(|text| {
                        let at = next;
                        let mut bytes = text.to_vec();
                        bytes.push(0);
                        m.put(at, &bytes);
                        next += bytes.len() as u64;
                        at
                    })
                })
                .collect();
            (code, a.offset, a.ty.base.is_string())
        })
        .collect()
}

const HDR: usize = 16;

/// Runs `cmd` against `m`: the record (header zeroed) and its dynamic size.
fn record(cmd: &str, m: &mut Model) -> (Vec<u8>, usize, u32) {
    let d = def(cmd);
    let progs = programs(&d, m, 0xffff_8880_0000_9000);
    let layout: Vec<ArgLayout<'_>> = progs
        .iter()
        .map(|(c, o, dy)| ArgLayout {
            code: c,
            offset: *o,
            dynamic: *dy,
        })
        .collect();
    let dsize = data_size(&layout, m);
    let mut rec = vec![0u8; HDR + d.size as usize + dsize];
    store_args(&layout, m, &mut rec, HDR, d.size as usize, dsize);
    (rec, dsize, d.size)
}

fn u64_at(rec: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(rec[at..at + 8].try_into().unwrap())
}

fn u32_at(rec: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(rec[at..at + 4].try_into().unwrap())
}

fn string_at(rec: &[u8], loc_at: usize) -> Option<String> {
    let loc = u32_at(rec, loc_at);
    let len = data_loc_len(loc) as usize;
    if len == 0 {
        return None;
    }
    let off = data_loc_offset(loc) as usize;
    let s = &rec[off..off + len];
    Some(String::from_utf8_lossy(&s[..s.iter().position(|&c| c == 0).unwrap_or(len)]).into())
}

fn model() -> Model {
    let mut m = Model::default();
    m.regs.insert("ax", 0x1122_3344_5566_7788);
    m.regs.insert("di", 0xffff_8880_0000_1000);
    m.regs.insert("si", 0xffff_8880_0000_2000);
    m.regs.insert("dx", 7);
    m.stack = vec![0xaaaa, 0xbbbb, 0xffff_8880_0000_3000];
    m.retval = 0xfffffffffffffff2; // -14
    m.comm = 0xffff_8880_0000_4000;
    m.put(m.comm, b"insmod\0");
    // A struct at di: a u64, a u16, a pointer to a string, a bitfield word.
    m.put(
        0xffff_8880_0000_1000,
        &0xdead_beef_cafe_f00du64.to_ne_bytes(),
    );
    m.put(0xffff_8880_0000_1008, &0x4321u16.to_ne_bytes());
    m.put(
        0xffff_8880_0000_1010,
        &0xffff_8880_0000_5000u64.to_ne_bytes(),
    );
    m.put(0xffff_8880_0000_1018, &0b1011_0110u8.to_ne_bytes());
    m.put(0xffff_8880_0000_5000, b"/etc/passwd\0");
    // An array of two string pointers at si.
    m.put(
        0xffff_8880_0000_2000,
        &0xffff_8880_0000_5000u64.to_ne_bytes(),
    );
    m.put(
        0xffff_8880_0000_2008,
        &0xffff_8880_0000_6000u64.to_ne_bytes(),
    );
    m.put(0xffff_8880_0000_6000, b"sh\0");
    m
}

#[test]
fn registers_stack_and_immediates() {
    let mut m = model();
    let (rec, dsize, size) = record(
        "p vfs_read a=%ax b=$stack1 c=\\123 d=$arg3 e=%dx:u8",
        &mut m,
    );
    assert_eq!(dsize, 0);
    assert_eq!(size, 8 * 4 + 1);
    assert_eq!(u64_at(&rec, HDR), 0x1122_3344_5566_7788);
    assert_eq!(u64_at(&rec, HDR + 8), 0xbbbb);
    assert_eq!(u64_at(&rec, HDR + 16), 123);
    assert_eq!(
        u64_at(&rec, HDR + 24),
        7,
        "$arg3 is the third argument, rdx"
    );
    assert_eq!(rec[HDR + 32], 7);
}

#[test]
fn dereferences_and_sizes() {
    let mut m = model();
    let (rec, _, _) = record(
        "p vfs_read a=+0(%di) b=+8(%di):u16 c=+0(+16(%di)):u8 d=+8(%di):s16",
        &mut m,
    );
    assert_eq!(u64_at(&rec, HDR), 0xdead_beef_cafe_f00d);
    assert_eq!(u16::from_ne_bytes([rec[HDR + 8], rec[HDR + 9]]), 0x4321);
    assert_eq!(rec[HDR + 10], b'/');
    assert_eq!(i16::from_ne_bytes([rec[HDR + 11], rec[HDR + 12]]), 0x4321);
}

#[test]
fn strings_and_comm_go_to_dynamic_data() {
    let mut m = model();
    let (rec, dsize, size) = record(
        "p vfs_read path=+0(+16(%di)):string who=$comm s=\\\"hi\"",
        &mut m,
    );
    assert_eq!(size, 12, "three __data_loc words");
    assert_eq!(dsize, "/etc/passwd".len() + 1 + "insmod".len() + 1 + 3);
    assert_eq!(string_at(&rec, HDR).as_deref(), Some("/etc/passwd"));
    assert_eq!(string_at(&rec, HDR + 4).as_deref(), Some("insmod"));
    assert_eq!(string_at(&rec, HDR + 8).as_deref(), Some("hi"));
    // The strings follow the fixed fields, in argument order.
    assert_eq!(data_loc_offset(u32_at(&rec, HDR)) as usize, HDR + 12);
    assert_eq!(
        data_loc_offset(u32_at(&rec, HDR + 4)) as usize,
        HDR + 12 + 12
    );
}

#[test]
fn a_fault_is_an_empty_string_and_the_next_one_still_lands() {
    let mut m = model();
    // +0(%dx) reads address 7: unmapped.
    let (rec, dsize, _) = record("p vfs_read bad=+0(%dx):string ok=$comm", &mut m);
    assert_eq!(dsize, "insmod".len() + 1, "a faulting string needs no room");
    assert_eq!(string_at(&rec, HDR), None, "(fault): length 0");
    assert_eq!(string_at(&rec, HDR + 4).as_deref(), Some("insmod"));
}

#[test]
fn a_faulting_dereference_leaves_the_field_zero() {
    let mut m = model();
    let (rec, _, _) = record("p vfs_read a=+0(%dx) b=%ax", &mut m);
    assert_eq!(u64_at(&rec, HDR), 0);
    assert_eq!(u64_at(&rec, HDR + 8), 0x1122_3344_5566_7788);
}

#[test]
fn bitfields() {
    let mut m = model();
    // 0b1011_0110: bits 1..=3 are 0b011, bits 4..=7 are 0b1011.
    let (rec, _, _) = record("p vfs_read a=+24(%di):b3@1/8 b=+24(%di):b4@4/8", &mut m);
    assert_eq!(rec[HDR], 0b011);
    assert_eq!(rec[HDR + 1], 0b1011);
}

#[test]
fn arrays_of_scalars_and_of_strings() {
    let mut m = model();
    let (rec, dsize, size) = record("p vfs_read a=+0(%di):u16[3] b=+0(%si):string[2]", &mut m);
    assert_eq!(size, 6 + 8);
    let v: Vec<u16> = (0..3)
        .map(|i| u16::from_ne_bytes([rec[HDR + 2 * i], rec[HDR + 2 * i + 1]]))
        .collect();
    assert_eq!(v, [0xf00d, 0xcafe, 0xbeef]);
    assert_eq!(dsize, "/etc/passwd".len() + 1 + "sh".len() + 1);
    assert_eq!(string_at(&rec, HDR + 6).as_deref(), Some("/etc/passwd"));
    assert_eq!(string_at(&rec, HDR + 10).as_deref(), Some("sh"));
}

#[test]
fn user_memory_and_symbols() {
    let mut m = model();
    m.regs.insert("dx", 0x7fff_0000);
    m.put_user(0x7fff_0000, b"user\0");
    let (rec, dsize, _) = record("p vfs_read u=+0(%dx):ustring s=%si:symstr", &mut m);
    assert_eq!(string_at(&rec, HDR).as_deref(), Some("user"));
    let sym = "func+0x0/0x100";
    assert_eq!(dsize, 5 + sym.len() + 1);
    let loc = u32_at(&rec, HDR + 4);
    let off = data_loc_offset(loc) as usize;
    assert_eq!(&rec[off..off + sym.len()], sym.as_bytes());
}

#[test]
fn return_probes_see_the_return_value() {
    let mut m = model();
    let (rec, _, _) = record("r vfs_read ret=$retval:s32", &mut m);
    assert_eq!(
        i32::from_ne_bytes(rec[HDR..HDR + 4].try_into().unwrap()),
        -14
    );
}

#[test]
fn malformed_programs_are_errors_not_panics() {
    let m = model();
    let end = [FetchInsn::<u64>::End];
    assert!(process(&end, &m, None) < 0);
    let no_store = [
        FetchInsn::Reg(Register::from_name(b"ax").unwrap()),
        FetchInsn::End,
    ];
    assert!(process(&no_store, &m, None) < 0);
    let runaway = [
        FetchInsn::Imm(0),
        FetchInsn::StRaw(8),
        FetchInsn::LoopArray(u32::MAX),
    ];
    let mut rec = vec![0u8; 64];
    let mut d = rkprobes_host::pure::probe_events::exec::Dest {
        rec: &mut rec,
        at: 0,
    };
    assert!(
        process(&runaway, &m, Some(&mut d)) < 0,
        "bounded, and out of room"
    );
}
