// SPDX-License-Identifier: GPL-2.0

//! Generates `rust/pure/insn/tables.rs` from the kernel's
//! `arch/x86/lib/x86-opcode-map.txt`.
//!
//! This is a line-by-line port of `arch/x86/tools/gen-insn-attr-x86.awk`, the
//! script that generates the kernel's `inat-tables.c`: the same regular
//! expressions (written out as the plain substring and prefix tests they
//! amount to), the same numbering of escapes and groups in order of first
//! appearance, the same rule that a prefix-variant table exists only when it
//! has an entry. The attribute words use the bit layout of
//! `arch/x86/include/asm/inat.h`, so every table entry is numerically equal to
//! the kernel's; the host differential test checks that by looking up every
//! entry through the kernel's own `inat.c`.
//!
//! Usage: `gen-insn-tables MAP [OUTPUT]` (stdout when OUTPUT is omitted).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::process::ExitCode;

// Attribute bit layout, as in arch/x86/include/asm/inat.h.
const INAT_PFX_OFFS: u32 = 0;
const INAT_ESC_OFFS: u32 = 5;
const INAT_GRP_OFFS: u32 = 7;
const INAT_IMM_OFFS: u32 = 12;
const INAT_FLAG_OFFS: u32 = 15;
const INAT_MODRM: u32 = 1 << INAT_FLAG_OFFS;
const INAT_FORCE64: u32 = 1 << (INAT_FLAG_OFFS + 1);
const INAT_SCNDIMM: u32 = 1 << (INAT_FLAG_OFFS + 2);
const INAT_MOFFSET: u32 = 1 << (INAT_FLAG_OFFS + 3);
const INAT_VARIANT: u32 = 1 << (INAT_FLAG_OFFS + 4);
const INAT_VEXOK: u32 = 1 << (INAT_FLAG_OFFS + 5);
const INAT_VEXONLY: u32 = 1 << (INAT_FLAG_OFFS + 6);
const INAT_EVEXONLY: u32 = 1 << (INAT_FLAG_OFFS + 7);
const INAT_NO_REX2: u32 = 1 << (INAT_FLAG_OFFS + 8);
const INAT_REX2_VARIANT: u32 = 1 << (INAT_FLAG_OFFS + 9);
const INAT_EVEX_SCALABLE: u32 = 1 << (INAT_FLAG_OFFS + 10);

const INAT_IMM_BYTE: u32 = 1;
const INAT_IMM_WORD: u32 = 2;
const INAT_IMM_DWORD: u32 = 3;
const INAT_IMM_QWORD: u32 = 4;
const INAT_IMM_PTR: u32 = 5;
const INAT_IMM_VWORD32: u32 = 6;
const INAT_IMM_VWORD: u32 = 7;

const INAT_PFX_REX: u32 = 12;

const fn make_imm(imm: u32) -> u32 {
    imm << INAT_IMM_OFFS
}
const fn make_prefix(pfx: u32) -> u32 {
    pfx << INAT_PFX_OFFS
}
const fn make_escape(esc: u32) -> u32 {
    esc << INAT_ESC_OFFS
}
const fn make_group(grp: u32) -> u32 {
    (grp << INAT_GRP_OFFS) | INAT_MODRM
}

/// The awk script's `imm_flag[]` array.
fn imm_flag(opnd: &str) -> Option<u32> {
    Some(match opnd {
        "Ib" | "Jb" | "Lx" => make_imm(INAT_IMM_BYTE),
        "Iw" => make_imm(INAT_IMM_WORD),
        "Id" => make_imm(INAT_IMM_DWORD),
        "Iq" => make_imm(INAT_IMM_QWORD),
        "Ap" => make_imm(INAT_IMM_PTR),
        "Iz" | "Jz" => make_imm(INAT_IMM_VWORD32),
        "Iv" => make_imm(INAT_IMM_VWORD),
        "Ob" | "Ov" => INAT_MOFFSET,
        _ => return None,
    })
}

/// The awk script's `prefix_num[]` array.
fn prefix_num(name: &str) -> Option<u32> {
    Some(match name {
        "Operand-Size" => 1,
        "REPNE" | "XACQUIRE" => 3,
        "REP/REPE" | "XRELEASE" => 2,
        "LOCK" => 4,
        "SEG=CS" => 5,
        "SEG=DS" => 6,
        "SEG=ES" => 7,
        "SEG=FS" => 8,
        "SEG=GS" => 9,
        "SEG=SS" => 10,
        "Address-Size" => 11,
        "VEX+1byte" => 13,
        "VEX+2byte" => 14,
        "EVEX" => 15,
        "REX2" => 16,
        _ => return None,
    })
}

/// `opnd_expr = "^[A-Za-z/]"`.
fn is_opnd(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/')
}

/// `imm_expr = "^[IJAOL][a-z]"`.
fn is_imm(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b"IJAOL".contains(&b[0]) && b[1].is_ascii_lowercase()
}

/// `modrm_expr = "^([CDEGMNPQRSUVW/][a-z]+|NTA|T[012])"`.
fn is_modrm(s: &str) -> bool {
    let b = s.as_bytes();
    (b.len() >= 2 && b"CDEGMNPQRSUVW/".contains(&b[0]) && b[1].is_ascii_lowercase())
        || s.starts_with("NTA")
        || s.starts_with("T0")
        || s.starts_with("T1")
        || s.starts_with("T2")
}

/// `rex_expr = "^((REX(\\.[XRWB]+)+)|(REX$))"`.
fn is_rex(s: &str) -> bool {
    if s == "REX" {
        return true;
    }
    match s.strip_prefix("REX.") {
        Some(rest) => rest.chars().next().is_some_and(|c| "XRWB".contains(c)),
        None => false,
    }
}

fn fail(line: usize, msg: &str) -> ! {
    eprintln!("Semantic error at {line}: {msg}");
    std::process::exit(1);
}

/// One table being collected between `Table:`/`GrpTable:` and `EndTable`.
#[derive(Default)]
struct Working {
    table: BTreeMap<String, u32>,
    lptable: [BTreeMap<String, u32>; 3],
    eid: i64,
    gid: i64,
    aid: i64,
    tname: String,
}

impl Working {
    fn new() -> Self {
        Working {
            eid: -1,
            gid: -1,
            aid: -1,
            ..Default::default()
        }
    }
}

/// An emitted table: its name and its dense contents.
struct Emitted {
    name: String,
    entries: Vec<u32>,
}

struct Gen {
    escape: HashMap<String, i64>,
    geid: i64,
    group: HashMap<String, i64>,
    ggid: i64,
    gaid: i64,
    etable: HashMap<(i64, usize), usize>,
    gtable: HashMap<(i64, usize), usize>,
    atable: HashMap<(i64, usize), usize>,
    emitted: Vec<Emitted>,
}

fn or_into(map: &mut BTreeMap<String, u32>, idx: &str, flags: u32) {
    *map.entry(idx.to_string()).or_insert(0) |= flags;
}

impl Gen {
    fn emit(&mut self, tbl: &BTreeMap<String, u32>, name: String, group: bool) -> usize {
        let n = if group { 8 } else { 256 };
        let entries = (0..n)
            .map(|i| {
                let id = if group {
                    format!("0x{i:x}")
                } else {
                    format!("0x{i:02x}")
                };
                tbl.get(&id).copied().unwrap_or(0)
            })
            .collect();
        self.emitted.push(Emitted { name, entries });
        self.emitted.len() - 1
    }

    fn end_table(&mut self, w: &Working) {
        let group = w.gid != -1;
        let tables = [&w.table, &w.lptable[0], &w.lptable[1], &w.lptable[2]];
        for (j, tbl) in tables.into_iter().enumerate() {
            if tbl.is_empty() {
                continue;
            }
            let name = if j == 0 {
                w.tname.clone()
            } else {
                format!("{}_{j}", w.tname)
            };
            let id = self.emit(tbl, name, group);
            if group {
                self.gtable.insert((w.gid, j), id);
            } else {
                self.etable.insert((w.eid, j), id);
                if w.aid >= 0 {
                    self.atable.insert((w.aid, j), id);
                }
            }
        }
    }

    /// The awk rule for `/^[0-9a-f]+:/` lines.
    fn opcode_line(&mut self, w: &mut Working, nr: usize, fields: &[&str]) {
        let f = |i: usize| -> &str { fields.get(i - 1).copied().unwrap_or("") };
        let nf = fields.len();
        let first = f(1);
        let idx = format!("0x{}", &first[..first.find(':').unwrap_or(first.len())]);
        if w.table.contains_key(&idx) {
            fail(nr, &format!("Redefine {idx} in {}", w.tname));
        }
        if f(2) == "escape" {
            if f(3) != "#" {
                fail(nr, "No escaped name");
            }
            let r: String = (4..=nf).map(f).collect();
            if self.escape.contains_key(&r) {
                fail(nr, &format!("Redefine escape ({r})"));
            }
            self.escape.insert(r, self.geid);
            w.table.insert(idx, make_escape(self.geid as u32));
            self.geid += 1;
            return;
        }

        let mut variant = 0u32;
        let mut i = 2;
        while i <= nf {
            let opcode = f(i);
            i += 1;
            let mut ext = "";
            let mut flags = 0u32;
            if is_opnd(f(i)) {
                flags = self.convert_operands(nr, f(i));
                i += 1;
            }
            if f(i).starts_with('(') {
                ext = f(i);
                i += 1;
            }
            if f(i) == "|" {
                i += 1;
            } else if i < nf {
                fail(nr, &format!("{} is not a separator", f(i)));
            }

            if opcode.starts_with("Grp")
                && opcode
                    .as_bytes()
                    .get(3)
                    .is_some_and(|c| c.is_ascii_alphanumeric())
            {
                let gid = match self.group.get(opcode) {
                    Some(&g) => g,
                    None => {
                        self.group.insert(opcode.to_string(), self.ggid);
                        self.ggid += 1;
                        self.ggid - 1
                    }
                };
                flags |= make_group(gid as u32);
            }
            if ext.contains("(d64)") || ext.contains("(f64)") {
                flags |= INAT_FORCE64;
            }
            if ext.contains("(!REX2)") {
                flags |= INAT_NO_REX2;
            }
            if is_rex(opcode) {
                flags |= make_prefix(INAT_PFX_REX);
            }
            if opcode.starts_with("ESC") {
                flags |= INAT_MODRM;
            }
            if ext.contains("(ev)") {
                flags |= INAT_VEXOK | INAT_EVEXONLY;
            } else if ext.contains("(es)") {
                flags |= INAT_VEXOK | INAT_EVEXONLY | INAT_EVEX_SCALABLE;
            } else if ext.contains("(v)") {
                flags |= INAT_VEXOK | INAT_VEXONLY;
            } else if ext.contains("(v1)") || opcode.starts_with('v') || opcode.starts_with('k') {
                flags |= INAT_VEXOK;
            }
            if ext.contains("(Prefix)") {
                match prefix_num(opcode) {
                    Some(p) => flags |= make_prefix(p),
                    None => fail(nr, &format!("Unknown prefix: {opcode}")),
                }
            }
            if flags == 0 {
                continue;
            }
            if ext.contains("(66)") || ext.contains("(!F3)") {
                or_into(&mut w.lptable[0], &idx, flags);
                variant = INAT_VARIANT;
            }
            if ext.contains("(F3)") {
                or_into(&mut w.lptable[1], &idx, flags);
                variant = INAT_VARIANT;
            }
            if ext.contains("(F2)") || ext.contains("(!F3)") || ext.contains("(66&F2)") {
                or_into(&mut w.lptable[2], &idx, flags);
                variant = INAT_VARIANT;
            }
            if ext.contains("(REX2)") {
                or_into(&mut w.table, &idx, INAT_REX2_VARIANT);
            }
            if !(ext.contains("(66)") || ext.contains("(F2)") || ext.contains("(F3)")) {
                or_into(&mut w.table, &idx, flags);
            }
        }
        if variant != 0 {
            or_into(&mut w.table, &idx, variant);
        }
    }

    /// The awk script's `convert_operands()`.
    fn convert_operands(&self, nr: usize, opnds: &str) -> u32 {
        let mut imm = 0u32;
        let mut modrm = 0u32;
        for o in opnds.split(',') {
            if is_imm(o) {
                let Some(flag) = imm_flag(o) else {
                    fail(nr, &format!("Unknown imm opnd: {o}"));
                };
                if imm != 0 {
                    if o != "Ib" {
                        fail(nr, "Second IMM error");
                    }
                    imm |= INAT_SCNDIMM;
                } else {
                    imm = flag;
                }
            } else if is_modrm(o) {
                modrm = INAT_MODRM;
            }
        }
        imm | modrm
    }
}

fn generate(map: &str, label: &str) -> String {
    let mut g = Gen {
        escape: HashMap::new(),
        geid: 1,
        group: HashMap::new(),
        ggid: 1,
        gaid: 0,
        etable: HashMap::new(),
        gtable: HashMap::new(),
        atable: HashMap::new(),
        emitted: Vec::new(),
    };
    let mut w = Working::new();
    for (n, line) in map.lines().enumerate() {
        let nr = n + 1;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("Table:") && !w.tname.is_empty() {
            fail(nr, "Hit Table: before EndTable:.");
        }
        if line.starts_with("Referrer:") && fields.len() != 1 {
            let r: String = fields[1..].concat();
            w.eid = g.escape.get(&r).copied().unwrap_or(0);
            w.tname = format!("inat_escape_table_{}", w.eid);
        }
        if line.starts_with("AVXcode:") {
            if fields.len() != 1 {
                w.aid = fields[1]
                    .parse()
                    .unwrap_or_else(|_| fail(nr, "bad AVXcode"));
                if g.gaid <= w.aid {
                    g.gaid = w.aid + 1;
                }
                if w.tname.is_empty() {
                    w.tname = format!("inat_avx_table_{}", w.aid);
                }
            }
            if w.aid == -1 && w.eid == -1 {
                w.tname = "inat_primary_table".to_string();
            }
        }
        if line.starts_with("GrpTable:") {
            let name = fields.get(1).copied().unwrap_or("");
            let Some(&gid) = g.group.get(name) else {
                fail(nr, &format!("No group: {name}"));
            };
            w.gid = gid;
            w.tname = format!("inat_group_table_{gid}");
        }
        if line.starts_with("EndTable") {
            g.end_table(&w);
            w = Working::new();
        }
        let is_opcode_line = line.find(':').is_some_and(|p| {
            p > 0
                && line[..p]
                    .bytes()
                    .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
        });
        if is_opcode_line && nr != 1 {
            g.opcode_line(&mut w, nr, &fields);
        }
    }
    render(&g, label)
}

fn static_name(name: &str) -> String {
    name.to_uppercase()
}

fn render(g: &Gen, label: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "// SPDX-License-Identifier: GPL-2.0

//! x86 instruction attribute tables, generated: do not edit.
//!
//! Generated by `tools/gen-insn-tables` from {label},
//! the same way `arch/x86/tools/gen-insn-attr-x86.awk` generates the kernel's
//! `inat-tables.c`: every entry is numerically equal to the kernel's (the
//! host differential test checks all of them against the kernel's `inat.c`).
//! Regenerate from `tools/` with
//! `cargo run -p gen-insn-tables -- $KSRC/arch/x86/lib/x86-opcode-map.txt
//! ../rust/pure/insn/tables.rs`, where `$KSRC` is a Linux 6.12 source tree.
//!
//! Tables are dense (256 entries for opcode maps, 8 for groups, indexed by
//! the opcode byte or ModRM.reg); a missing prefix-variant table is `None`,
//! exactly where the kernel's pointer arrays hold NULL.
"
    );
    for t in &g.emitted {
        let n = t.entries.len();
        let _ = writeln!(
            out,
            "\n/// Generated from the opcode map: kernel table `{}`.",
            t.name
        );
        let _ = writeln!(
            out,
            "pub(super) static {}: [u32; {n}] = [",
            static_name(&t.name)
        );
        for (row, chunk) in t.entries.chunks(8).enumerate() {
            if n == 256 && row % 2 == 0 {
                let _ = writeln!(out, "    // 0x{:02x}", row * 8);
            }
            let vals: Vec<String> = chunk.iter().map(|v| format!("0x{v:08x},")).collect();
            let _ = writeln!(out, "    {}", vals.join(" "));
        }
        let _ = writeln!(out, "];");
    }
    let mut arr =
        |title: &str, name: &str, rows: usize, size: usize, map: &HashMap<(i64, usize), usize>| {
            let _ = writeln!(out, "\n/// {title}");
            let _ = writeln!(
                out,
                "pub(super) static {name}: [[Option<&[u32; {size}]>; 4]; {rows}] = ["
            );
            for i in 0..rows {
                let cells: Vec<String> = (0..4)
                    .map(|j| match map.get(&(i as i64, j)) {
                        Some(&id) => format!("Some(&{})", static_name(&g.emitted[id].name)),
                        None => "None".to_string(),
                    })
                    .collect();
                let _ = writeln!(out, "    [{}],", cells.join(", "));
            }
            let _ = writeln!(out, "];");
        };
    // INAT_ESC_MAX + 1 = 4, INAT_GRP_MAX + 1 = 32, X86_VEX_M_MAX + 1 = 32.
    arr(
        "Escape opcode maps by escape id and last-prefix id (`inat_escape_tables`).",
        "INAT_ESCAPE_TABLES",
        4,
        256,
        &g.etable,
    );
    arr(
        "Group tables by group id and last-prefix id (`inat_group_tables`).",
        "INAT_GROUP_TABLES",
        32,
        8,
        &g.gtable,
    );
    arr(
        "VEX/EVEX opcode maps by map number and VEX.pp (`inat_avx_tables`).",
        "INAT_AVX_TABLES",
        32,
        256,
        &g.atable,
    );
    let _ = (g.geid, g.ggid, g.gaid);
    out
}

/// Formats the generated source with rustfmt, so that the committed file
/// passes `cargo fmt --check` as generated.
fn rustfmt(text: &str) -> Result<String, String> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let rustfmt = std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".to_string());
    let mut child = Command::new(&rustfmt)
        .args(["--edition", "2021"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{rustfmt}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("{rustfmt} failed"));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(map_path) = args.get(1) else {
        eprintln!("usage: gen-insn-tables x86-opcode-map.txt [output.rs]");
        return ExitCode::FAILURE;
    };
    let map = match std::fs::read_to_string(map_path) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("gen-insn-tables: {map_path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if map.lines().count() < 100 {
        eprintln!("gen-insn-tables: {map_path} does not look like x86-opcode-map.txt");
        return ExitCode::FAILURE;
    }
    let label = "the kernel's\n//! `arch/x86/lib/x86-opcode-map.txt` (Linux 6.12)";
    let text = match rustfmt(&generate(&map, label)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("gen-insn-tables: rustfmt: {e}");
            return ExitCode::FAILURE;
        }
    };
    match args.get(2) {
        Some(out) => {
            if let Err(e) = std::fs::write(out, text) {
                eprintln!("gen-insn-tables: {out}: {e}");
                return ExitCode::FAILURE;
            }
        }
        None => print!("{text}"),
    }
    ExitCode::SUCCESS
}
