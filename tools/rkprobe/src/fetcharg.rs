// SPDX-License-Identifier: GPL-2.0

//! A translated argument and its kprobe_events text.
//!
//! A [`TraceArg`] is what one user argument becomes at one probe address: a
//! base (`%di`, `@jiffies`, `\10`, or text the user wrote verbatim), a chain of
//! dereferences applied to it innermost first, and a type suffix. Its text is
//! written as perf's `synthesize_probe_trace_arg()` writes it, so that
//! `+0(+8(%di)):u32` and `@init_task+2456:s32` come out byte for byte the same.

use std::fmt::Write;

/// One dereference: read memory at (value + `offset`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deref {
    /// Signed byte offset added before the read.
    pub offset: i64,
    /// Read user memory (`+u`), for arguments the user marked `@user`.
    pub user: bool,
}

impl Deref {
    /// A kernel-memory dereference at `offset`.
    pub fn kernel(offset: i64) -> Self {
        Deref {
            offset,
            user: false,
        }
    }
}

/// One fetcharg of a probe, before naming.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceArg {
    /// `NAME=` before the fetcharg, if any.
    pub name: Option<String>,
    /// The base: a register (`%di`), a symbol (`@name`), an immediate
    /// (`\5`), or a raw fetcharg the user wrote.
    pub value: String,
    /// Dereferences, innermost first. For an `@symbol` base the first entry
    /// is the offset added to the symbol, not a dereference.
    pub derefs: Vec<Deref>,
    /// The type suffix without its `:`.
    pub ty: Option<String>,
}

impl TraceArg {
    /// Whether the base is an `@symbol` whose first [`Deref`] is an offset.
    fn symbol_base(&self) -> bool {
        self.value.starts_with('@') && !self.derefs.is_empty()
    }

    /// The fetcharg as kprobe_events takes it, with `NAME=` when named.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(name) = &self.name {
            out.push_str(name);
            out.push('=');
        }
        let derefs = if self.symbol_base() {
            self.derefs.get(1..).unwrap_or(&[])
        } else {
            &self.derefs[..]
        };
        // The outermost dereference is written first.
        for d in derefs.iter().rev() {
            if d.user {
                let _ = write!(out, "+u{}(", d.offset);
            } else {
                let _ = write!(out, "{:+}(", d.offset);
            }
        }
        out.push_str(&self.value);
        if self.symbol_base() {
            if let Some(first) = self.derefs.first() {
                let _ = write!(out, "{:+}", first.offset);
            }
        }
        for _ in derefs {
            out.push(')');
        }
        if let Some(ty) = &self.ty {
            out.push(':');
            out.push_str(ty);
        }
        out
    }
}

/// What the target's kprobe_events accepts, as perf reads it from the
/// tracing README (`probe_type_is_available()` and friends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// Hexadecimal types `x8`..`x64` (else unsigned types stand in).
    pub hex_types: bool,
    /// Immediates `\imm` (constant values, and placeholders for arguments
    /// missing at some of a probe's addresses).
    pub immediates: bool,
    /// Several probes may share an event (else each gets a numbered name).
    pub multiprobe: bool,
    /// `+u` user-memory dereferences.
    pub user_access: bool,
    /// Not a kernel feature: reproduce perf 6.1's known mistakes (a location
    /// expression read as its first operation only, DWARF 5 bitfields
    /// refused), so that the differential test can check everything else
    /// against perf exactly.
    pub perf_quirks: bool,
}

impl Features {
    /// Everything Linux 6.12 and rkprobes' control file accept.
    pub const LINUX_6_12: Features = Features {
        hex_types: true,
        immediates: true,
        multiprobe: true,
        user_access: true,
        perf_quirks: false,
    };

    /// Reads the features from the text of a tracing `README`, matching the
    /// same lines perf matches.
    pub fn from_readme(readme: &str) -> Features {
        let mut f = Features {
            hex_types: false,
            immediates: false,
            multiprobe: false,
            user_access: false,
            perf_quirks: false,
        };
        for line in readme.lines() {
            if line.contains("type: ") && line.contains(" x8/16/32/64,") {
                f.hex_types = true;
            }
            if line.contains("\\imm-value,") {
                f.immediates = true;
            }
            if line.contains("Create/append/") {
                f.multiprobe = true;
            }
            if line.contains("u]<offset>") {
                f.user_access = true;
            }
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(value: &str, derefs: &[i64], ty: Option<&str>) -> TraceArg {
        TraceArg {
            name: None,
            value: value.into(),
            derefs: derefs.iter().map(|&o| Deref::kernel(o)).collect(),
            ty: ty.map(Into::into),
        }
    }

    #[test]
    fn registers_and_dereferences() {
        assert_eq!(arg("%di", &[], Some("x64")).render(), "%di:x64");
        assert_eq!(arg("%si", &[16], None).render(), "+16(%si)");
        assert_eq!(arg("%sp", &[-12], Some("s32")).render(), "-12(%sp):s32");
        assert_eq!(arg("%di", &[8, 0], Some("u32")).render(), "+0(+8(%di)):u32");
    }

    #[test]
    fn symbols_take_their_offset_inline() {
        assert_eq!(
            arg("@jiffies", &[0], Some("u64")).render(),
            "@jiffies+0:u64"
        );
        assert_eq!(arg("@init_task", &[2456], None).render(), "@init_task+2456");
        assert_eq!(
            arg("@global_ptr", &[0, 24], Some("s32")).render(),
            "+24(@global_ptr+0):s32"
        );
    }

    #[test]
    fn names_and_user_memory() {
        let mut a = arg("%dx", &[0], Some("string"));
        a.name = Some("path".into());
        a.derefs[0].user = true;
        assert_eq!(a.render(), "path=+u0(%dx):string");
    }

    #[test]
    fn readme_features() {
        let readme = "  dynamic_events\t\t- Create/append/remove/show the generic dynamic events\n\
                      \t           +|-[u]<offset>(<fetcharg>), \\imm-value, \\\"imm-string\"\n\
                      \t     type: s8/16/32/64, u8/16/32/64, x8/16/32/64, char, string, symbol,\n";
        assert_eq!(Features::from_readme(readme), Features::LINUX_6_12);
        let none = Features::from_readme("");
        assert!(!none.hex_types && !none.immediates && !none.multiprobe && !none.user_access);
    }
}
