// SPDX-License-Identifier: GPL-2.0

//! A string module parameter for Rust client modules.
//!
//! The 6.12 `module!` macro has no parameters, so [`string_param!`] builds
//! what C's `module_param_string()` does: a `struct kparam_string` over a
//! static buffer, and a `struct kernel_param` in the `__param` section that
//! the module loader parses `name=value` arguments into, before `init` runs.
//! The parameter is read-only in sysfs (0444), so after `init` nothing
//! writes the buffer.

use kernel::bindings;

/// A `struct kernel_param` in a static.
#[repr(transparent)]
pub struct Param(pub bindings::kernel_param);
// SAFETY: the loader writes through it only while the module is being loaded,
// before any Rust code of the module runs.
unsafe impl Sync for Param {}

/// A `struct kparam_string` in a static.
#[repr(transparent)]
pub struct ParamString(pub bindings::kparam_string);
// SAFETY: as for `Param`.
unsafe impl Sync for ParamString {}

/// The buffer of a string parameter.
#[repr(transparent)]
pub struct ParamBuf<const N: usize>(pub core::cell::UnsafeCell<[u8; N]>);
// SAFETY: written only by the loader before `init`, read-only afterwards.
unsafe impl<const N: usize> Sync for ParamBuf<N> {}

impl<const N: usize> ParamBuf<N> {
    /// A buffer holding `default`, NUL-padded.
    pub const fn new(default: &str) -> Self {
        let mut b = [0u8; N];
        let d = default.as_bytes();
        let mut i = 0;
        // Leave room for the NUL.
        while i < d.len() && i + 1 < N {
            b[i] = d[i];
            i += 1;
        }
        Self(core::cell::UnsafeCell::new(b))
    }

    /// The value, up to the first NUL. Process context, after the module
    /// was loaded.
    pub fn get(&self) -> &kernel::str::CStr {
        // SAFETY: nothing writes the buffer after loading (see the module
        // comment), and the loader leaves it NUL-terminated (`param_set_copystring`
        // refuses values that do not fit).
        let b: &[u8; N] = unsafe { &*self.0.get() };
        let n = b.iter().position(|&c| c == 0).map_or(0, |n| n + 1);
        // SAFETY: `b[..n]` ends with its only NUL.
        unsafe { kernel::str::CStr::from_bytes_with_nul_unchecked(b.get(..n).unwrap_or(b"\0")) }
    }
}

/// Declares a string module parameter: `string_param!(STATIC, "name", "default", LEN)`.
/// `STATIC.get()` returns its value.
#[macro_export]
macro_rules! string_param {
    ($id:ident, $name:literal, $default:literal, $len:expr) => {
        static $id: $crate::rkprobes::param::ParamBuf<$len> =
            $crate::rkprobes::param::ParamBuf::new($default);
        const _: () = {
            static STRING: $crate::rkprobes::param::ParamString =
                $crate::rkprobes::param::ParamString(kernel::bindings::kparam_string {
                    maxlen: $len,
                    string: $id.0.get().cast(),
                });
            // Only its address is taken; without lock debugging `struct
            // module` holds an empty `struct lockdep_map`, not FFI-safe.
            #[allow(improper_ctypes)]
            extern "C" {
                static mut __this_module: kernel::bindings::module;
            }
            #[link_section = "__param"]
            #[used]
            static PARAM: $crate::rkprobes::param::Param =
                $crate::rkprobes::param::Param(kernel::bindings::kernel_param {
                    name: concat!($name, "\0").as_ptr().cast(),
                    mod_: core::ptr::addr_of_mut!(__this_module),
                    ops: core::ptr::addr_of!(kernel::bindings::param_ops_string),
                    perm: 0o444,
                    level: -1,
                    flags: 0,
                    __bindgen_anon_1: kernel::bindings::kernel_param__bindgen_ty_1 {
                        str_: core::ptr::addr_of!(STRING.0),
                    },
                });
        };
    };
}
