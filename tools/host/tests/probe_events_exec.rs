// SPDX-License-Identifier: GPL-2.0

//! Running fetch programs (`rust/pure/probe_events/exec/`) on a model of a
//! hit: registers, a stack and memory. Each case parses a real command,
//! runs its programs as the module will, and checks the record byte by byte
//! against the layout the kernel's `store_trace_args()` produces.

mod probe_events_support;

use probe_events_support::Kept;
use rkprobes_host::pure::probe_events::{
    exec::{
        always_stores, data_loc_len, data_loc_offset, data_size, process, store_args, ArgLayout,
        FetchEnv,
    },
    parse_command,
    print::{record_extent, write_record_args, NoSymbols},
    program::FetchInsn,
    regs::Register,
    ByteWrite, Command, Errno, ProbeDef, SyntaxOnlyEnv,
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
    /// Symbols with long names, by address.
    symbols: BTreeMap<u64, String>,
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
    fn current_task(&self) -> u64 {
        self.comm.wrapping_sub(0x5c0)
    }
    fn this_cpu_ptr(&self, addr: u64) -> u64 {
        // One CPU, whose per-CPU area starts 1 GiB above the variables'.
        addr.wrapping_add(1 << 30)
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
    fn symbol_string(&self, addr: u64, room: &mut [u8]) -> usize {
        // The kernel's contract: up to KSYM_SYMBOL_LEN bytes, whatever the
        // room the caller has.
        let s = match self.symbols.get(&addr) {
            Some(name) => format!("{name}+0x0/0x100 [{}]", "m".repeat(55)),
            None => format!("func+{:#x}/0x100", addr & 0xff),
        };
        assert!(s.len() < KSYM_SYMBOL_LEN);
        let b = s.as_bytes();
        if let Some(last) = room.len().checked_sub(1) {
            let n = b.len().min(last);
            room[..n].copy_from_slice(&b[..n]);
            room[n] = 0;
        }
        b.len()
    }
    fn task_size(&self) -> u64 {
        TASK_SIZE
    }
}

/// x86-64's `TASK_SIZE_MAX` with 4-level page tables.
const TASK_SIZE: u64 = 0x0000_7fff_ffff_f000;

/// x86-64's `KSYM_SYMBOL_LEN` in 6.12: a 511-byte name, two 64-bit numbers
/// in hex, a 55-byte module name and a build id.
const KSYM_SYMBOL_LEN: usize =
    "%s+%#lx/%#lx [%s %s]".len() + 1 + 511 + 2 * (64 * 3 / 10) + 55 + 20 * 2 + 1;

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

/// Where the test puts the arguments in its record: any offset works (the
/// module puts them after the 16-byte head of a kprobe event).
const HDR: usize = 16;

/// The argument layouts of `programs`' output, as the module keeps them.
fn layouts(progs: &[(Vec<FetchInsn<u64>>, u32, bool)]) -> Vec<ArgLayout<'_>> {
    progs
        .iter()
        .map(|(c, o, dy)| ArgLayout {
            code: c,
            offset: *o,
            dynamic: *dy,
        })
        .collect()
}

/// Runs `cmd` against `m`: the record (header zeroed) and its dynamic size.
fn record(cmd: &str, m: &mut Model) -> (Vec<u8>, usize, u32) {
    let d = def(cmd);
    let progs = programs(&d, m, 0xffff_8880_0000_9000);
    let layout = layouts(&progs);
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

/// `always_stores` against the interpreter: in a model where no memory can
/// be read but the immediate strings (so every fetch that reads memory
/// fails), the fixed fields of a record filled with garbage are stored
/// over, whatever the garbage, for every argument that `always_stores` says
/// is. The module skips zeroing the fixed fields only when every argument
/// is such.
#[test]
fn always_stores_matches_what_the_programs_store() {
    let cmds = [
        (
            "p vfs_read a=%di b=%ax:u32 c=%dx:s8",
            [true, true, true].as_slice(),
        ),
        ("p vfs_read a=+0(%di) b=%ax", &[false, true]),
        // `$stackN` cannot fail, but `always_stores` does not say so.
        ("p vfs_read a=+8(%si):u16 b=$stack1", &[false, false]),
        (
            "p vfs_read s=+0(%si):string u=+0(%si):ustring c=$comm",
            &[true, true, true],
        ),
        ("p vfs_read a=%ax:b4@2/32 b=$stack", &[true, true]),
        (
            "p vfs_read i=\\12345 s=\\\"lit\" x=%di:x64",
            &[true, true, true],
        ),
        ("p vfs_read a=+0(+8(%di)):u64 b=@jiffies", &[false, false]),
        ("r vfs_read r=$retval:s32 a=+0($retval):u8", &[true, false]),
        ("p vfs_read arr=+0(%di):u32[3] y=%si", &[false, true]),
    ];
    for (cmd, want) in cmds {
        let d = def(cmd);
        let mut m = Model::default();
        m.regs.insert("ax", 0x1122_3344_5566_7788);
        m.regs.insert("di", 0xffff_8880_0000_1000);
        m.regs.insert("si", 0xffff_8880_0000_2000);
        m.stack = vec![5, 6];
        m.retval = 0xffff_8880_0000_7000;
        let progs = programs(&d, &mut m, 0xffff_8880_0000_9000);
        // Only the immediate strings are readable: nothing at the pointers.
        let layout = layouts(&progs);
        let dsize = data_size(&layout, &m);
        let run = |garbage: u8| {
            let mut rec = vec![garbage; HDR + d.size as usize + dsize];
            store_args(&layout, &m, &mut rec, HDR, d.size as usize, dsize);
            rec
        };
        let (r1, r2) = (run(0x5a), run(0xa5));
        assert_eq!(progs.len(), want.len(), "{cmd}");
        for (i, (c, _, dy)) in progs.iter().enumerate() {
            let start = HDR + progs[i].1 as usize;
            let end = progs
                .get(i + 1)
                .map_or(HDR + d.size as usize, |n| HDR + n.1 as usize);
            let stored = r1[start..end] == r2[start..end];
            let always = always_stores(c, *dy);
            assert_eq!(always, want[i], "{cmd}: argument {i}");
            // Sound: what it says is always stored was stored.
            assert!(!always || stored, "{cmd}: argument {i} not stored");
            // And the model makes memory reads fail.
            if c.iter().any(|x| matches!(x, FetchInsn::Deref(_))) && !*dy {
                assert!(!stored, "{cmd}: argument {i} stored from memory");
            }
        }
    }
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

#[test]
fn symstr_of_the_longest_symbol_is_stored_whole() {
    // sprint_symbol() may write KSYM_SYMBOL_LEN (666) bytes: a 511-byte
    // name in a module with a 55-byte name is 579 of them, more than the
    // 512-byte buffer rkprobes once formatted it into.
    let mut m = model();
    let name = "x".repeat(511);
    m.symbols.insert(0xffff_ffff_c000_1000, name.clone());
    m.regs.insert("si", 0xffff_ffff_c000_1000);
    let (rec, dsize, _) = record("p vfs_read s=%si:symstr", &mut m);
    let text = format!("{name}+0x0/0x100 [{}]", "m".repeat(55));
    assert!(text.len() > 512);
    assert_eq!(dsize, text.len() + 1);
    let loc = u32_at(&rec, HDR);
    let off = data_loc_offset(loc) as usize;
    assert_eq!(&rec[off..off + text.len()], text.as_bytes());
    assert_eq!(rec[off + text.len()], 0);
}

#[test]
fn symstr_is_cut_to_the_room_a_capped_record_has() {
    let mut m = model();
    m.symbols.insert(0xffff_ffff_c000_1000, "y".repeat(300));
    m.regs.insert("si", 0xffff_ffff_c000_1000);
    let d = def("p vfs_read s=%si:symstr");
    let progs = programs(&d, &mut m, 0xffff_8880_0000_9000);
    let layout = layouts(&progs);
    // Room for 100 bytes only, as when the record is capped.
    let mut rec = vec![0xeeu8; HDR + 4 + 100];
    store_args(&layout, &m, &mut rec, HDR, 4, 100);
    let off = data_loc_offset(u32_at(&rec, HDR)) as usize;
    assert_eq!(off, HDR + 4);
    assert_eq!(&rec[off..off + 99], "y".repeat(99).as_bytes());
    assert_eq!(rec[off + 99], 0, "cut and NUL-terminated within the room");
}

/// A user buffer and a kernel one, for the `TASK_SIZE` fallbacks.
fn user_model() -> Model {
    let mut m = model();
    // do_sys_openat2(dfd, filename, how): %si is a user pointer.
    m.regs.insert("si", 0x7ffd_0000);
    m.put_user(0x7ffd_0000, b"/tmp/rkp-open-me\0");
    // A user struct: a u32, then a user pointer to a user string.
    m.regs.insert("dx", 0x7ffd_1000);
    m.put_user(0x7ffd_1000, &0x1234_5678u32.to_ne_bytes());
    m.put_user(0x7ffd_1008, &0x7ffd_0000u64.to_ne_bytes());
    m
}

#[test]
fn string_below_task_size_is_read_as_user_memory() {
    // The kernel's fetch_store_strlen()/fetch_store_string() read an
    // address below TASK_SIZE with the user accessors: the line of many
    // tutorials records the file name, not (fault).
    let mut m = user_model();
    let (rec, dsize, _) = record("p do_sys_openat2 path=+0(%si):string", &mut m);
    assert_eq!(string_at(&rec, HDR).as_deref(), Some("/tmp/rkp-open-me"));
    assert_eq!(dsize, "/tmp/rkp-open-me".len() + 1);
}

#[test]
fn dereferences_below_task_size_are_user_reads() {
    // probe_mem_read(): the dereference and the final memory read.
    let mut m = user_model();
    let (rec, dsize, _) = record(
        "p do_sys_openat2 a=+0(%dx):u32 b=+0(+8(%dx)):string c=+8(%dx):x64",
        &mut m,
    );
    assert_eq!(u32_at(&rec, HDR), 0x1234_5678);
    assert_eq!(
        string_at(&rec, HDR + 4).as_deref(),
        Some("/tmp/rkp-open-me")
    );
    assert_eq!(u64_at(&rec, HDR + 8), 0x7ffd_0000);
    assert_eq!(dsize, "/tmp/rkp-open-me".len() + 1);
}

#[test]
fn kernel_memory_is_still_kernel_memory() {
    // Above TASK_SIZE nothing changes, and a kernel address is never
    // read as user memory, whatever the user map holds there.
    let mut m = user_model();
    m.put_user(0xffff_8880_0000_5000, b"not this\0");
    let (rec, _, _) = record("p vfs_read path=+0(+16(%di)):string", &mut m);
    assert_eq!(string_at(&rec, HDR).as_deref(), Some("/etc/passwd"));
}

#[test]
fn explicit_user_fetches_never_fall_back_to_kernel_memory() {
    // ustring and +u read user memory only, as the kernel's: a kernel
    // address faults.
    let mut m = user_model();
    let (rec, _, _) = record(
        "p vfs_read a=+0(+16(%di)):ustring b=+u0(%di):u64 c=+0(%si):ustring",
        &mut m,
    );
    assert_eq!(string_at(&rec, HDR), None, "(fault)");
    assert_eq!(u64_at(&rec, HDR + 4), 0, "a faulting read leaves 0");
    assert_eq!(
        string_at(&rec, HDR + 12).as_deref(),
        Some("/tmp/rkp-open-me")
    );
}

#[test]
fn unmapped_user_addresses_still_fault() {
    let mut m = user_model();
    m.regs.insert("si", 0x7ffd_8000);
    let (rec, dsize, _) = record("p do_sys_openat2 path=+0(%si):string v=+0(%si):u32", &mut m);
    assert_eq!(string_at(&rec, HDR), None);
    assert_eq!(dsize, 0);
    assert_eq!(u32_at(&rec, HDR + 4), 0);
}

/// Trace output of the arguments of `rec`, printed with the layout of `cmd`.
fn printed(cmd: &str, rec: &[u8]) -> String {
    struct Out(Vec<u8>);
    impl ByteWrite for Out {
        fn write_bytes(&mut self, b: &[u8]) -> std::fmt::Result {
            self.0.extend_from_slice(b);
            Ok(())
        }
    }
    let mut out = Out(Vec::new());
    let kept = Kept::new(&def(cmd));
    write_record_args(&mut out, &kept.layout(), rec, HDR, &NoSymbols).unwrap();
    String::from_utf8_lossy(&out.0).into_owned()
}

#[test]
fn records_print_as_written() {
    let mut m = model();
    let cmd = "p vfs_read a=%ax:x64 path=+0(+16(%di)):string n=+8(%di):u16";
    let (rec, _, _) = record(cmd, &mut m);
    assert_eq!(
        printed(cmd, &rec),
        " a=0x1122334455667788 path=\"/etc/passwd\" n=17185"
    );
    // The extent rkprobes computes for tp_printk is the record's own.
    let kept = Kept::new(&def(cmd));
    assert_eq!(record_extent(&kept.layout(), &rec, HDR, 4000), rec.len());
}

#[test]
fn a_stale_record_of_another_layout_prints_within_its_bytes() {
    // The event that had this id recorded one u8; the event that has it
    // now has a string and two u64s. Nothing past the record is read.
    let mut m = model();
    let (old, _, _) = record("p vfs_read v=%dx:u8", &mut m);
    assert_eq!(old.len(), HDR + 1);
    let out = printed("p vfs_read s=+0(%di):string a=%ax b=%ax", &old);
    assert_eq!(out, " s=<OVERFLOW> a=<OVERFLOW> b=<OVERFLOW>");
    // A record long enough for the fixed fields but whose data_loc points
    // outside it.
    let mut rec = vec![0u8; HDR + 16];
    rec[HDR..HDR + 4].copy_from_slice(&((50u32 << 16) | 30).to_ne_bytes());
    rec[HDR + 4..HDR + 12].copy_from_slice(&7u64.to_ne_bytes());
    let out = printed("p vfs_read s=+0(%di):string a=%ax b=%ax", &rec);
    assert_eq!(out, " s=<OVERFLOW> a=0x7 b=<OVERFLOW>");
}

#[test]
fn a_truncated_record_prints_what_it_holds() {
    let mut m = model();
    let cmd = "p vfs_read a=+0(%di):u16[3] b=+0(%si):string[2] c=%ax";
    let (rec, _, _) = record(cmd, &mut m);
    let full = printed(cmd, &rec);
    assert_eq!(
        full,
        " a={61453,51966,48879} b={\"/etc/passwd\",\"sh\"} c=0x1122334455667788"
    );
    for len in 0..rec.len() {
        let out = printed(cmd, &rec[..len]);
        if len < rec.len() {
            assert_ne!(out, full, "{len}");
        }
    }
    assert_eq!(
        printed(cmd, &rec[..HDR + 4]),
        " a={61453,51966,<OVERFLOW>} b={<OVERFLOW>,<OVERFLOW>} c=<OVERFLOW>"
    );
}
