// SPDX-License-Identifier: GPL-2.0

//! A module's file, for `-m`: found by the module's name as perf and
//! `modinfo` find it, and read (decompressed when it is compressed).
//!
//! A name (`lkdtm`, `snd-hda-intel`: `-` and `_` are the same) is looked
//! up under `/lib/modules/RELEASE`: in `modules.dep` when there is one,
//! else by walking the tree. A copy with DWARF under
//! `/usr/lib/debug/lib/modules/RELEASE` at the same place (Debian's and
//! Ubuntu's `-dbg` packages, Fedora's `.debug` files) is preferred, as
//! perf prefers it. Both roots are under `--symfs` when given.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Compressed module suffixes the kernel's `modules_install` writes.
const COMPRESSED: [&str; 3] = [".xz", ".zst", ".gz"];

/// Whether `-m`'s argument is a path (perf: it has a `/`, or names a
/// `.ko` file) rather than a module's name.
pub fn is_path(arg: &str) -> bool {
    arg.contains('/') || module_stem(arg).is_some()
}

/// The module name of a file name: `lkdtm.ko.xz`, `lkdtm.ko.debug` →
/// `lkdtm`; `None` for a name that is not a module's file.
pub fn module_stem(file_name: &str) -> Option<&str> {
    let mut n = file_name.strip_suffix(".debug").unwrap_or(file_name);
    for c in COMPRESSED {
        if let Some(s) = n.strip_suffix(c) {
            n = s;
            break;
        }
    }
    n.strip_suffix(".ko")
}

/// The kernel's spelling of a module name (`-` is `_`).
pub fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// `path` without a compression suffix.
fn uncompressed(path: &str) -> &str {
    COMPRESSED
        .iter()
        .find_map(|c| path.strip_suffix(c))
        .unwrap_or(path)
}

/// The path, relative to `root`, of module `name` in `modules.dep`.
fn from_modules_dep(root: &Path, name: &str) -> Option<String> {
    let dep = std::fs::read_to_string(root.join("modules.dep")).ok()?;
    dep.lines().find_map(|l| {
        let (path, _) = l.split_once(':')?;
        let file = path.rsplit('/').next()?;
        (normalize(module_stem(file)?) == name).then(|| path.trim_start_matches('/').to_string())
    })
}

/// The path, relative to `root`, of module `name` found by walking the
/// tree (`build` and `source`, links to kernel trees, left out).
fn by_walking(root: &Path, name: &str) -> Option<String> {
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(dir) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        let mut entries: Vec<_> = dir.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let fname = e.file_name();
            let Some(f) = fname.to_str() else { continue };
            let Ok(ty) = e.file_type() else { continue };
            if ty.is_dir() {
                if !(rel.as_os_str().is_empty() && (f == "build" || f == "source")) {
                    stack.push(rel.join(f));
                }
            } else if module_stem(f).is_some_and(|s| normalize(s) == name) {
                return rel.join(f).to_str().map(str::to_string);
            }
        }
    }
    None
}

/// Finds module `name`'s file for kernel `release`, under `symfs` (`/`
/// when not given).
pub fn find(name: &str, symfs: &Path, release: &str) -> Result<PathBuf, String> {
    let name = normalize(name);
    let rel_root = format!("lib/modules/{release}");
    let root = symfs.join(&rel_root);
    let Some(rel) = from_modules_dep(&root, &name).or_else(|| by_walking(&root, &name)) else {
        let loaded = Path::new("/sys/module").join(&name).exists();
        return Err(format!(
            "Failed to find module {name}: not in {} ({}).\n Hint: give the module's file: -m /path/to/{name}.ko",
            root.display(),
            if loaded {
                "it is loaded, but its file is not there"
            } else {
                "nor is it loaded"
            }
        ));
    };
    let debug = symfs.join("usr/lib/debug").join(&rel_root);
    let plain = uncompressed(&rel);
    [
        debug.join(plain),
        debug.join(format!("{plain}.debug")),
        debug.join(&rel),
        root.join(&rel),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .ok_or_else(|| {
        format!(
            "Failed to find module {name}: {} is not a file",
            root.join(&rel).display()
        )
    })
}

/// The file's bytes, decompressed when they are xz, zstd or gzip data
/// (known by their magic numbers, whatever the file's name).
pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    decompress(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// `bytes` decompressed when they are xz, zstd or gzip data, else as
/// they are.
pub fn decompress(bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    if bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        lzma_rs::xz_decompress(&mut bytes.as_slice(), &mut out)
            .map_err(|e| format!("decompressing xz: {e}"))?;
    } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        ruzstd::StreamingDecoder::new(bytes.as_slice())
            .map_err(|e| format!("decompressing zstd: {e}"))?
            .read_to_end(&mut out)
            .map_err(|e| format!("decompressing zstd: {e}"))?;
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut out)
            .map_err(|e| format!("decompressing gzip: {e}"))?;
    } else {
        return Ok(bytes);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(module_stem("lkdtm.ko"), Some("lkdtm"));
        assert_eq!(module_stem("lkdtm.ko.xz"), Some("lkdtm"));
        assert_eq!(module_stem("lkdtm.ko.zst"), Some("lkdtm"));
        assert_eq!(module_stem("lkdtm.ko.debug"), Some("lkdtm"));
        assert_eq!(module_stem("lkdtm.c"), None);
        assert!(is_path("/tmp/x.ko") && is_path("x.ko") && is_path("./x"));
        assert!(!is_path("lkdtm") && !is_path("snd-hda-intel"));
        assert_eq!(normalize("snd-hda-intel"), "snd_hda_intel");
        assert_eq!(uncompressed("kernel/a/b.ko.zst"), "kernel/a/b.ko");
    }

    #[test]
    fn plain_bytes_pass() {
        let elf = b"\x7fELF\x02\x01\x01".to_vec();
        assert_eq!(decompress(elf.clone()).unwrap(), elf);
    }

    #[test]
    fn gzip() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(b"\x7fELF module").unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(decompress(gz).unwrap(), b"\x7fELF module");
    }

    #[test]
    fn xz() {
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut &b"\x7fELF module"[..], &mut xz).unwrap();
        assert_eq!(decompress(xz).unwrap(), b"\x7fELF module");
    }

    #[test]
    fn zstd() {
        // `printf '\x7fELF module' | zstd -c`: one raw block and a checksum.
        let zst = vec![
            0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x59, 0x00, 0x00, 0x7f, 0x45, 0x4c, 0x46, 0x20,
            0x6d, 0x6f, 0x64, 0x75, 0x6c, 0x65, 0x23, 0x86, 0x69, 0x08,
        ];
        assert_eq!(decompress(zst).unwrap(), b"\x7fELF module");
    }

    #[test]
    fn broken_data_is_an_error() {
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut &b"\x7fELF module"[..], &mut xz).unwrap();
        xz.truncate(xz.len() / 2);
        assert!(decompress(xz).is_err());
    }
}
