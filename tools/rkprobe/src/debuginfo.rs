// SPDX-License-Identifier: GPL-2.0

//! One ELF file's debuginfo: DWARF through gimli, symbols through object.
//!
//! This is the only file that knows gimli's and object's types for reading;
//! the rest of the crate asks it questions in libdw's vocabulary, the one
//! perf's `dwarf-aux.c` is written in (`die_entrypc`, `dwarf_haspc`,
//! `dwarf_attr_integrate`, the statement lines of a CU sorted by address),
//! so that the probe finder can follow perf's rules step by step.
//!
//! A [`DieRef`] names a DIE by its unit's index and its offset in that unit.
//! Malformed DWARF never panics: a question whose answer cannot be read is
//! answered "absent".

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use gimli::{
    AttributeValue, BaseAddresses, CfaRule, DebugFrame, DwAt, DwTag, EhFrame, EndianSlice,
    Expression, RunTimeEndian, UnitOffset, UnwindContext, UnwindSection,
};
use object::{Object, ObjectSection, ObjectSymbol};

/// The reader every gimli type here is instantiated with.
pub type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// An error loading debuginfo.
#[derive(Debug)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// How a symbol is bound, for choosing among aliases as perf does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// `STB_LOCAL`.
    Local,
    /// `STB_GLOBAL`.
    Global,
    /// `STB_WEAK`.
    Weak,
}

/// A function symbol of the ELF symbol table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Its name, suffixes (`.constprop.0`) included.
    pub name: String,
    /// Its address.
    pub start: u64,
    /// One past its last byte (the next symbol's start when it has no size).
    pub end: u64,
    /// Its binding.
    pub binding: Binding,
}

/// The function symbols of a file: one per address (aliases resolved by
/// perf's `choose_best_symbol()` rules), for naming an address; and every
/// one, aliases included, for finding a name, as perf probe's symbol map
/// keeps them (`symbol_conf.allow_aliases`).
///
/// # Invariants
///
/// Both lists are sorted by address (then name); `syms` holds one symbol
/// of each address that `every` has.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    syms: Vec<Symbol>,
    every: Vec<Symbol>,
}

fn prefix_underscores(s: &str) -> usize {
    s.bytes().take_while(|&b| b == b'_').count()
}

/// perf's `choose_best_symbol()`: true when `a` wins over `b`.
fn better(a: &Symbol, b: &Symbol) -> bool {
    let (la, lb) = (a.end - a.start, b.end - b.start);
    if lb == 0 && la > 0 {
        return true;
    }
    if la == 0 && lb > 0 {
        return false;
    }
    let (wa, wb) = (a.binding == Binding::Weak, b.binding == Binding::Weak);
    if wa != wb {
        return wb;
    }
    let (ga, gb) = (a.binding == Binding::Global, b.binding == Binding::Global);
    if ga != gb {
        return ga;
    }
    let (ua, ub) = (prefix_underscores(&a.name), prefix_underscores(&b.name));
    if ua != ub {
        return ua < ub;
    }
    a.name.len() >= b.name.len()
}

impl Symbols {
    /// Builds the map from function symbols (any order, aliases allowed).
    pub fn new(mut all: Vec<Symbol>) -> Symbols {
        all.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| a.name.cmp(&b.name)));
        let mut syms: Vec<Symbol> = Vec::with_capacity(all.len());
        for s in &all {
            match syms.last_mut() {
                Some(last) if last.start == s.start => {
                    if !better(last, s) {
                        *last = s.clone();
                    }
                }
                _ => syms.push(s.clone()),
            }
        }
        // Zero-sized symbols end where the next address starts.
        let nexts: Vec<u64> = syms.iter().skip(1).map(|s| s.start).collect();
        for (s, next) in syms.iter_mut().zip(nexts) {
            if s.end == s.start {
                s.end = next;
            }
        }
        for s in all.iter_mut().filter(|s| s.end == s.start) {
            let i = syms.partition_point(|n| n.start <= s.start);
            if let Some(next) = syms.get(i) {
                s.end = next.start;
            }
        }
        Symbols { syms, every: all }
    }

    /// The symbol whose range holds `addr`.
    pub fn find(&self, addr: u64) -> Option<&Symbol> {
        let i = self.syms.partition_point(|s| s.start <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        (addr < s.end || s.start == addr).then_some(s)
    }

    /// The symbol perf names each address by (one per address), in
    /// address order.
    pub fn all(&self) -> &[Symbol] {
        &self.syms
    }

    /// Every function symbol, aliases included (`crc32_le` beside
    /// `crc32_le_base`, a module's `init_module` beside its init
    /// function), in address order: the names kallsyms resolves.
    pub fn with_aliases(&self) -> &[Symbol] {
        &self.every
    }
}

/// The section data a [`Debuginfo`] reads, owned or borrowed from a mapped
/// file, with the file's symbols.
pub struct Sections<'a> {
    data: HashMap<String, (Cow<'a, [u8]>, u64)>,
    endian: RunTimeEndian,
    /// The file's function symbols.
    pub symbols: Symbols,
    /// For a module (a relocatable file), its name: kprobe_events places
    /// its probes at `MODULE:symbol+offset`.
    pub module: Option<String>,
    /// For a kernel image, perf's reference relocation symbol (`_text`,
    /// else `_stext`) and its address: perf writes a probe it found in the
    /// symbol table rather than in DWARF as an offset from it.
    pub text_base: Option<(String, u64)>,
}

/// Where a relocatable file's allocated sections are laid out, as libdwfl
/// lays out a module for perf: one after the other, aligned, from this
/// address (never 0, which perf takes for "no address").
const REL_BASE: u64 = 0x10000;

/// A module's name: `name=` of its `.modinfo` (NUL-separated `key=value`
/// strings), else the file's, as the kernel names modules (`-` becomes
/// `_`); `file_stem` is the latter.
fn module_name(file: &object::File<'_>, file_stem: &str) -> String {
    let modinfo = file
        .section_by_name(".modinfo")
        .and_then(|s| s.data().ok())
        .unwrap_or(&[]);
    modinfo
        .split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(b"name="))
        .and_then(|n| std::str::from_utf8(n).ok())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| file_stem.replace('-', "_"))
}

/// The addresses a relocatable file's allocated sections get (see
/// [`REL_BASE`]), by section index.
fn layout(file: &object::File<'_>) -> HashMap<object::SectionIndex, u64> {
    let mut at = REL_BASE;
    let mut out = HashMap::new();
    for sec in file.sections() {
        let alloc = match sec.flags() {
            object::SectionFlags::Elf { sh_flags } => {
                sh_flags & u64::from(object::elf::SHF_ALLOC) != 0
            }
            _ => false,
        };
        if !alloc {
            continue;
        }
        let align = sec.align().max(1);
        at = at.div_ceil(align).saturating_mul(align);
        out.insert(sec.index(), at);
        at = at.saturating_add(sec.size());
    }
    out
}

/// A debug section of a relocatable file with its relocations applied
/// (the absolute ones DWARF uses: section offsets and addresses), symbols
/// of allocated sections at their [`layout`] addresses.
fn relocated(
    file: &object::File<'_>,
    sec: &object::Section<'_, '_>,
    data: &[u8],
    layout: &HashMap<object::SectionIndex, u64>,
) -> Result<Vec<u8>, LoadError> {
    let mut out = data.to_vec();
    for (off, r) in sec.relocations() {
        let object::RelocationTarget::Symbol(si) = r.target() else {
            continue;
        };
        let sym = file
            .symbol_by_index(si)
            .map_err(|e| LoadError(format!("relocation at {off:#x}: {e}")))?;
        let base = sym
            .section_index()
            .and_then(|i| layout.get(&i))
            .copied()
            .unwrap_or(0);
        let value = base
            .wrapping_add(sym.address())
            .wrapping_add_signed(r.addend());
        let bad = || LoadError(format!("relocation at {off:#x} outside its section"));
        let at = usize::try_from(off).map_err(|_| bad())?;
        match (r.kind(), r.size()) {
            (object::RelocationKind::Absolute, 64) => out
                .get_mut(at..at.checked_add(8).ok_or_else(bad)?)
                .ok_or_else(bad)?
                .copy_from_slice(&value.to_le_bytes()),
            (object::RelocationKind::Absolute, 32) => out
                .get_mut(at..at.checked_add(4).ok_or_else(bad)?)
                .ok_or_else(bad)?
                .copy_from_slice(&(value as u32).to_le_bytes()),
            (k, n) => {
                return Err(LoadError(format!(
                    "relocation at {off:#x}: {k:?} of {n} bits not supported"
                )))
            }
        }
    }
    Ok(out)
}

impl<'a> Sections<'a> {
    /// Sections given directly (tests), little endian.
    pub fn from_parts(parts: Vec<(String, Vec<u8>, u64)>, symbols: Vec<Symbol>) -> Sections<'a> {
        Sections {
            data: parts
                .into_iter()
                .map(|(n, d, a)| (n, (Cow::Owned(d), a)))
                .collect(),
            endian: RunTimeEndian::Little,
            symbols: Symbols::new(symbols),
            module: None,
            text_base: None,
        }
    }

    /// The debug sections and function symbols of an ELF file: a vmlinux,
    /// or a module's `.ko` (a relocatable file, whose relocations are
    /// applied to the debug sections, its sections laid out from
    /// [`REL_BASE`]).
    pub fn from_elf(bytes: &'a [u8]) -> Result<Sections<'a>, LoadError> {
        Self::from_elf_named(bytes, "")
    }

    /// [`Sections::from_elf`], with the file's name for a module without
    /// `.modinfo`.
    pub fn from_elf_named(bytes: &'a [u8], file_stem: &str) -> Result<Sections<'a>, LoadError> {
        let file = object::File::parse(bytes).map_err(|e| LoadError(format!("not ELF: {e}")))?;
        if file.architecture() != object::Architecture::X86_64 {
            return Err(LoadError("only x86-64 files are supported".into()));
        }
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let rel = file.kind() == object::ObjectKind::Relocatable;
        let layout = if rel { layout(&file) } else { HashMap::new() };
        let mut data = HashMap::new();
        for sec in file.sections() {
            let Ok(name) = sec.name() else { continue };
            if !(name.starts_with(".debug_") || name == ".eh_frame") {
                continue;
            }
            if let Ok(d) = sec.uncompressed_data() {
                let d = if rel {
                    Cow::Owned(relocated(&file, &sec, &d, &layout)?)
                } else {
                    d
                };
                let addr = layout.get(&sec.index()).copied().unwrap_or(sec.address());
                data.insert(name.to_string(), (d, addr));
            }
        }
        // perf's kernel map holds the symbols of `.text` only (`.init.text`
        // and the others get maps of their own, which it does not search);
        // a module's symbols are all searched.
        let text = file.section_by_name(".text").map(|s| s.index());
        let mut syms = Vec::new();
        for s in file.symbols() {
            if s.kind() != object::SymbolKind::Text || s.is_undefined() {
                continue;
            }
            if !rel && text.is_some() && s.section_index() != text {
                continue;
            }
            let base = s
                .section_index()
                .and_then(|i| layout.get(&i))
                .copied()
                .unwrap_or(0);
            let Ok(name) = s.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let binding = if s.is_weak() {
                Binding::Weak
            } else if s.is_global() {
                Binding::Global
            } else {
                Binding::Local
            };
            let start = base.saturating_add(s.address());
            syms.push(Symbol {
                name: name.to_string(),
                start,
                end: start.saturating_add(s.size()),
                binding,
            });
        }
        // perf's ref_reloc_sym_names, in its order.
        let text_base = if rel {
            None
        } else {
            ["_text", "_stext"].iter().find_map(|want| {
                file.symbols()
                    .find(|s| !s.is_undefined() && s.name() == Ok(want))
                    .map(|s| (want.to_string(), s.address()))
            })
        };
        Ok(Sections {
            data,
            endian,
            symbols: Symbols::new(syms),
            module: rel.then(|| module_name(&file, file_stem)),
            text_base,
        })
    }

    fn get(&self, name: &str) -> &[u8] {
        self.data.get(name).map(|(d, _)| &d[..]).unwrap_or(&[])
    }

    fn address(&self, name: &str) -> Option<u64> {
        self.data.get(name).map(|(_, a)| *a)
    }
}

/// A DIE: its unit's index and its offset in the unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DieRef {
    /// Index in [`Debuginfo`]'s units.
    pub unit: usize,
    /// Offset in the unit.
    pub off: UnitOffset<usize>,
}

/// One row of a CU's line table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Its address.
    pub addr: u64,
    /// The source file, as [`Debuginfo::file_name`] names it.
    pub file: Rc<str>,
    /// Its line, 0 if none.
    pub line: u32,
    /// `is_stmt`.
    pub is_stmt: bool,
    /// The end of a sequence (not a line).
    pub end_sequence: bool,
}

/// A unit's file names by index (`None` for an index without a name).
pub type FileTable = Vec<Option<Rc<str>>>;

/// Top-level subprograms by name, each list in unit order (a Rust
/// function whose only DIE is nested in namespaces is not among them).
pub type FunctionIndex = HashMap<String, Vec<DieRef>>;

/// The debuginfo of one file.
pub struct Debuginfo<'a> {
    /// gimli's view of the sections.
    pub dwarf: gimli::Dwarf<R<'a>>,
    units: Vec<gimli::Unit<R<'a>>>,
    /// `.debug_info` offset of each unit, ascending.
    unit_starts: Vec<usize>,
    eh_frame: Option<(EhFrame<R<'a>>, BaseAddresses)>,
    debug_frame: Option<DebugFrame<R<'a>>>,
    /// The file's function symbols.
    pub symbols: &'a Symbols,
    /// A module's name (see [`Sections::module`]).
    pub module: Option<&'a str>,
    /// A kernel image's reference symbol (see [`Sections::text_base`]).
    pub text_base: Option<(&'a str, u64)>,
    lines: RefCell<HashMap<usize, Rc<Vec<Line>>>>,
    files: RefCell<HashMap<usize, Rc<FileTable>>>,
    funcs: RefCell<Option<Rc<FunctionIndex>>>,
    subprograms: RefCell<HashMap<usize, Rc<Vec<DieRef>>>>,
}

/// A canonical frame address rule.
#[derive(Clone, Debug)]
pub enum Cfa<'a> {
    /// Register + offset.
    RegOffset(u16, i64),
    /// A DWARF expression (a realigned stack: `DW_OP_breg6 -40; DW_OP_deref`).
    Expr(Expression<R<'a>>),
}

/// What a location attribute holds at one address.
#[derive(Clone, Debug)]
pub enum LocationAt<'a> {
    /// No location attribute.
    Missing,
    /// A location list with no entry for the address.
    NotHere,
    /// The expression valid at the address.
    Expr(Expression<R<'a>>),
}

impl<'a> Debuginfo<'a> {
    /// Reads every unit header of the sections.
    pub fn new(sections: &'a Sections<'_>) -> Result<Debuginfo<'a>, LoadError> {
        let endian = sections.endian;
        let dwarf = gimli::Dwarf::load(|id| -> Result<R<'a>, gimli::Error> {
            Ok(EndianSlice::new(sections.get(id.name()), endian))
        })
        .map_err(|e| LoadError(format!("reading DWARF: {e}")))?;
        let mut units = Vec::new();
        let mut unit_starts = Vec::new();
        let mut headers = dwarf.units();
        loop {
            let h = match headers.next() {
                Ok(Some(h)) => h,
                Ok(None) => break,
                Err(e) => return Err(LoadError(format!("reading a unit header: {e}"))),
            };
            let start = h.offset().as_debug_info_offset().map(|o| o.0).unwrap_or(0);
            let unit = dwarf
                .unit(h)
                .map_err(|e| LoadError(format!("reading unit at {start:#x}: {e}")))?;
            unit_starts.push(start);
            units.push(unit);
        }
        if units.is_empty() {
            return Err(LoadError("no DWARF debuginfo in this file".into()));
        }
        let eh = sections.get(".eh_frame");
        let eh_frame = (!eh.is_empty()).then(|| {
            let mut bases = BaseAddresses::default();
            if let Some(a) = sections.address(".eh_frame") {
                bases = bases.set_eh_frame(a);
            }
            (EhFrame::new(eh, endian), bases)
        });
        let df = sections.get(".debug_frame");
        let debug_frame = (!df.is_empty()).then(|| {
            let mut f = DebugFrame::new(df, endian);
            f.set_address_size(8);
            f
        });
        Ok(Debuginfo {
            dwarf,
            units,
            unit_starts,
            eh_frame,
            debug_frame,
            symbols: &sections.symbols,
            module: sections.module.as_deref(),
            text_base: sections.text_base.as_ref().map(|(n, a)| (n.as_str(), *a)),
            lines: RefCell::default(),
            files: RefCell::default(),
            funcs: RefCell::default(),
            subprograms: RefCell::default(),
        })
    }

    /// How many units there are.
    pub fn unit_count(&self) -> usize {
        self.units.len()
    }

    /// The root DIE (the CU) of unit `i`.
    pub fn cu_die(&self, i: usize) -> Option<DieRef> {
        let u = self.units.get(i)?;
        let mut entries = u.entries();
        let (_, e) = entries.next_dfs().ok()??;
        Some(DieRef {
            unit: i,
            off: e.offset(),
        })
    }

    fn unit(&self, d: DieRef) -> Option<&gimli::Unit<R<'a>>> {
        self.units.get(d.unit)
    }

    /// The DIE's tag (`DW_TAG_null` if unreadable).
    pub fn tag(&self, d: DieRef) -> DwTag {
        self.unit(d)
            .and_then(|u| u.entry(d.off).ok())
            .map(|e| e.tag())
            .unwrap_or(gimli::DW_TAG_null)
    }

    /// The DIE's own attribute `at` (libdw's `dwarf_attr`).
    pub fn attr(&self, d: DieRef, at: DwAt) -> Option<AttributeValue<R<'a>>> {
        let u = self.unit(d)?;
        let e = u.entry(d.off).ok()?;
        e.attr_value(at).ok()?
    }

    /// Whether the DIE has attribute `at` itself.
    pub fn has_attr(&self, d: DieRef, at: DwAt) -> bool {
        self.attr(d, at).is_some()
    }

    /// The DIE a reference attribute value points to.
    pub fn reference(&self, from: DieRef, v: &AttributeValue<R<'a>>) -> Option<DieRef> {
        match *v {
            AttributeValue::UnitRef(off) => Some(DieRef {
                unit: from.unit,
                off,
            }),
            AttributeValue::DebugInfoRef(o) => {
                let i = self
                    .unit_starts
                    .partition_point(|&s| s <= o.0)
                    .checked_sub(1)?;
                let u = self.units.get(i)?;
                let off = gimli::DebugInfoOffset(o.0).to_unit_offset(&u.header)?;
                Some(DieRef { unit: i, off })
            }
            _ => None,
        }
    }

    /// The DIE's attribute `at`, following `DW_AT_abstract_origin` and
    /// `DW_AT_specification` (libdw's `dwarf_attr_integrate`), with the DIE
    /// that holds it.
    pub fn attr_integrate(&self, d: DieRef, at: DwAt) -> Option<(DieRef, AttributeValue<R<'a>>)> {
        let mut cur = d;
        for _ in 0..16 {
            if let Some(v) = self.attr(cur, at) {
                return Some((cur, v));
            }
            let next = self
                .attr(cur, gimli::DW_AT_abstract_origin)
                .or_else(|| self.attr(cur, gimli::DW_AT_specification))?;
            cur = self.reference(cur, &next)?;
        }
        None
    }

    /// The DIE a reference attribute (`DW_AT_type`, `DW_AT_abstract_origin`)
    /// names, integrated.
    pub fn attr_die(&self, d: DieRef, at: DwAt) -> Option<DieRef> {
        let (holder, v) = self.attr_integrate(d, at)?;
        self.reference(holder, &v)
    }

    /// A string attribute value.
    pub fn string(&self, d: DieRef, v: AttributeValue<R<'a>>) -> Option<String> {
        let u = self.unit(d)?;
        let s = self.dwarf.attr_string(u, v).ok()?;
        Some(String::from_utf8_lossy(s.slice()).into_owned())
    }

    /// The DIE's name, integrated (libdw's `dwarf_diename`).
    pub fn name(&self, d: DieRef) -> Option<String> {
        let (h, v) = self.attr_integrate(d, gimli::DW_AT_name)?;
        self.string(h, v)
    }

    /// The DIE's linkage name, integrated.
    pub fn linkage_name(&self, d: DieRef) -> Option<String> {
        let (h, v) = self
            .attr_integrate(d, gimli::DW_AT_linkage_name)
            .or_else(|| self.attr_integrate(d, gimli::DW_AT_MIPS_linkage_name))?;
        self.string(h, v)
    }

    /// An unsigned constant attribute, integrated.
    pub fn udata(&self, d: DieRef, at: DwAt) -> Option<u64> {
        let (_, v) = self.attr_integrate(d, at)?;
        udata_of(&v)
    }

    /// A signed constant attribute, not integrated.
    pub fn sdata(&self, d: DieRef, at: DwAt) -> Option<i64> {
        match self.attr(d, at)? {
            AttributeValue::Sdata(v) => Some(v),
            AttributeValue::Data1(v) => Some(i64::from(v as i8)),
            AttributeValue::Data2(v) => Some(i64::from(v as i16)),
            AttributeValue::Data4(v) => Some(i64::from(v as i32)),
            AttributeValue::Data8(v) => Some(v as i64),
            AttributeValue::Udata(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The children of a DIE, in order.
    pub fn children(&self, d: DieRef) -> Vec<DieRef> {
        let mut out = Vec::new();
        let Some(u) = self.unit(d) else { return out };
        let Ok(mut tree) = u.entries_tree(Some(d.off)) else {
            return out;
        };
        let Ok(root) = tree.root() else { return out };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            out.push(DieRef {
                unit: d.unit,
                off: child.entry().offset(),
            });
        }
        out
    }

    /// The address ranges of a DIE (`DW_AT_low_pc`/`DW_AT_high_pc` or
    /// `DW_AT_ranges`), in the order the DIE gives them.
    pub fn ranges(&self, d: DieRef) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let Some(u) = self.unit(d) else { return out };
        let Ok(e) = u.entry(d.off) else { return out };
        let Ok(mut it) = self.dwarf.die_ranges(u, &e) else {
            return out;
        };
        while let Ok(Some(r)) = it.next() {
            if r.begin < r.end {
                out.push((r.begin, r.end));
            }
        }
        out
    }

    /// An address attribute of the DIE itself.
    fn address_attr(&self, d: DieRef, at: DwAt) -> Option<u64> {
        let u = self.unit(d)?;
        let v = self.attr(d, at)?;
        match v {
            AttributeValue::Addr(a) => Some(a),
            AttributeValue::DebugAddrIndex(i) => self.dwarf.address(u, i).ok(),
            _ => None,
        }
    }

    /// libdw's `dwarf_entrypc`: `DW_AT_entry_pc` or `DW_AT_low_pc`.
    pub fn entrypc(&self, d: DieRef) -> Option<u64> {
        if let Some(a) = self.address_attr(d, gimli::DW_AT_entry_pc) {
            return Some(a);
        }
        if let (Some(low), Some(AttributeValue::Udata(off))) = (
            self.address_attr(d, gimli::DW_AT_low_pc),
            self.attr(d, gimli::DW_AT_entry_pc),
        ) {
            // DWARF 5: an entry_pc constant is an offset from low_pc.
            return low.checked_add(off);
        }
        self.address_attr(d, gimli::DW_AT_low_pc)
    }

    /// perf's `die_entrypc()`: the entry PC, or the start of the first range.
    pub fn die_entrypc(&self, d: DieRef) -> Option<u64> {
        if let Some(a) = self.entrypc(d) {
            return Some(a);
        }
        self.first_range_start(d)
    }

    /// The start of the first entry of the DIE's `DW_AT_ranges`, an empty
    /// one included. libdw's `dwarf_ranges()` returns empty entries like any
    /// other, and GCC opens an inlined instance's ranges with one
    /// (`[a, a)`, where the instance's first view is): perf probes there.
    /// gimli's range iterator skips empty entries, so the raw entries are
    /// read here.
    fn first_range_start(&self, d: DieRef) -> Option<u64> {
        use gimli::RawRngListEntry as E;
        let u = self.unit(d)?;
        let off = self
            .dwarf
            .attr_ranges_offset(u, self.attr(d, gimli::DW_AT_ranges)?)
            .ok()??;
        let mut raw = self.dwarf.raw_ranges(u, off).ok()?;
        let mut base = u.low_pc;
        while let Ok(Some(e)) = raw.next() {
            return Some(match e {
                E::BaseAddress { addr } => {
                    base = addr;
                    continue;
                }
                E::BaseAddressx { addr } => {
                    base = self.dwarf.address(u, addr).ok()?;
                    continue;
                }
                E::StartxEndx { begin, .. } | E::StartxLength { begin, .. } => {
                    self.dwarf.address(u, begin).ok()?
                }
                E::AddressOrOffsetPair { begin, .. } | E::OffsetPair { begin, .. } => {
                    base.wrapping_add(begin)
                }
                E::StartEnd { begin, .. } | E::StartLength { begin, .. } => begin,
            });
        }
        None
    }

    /// libdw's `dwarf_highpc`.
    pub fn highpc(&self, d: DieRef) -> Option<u64> {
        match self.attr(d, gimli::DW_AT_high_pc)? {
            AttributeValue::Addr(a) => Some(a),
            v => {
                let off = udata_of(&v)?;
                self.address_attr(d, gimli::DW_AT_low_pc)?.checked_add(off)
            }
        }
    }

    /// libdw's `dwarf_haspc`.
    pub fn haspc(&self, d: DieRef, addr: u64) -> bool {
        self.ranges(d).iter().any(|&(b, e)| b <= addr && addr < e)
    }

    /// The name of file `index` of unit `unit`'s line table: its directory
    /// (relative ones under the compilation directory) joined with its name.
    pub fn file_name(&self, unit: usize, index: u64) -> Option<Rc<str>> {
        let files = self.files_of(unit)?;
        files.get(usize::try_from(index).ok()?)?.clone()
    }

    fn files_of(&self, unit: usize) -> Option<Rc<FileTable>> {
        if let Some(f) = self.files.borrow().get(&unit) {
            return Some(f.clone());
        }
        let u = self.units.get(unit)?;
        let d = DieRef {
            unit,
            off: UnitOffset(0),
        };
        let prog = u.line_program.as_ref()?;
        let header = prog.header();
        let comp_dir = u
            .comp_dir
            .as_ref()
            .map(|s| String::from_utf8_lossy(s.slice()).into_owned());
        let count = header.file_names().len() as u64;
        let first = if header.version() >= 5 { 0 } else { 1 };
        let mut out = vec![None; if first == 1 { 1 } else { 0 }];
        for i in first..first + count {
            let name = header.file(i).and_then(|f| {
                let name = self.string(d, f.path_name())?;
                if name.starts_with('/') {
                    return Some(name);
                }
                let dir = f
                    .directory(header)
                    .and_then(|v| self.string(d, v))
                    .unwrap_or_default();
                let dir = if dir.starts_with('/') {
                    dir
                } else {
                    match (&comp_dir, dir.is_empty()) {
                        (Some(c), true) => c.clone(),
                        (Some(c), false) => format!("{c}/{dir}"),
                        (None, _) => dir,
                    }
                };
                Some(if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                })
            });
            out.push(name.map(Rc::from));
        }
        let out = Rc::new(out);
        self.files.borrow_mut().insert(unit, out.clone());
        Some(out)
    }

    /// The declaration file of a DIE (perf's `die_get_decl_file()`).
    pub fn decl_file(&self, d: DieRef) -> Option<Rc<str>> {
        let (holder, v) = self.attr_integrate(d, gimli::DW_AT_decl_file)?;
        self.file_name(holder.unit, udata_of(&v)?)
    }

    /// The declaration line of a DIE, integrated.
    pub fn decl_line(&self, d: DieRef) -> Option<u32> {
        u32::try_from(self.udata(d, gimli::DW_AT_decl_line)?).ok()
    }

    /// The call-site file of an inlined instance.
    pub fn call_file(&self, d: DieRef) -> Option<Rc<str>> {
        let (holder, v) = self.attr_integrate(d, gimli::DW_AT_call_file)?;
        self.file_name(holder.unit, udata_of(&v)?)
    }

    /// The call-site line of an inlined instance.
    pub fn call_line(&self, d: DieRef) -> Option<u32> {
        u32::try_from(self.udata(d, gimli::DW_AT_call_line)?).ok()
    }

    /// The statement table of a unit, sorted by address as libdw sorts it
    /// (end-of-sequence rows first at an address, then table order).
    pub fn lines(&self, unit: usize) -> Rc<Vec<Line>> {
        if let Some(l) = self.lines.borrow().get(&unit) {
            return l.clone();
        }
        let mut out = Vec::new();
        if let Some(prog) = self.units.get(unit).and_then(|u| u.line_program.clone()) {
            let mut rows = prog.rows();
            while let Ok(Some((_, row))) = rows.next_row() {
                let file = self
                    .file_name(unit, row.file_index())
                    .unwrap_or_else(|| Rc::from(""));
                out.push(Line {
                    addr: row.address(),
                    file,
                    line: row
                        .line()
                        .and_then(|l| u32::try_from(l.get()).ok())
                        .unwrap_or(0),
                    is_stmt: row.is_stmt(),
                    end_sequence: row.end_sequence(),
                });
            }
        }
        out.sort_by(|a, b| {
            a.addr
                .cmp(&b.addr)
                .then_with(|| b.end_sequence.cmp(&a.end_sequence))
        });
        let out = Rc::new(out);
        self.lines.borrow_mut().insert(unit, out.clone());
        out
    }

    /// The value of a location-class attribute at `addr`: an expression, or
    /// the entry of a location list whose range holds `addr`.
    pub fn location_at(&self, d: DieRef, at: DwAt, addr: u64) -> LocationAt<'a> {
        let Some(v) = self.attr(d, at) else {
            return LocationAt::Missing;
        };
        if let AttributeValue::Exprloc(e) = v {
            return LocationAt::Expr(e);
        }
        let Some(u) = self.unit(d) else {
            return LocationAt::Missing;
        };
        let Ok(Some(mut it)) = self.dwarf.attr_locations(u, v) else {
            return LocationAt::Missing;
        };
        while let Ok(Some(entry)) = it.next() {
            if entry.range.begin <= addr && addr < entry.range.end {
                return LocationAt::Expr(entry.data);
            }
        }
        LocationAt::NotHere
    }

    /// Every entry of a location list attribute as (begin, end, expression);
    /// a plain expression is one entry covering every address.
    pub fn location_entries(&self, d: DieRef, at: DwAt) -> Vec<(u64, u64, Expression<R<'a>>)> {
        let mut out = Vec::new();
        let Some(v) = self.attr(d, at) else {
            return out;
        };
        if let AttributeValue::Exprloc(e) = v {
            out.push((0, u64::MAX, e));
            return out;
        }
        let Some(u) = self.unit(d) else { return out };
        let Ok(Some(mut it)) = self.dwarf.attr_locations(u, v) else {
            return out;
        };
        while let Ok(Some(entry)) = it.next() {
            out.push((entry.range.begin, entry.range.end, entry.data));
        }
        out
    }

    /// The encoding of expressions in a DIE's unit.
    pub fn encoding(&self, d: DieRef) -> gimli::Encoding {
        self.unit(d)
            .map(|u| u.encoding())
            .unwrap_or(gimli::Encoding {
                address_size: 8,
                format: gimli::Format::Dwarf32,
                version: 5,
            })
    }

    /// Whether call frame information was found (`.eh_frame` or
    /// `.debug_frame`).
    pub fn has_cfi(&self) -> bool {
        self.eh_frame.is_some() || self.debug_frame.is_some()
    }

    /// The canonical frame address rule at `addr`, from `.eh_frame` first,
    /// then `.debug_frame`, as perf asks libdw.
    pub fn cfa_at(&self, addr: u64) -> Option<Cfa<'a>> {
        let mut ctx: UnwindContext<usize> = UnwindContext::new();
        if let Some((eh, bases)) = &self.eh_frame {
            if let Ok(row) =
                eh.unwind_info_for_address(bases, &mut ctx, addr, EhFrame::cie_from_offset)
            {
                return match row.cfa() {
                    CfaRule::RegisterAndOffset { register, offset } => {
                        Some(Cfa::RegOffset(register.0, *offset))
                    }
                    CfaRule::Expression(e) => e.get(eh).ok().map(Cfa::Expr),
                };
            }
        }
        if let Some(df) = &self.debug_frame {
            let bases = BaseAddresses::default();
            if let Ok(row) =
                df.unwind_info_for_address(&bases, &mut ctx, addr, DebugFrame::cie_from_offset)
            {
                return match row.cfa() {
                    CfaRule::RegisterAndOffset { register, offset } => {
                        Some(Cfa::RegOffset(register.0, *offset))
                    }
                    CfaRule::Expression(e) => e.get(df).ok().map(Cfa::Expr),
                };
            }
        }
        None
    }

    /// The `DW_TAG_subprogram` DIEs of unit `unit` that libdw's
    /// `dwarf_getfuncs()` visits, in its order (depth first, a DIE before
    /// its children). In a C unit it descends into functions, blocks and
    /// inlined instances only, where the kernel has no function
    /// definitions (GCC's nested functions are not used), so the top-level
    /// ones are taken; in any other language (Rust) it descends into
    /// namespaces, structures and classes too, and into functions: a Rust
    /// method lives in the namespaces of its path.
    pub fn subprograms(&self, unit: usize) -> Rc<Vec<DieRef>> {
        if let Some(s) = self.subprograms.borrow().get(&unit) {
            return s.clone();
        }
        let list: Vec<DieRef> = match self.cu_die(unit) {
            Some(cu) if self.is_c_unit(cu) => self
                .children(cu)
                .into_iter()
                .filter(|&d| self.tag(d) == gimli::DW_TAG_subprogram)
                .collect(),
            Some(cu) => {
                let mut out = Vec::new();
                self.nested_subprograms(cu, &mut out);
                out
            }
            None => Vec::new(),
        };
        let list = Rc::new(list);
        self.subprograms.borrow_mut().insert(unit, list.clone());
        list
    }

    /// Whether the unit DIE `cu` is of C (`dwarf_getfuncs()`'s test).
    fn is_c_unit(&self, cu: DieRef) -> bool {
        self.udata(cu, gimli::DW_AT_language).is_some_and(|l| {
            [
                gimli::DW_LANG_C89,
                gimli::DW_LANG_C,
                gimli::DW_LANG_C99,
                gimli::DW_LANG_C11,
            ]
            .iter()
            .any(|c| u64::from(c.0) == l)
        })
    }

    /// libdw's `__libdw_visit_scopes()` below `d` outside C: each
    /// subprogram, then the children of the DIEs that may hold scopes.
    fn nested_subprograms(&self, d: DieRef, out: &mut Vec<DieRef>) {
        for c in self.children(d) {
            let tag = self.tag(c);
            if tag == gimli::DW_TAG_subprogram {
                out.push(c);
            }
            if matches!(
                tag,
                gimli::DW_TAG_module
                    | gimli::DW_TAG_lexical_block
                    | gimli::DW_TAG_with_stmt
                    | gimli::DW_TAG_catch_block
                    | gimli::DW_TAG_try_block
                    | gimli::DW_TAG_entry_point
                    | gimli::DW_TAG_inlined_subroutine
                    | gimli::DW_TAG_subprogram
                    | gimli::DW_TAG_namespace
                    | gimli::DW_TAG_class_type
                    | gimli::DW_TAG_structure_type
            ) {
                self.nested_subprograms(c, out);
            }
        }
    }

    /// Top-level subprogram DIEs by name (and linkage name), each list in
    /// unit order: the functions `dwarf_getfuncs()` visits in C (in a Rust
    /// unit it visits nested ones too, see [`Debuginfo::subprograms`]).
    pub fn functions(&self) -> Rc<FunctionIndex> {
        if let Some(f) = self.funcs.borrow().as_ref() {
            return f.clone();
        }
        let mut map = FunctionIndex::new();
        for (i, u) in self.units.iter().enumerate() {
            let Ok(mut tree) = u.entries_tree(None) else {
                continue;
            };
            let Ok(root) = tree.root() else { continue };
            let mut children = root.children();
            while let Ok(Some(child)) = children.next() {
                let e = child.entry();
                if e.tag() != gimli::DW_TAG_subprogram {
                    continue;
                }
                let d = DieRef {
                    unit: i,
                    off: e.offset(),
                };
                if let Some(n) = self.name(d) {
                    map.entry(n).or_default().push(d);
                }
                if let Some(n) = self.linkage_name(d) {
                    map.entry(n).or_default().push(d);
                }
            }
        }
        let map = Rc::new(map);
        *self.funcs.borrow_mut() = Some(map.clone());
        map
    }
}

/// An unsigned constant of any form.
pub fn udata_of(v: &AttributeValue<R<'_>>) -> Option<u64> {
    match *v {
        AttributeValue::Data1(x) => Some(u64::from(x)),
        AttributeValue::Data2(x) => Some(u64::from(x)),
        AttributeValue::Data4(x) => Some(u64::from(x)),
        AttributeValue::Data8(x) => Some(x),
        AttributeValue::Udata(x) => Some(x),
        AttributeValue::Sdata(x) => u64::try_from(x).ok(),
        AttributeValue::FileIndex(x) => Some(x),
        AttributeValue::Encoding(e) => Some(u64::from(e.0)),
        AttributeValue::Language(l) => Some(u64::from(l.0)),
        AttributeValue::Inline(i) => Some(u64::from(i.0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(name: &str, start: u64, size: u64, binding: Binding) -> Symbol {
        Symbol {
            name: name.into(),
            start,
            end: start + size,
            binding,
        }
    }

    fn names(syms: &[Symbol]) -> Vec<&str> {
        syms.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn aliases() {
        let s = Symbols::new(vec![
            sym("next", 0x140, 8, Binding::Global),
            sym("crc32_le", 0x100, 16, Binding::Weak),
            sym("crc32_le_base", 0x100, 16, Binding::Global),
            sym("crc32_be", 0x110, 0, Binding::Weak),
            sym("crc32_be_base", 0x110, 0, Binding::Local),
        ]);
        // An address is named by the alias perf chooses...
        assert_eq!(
            s.find(0x104).map(|s| s.name.as_str()),
            Some("crc32_le_base")
        );
        assert_eq!(names(s.all()), ["crc32_le_base", "crc32_be_base", "next"]);
        // ... and every name is there to be found.
        assert_eq!(
            names(s.with_aliases()),
            [
                "crc32_le",
                "crc32_le_base",
                "crc32_be",
                "crc32_be_base",
                "next"
            ]
        );
        // Symbols without a size end where the next address starts.
        assert!(s
            .with_aliases()
            .iter()
            .filter(|x| x.start == 0x110)
            .all(|x| x.end == 0x140));
        assert_eq!(s.find(0x13f).map(|s| s.start), Some(0x110));
    }
}
