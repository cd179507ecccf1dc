// SPDX-License-Identifier: GPL-2.0

//! The running kernel's function symbols from `/proc/kallsyms`: what
//! `--funcs` lists without a vmlinux, as perf's kernel map falls back to
//! them. `RKPROBE_KALLSYMS` names another file of the same format.

/// A function symbol of kallsyms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KSym {
    /// Its name.
    pub name: String,
    /// The module it belongs to (`[lkdtm]`), `None` for the kernel's.
    pub module: Option<String>,
}

/// The text symbols (`t`, `T`, `w`, `W`) of kallsyms' lines
/// `ADDRESS TYPE NAME[\t[MODULE]]`.
pub fn parse(text: &str) -> Vec<KSym> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_ascii_whitespace();
            let (_, ty, name) = (w.next()?, w.next()?, w.next()?);
            if !matches!(ty, "t" | "T" | "w" | "W") {
                return None;
            }
            let module = w
                .next()
                .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'))
                .map(str::to_string);
            Some(KSym {
                name: name.to_string(),
                module,
            })
        })
        .collect()
}

/// The running kernel's function symbols.
pub fn read() -> Result<Vec<KSym>, String> {
    let path = std::env::var("RKPROBE_KALLSYMS").unwrap_or_else(|_| "/proc/kallsyms".into());
    let text = std::fs::read_to_string(&path).map_err(|e| format!("Failed to read {path}: {e}"))?;
    Ok(parse(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let k = parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81234560 t vfs_read\n\
             ffffffff82000000 D jiffies\n\
             ffffffffc0001000 t lkdtm_do_action\t[lkdtm]\n\
             0000000000000000 W weak_fn\n",
        );
        let names: Vec<(&str, Option<&str>)> = k
            .iter()
            .map(|s| (s.name.as_str(), s.module.as_deref()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("_stext", None),
                ("vfs_read", None),
                ("lkdtm_do_action", Some("lkdtm")),
                ("weak_fn", None)
            ]
        );
    }
}
