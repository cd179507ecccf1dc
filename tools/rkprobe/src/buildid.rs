// SPDX-License-Identifier: GPL-2.0

//! Build-ids: the DWARF file read must be the one the running kernel (or
//! the loaded module) was built from, as perf checks, or every offset it
//! gives may be wrong without a sign. The file's id is its
//! `.note.gnu.build-id`; the running kernel's is in `/sys/kernel/notes`, a
//! loaded module's in `/sys/module/NAME/notes/.note.gnu.build-id`, both as
//! ELF notes.

use object::{Object, ObjectSection};

/// `NT_GNU_BUILD_ID`.
const NT_GNU_BUILD_ID: u32 = 3;

/// The build-id of an ELF file, if it has one (a debug-only copy keeps its
/// notes).
pub fn of_file(bytes: &[u8]) -> Option<Vec<u8>> {
    let file = object::File::parse(bytes).ok()?;
    if let Ok(Some(id)) = file.build_id() {
        return Some(id.to_vec());
    }
    let sec = file.section_by_name(".note.gnu.build-id")?;
    from_notes(sec.data().ok()?)
}

/// The GNU build-id among raw ELF notes (`/sys/kernel/notes`): 4-byte
/// name and descriptor sizes and a type, then the name and the descriptor,
/// each padded to 4 bytes.
pub fn from_notes(mut notes: &[u8]) -> Option<Vec<u8>> {
    let word = |b: &[u8], i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
    };
    let pad = |n: usize| n.div_ceil(4) * 4;
    while notes.len() >= 12 {
        let namesz = word(notes, 0)? as usize;
        let descsz = word(notes, 4)? as usize;
        let kind = word(notes, 8)?;
        let name = notes.get(12..12 + namesz)?;
        let desc_at = 12 + pad(namesz);
        let desc = notes.get(desc_at..desc_at + descsz)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return Some(desc.to_vec());
        }
        notes = notes.get(desc_at + pad(descsz)..)?;
    }
    None
}

/// `id` in hexadecimal, as perf prints build-ids.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the file whose build-id is `file` may be used for the running
/// code whose build-id is `running`: an error naming both when both are
/// known and differ. `what` names the file and `whose` the running code.
pub fn check(
    file: Option<&[u8]>,
    running: Option<&[u8]>,
    what: &str,
    whose: &str,
) -> Result<(), String> {
    match (file, running) {
        (Some(f), Some(r)) if f != r => Err(format!(
            "{what}: build-id {} is not {whose}'s ({}): it is from another build, \
             and its offsets would be wrong. Give the matching file (-k or -m), \
             or --ignore-build-id to use it anyway.",
            hex(f),
            hex(r)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(kind: u32, name: &[u8], desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(name.len() as u32).to_le_bytes());
        v.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(name);
        v.resize(v.len().div_ceil(4) * 4, 0);
        v.extend_from_slice(desc);
        v.resize(v.len().div_ceil(4) * 4, 0);
        v
    }

    #[test]
    fn finds_the_gnu_build_id_among_notes() {
        let id = [0xab; 20];
        let mut notes = note(6, b"Linux\0", &[1, 2, 3]);
        notes.extend(note(NT_GNU_BUILD_ID, b"GNU\0", &id));
        assert_eq!(from_notes(&notes).as_deref(), Some(&id[..]));
        assert_eq!(from_notes(&note(6, b"Linux\0", &[1])), None);
        assert_eq!(from_notes(&notes[..notes.len() - 4]), None);
    }

    #[test]
    fn a_different_build_is_refused() {
        let a = [1u8; 20];
        let mut b = a;
        b[19] ^= 1;
        assert!(check(Some(&a), Some(&a), "vmlinux", "the running kernel").is_ok());
        let e = check(Some(&a), Some(&b), "vmlinux", "the running kernel").unwrap_err();
        assert!(e.contains(&hex(&a)) && e.contains(&hex(&b)), "{e}");
        // Unknown on either side: nothing to compare.
        assert!(check(None, Some(&b), "vmlinux", "the running kernel").is_ok());
        assert!(check(Some(&a), None, "vmlinux", "the running kernel").is_ok());
    }
}
