// SPDX-License-Identifier: GPL-2.0

//! `modules.dep`, as `depmod` writes it into `/lib/modules/RELEASE/`: one
//! line a module, its file's path (relative to that directory, or
//! absolute), a colon, then its dependencies. Where a module that is not
//! loaded lives, so that its BTF can be read from its file.

/// A module's name as the kernel keeps it: `-` becomes `_`.
fn same_name(file_stem: &[u8], name: &[u8]) -> bool {
    let norm = |c: u8| if c == b'-' { b'_' } else { c };
    file_stem.len() == name.len()
        && file_stem
            .iter()
            .zip(name)
            .all(|(&a, &b)| norm(a) == norm(b))
}

/// The path `modules.dep` gives for the module `name`, with the file's
/// suffix after `.ko` (empty for an uncompressed module, `.xz`, `.zst`,
/// `.gz` for a compressed one).
pub fn module_path<'a>(dep: &'a [u8], name: &[u8]) -> Option<(&'a [u8], &'a [u8])> {
    for line in dep.split(|&c| c == b'\n') {
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let path = line.get(..colon)?;
        let file = match path.iter().rposition(|&c| c == b'/') {
            Some(slash) => path.get(slash + 1..)?,
            None => path,
        };
        let Some(ko) = file.windows(3).position(|w| w == b".ko") else {
            continue;
        };
        let (stem, suffix) = (file.get(..ko)?, file.get(ko + 3..)?);
        if same_name(stem, name) {
            return Some((path, suffix));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_modules_by_their_kernel_names() {
        let dep = b"kernel/fs/ext4/ext4.ko: kernel/fs/jbd2/jbd2.ko kernel/fs/mbcache.ko\n\
kernel/drivers/misc/lkdtm/lkdtm.ko:\n\
kernel/net/ipv4/tcp-bic.ko.xz:\n\
/opt/extra/my_mod.ko:\n";
        assert_eq!(
            module_path(dep, b"lkdtm"),
            Some((&b"kernel/drivers/misc/lkdtm/lkdtm.ko"[..], &b""[..]))
        );
        assert_eq!(module_path(dep, b"jbd2"), None);
        assert_eq!(
            module_path(dep, b"tcp_bic"),
            Some((&b"kernel/net/ipv4/tcp-bic.ko.xz"[..], &b".xz"[..]))
        );
        assert_eq!(
            module_path(dep, b"my-mod"),
            Some((&b"/opt/extra/my_mod.ko"[..], &b""[..]))
        );
        assert_eq!(module_path(b"garbage\n:\n::\n", b"x"), None);
    }
}
