// SPDX-License-Identifier: GPL-2.0

//! The kernel's BTF, which typed fetchargs (`p vfs_read file count`) are
//! resolved in: vmlinux's `.BTF` section, read in place between the
//! linker's `__start_BTF` and `__stop_BTF`, found at load and checked to
//! be BTF before use, with an index of its types built once.
//!
//! Why rkprobes reads BTF itself rather than through the kernel's parsed
//! `struct btf`: the kernel's accessors (`btf_find_func_proto()`,
//! `btf_find_struct_member()`, `btf_type_skip_modifiers()`) are neither
//! exported nor present without `CONFIG_PROBE_EVENTS_BTF_ARGS`, and their
//! structures differ between releases; `pure::btf` reads the stable format
//! (the UAPI `btf.h`) and is tested on the host against `bpftool`. The
//! memory it costs is the index, 4 bytes a type.
//!
//! Process context, at load; read-only afterwards.

use crate::{
    ffi::{
        self,
        kallsyms::{Kallsyms, SymbolBuf},
    },
    kernel_ext::str::cstring,
    pure::{
        btf::{Btf, Sections},
        elf, moddep,
        store::{NoMemory, Store},
    },
};
use kernel::{ffi::c_void, prelude::*, str::CStr};

/// The largest `.BTF` section believed (a distribution kernel's is about
/// 6 MiB).
const MAX_BTF: usize = 256 << 20;

/// vmlinux's BTF and its index.
pub(super) struct KernelBtf {
    sections: Sections<'static>,
    index: Index,
}

/// The index: one offset a type, too large for `kmalloc` on a large
/// kernel (half a MiB for 126,000 types).
struct Index(KVVec<u32>);

impl Store<u32> for Index {
    fn try_push(&mut self, v: u32) -> core::result::Result<(), NoMemory> {
        self.0.push(v, GFP_KERNEL).map_err(|_| NoMemory)
    }

    fn items(&self) -> &[u32] {
        &self.0
    }
}

impl KernelBtf {
    /// vmlinux's BTF, `None` on a kernel built without it or when what the
    /// markers delimit is not BTF (reported once). Process context.
    pub(super) fn load(ksyms: &Kallsyms) -> Result<Option<KernelBtf>> {
        let mut buf = SymbolBuf::new()?;
        let (Some(start), Some(stop)) = (
            ksyms.lookup_marker(&mut buf, kernel::c_str!("__start_BTF")),
            ksyms.lookup_marker(&mut buf, kernel::c_str!("__stop_BTF")),
        ) else {
            return Ok(None);
        };
        let Some(len) = stop.checked_sub(start).filter(|&l| l > 0 && l <= MAX_BTF) else {
            pr_warn!("__start_BTF..__stop_BTF is no BTF section: typed arguments are off\n");
            return Ok(None);
        };
        // SAFETY: the linker's markers of vmlinux's `.BTF` section, which is
        // read-only data for the kernel's lifetime (the kernel's own
        // `/sys/kernel/btf/vmlinux` serves it from there); the length was
        // checked above. Whether it is BTF is checked next.
        let data: &'static [u8] = unsafe { core::slice::from_raw_parts(start as *const u8, len) };
        let sections = match Sections::new(data) {
            Ok(s) => s,
            Err(e) => {
                pr_warn!("vmlinux BTF unreadable ({e:?}): typed arguments are off\n");
                return Ok(None);
            }
        };
        let mut index = Index(KVVec::new());
        match sections.index(&mut index) {
            Ok(()) => Ok(Some(KernelBtf { sections, index })),
            Err(crate::pure::btf::BtfError::NoMemory) => Err(ENOMEM),
            Err(e) => {
                pr_warn!("vmlinux BTF unreadable ({e:?}): typed arguments are off\n");
                Ok(None)
            }
        }
    }

    /// The BTF to read.
    pub(super) fn btf(&self) -> Btf<'_> {
        Btf::new(self.sections, &self.index.0, None)
    }
}

/// The largest module BTF read from sysfs (a large module's is a few
/// hundred KiB).
const MAX_MODULE_BTF: usize = 16 << 20;
/// The largest `modules.dep` read (a distribution's is about 1 MiB).
const MAX_MODULES_DEP: usize = 16 << 20;
/// The largest module file read (one with DWARF is tens of MiB).
const MAX_MODULE_FILE: usize = 512 << 20;

/// A whole file read into vmalloc'd memory. Process context.
pub(super) struct FileBuf {
    data: *mut c_void,
    len: usize,
}

impl FileBuf {
    /// The file at `path`, at most `max` bytes; `None` when it cannot be
    /// read.
    pub(super) fn read(path: &CStr, max: usize) -> Option<FileBuf> {
        let mut data = core::ptr::null_mut();
        // SAFETY: `path` is a C string; `data` receives memory the C side
        // allocated, freed by `Drop`. Process context.
        let n = unsafe { ffi::rkp_tev_read_file(path.as_char_ptr(), &mut data, max as _) };
        let b = FileBuf {
            data,
            len: usize::try_from(n).unwrap_or(0),
        };
        (n >= 0).then_some(b)
    }

    /// The file's bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        if self.data.is_null() {
            return &[];
        }
        // SAFETY: `len` bytes that `rkp_tev_read_file()` read into `data`,
        // owned by `self` until it drops.
        unsafe { core::slice::from_raw_parts(self.data.cast::<u8>(), self.len) }
    }
}

impl Drop for FileBuf {
    fn drop(&mut self) {
        // SAFETY: what `rkp_tev_read_file()` allocated (or null), freed once.
        unsafe { ffi::rkp_tev_free_file(self.data) };
    }
}

/// A module's BTF for one command, split BTF on vmlinux's: read from
/// `/sys/kernel/btf/MODULE` for a loaded module (its own copy of its
/// `.BTF` section is freed once it is live), or from the `.BTF` section of
/// its file, which `modules.dep` names, for one not loaded yet. Process
/// context.
pub(super) struct ModuleBtf {
    file: FileBuf,
    /// Where the BTF is in the file.
    at: core::ops::Range<usize>,
    index: Index,
}

impl ModuleBtf {
    /// The BTF of a loaded module, read from `path`
    /// (`/sys/kernel/btf/MODULE`), `None` when it has none (a module built
    /// without BTF, or gone) or it is not BTF.
    pub(super) fn load(path: &CStr) -> Result<Option<ModuleBtf>> {
        let Some(file) = FileBuf::read(path, MAX_MODULE_BTF) else {
            return Ok(None);
        };
        let at = 0..file.len;
        ModuleBtf::new(file, at)
    }

    /// The BTF of the module `name` that is not loaded, from the `.BTF`
    /// section of its file in `/lib/modules/RELEASE/`; `None` for a module
    /// `modules.dep` does not name, a compressed file (rkprobes does not
    /// decompress), or one without BTF.
    pub(super) fn from_file(release: &[u8], name: &[u8]) -> Result<Option<ModuleBtf>> {
        let dir = [b"/lib/modules/", release, b"/"];
        let dep_path = cstring(&[dir[0], dir[1], dir[2], b"modules.dep"]).ok_or(ENOMEM)?;
        let Some(dep) = FileBuf::read(&dep_path, MAX_MODULES_DEP) else {
            return Ok(None);
        };
        let Some((path, suffix)) = moddep::module_path(dep.bytes(), name) else {
            return Ok(None);
        };
        if !suffix.is_empty() {
            return Ok(None);
        }
        let full = if path.first() == Some(&b'/') {
            cstring(&[path])
        } else {
            cstring(&[dir[0], dir[1], dir[2], path])
        }
        .ok_or(ENOMEM)?;
        let Some(file) = FileBuf::read(&full, MAX_MODULE_FILE) else {
            return Ok(None);
        };
        let Some(btf) = elf::section(file.bytes(), b".BTF") else {
            return Ok(None);
        };
        let start = btf.as_ptr() as usize - file.bytes().as_ptr() as usize;
        let at = start..start + btf.len();
        ModuleBtf::new(file, at)
    }

    fn new(file: FileBuf, at: core::ops::Range<usize>) -> Result<Option<ModuleBtf>> {
        let Some(Ok(sections)) = file.bytes().get(at.clone()).map(Sections::new) else {
            return Ok(None);
        };
        let mut index = Index(KVVec::new());
        match sections.index(&mut index) {
            Ok(()) => Ok(Some(ModuleBtf { file, at, index })),
            Err(crate::pure::btf::BtfError::NoMemory) => Err(ENOMEM),
            Err(_) => Ok(None),
        }
    }

    fn bytes(&self) -> &[u8] {
        self.file.bytes().get(self.at.clone()).unwrap_or(&[])
    }

    /// The module's BTF on top of `vmlinux`.
    pub(super) fn btf<'a>(&'a self, vmlinux: &'a Btf<'a>) -> Option<Btf<'a>> {
        let sections = Sections::new(self.bytes()).ok()?;
        Some(Btf::new(sections, &self.index.0, Some(vmlinux)))
    }
}
