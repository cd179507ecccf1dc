// SPDX-License-Identifier: GPL-2.0

//! `FuncCode::plan_region` against the CPU it runs on: the independent
//! oracle for the detour code it writes.
//!
//! Each case writes a synthetic function into an RWX mapping: a region of
//! random register-only instructions, RIP-relative `lea`/`mov`, Jcc
//! rel8/rel32, JMP rel8/rel32 and CALL rel32, then a few more instructions
//! and a fall-through landing pad. Branches go to landing pads near and far,
//! to the instructions after the region (sometimes to bytes the probe's
//! jump overwrites, which the plan must refuse). A landing pad pushes its
//! number and jumps to an exit routine that stores every register, the
//! flags, the pad's number, `rsp` and the top of the stack (the return
//! address a callee sees). The function is run from random registers and
//! status flags, once as it is, and once with the probe's `jmp rel32` to the
//! planned detour written over its first five bytes, as the module will
//! write it; everything stored must be the same. Around the function and
//! the detour the mapping is int3, so that a stray jump traps.
//!
//! Cases come from a seed (`RKPROBES_REGION_SEED`, default fixed); their
//! number is `RKPROBES_INSN_ITERS` (default 200,000). A failure (or a
//! fault, from a signal handler) prints the case's own seed, which
//! `RKPROBES_REGION_CASE` reruns alone, printing the code.

mod common;

use common::Rng;
use rkprobes_host::pure::insn::{
    FuncCode, IndirectJumpCheck, OptimizeRefusal, RegionEnd, MAX_PLAN_OUTPUT,
};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn signal(sig: c_int, handler: usize) -> usize;
    fn write(fd: c_int, buf: *const c_void, n: usize) -> isize;
    fn _exit(code: c_int) -> !;
    /// The harness below: loads the registers and flags of `state`, jumps
    /// to its entry, and returns when a landing pad reaches `rk_exit`.
    fn rk_run(state: *mut State);
    fn rk_exit();
}

/// What the harness loads and stores. Its layout is the assembly's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct State {
    /// rax, rbx, rcx, rdx, rsi, rdi, rbp, r8 to r15 (no rsp).
    regs: [u64; 15],
    /// RFLAGS to load.
    flags: u64,
    /// Where to start.
    entry: u64,
    /// RFLAGS at the landing pad.
    flags_out: u64,
    /// The landing pad's number.
    pad: u64,
    /// `rsp` at the landing pad.
    rsp: u64,
    /// The quadword at the top of the stack there.
    top: u64,
}

// Intel syntax. rk_run saves the callee-saved registers and its stack
// pointer, pushes two zero quadwords (the top of the stack a pad sees when
// it was jumped to, not called), loads every register but rsp and the
// flags, and jumps to the entry. rk_exit is entered from a pad with the
// pad's number pushed; it stores everything without touching the flags
// before they are saved, and returns from rk_run on its saved stack.
std::arch::global_asm!(
    ".pushsection .data",
    ".balign 8",
    "rk_state_ptr: .quad 0",
    "rk_saved_rsp: .quad 0",
    "rk_scratch: .quad 0",
    "rk_entry: .quad 0",
    ".popsection",
    ".text",
    ".globl rk_run",
    "rk_run:",
    "push rbx",
    "push rbp",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "mov [rip + rk_state_ptr], rdi",
    "mov [rip + rk_saved_rsp], rsp",
    "mov rax, [rdi + 16*8]",
    "mov [rip + rk_entry], rax",
    "push 0",
    "push 0",
    "push qword ptr [rdi + 15*8]",
    "popfq",
    "mov rax, [rdi + 0*8]",
    "mov rbx, [rdi + 1*8]",
    "mov rcx, [rdi + 2*8]",
    "mov rdx, [rdi + 3*8]",
    "mov rsi, [rdi + 4*8]",
    "mov rbp, [rdi + 6*8]",
    "mov r8, [rdi + 7*8]",
    "mov r9, [rdi + 8*8]",
    "mov r10, [rdi + 9*8]",
    "mov r11, [rdi + 10*8]",
    "mov r12, [rdi + 11*8]",
    "mov r13, [rdi + 12*8]",
    "mov r14, [rdi + 13*8]",
    "mov r15, [rdi + 14*8]",
    "mov rdi, [rdi + 5*8]",
    "jmp qword ptr [rip + rk_entry]",
    ".globl rk_exit",
    "rk_exit:",
    "pushfq",
    "mov [rip + rk_scratch], rax",
    "mov rax, [rip + rk_state_ptr]",
    "mov [rax + 1*8], rbx",
    "mov [rax + 2*8], rcx",
    "mov [rax + 3*8], rdx",
    "mov [rax + 4*8], rsi",
    "mov [rax + 5*8], rdi",
    "mov [rax + 6*8], rbp",
    "mov [rax + 7*8], r8",
    "mov [rax + 8*8], r9",
    "mov [rax + 9*8], r10",
    "mov [rax + 10*8], r11",
    "mov [rax + 11*8], r12",
    "mov [rax + 12*8], r13",
    "mov [rax + 13*8], r14",
    "mov [rax + 14*8], r15",
    "mov rbx, [rip + rk_scratch]",
    "mov [rax + 0*8], rbx",
    "pop rbx",
    "mov [rax + 17*8], rbx",
    "pop rbx",
    "mov [rax + 18*8], rbx",
    "mov [rax + 19*8], rsp",
    "mov rbx, [rsp]",
    "mov [rax + 20*8], rbx",
    "mov rsp, [rip + rk_saved_rsp]",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbp",
    "pop rbx",
    "cld",
    "ret",
);

/// The case running, for the signal handler.
static CASE_SEED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_fault(sig: c_int) {
    let seed = CASE_SEED.load(Ordering::Relaxed);
    let mut msg = *b"region_exec: signal    in case seed 0x0000000000000000\n";
    msg[19] = b'0' + (sig / 10 % 10) as u8;
    msg[20] = b'0' + (sig % 10) as u8;
    for i in 0..16 {
        let nib = (seed >> (60 - 4 * i)) & 0xf;
        msg[38 + i] = b"0123456789abcdef"[nib as usize];
    }
    // SAFETY: write(2) and _exit(2) are async-signal-safe; msg is a local
    // buffer of the length given.
    unsafe {
        write(2, msg.as_ptr().cast(), msg.len());
        _exit(101);
    }
}

/// An anonymous RWX mapping, unmapped on drop.
struct Rwx {
    base: *mut u8,
    len: usize,
}

impl Rwx {
    fn new(len: usize) -> Rwx {
        // SAFETY: a fresh anonymous private mapping; no existing memory is
        // touched.
        let p = unsafe { mmap(std::ptr::null_mut(), len, 7, 0x22, -1, 0) };
        assert!(p as isize != -1 && !p.is_null(), "mmap RWX failed");
        Rwx {
            base: p.cast(),
            len,
        }
    }

    fn addr(&self) -> u64 {
        self.base as u64
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, readable and writable, and
        // only reached through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
    }
}

impl Drop for Rwx {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        unsafe { munmap(self.base.cast(), self.len) };
    }
}

const MAP_LEN: usize = 2 << 20;
/// Exit stub: `jmp [rip + 0]; .quad rk_exit`.
const EXIT_STUB: usize = 0x100;
/// Random data that RIP-relative loads read.
const DATA: usize = 0x1000;
const DATA_LEN: usize = 0x1000;
/// Far landing pads (rel32 only).
const FAR_PADS: [usize; 2] = [0x10000, 0x1f0000];
/// The function's area, and where it starts within it.
const FUNC_AREA: usize = 0x80000;
const FUNC_AREA_LEN: usize = 0x400;
/// Detours go below or above the function, anywhere in these ranges.
const DETOURS: [(usize, usize); 2] = [(0x20000, 0x50000), (0x100000, 0xe0000)];
const PAD_LEN: usize = 10;
const FALL_PAD: u32 = 1000;

/// A landing pad at `at` (offset in the map): `push imm32 id; jmp EXIT_STUB`.
fn put_pad(map: &mut [u8], at: usize, id: u32) {
    let rel = (EXIT_STUB as i64 - (at + PAD_LEN) as i64) as i32;
    let mut pad = [0u8; PAD_LEN];
    pad[0] = 0x68;
    pad[1..5].copy_from_slice(&id.to_le_bytes());
    pad[5] = 0xe9;
    pad[6..10].copy_from_slice(&rel.to_le_bytes());
    map[at..at + PAD_LEN].copy_from_slice(&pad);
}

/// One unit of generated code before its branch target is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Plain,
    RipLea,
    RipLoad,
    Jcc8,
    Jcc32,
    Jmp8,
    Jmp32,
    Call,
    /// A backward Jcc rel8 from the code after the region into it.
    BackJcc,
}

struct Unit {
    kind: Kind,
    bytes: Vec<u8>,
}

/// A register other than rsp, 0 to 15.
fn reg(rng: &mut Rng) -> u8 {
    loop {
        let r = rng.below(16) as u8;
        if r != 4 {
            return r;
        }
    }
}

/// REX with W and the R/B extensions of `r` (ModRM.reg) and `b` (ModRM.rm).
fn rex_w(r: u8, b: u8) -> u8 {
    0x48 | ((r >> 3) << 2) | (b >> 3)
}

/// A random register-only instruction (boostable by the kernel's rules).
fn plain(rng: &mut Rng) -> Vec<u8> {
    let (r, b) = (reg(rng), reg(rng));
    let modrm = |md: u8, r: u8, b: u8| (md << 6) | ((r & 7) << 3) | (b & 7);
    match rng.below(16) {
        0 => {
            // add/or/adc/sbb/and/sub/xor/cmp/test/mov r/m64, r64
            let op = rng.pick(&[0x01, 0x09, 0x11, 0x19, 0x21, 0x29, 0x31, 0x39, 0x85, 0x89]);
            vec![rex_w(r, b), op, modrm(3, r, b)]
        }
        1 => vec![
            rex_w(0, b),
            0x83,
            modrm(3, rng.below(8) as u8, b),
            rng.byte(),
        ],
        2 => vec![rex_w(0, b), 0xff, modrm(3, rng.below(2) as u8, b)],
        3 => vec![
            rex_w(r, b),
            0x0f,
            0x40 | rng.below(16) as u8,
            modrm(3, r, b),
        ],
        4 => {
            // setcc r/m8 with a REX so that 4-7 are spl..dil (never spl).
            vec![
                0x40 | (b >> 3),
                0x0f,
                0x90 | rng.below(16) as u8,
                modrm(3, 0, b),
            ]
        }
        5 => {
            let mut v = Vec::new();
            if b >= 8 {
                v.push(0x41);
            }
            v.push(0xb8 + (b & 7));
            v.extend((rng.next_u64() as u32).to_le_bytes());
            v
        }
        6 => {
            let mut v = vec![rex_w(0, b), 0xb8 + (b & 7)];
            v.extend(rng.next_u64().to_le_bytes());
            v
        }
        7 if b & 7 != 4 => vec![rex_w(r, b), 0x8d, modrm(1, r, b), rng.byte()],
        8 => vec![rng.pick(&[0x90, 0xf5, 0xf8, 0xf9, 0x9f])],
        9 => vec![rex_w(0, b), 0xd1, modrm(3, rng.pick(&[4, 5, 7, 0, 1]), b)],
        10 => vec![
            rex_w(0, b),
            0xc1,
            modrm(3, rng.pick(&[4, 5, 7, 0, 1]), b),
            rng.byte() & 63,
        ],
        11 => vec![rex_w(0, b), 0x0f, 0xc8 + (b & 7)],
        12 => vec![rex_w(r, b), 0x0f, 0xaf, modrm(3, r, b)],
        13 => vec![rex_w(0, b), 0xf7, modrm(3, rng.pick(&[2, 3]), b)],
        14 => vec![0x0f, 0x1f, 0x44, 0x00, 0x00],
        _ => vec![0x66, 0x90],
    }
}

/// The generated case: the function's bytes (at offset `func` of the map),
/// the units, and what it needs to know about them.
struct Case {
    func: usize,
    code: Vec<u8>,
    kinds: Vec<Kind>,
}

fn gen_case(rng: &mut Rng) -> Case {
    let func = FUNC_AREA + 0x100 + rng.below(0x80);
    // Region: units until 5 bytes, a JMP or a CALL ends it early.
    let mut units: Vec<Unit> = Vec::new();
    let mut len = 0;
    while len < 5 {
        let kind = match rng.below(100) {
            0..=39 => Kind::Plain,
            40..=44 => Kind::RipLea,
            45..=49 => Kind::RipLoad,
            50..=69 => Kind::Jcc8,
            70..=77 => Kind::Jcc32,
            78..=84 => Kind::Jmp8,
            85..=89 => Kind::Jmp32,
            _ => Kind::Call,
        };
        let bytes = match kind {
            Kind::Plain => plain(rng),
            Kind::RipLea | Kind::RipLoad => {
                let r = reg(rng);
                let op = if kind == Kind::RipLea { 0x8d } else { 0x8b };
                vec![rex_w(r, 0), op, ((r & 7) << 3) | 5, 0, 0, 0, 0]
            }
            Kind::Jcc8 => vec![0x70 | rng.below(16) as u8, 0],
            Kind::Jcc32 => vec![0x0f, 0x80 | rng.below(16) as u8, 0, 0, 0, 0],
            Kind::Jmp8 => vec![0xeb, 0],
            Kind::Jmp32 => vec![0xe9, 0, 0, 0, 0],
            Kind::Call => vec![0xe8, 0, 0, 0, 0],
            Kind::BackJcc => unreachable!(),
        };
        len += bytes.len();
        let ends = matches!(kind, Kind::Jmp8 | Kind::Jmp32 | Kind::Call);
        units.push(Unit { kind, bytes });
        if ends {
            break;
        }
    }
    // The code after the region: a few instructions, sometimes a backward
    // Jcc into the region.
    for _ in 0..rng.below(4) {
        if rng.below(12) == 0 {
            units.push(Unit {
                kind: Kind::BackJcc,
                bytes: vec![0x70 | rng.below(16) as u8, 0],
            });
        } else {
            units.push(Unit {
                kind: Kind::Plain,
                bytes: plain(rng),
            });
        }
    }
    // Layout.
    let mut starts = Vec::new();
    let mut pos = func;
    for u in &units {
        starts.push(pos);
        pos += u.bytes.len();
    }
    let fall = pos;
    let end = fall + PAD_LEN;
    // Branch targets: pads before the function, after it, far away, the
    // instructions after the first (in the region or after it) and the
    // fall-through pad.
    let near_before: Vec<usize> = (0..6).map(|i| func - 0x50 + i * PAD_LEN).collect();
    let near_after: Vec<usize> = (0..6).map(|i| end + 2 + i * PAD_LEN).collect();
    let far: Vec<usize> = FAR_PADS
        .iter()
        .flat_map(|&f| (0..4).map(move |i| f + i * PAD_LEN))
        .collect();
    let mut code_targets: Vec<usize> = starts[1..].to_vec();
    code_targets.push(fall);
    let mut all: Vec<usize> = Vec::new();
    all.extend(&near_before);
    all.extend(&near_after);
    all.extend(&far);
    all.extend(&code_targets);
    for (i, u) in units.iter_mut().enumerate() {
        let next = starts[i] + u.bytes.len();
        let rel = |t: usize| t as i64 - next as i64;
        match u.kind {
            Kind::Jcc8 | Kind::Jmp8 | Kind::BackJcc => {
                let pool: Vec<usize> = if u.kind == Kind::BackJcc {
                    starts[1..]
                        .iter()
                        .copied()
                        .filter(|&s| s < func + 5 && s <= starts[i])
                        .collect()
                } else {
                    all.iter()
                        .copied()
                        .filter(|&t| (-128..=127).contains(&rel(t)))
                        .collect()
                };
                let t = if pool.is_empty() {
                    fall
                } else {
                    pool[rng.below(pool.len())]
                };
                // A target out of rel8 reach stays a jump to the next
                // instruction.
                let r = i8::try_from(rel(t)).unwrap_or(0);
                u.bytes[1] = r as u8;
            }
            Kind::Jcc32 | Kind::Jmp32 | Kind::Call => {
                let pool: &[usize] = if u.kind == Kind::Call { &far } else { &all };
                let t = rng.pick(pool);
                let n = u.bytes.len();
                u.bytes[n - 4..].copy_from_slice(&(rel(t) as i32).to_le_bytes());
            }
            Kind::RipLea | Kind::RipLoad => {
                let t = DATA + rng.below(DATA_LEN - 8);
                u.bytes[3..7].copy_from_slice(&(rel(t) as i32).to_le_bytes());
            }
            Kind::Plain => {}
        }
    }
    let mut code = Vec::new();
    for u in &units {
        code.extend(&u.bytes);
    }
    // The fall-through pad belongs to the function (it decodes as push and
    // jmp), so that the walk sees a complete function.
    code.extend([0x68, 0, 0, 0, 0, 0xe9, 0, 0, 0, 0]);
    Case {
        func,
        code,
        kinds: units.iter().map(|u| u.kind).collect(),
    }
}

fn run(state: &State) -> State {
    let mut s = *state;
    // SAFETY: the entry is code this test wrote into its RWX mapping, which
    // ends at a landing pad that jumps to rk_exit; it touches only registers,
    // the stack below rk_run's frame and the mapping.
    unsafe { rk_run(&mut s) };
    s
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => {
            let v = v.trim_start_matches("0x");
            u64::from_str_radix(v, 16).unwrap_or_else(|_| panic!("{name}={v} is not hex"))
        }
        Err(_) => default,
    }
}

#[test]
fn detour_runs_like_the_original() {
    for sig in [4, 5, 7, 11] {
        // SAFETY: installs a handler that only writes and exits.
        unsafe { signal(sig, on_fault as *const () as usize) };
    }
    let seed = env_u64("RKPROBES_REGION_SEED", 0x5eed_0f0b_7ec7_0a11);
    let iters = common::iterations(200_000);
    let mut map = Rwx::new(MAP_LEN);
    let base = map.addr();
    {
        let m = map.bytes();
        m.fill(0xcc);
        // jmp [rip + 0]; .quad rk_exit
        m[EXIT_STUB..EXIT_STUB + 6].copy_from_slice(&[0xff, 0x25, 0, 0, 0, 0]);
        m[EXIT_STUB + 6..EXIT_STUB + 14]
            .copy_from_slice(&(rk_exit as *const () as u64).to_le_bytes());
        let mut r = Rng(seed);
        for b in &mut m[DATA..DATA + DATA_LEN] {
            *b = r.byte();
        }
        let mut id = 100;
        for &f in &FAR_PADS {
            for i in 0..4 {
                put_pad(m, f + i * PAD_LEN, id);
                id += 1;
            }
        }
    }
    let mut master = Rng(seed);
    let mut refused: BTreeMap<String, u64> = BTreeMap::new();
    let mut accepted = 0u64;
    let mut gaps = 0u64;
    let mut forms: BTreeMap<&str, u64> = BTreeMap::new();
    let mut ends: BTreeMap<&str, u64> = BTreeMap::new();
    let mut landed: BTreeMap<&str, u64> = BTreeMap::new();
    let mut max_emitted = 0;
    let mut calls_run = 0u64;
    let single = std::env::var("RKPROBES_REGION_CASE")
        .ok()
        .map(|_| env_u64("RKPROBES_REGION_CASE", 0));
    let iters = if single.is_some() { 1 } else { iters };
    for _ in 0..iters {
        let case_seed = single.unwrap_or_else(|| master.next_u64());
        CASE_SEED.store(case_seed, Ordering::Relaxed);
        let mut rng = Rng(case_seed);
        let case = gen_case(&mut rng);
        let (lo, span) = rng.pick(&DETOURS);
        let detour = lo + rng.below(span);
        let m = map.bytes();
        m[FUNC_AREA..FUNC_AREA + FUNC_AREA_LEN].fill(0xcc);
        m[detour..detour + 64].fill(0xcc);
        let func = case.func;
        m[func..func + case.code.len()].copy_from_slice(&case.code);
        let fall = func + case.code.len() - PAD_LEN;
        put_pad(m, fall, FALL_PAD);
        for i in 0..6 {
            put_pad(m, func - 0x50 + i * PAD_LEN, 200 + i as u32);
            put_pad(m, fall + PAD_LEN + 2 + i * PAD_LEN, 300 + i as u32);
        }
        let code = m[func..func + case.code.len()].to_vec();
        let paddr = base + func as u64;
        let real = base + detour as u64;
        let f = FuncCode::new(&code, paddr);
        let mut out = [0u8; MAX_PLAN_OUTPUT];
        // Half the cases leave a 5-byte gap after the first instruction, as
        // the module does for a post-handler's call; it runs as a NOP here.
        let gap = if rng.below(2) == 0 { 0 } else { 5 };
        let plan = f.plan_region_gap(
            paddr,
            real,
            &mut out,
            gap,
            IndirectJumpCheck::Refuse,
            |_| false,
            |_| false,
        );
        let plan = match plan {
            Ok(p) => p,
            Err(e) => {
                // A refusal must have its reason in the code.
                if let OptimizeRefusal::JumpIntoRange { addr } = e {
                    assert!(
                        f.find_branch_into(paddr + 1, paddr + 5, false) == Ok(Some(addr)),
                        "case seed {case_seed:#x}: {e:?} without a branch into the range"
                    );
                }
                let name = format!("{e:?}");
                let name = name
                    .split([' ', '{', '('])
                    .next()
                    .unwrap_or("?")
                    .to_string();
                *refused.entry(name).or_default() += 1;
                continue;
            }
        };
        accepted += 1;
        max_emitted = max_emitted.max(plan.emitted);
        assert!(plan.emitted <= MAX_PLAN_OUTPUT);
        // The forms in the region that was planned.
        let mut at = 0;
        for k in &case.kinds {
            if at >= plan.region_len {
                break;
            }
            let n = match k {
                Kind::Jcc8 | Kind::Jmp8 | Kind::BackJcc => 2,
                Kind::Jcc32 => 6,
                Kind::Jmp32 | Kind::Call => 5,
                Kind::RipLea | Kind::RipLoad => 7,
                Kind::Plain => 0,
            };
            *forms.entry(kind_name(*k)).or_default() += 1;
            at += if n == 0 {
                match rkprobes_host::pure::insn::Insn::decode(&code[at..]) {
                    Ok(i) => i.length(),
                    Err(_) => break,
                }
            } else {
                n
            };
        }
        *ends
            .entry(match plan.end {
                RegionEnd::JumpBack => "jump back",
                RegionEnd::Jump { .. } => "jmp",
                RegionEnd::Call { .. } => "call",
            })
            .or_default() += 1;
        m[detour..detour + plan.emitted].copy_from_slice(&out[..plan.emitted]);
        if gap > 0 {
            gaps += 1;
            let at = detour + plan.first_emitted;
            assert!(
                m[at..at + gap].iter().all(|&b| b == 0xcc),
                "case seed {case_seed:#x}: the gap is not int3"
            );
            m[at..at + gap].copy_from_slice(&[0x0f, 0x1f, 0x44, 0x00, 0x00]);
        }

        let mut regs = [0u64; 15];
        for r in &mut regs {
            *r = match rng.below(4) {
                0 => rng.below(256) as u64,
                1 => (rng.next_u64() as i8) as u64,
                _ => rng.next_u64(),
            };
        }
        let start = State {
            regs,
            flags: 0x202 | (rng.next_u64() & 0x8d5),
            entry: paddr,
            ..State::default()
        };
        if single.is_some() {
            eprintln!(
                "func {:#x} detour {:#x}\ncode {:02x?}\nplan {plan:?}\ndetour {:02x?}",
                paddr,
                real,
                &code,
                &out[..plan.emitted]
            );
        }
        let want = run(&start);
        if single.is_some() {
            eprintln!("original run: {want:x?}");
        }
        // The probe's jump over the first five bytes, as the module writes
        // it.
        let rel = (real as i64 - (paddr as i64 + 5)) as i32;
        m[func] = 0xe9;
        m[func + 1..func + 5].copy_from_slice(&rel.to_le_bytes());
        let got = run(&start);
        m[func..func + 5].copy_from_slice(&code[..5]);
        *landed
            .entry(match want.pad {
                1000 => "fall-through pad",
                200..=399 => "near pad",
                _ => "far pad (jump or call)",
            })
            .or_default() += 1;
        if want != got {
            panic!(
                "case seed {case_seed:#x} (rerun alone: RKPROBES_REGION_CASE={case_seed:x})\n\
                 code {:02x?}\nplan {plan:?}\ndetour {:02x?}\nstart {start:x?}\n\
                 want {want:x?}\ngot  {got:x?}",
                &code,
                &out[..plan.emitted]
            );
        }
        // The sentinel rk_run pushed is at the top of the stack unless the
        // pad was called.
        if want.top != 0 {
            calls_run += 1;
            assert!(matches!(plan.end, RegionEnd::Call { .. }));
            assert_eq!(
                want.top,
                paddr + plan.region_len as u64,
                "case seed {case_seed:#x}: the callee must see the original return address"
            );
        }
    }
    eprintln!(
        "region_exec: seed {seed:#x}, {iters} cases: {accepted} planned and run alike, \
         max emitted {max_emitted} bytes, {calls_run} calls made from a detour, {gaps} with a gap after the first instruction\n  refused: {refused:?}\n  forms run: {forms:?}\n  \
         region ends: {ends:?}\n  landed at: {landed:?}"
    );
    assert!(accepted > iters / 2, "too few cases planned");
    assert!(gaps > iters / 8, "too few cases with a gap ({gaps})");
    for k in [
        "jcc rel8",
        "jcc rel32",
        "jmp rel8",
        "jmp rel32",
        "call rel32",
        "rip-relative",
    ] {
        assert!(forms.get(k).copied().unwrap_or(0) > 0, "{k} never run");
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Plain => "plain",
        Kind::RipLea | Kind::RipLoad => "rip-relative",
        Kind::Jcc8 => "jcc rel8",
        Kind::Jcc32 => "jcc rel32",
        Kind::Jmp8 => "jmp rel8",
        Kind::Jmp32 => "jmp rel32",
        Kind::Call => "call rel32",
        Kind::BackJcc => "backward jcc",
    }
}
