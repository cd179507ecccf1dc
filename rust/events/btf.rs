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
    pure::{
        btf::{Btf, Sections},
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

/// The largest module BTF read (a large module's is a few hundred KiB).
const MAX_MODULE_BTF: usize = 16 << 20;

/// A module's BTF, read from `/sys/kernel/btf/MODULE` (the module's own
/// copy of its `.BTF` section is freed once it is live) for one command,
/// split BTF on vmlinux's. Process context.
pub(super) struct ModuleBtf {
    data: *mut c_void,
    len: usize,
    index: Index,
}

impl ModuleBtf {
    /// The BTF of a loaded module, read from `path`
    /// (`/sys/kernel/btf/MODULE`), `None` when it has none (a module built
    /// without BTF, or gone) or it is not BTF.
    pub(super) fn load(path: &CStr) -> Result<Option<ModuleBtf>> {
        let mut data = core::ptr::null_mut();
        // SAFETY: `path` is a C string; `data` receives memory the C side
        // allocated, freed by `Drop`. Process context.
        let n =
            unsafe { ffi::rkp_tev_read_file(path.as_char_ptr(), &mut data, MAX_MODULE_BTF as _) };
        let Ok(len) = usize::try_from(n) else {
            return Ok(None);
        };
        let mut m = ModuleBtf {
            data,
            len,
            index: Index(KVVec::new()),
        };
        let Ok(sections) = Sections::new(m.bytes()) else {
            return Ok(None);
        };
        let mut index = Index(KVVec::new());
        match sections.index(&mut index) {
            Ok(()) => {}
            Err(crate::pure::btf::BtfError::NoMemory) => return Err(ENOMEM),
            Err(_) => return Ok(None),
        }
        m.index = index;
        Ok(Some(m))
    }

    fn bytes(&self) -> &[u8] {
        if self.data.is_null() {
            return &[];
        }
        // SAFETY: `len` bytes that `rkp_tev_read_file()` read into `data`,
        // owned by `self` until it drops.
        unsafe { core::slice::from_raw_parts(self.data.cast::<u8>(), self.len) }
    }

    /// The module's BTF on top of `vmlinux`.
    pub(super) fn btf<'a>(&'a self, vmlinux: &'a Btf<'a>) -> Option<Btf<'a>> {
        let sections = Sections::new(self.bytes()).ok()?;
        Some(Btf::new(sections, &self.index.0, Some(vmlinux)))
    }
}

impl Drop for ModuleBtf {
    fn drop(&mut self) {
        // SAFETY: what `rkp_tev_read_file()` allocated, freed once.
        unsafe { ffi::rkp_tev_free_file(self.data) };
    }
}
