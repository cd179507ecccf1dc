// SPDX-License-Identifier: GPL-2.0

//! The test kernel's BTF for the host tests of the BTF reader and of typed
//! arguments: made from `RKPROBES_VMLINUX` by pahole, as the kernel's
//! build makes it (Rust units excluded), and cached.

#![allow(dead_code)]

use rkprobes_host::pure::store::{NoMemory, Store};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// A `Vec` as the index's storage.
pub struct VecStore(pub Vec<u32>);

impl Store<u32> for VecStore {
    fn try_push(&mut self, v: u32) -> Result<(), NoMemory> {
        self.0.push(v);
        Ok(())
    }

    fn items(&self) -> &[u32] {
        &self.0
    }
}

/// The test kernel's vmlinux.
pub fn vmlinux() -> PathBuf {
    let v = std::env::var("RKPROBES_VMLINUX").unwrap_or_else(|_| {
        let cache = std::env::var("RKPROBES_CACHE")
            .unwrap_or_else(|_| format!("{}/.cache/rkprobes", std::env::var("HOME").unwrap()));
        let kdir = std::fs::read_to_string(format!("{cache}/kdir"))
            .expect("RKPROBES_VMLINUX is not set and no cached test kernel");
        format!("{}/vmlinux", kdir.trim())
    });
    PathBuf::from(v)
}

/// Where the test kernel's BTF is cached.
pub fn test_btf_path() -> PathBuf {
    let v = vmlinux();
    let meta = std::fs::metadata(&v).unwrap_or_else(|e| panic!("{}: {e}", v.display()));
    let stamp = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let cache = std::env::var("RKPROBES_CACHE")
        .unwrap_or_else(|_| format!("{}/.cache/rkprobes", std::env::var("HOME").unwrap()));
    PathBuf::from(cache)
        .join("btf")
        .join(format!("vmlinux-{}-{stamp}.btf", meta.len()))
}

/// The test kernel's BTF, made by pahole once per vmlinux.
pub fn test_btf() -> Vec<u8> {
    static MADE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _once = MADE.lock().unwrap_or_else(|e| e.into_inner());
    let v = vmlinux();
    let out = test_btf_path();
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    if !out.exists() {
        let tmp = out.with_extension("tmp");
        let st = Command::new("pahole")
            .arg(format!("--btf_encode_detached={}", tmp.display()))
            .args(["--lang_exclude=rust", "-j"])
            .arg(&v)
            .output()
            .expect("running pahole (tools/setup installs dwarves)");
        assert!(
            st.status.success(),
            "pahole failed: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        std::fs::rename(&tmp, &out).unwrap();
    }
    std::fs::read(&out).unwrap()
}

/// bpftool's raw dump of a BTF file.
pub fn bpftool_dump(path: &std::path::Path) -> String {
    let out = Command::new("bpftool")
        .args(["btf", "dump", "file"])
        .arg(path)
        .output()
        .expect("running bpftool (tools/setup installs it)");
    assert!(
        out.status.success(),
        "bpftool failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("bpftool's output is UTF-8")
}

/// A structure or union as bpftool's lines describe it.
pub struct TextAggregate {
    pub members: Vec<(String, u32, u64)>,
}

/// What bpftool's dump says: every type's first line, and the members of
/// the structures and unions.
pub struct TextTypes {
    pub heads: HashMap<u32, String>,
    pub aggregates: HashMap<u32, TextAggregate>,
    /// The enumerators of each named enum: (name, value).
    pub enums: HashMap<String, Vec<(String, i64)>>,
}

pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(key)? + key.len();
    line[at..].split([' ', ',']).next()
}

/// What bpftool's lines say.
pub fn parse_dump(dump: &str) -> TextTypes {
    let mut heads = HashMap::new();
    let mut aggregates = HashMap::new();
    let mut enums: HashMap<String, Vec<(String, i64)>> = HashMap::new();
    let mut current: Option<u32> = None;
    let mut current_enum: Option<String> = None;
    for line in dump.lines() {
        if let Some(rest) = line.strip_prefix('[') {
            let id: u32 = rest[..rest.find(']').unwrap()].parse().unwrap();
            heads.insert(id, line.to_string());
            current = None;
            current_enum = None;
            if let Some(at) = line.find("] ENUM '") {
                let name = &line[at + 8..];
                let name = name[..name.find('\'').unwrap()].to_string();
                if !name.is_empty() && !enums.contains_key(&name) {
                    enums.insert(name.clone(), Vec::new());
                    current_enum = Some(name);
                }
            }
            if line.contains("] STRUCT ") || line.contains("] UNION ") {
                aggregates.insert(
                    id,
                    TextAggregate {
                        members: Vec::new(),
                    },
                );
                current = Some(id);
            }
        } else if let (Some(e), Some(m)) = (&current_enum, line.strip_prefix('\t')) {
            let name = m[1..m[1..].find('\'').unwrap() + 1].to_string();
            let v = field(m, "val=").unwrap().parse().unwrap();
            enums.get_mut(e).unwrap().push((name, v));
        } else if let (Some(id), Some(m)) = (current, line.strip_prefix('\t')) {
            let name = m[1..m[1..].find('\'').unwrap() + 1].to_string();
            let ty = field(m, "type_id=").unwrap().parse().unwrap();
            let off = field(m, "bits_offset=").unwrap().parse().unwrap();
            aggregates
                .get_mut(&id)
                .unwrap()
                .members
                .push((name, ty, off));
        }
    }
    TextTypes {
        heads,
        aggregates,
        enums,
    }
}

impl TextTypes {
    /// The enumerators of the enum `name`, (name, value).
    pub fn enum_values(&self, name: &str) -> Vec<(String, i64)> {
        self.enums.get(name).cloned().unwrap_or_default()
    }

    /// Follows typedefs and qualifiers in the text.
    pub fn resolve(&self, mut id: u32) -> u32 {
        for _ in 0..32 {
            let Some(h) = self.heads.get(&id) else {
                return id;
            };
            let modifier = [
                "] TYPEDEF ",
                "] CONST ",
                "] VOLATILE ",
                "] RESTRICT ",
                "] TYPE_TAG ",
            ]
            .iter()
            .any(|k| h.contains(k));
            if !modifier {
                return id;
            }
            id = field(h, "type_id=").unwrap().parse().unwrap();
        }
        id
    }

    /// Every named member reachable from `id` through anonymous members.
    pub fn reachable(&self, id: u32, out: &mut Vec<String>) {
        let Some(a) = self.aggregates.get(&self.resolve(id)) else {
            return;
        };
        for (name, ty, _) in &a.members {
            if name == "(anon)" {
                self.reachable(*ty, out);
            } else {
                out.push(name.clone());
            }
        }
    }

    /// The offset of member `name` of `id` as the text gives it, searched
    /// in the order of the kernel's `btf_find_struct_member()`.
    pub fn member(&self, id: u32, name: &str) -> Option<u64> {
        self.member_and_type(id, name).map(|(off, _)| off)
    }

    /// The offset and type of member `name` of `id`, as [`Self::member`].
    pub fn member_and_type(&self, id: u32, name: &str) -> Option<(u64, u32)> {
        let mut agg = self.aggregates.get(&self.resolve(id))?;
        let mut stack: Vec<(u32, u64)> = Vec::new();
        let mut base = 0u64;
        loop {
            for (n, ty, off) in &agg.members {
                if n == "(anon)" {
                    let inner = self.resolve(*ty);
                    if self.aggregates.contains_key(&inner) && stack.len() < 16 {
                        stack.push((inner, base + off));
                    }
                } else if n == name {
                    return Some((base + off, *ty));
                }
            }
            let (tid, off) = stack.pop()?;
            base = off;
            agg = &self.aggregates[&tid];
        }
    }

    /// The size of `id` computed from the text.
    pub fn size(&self, id: u32) -> Option<u64> {
        let id = self.resolve(id);
        let h = self.heads.get(&id)?;
        if h.contains("] PTR ") {
            return Some(8);
        }
        if h.contains("] ARRAY ") {
            let n: u64 = field(h, "nr_elems=")?.parse().ok()?;
            let elem: u32 = field(h, "type_id=")?.parse().ok()?;
            return Some(n * self.size(elem)?);
        }
        if h.contains("] FUNC") || h.contains("] FWD ") || h.contains("] VAR ") {
            return None;
        }
        field(h, "size=")?.parse().ok()
    }
}

/// The text's id of the structure `name`.
pub fn struct_id(text: &TextTypes, name: &str) -> u32 {
    let want = format!("] STRUCT '{name}' ");
    *text
        .heads
        .iter()
        .find(|(_, h)| h.contains(&want))
        .unwrap_or_else(|| panic!("no struct {name}"))
        .0
}

/// The byte offset of `a.b.c` in structure `s`, from the text.
pub fn text_offset(text: &TextTypes, s: &str, path: &[&str]) -> u64 {
    let mut id = struct_id(text, s);
    let mut bits = 0;
    for name in path {
        let (off, ty) = text
            .member_and_type(id, name)
            .unwrap_or_else(|| panic!("{s}: no {name}"));
        bits += off;
        id = ty;
    }
    bits / 8
}
