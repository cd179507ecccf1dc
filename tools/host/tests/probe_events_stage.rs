// SPDX-License-Identifier: GPL-2.0

//! Staged strings (`stage::Staged`) against the oracle of reading every
//! string twice, as the kernel does: for random programs of string and
//! other arguments, on memory whose strings are short, long, longer than
//! `MAX_STRING_SIZE` or cut by faults, with records capped anywhere from a
//! few bytes to the module's 4000, the size pass must give the same size
//! and every store pass (two trace instances and perf's copy) the same
//! record bytes, with a scratch of any size, and with none.

mod probe_events_support;

use probe_events_support::*;
use rkprobes_host::pure::probe_events::{
    error::Errno,
    exec::{data_size, fast, store_args, ArgLayout, ArgSource, Base, Fast, FetchEnv},
    program::FetchInsn,
    regs::Register,
    stage::{Staged, SLOTS},
    Command, ProbeDef,
};
use std::cell::Cell;

const HDR: usize = 16;
const TASK_SIZE: u64 = 0x0000_7fff_ffff_f000;

/// Memory of strings: at every address a byte derived from it, a NUL one
/// in `nul` on average, and pages that fault. Counts the string reads.
struct Strings {
    seed: u64,
    nul: u64,
    reads: Cell<usize>,
}

impl Strings {
    fn hash(&self, x: u64) -> u64 {
        (x ^ self.seed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
    }

    /// User memory is another space: the same address holds other bytes.
    fn byte(&self, addr: u64, user: bool) -> Option<u8> {
        let addr = if user { addr ^ 0x5a5a_5a5a_5a5a } else { addr };
        if self.hash(addr >> 12).is_multiple_of(11) {
            return None;
        }
        let h = self.hash(addr);
        Some(if h.is_multiple_of(self.nul) {
            0
        } else {
            (h >> 40) as u8 | 1
        })
    }

    fn read(&self, addr: u64, buf: &mut [u8], user: bool) -> bool {
        for (i, b) in buf.iter_mut().enumerate() {
            match self.byte(addr.wrapping_add(i as u64), user) {
                Some(v) => *b = v,
                None => return false,
            }
        }
        true
    }

    fn strncpy(&self, addr: u64, buf: &mut [u8], user: bool) -> Result<usize, Errno> {
        self.reads.set(self.reads.get() + 1);
        let n = buf.len();
        for (i, slot) in buf.iter_mut().enumerate() {
            let c = self
                .byte(addr.wrapping_add(i as u64), user)
                .ok_or(Errno::EFAULT)?;
            *slot = c;
            if c == 0 {
                return Ok(i + 1);
            }
        }
        if let Some(last) = buf.last_mut() {
            *last = 0;
        }
        Ok(n)
    }

    fn strnlen(&self, addr: u64, max: usize, user: bool) -> Result<usize, Errno> {
        self.reads.set(self.reads.get() + 1);
        for i in 0..max {
            match self.byte(addr.wrapping_add(i as u64), user) {
                Some(0) => return Ok(i + 1),
                Some(_) => {}
                None => return Err(Errno::EFAULT),
            }
        }
        Ok(max)
    }
}

impl FetchEnv for Strings {
    fn register(&self, r: Register) -> u64 {
        let v = self.seed.rotate_left(u32::from(r.pt_regs_offset()));
        // Some registers point below TASK_SIZE: user strings.
        if r.pt_regs_offset().is_multiple_of(16) {
            v & 0x0000_3fff_ffff_ffff
        } else {
            v | 0xffff_8880_0000_0000
        }
    }
    fn stack_nth(&self, n: u32) -> u64 {
        self.seed.wrapping_add(u64::from(n))
    }
    fn stack_pointer(&self) -> u64 {
        self.seed | 0xffff_c900_0000_0000
    }
    fn return_value(&self) -> u64 {
        !self.seed
    }
    fn argument(&self, n: u32) -> u64 {
        self.seed.wrapping_mul(u64::from(n) + 3) | 0xffff_8880_0000_0000
    }
    fn entry_argument(&self, n: u32) -> u64 {
        self.seed.wrapping_mul(u64::from(n) + 5)
    }
    fn comm_address(&self) -> u64 {
        0xffff_8880_0000_0000 | (self.seed & 0xffff)
    }
    fn current_task(&self) -> u64 {
        0xffff_8880_0100_0000 | (self.seed & 0xfff0)
    }
    fn this_cpu_ptr(&self, addr: u64) -> u64 {
        // One CPU, whose per-CPU area starts 1 GiB above the variables'.
        addr.wrapping_add(1 << 30)
    }
    fn read_kernel(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.read(addr, buf, false)
    }
    fn read_user(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.read(addr, buf, true)
    }
    fn strncpy_kernel(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.strncpy(addr, buf, false)
    }
    fn strncpy_user(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.strncpy(addr, buf, true)
    }
    fn strnlen_user(&self, addr: u64, max: usize) -> Result<usize, Errno> {
        self.strnlen(addr, max, true)
    }
    fn strnlen_kernel(&self, addr: u64, max: usize) -> Result<usize, Errno> {
        self.strnlen(addr, max, false)
    }
    fn symbol_string(&self, addr: u64, room: &mut [u8]) -> usize {
        let len = (addr % 300) as usize;
        if let Some(last) = room.len().checked_sub(1) {
            let n = len.min(last);
            room[..n].fill(b's');
            room[n] = 0;
        }
        len
    }
    fn task_size(&self) -> u64 {
        TASK_SIZE
    }
}

/// Argument texts the commands are made of: strings through every kind of
/// program, and fixed fields between them.
const ARGS: &[&str] = &[
    "+0(%si):ustring",
    "+8(%di):string",
    "+0(%dx):string",
    "-16(%cx):ustring",
    "+0($arg2):string",
    "+0(+8(%bx)):string",
    "+0(%r8):string[3]",
    "+0(%ax):ustring[2]",
    "$comm",
    "@vfs_read:symstr",
    "\\\"imm\"",
    "%ax:x64",
    "%dx:u32",
    "+4(%si):u16",
];

/// Arguments of return probes: the return value in each width (fast
/// programs) and as a bitfield (not one), beside others.
const RET_ARGS: &[&str] = &[
    "$retval",
    "$retval:u32",
    "$retval:s16",
    "$retval:x8",
    "$retval:b3@2/32",
    "%dx:u32",
    "+0(%si):ustring",
];

struct Layouts(Vec<(Vec<FetchInsn<u64>>, u32, bool)>);

impl Layouts {
    fn of(def: &ProbeDef<'_>) -> Layouts {
        Layouts(
            def.args()
                .map(|a| {
                    let a = a.unwrap();
                    let code = a
                        .program
                        .insns()
                        .iter()
                        .map(|i| i.map(|_| 0xffff_8880_1234_5678))
                        .collect();
                    (code, a.offset, a.ty.base.is_string())
                })
                .collect(),
        )
    }

    fn get(&self) -> Vec<ArgLayout<'_>> {
        self.0
            .iter()
            .map(|(c, o, d)| ArgLayout {
                code: c,
                offset: *o,
                dynamic: *d,
            })
            .collect()
    }
}

/// A hit: the size and the record of each of `passes` store passes.
fn hit<A: ArgSource, E: FetchEnv>(
    args: &[A],
    env: &E,
    rewind: impl Fn(),
    fixed: usize,
    cap: usize,
    passes: usize,
) -> (usize, Vec<Vec<u8>>) {
    let dsize = data_size(args, env).min(cap.saturating_sub(HDR + fixed));
    let recs = (0..passes)
        .map(|_| {
            rewind();
            let mut rec = vec![0xa5u8; HDR + fixed + dsize];
            store_args(args, env, &mut rec, HDR, fixed, dsize);
            rec
        })
        .collect();
    (dsize, recs)
}

/// A probe command of 1 to `most` arguments drawn from `ARGS`.
fn random_command(rng: &mut Rng, most: usize) -> String {
    let n = 1 + rng.below(most);
    let args: Vec<String> = (0..n).map(|i| format!("a{i}={}", rng.pick(ARGS))).collect();
    format!("p:g/e vfs_read {}", args.join(" "))
}

/// A return probe command of 1 to `most` arguments drawn from `RET_ARGS`.
fn random_ret_command(rng: &mut Rng, most: usize) -> String {
    let n = 1 + rng.below(most);
    let args: Vec<String> = (0..n)
        .map(|i| format!("a{i}={}", rng.pick(RET_ARGS)))
        .collect();
    format!("r:g/e vfs_read {}", args.join(" "))
}

/// A hit's record cap (the module's, or a few bytes past the fixed
/// fields) and its memory, with strings of some average length.
fn random_hit(rng: &mut Rng, fixed: usize) -> (usize, Strings) {
    let cap = if rng.chance(50) {
        4000
    } else {
        HDR + fixed + rng.below(300)
    };
    let env = Strings {
        seed: rng.next_u64(),
        nul: *rng.pick(&[2, 9, 60, 900, 9000]),
        reads: Cell::new(0),
    };
    (cap, env)
}

#[test]
fn staged_records_are_the_records_of_two_reads() {
    let mut rng = Rng::new(7);
    let (mut staged_hits, mut cut_hits, mut fewer, mut scratch_cut) = (0usize, 0, 0, 0);
    for _ in 0..6000 {
        let cmd = random_command(&mut rng, 7);
        let Ok(Command::Probe(def)) = parse(&cmd) else {
            panic!("{cmd}")
        };
        let layouts = Layouts::of(&def);
        let args = layouts.get();
        let fixed = def.size as usize;
        let (cap, env) = random_hit(&mut rng, fixed);
        let passes = 1 + rng.below(3);
        let (dsize, want) = hit(&args, &env, || {}, fixed, cap, passes);
        let plain_reads = env.reads.replace(0);
        let room = cap.saturating_sub(HDR + fixed);
        for size in [rng.below(room + 1), room, room + 1 + rng.below(5000)] {
            let mut scratch = vec![0x5au8; size];
            let staged = Staged::new(&env, Some(&mut scratch));
            let (d, got) = hit(&args, &staged, || staged.rewind(), fixed, cap, passes);
            assert_eq!(d, dsize, "{cmd} cap {cap} scratch {size}");
            assert_eq!(got, want, "{cmd} cap {cap} scratch {size}");
            let reads = env.reads.replace(0);
            assert!(reads <= plain_reads + SLOTS, "{cmd}");
            fewer += usize::from(reads < plain_reads);
            if staged.staged() > 0 {
                staged_hits += 1;
                if dsize == room {
                    cut_hits += 1;
                }
                if size < room {
                    scratch_cut += usize::from(staged.cut() > 0);
                }
            }
        }
        let staged = Staged::new(&env, None);
        let (d, got) = hit(&args, &staged, || staged.rewind(), fixed, cap, passes);
        assert_eq!((d, &got), (dsize, &want), "{cmd} without scratch");
        assert_eq!(staged.staged(), 0);
        assert_eq!(env.reads.replace(0), plain_reads);
    }
    // The staging must have happened and saved reads, with records cut at
    // their room and strings cut by a small scratch among them.
    assert!(staged_hits > 3000, "{staged_hits}");
    assert!(fewer > 3000, "{fewer}");
    assert!(cut_hits > 300, "{cut_hits}");
    assert!(scratch_cut > 300, "{scratch_cut}");
}

/// A copy that is not the next staged string (the address moved between
/// the passes) is read from memory, and so is every copy after it, in that
/// pass and the next.
#[test]
fn a_copy_out_of_order_reads_memory() {
    let env = Strings {
        seed: 5,
        nul: 40,
        reads: Cell::new(0),
    };
    let (a, b) = (0x1000u64, 0x2000u64);
    let mut scratch = vec![0u8; 4000];
    let staged = Staged::new(&env, Some(&mut scratch));
    let la = staged.strnlen_user(a, 4096);
    let lb = staged.strnlen_user(b, 4096);
    assert_eq!(staged.staged(), 2);
    assert_eq!(env.reads.replace(0), 2);
    let copy = |addr: u64| {
        let mut buf = vec![0u8; 4096];
        let n = staged.strncpy_user(addr, &mut buf);
        (n, buf)
    };
    let read = |addr: u64| {
        let mut buf = vec![0u8; 4096];
        let n = env.strncpy(addr, &mut buf, true);
        (n, buf)
    };
    // In order: from the scratch.
    staged.rewind();
    assert_eq!(copy(a).0, la);
    assert_eq!(copy(b).0, lb);
    assert_eq!(env.reads.replace(0), 0);
    // Out of order: b where a is next; then a, which is no longer taken.
    staged.rewind();
    assert_eq!(copy(b), read(b));
    assert_eq!(copy(a), read(a));
    assert_eq!(env.reads.replace(0), 4);
    staged.rewind();
    assert_eq!(copy(a), read(a));
    assert_eq!(env.reads.replace(0), 2);
}

/// One string staged, copied for two instances: read once, where the
/// kernel reads it three times.
#[test]
fn a_staged_string_is_read_once() {
    let Ok(Command::Probe(def)) = parse("p:g/e vfs_read path=+0(%si):ustring") else {
        panic!()
    };
    let layouts = Layouts::of(&def);
    let args = layouts.get();
    let env = Strings {
        seed: 3,
        nul: 40,
        reads: Cell::new(0),
    };
    let (_, want) = hit(&args, &env, || {}, 4, 4000, 2);
    assert_eq!(env.reads.replace(0), 3);
    let mut scratch = vec![0u8; 4000];
    let staged = Staged::new(&env, Some(&mut scratch));
    let (_, got) = hit(&args, &staged, || staged.rewind(), 4, 4000, 2);
    assert_eq!(got, want);
    assert_eq!(env.reads.get(), 1);
}

/// More strings than slots: the first `SLOTS` are staged, the others read
/// twice, and the records are the same.
#[test]
fn strings_beyond_the_slots_are_read_twice() {
    let args: String = (0..SLOTS + 2)
        .map(|i| format!(" s{i}=+{}(%si):ustring", 8 * i))
        .collect();
    let cmd = format!("p:g/e vfs_read{args}");
    let Ok(Command::Probe(def)) = parse(&cmd) else {
        panic!()
    };
    let layouts = Layouts::of(&def);
    let args = layouts.get();
    let fixed = def.size as usize;
    let env = Strings {
        seed: 11,
        nul: 30,
        reads: Cell::new(0),
    };
    let (_, want) = hit(&args, &env, || {}, fixed, 4000, 1);
    env.reads.set(0);
    let mut scratch = vec![0u8; 4000];
    let staged = Staged::new(&env, Some(&mut scratch));
    let (_, got) = hit(&args, &staged, || staged.rewind(), fixed, 4000, 1);
    assert_eq!(got, want);
    assert_eq!(staged.staged(), SLOTS);
    assert_eq!(env.reads.get(), SLOTS + 2 * 2);
}

/// The programs the fast path takes, and only those.
#[test]
fn fast_programs() {
    let prog = |cmd: &str| {
        let Ok(Command::Probe(def)) = parse(cmd) else {
            panic!("{cmd}")
        };
        let a = def.args().next().unwrap().unwrap();
        let code: Vec<FetchInsn<u64>> = a.program.insns().iter().map(|i| i.map(|_| 0)).collect();
        fast(&code, a.ty.base.is_string())
    };
    assert_eq!(
        prog("p vfs_read a=%di:x64"),
        Some(Fast::Reg(Register::Di, 8))
    );
    assert_eq!(
        prog("p vfs_read a=%dx:u32"),
        Some(Fast::Reg(Register::Dx, 4))
    );
    assert_eq!(
        prog("p vfs_read a=+0(%si):ustring"),
        Some(Fast::String {
            base: Base::Reg(Register::Si),
            offset: 0,
            user: true
        })
    );
    assert_eq!(
        prog("p vfs_read a=-8(%bx):string"),
        Some(Fast::String {
            base: Base::Reg(Register::Bx),
            offset: -8,
            user: false
        })
    );
    assert_eq!(
        prog("p vfs_read a=+16($arg2):string"),
        Some(Fast::String {
            base: Base::Arg(1),
            offset: 16,
            user: false
        })
    );
    assert_eq!(
        prog("p vfs_read a=+0(%si):u64"),
        Some(Fast::Mem {
            base: Base::Reg(Register::Si),
            offset: 0,
            size: 8
        })
    );
    assert_eq!(
        prog("p vfs_read a=+8($arg1):u32"),
        Some(Fast::Mem {
            base: Base::Arg(0),
            offset: 8,
            size: 4
        })
    );
    assert_eq!(prog("p vfs_read a=$arg2:u16"), Some(Fast::Arg(1, 2)));
    assert_eq!(prog("r vfs_read a=$retval"), Some(Fast::Retval(8)));
    assert_eq!(prog("r vfs_read a=$retval:s16"), Some(Fast::Retval(2)));
    for slow in [
        "r vfs_read a=$retval:b3@2/32",
        "r vfs_read a=+0($retval):u8",
        "p vfs_read a=+0(+8(%si)):string",
        "p vfs_read a=+0(%si):string[2]",
        "p vfs_read a=$comm",
        "p vfs_read a=@vfs_read:symstr",
        "p vfs_read a=+0(+8(%si)):u64",
        "p vfs_read a=+0(%si):u64[2]",
        "p vfs_read a=%di:b4@2/32",
        "p vfs_read a=\\\"imm\"",
    ] {
        assert_eq!(prog(slow), None, "{slow}");
    }
}

/// An argument run by the interpreter only.
struct Slow<'c>(ArgLayout<'c>);

impl ArgSource for Slow<'_> {
    fn code(&self) -> &[FetchInsn<u64>] {
        self.0.code
    }
    fn offset(&self) -> u32 {
        self.0.offset
    }
    fn dynamic(&self) -> bool {
        self.0.dynamic
    }
    fn fast(&self) -> Option<Fast> {
        None
    }
}

/// The fast path stores what the interpreter stores, for the same
/// programs, on any memory and any record cap.
#[test]
fn the_fast_path_stores_what_the_interpreter_stores() {
    let mut rng = Rng::new(99);
    let mut fast_args = 0usize;
    for _ in 0..6000 {
        let cmd = if rng.chance(30) {
            random_ret_command(&mut rng, 6)
        } else {
            random_command(&mut rng, 6)
        };
        let Ok(Command::Probe(def)) = parse(&cmd) else {
            panic!("{cmd}")
        };
        let layouts = Layouts::of(&def);
        let args = layouts.get();
        fast_args += args.iter().filter(|a| a.fast().is_some()).count();
        let slow: Vec<Slow<'_>> = layouts.get().into_iter().map(Slow).collect();
        let fixed = def.size as usize;
        let (cap, env) = random_hit(&mut rng, fixed);
        let want = hit(&slow, &env, || {}, fixed, cap, 1);
        let got = hit(&args, &env, || {}, fixed, cap, 1);
        assert_eq!(got, want, "{cmd} cap {cap}");
    }
    assert!(fast_args > 6000, "{fast_args}");
}
