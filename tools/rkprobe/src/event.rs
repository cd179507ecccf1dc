// SPDX-License-Identifier: GPL-2.0

//! Event names and kprobe_events command lines for the probes found.
//!
//! Names follow perf's `probe_trace_event__set_name()` and
//! `get_new_event_name()`: the user's `EVENT=`, else the function as typed
//! (or the DWARF name of the function the address is in, for a glob or a
//! source line), cut at its first `.` or `@`, `__return` added for a return
//! probe, `_1`, `_2`... when the name is taken; the group is `probe` unless
//! given. Lines are perf's `synthesize_probe_trace_command()`:
//! `p:GROUP/EVENT SYMBOL+OFFSET ARGS`.

use std::collections::HashSet;

use crate::fetcharg::Features;
use crate::finder::{is_glob, TraceEvent};
use crate::spec::{is_c_func_name, ProbeSpec};

/// perf's default group.
pub const DEFAULT_GROUP: &str = "probe";
/// perf's `MAX_EVENT_INDEX`.
const MAX_EVENT_INDEX: u32 = 1024;

/// A probe ready to be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedEvent {
    /// Group.
    pub group: String,
    /// Event.
    pub event: String,
    /// The probe.
    pub tev: TraceEvent,
}

impl NamedEvent {
    /// The kprobe_events command.
    pub fn command(&self) -> String {
        let t = &self.tev;
        let mut s = format!(
            "{}:{}/{} {}+{}",
            if t.retprobe { 'r' } else { 'p' },
            self.group,
            self.event,
            t.symbol,
            t.offset
        );
        for a in t.args.iter().flatten() {
            s.push(' ');
            s.push_str(&a.render());
        }
        s
    }
}

/// perf's `get_new_event_name()`.
fn new_event_name(
    base: &str,
    taken: &HashSet<String>,
    ret: bool,
    allow_suffix: bool,
) -> Result<String, String> {
    let base = base.strip_prefix('.').unwrap_or(base);
    let nbase = match base.find(['.', '@']) {
        Some(i) if i != 0 => base.get(..i).unwrap_or(base),
        _ => base,
    };
    let mut name = format!("{nbase}{}", if ret { "__return" } else { "" });
    if taken.contains(&name) {
        if !allow_suffix {
            return Err(format!(
                "Error: event \"{name}\" already exists.\n Hint: Remove existing event by 'rkprobe -d'\n       or force duplicates by 'rkprobe -f'"
            ));
        }
        let free = (1..MAX_EVENT_INDEX)
            .map(|i| format!("{nbase}_{i}"))
            .find(|n| !taken.contains(n));
        match free {
            Some(n) => name = n,
            None => return Err("Too many events are on the same function.".into()),
        }
    }
    if name.len() >= 64 {
        return Err(format!("the event name nbase='{nbase}' is too long"));
    }
    if !is_c_func_name(&name) {
        return Err(format!(
            "Internal error: \"{name}\" is an invalid event name."
        ));
    }
    Ok(name)
}

/// Names the events of one specification, against the names `taken`
/// already (which grows as perf's namelist does).
pub fn name_events(
    spec: &ProbeSpec,
    tevs: Vec<TraceEvent>,
    taken: &mut HashSet<String>,
    features: Features,
    allow_suffix: bool,
) -> Result<Vec<NamedEvent>, String> {
    let mut out = Vec::new();
    let mut allow = allow_suffix;
    for tev in tevs {
        let base = match (&spec.event, &spec.point.function) {
            (Some(e), _) => e.clone(),
            (None, Some(f)) if !f.starts_with("0x") && !is_glob(f) => f.clone(),
            _ => tev.realname.clone(),
        };
        let group = spec
            .group
            .clone()
            .unwrap_or_else(|| DEFAULT_GROUP.to_string());
        let event = new_event_name(&base, taken, tev.retprobe, allow)?;
        if !features.multiprobe {
            taken.insert(event.clone());
        }
        // Later probes of the same specification may always take a suffix.
        allow = true;
        out.push(NamedEvent { group, event, tev });
    }
    Ok(out)
}

/// Everything from a specification's text to its kprobe_events lines, as
/// `perf probe --definition` prints them (names taken in `taken`).
pub fn definitions(
    di: &crate::debuginfo::Debuginfo<'_>,
    text: &str,
    opts: &crate::finder::Options,
    taken: &mut HashSet<String>,
    allow_suffix: bool,
) -> Result<(Vec<NamedEvent>, Vec<String>), String> {
    let features = opts.features;
    let s = crate::spec::parse(text).map_err(|e| format!("Semantic error :{e}"))?;
    let (mut tevs, warnings) = crate::finder::find_probes(di, &s, opts).map_err(|e| e.0)?;
    if let Some(m) = di.module {
        for t in &mut tevs {
            t.symbol = format!("{m}:{}", t.symbol);
        }
    }
    Ok((
        name_events(&s, tevs, taken, features, allow_suffix)?,
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let t = HashSet::new();
        assert_eq!(
            new_event_name("foo.constprop.0", &t, false, true).unwrap(),
            "foo"
        );
        assert_eq!(
            new_event_name("foo", &t, true, true).unwrap(),
            "foo__return"
        );
        let mut t = HashSet::new();
        t.insert("foo".to_string());
        t.insert("foo_1".to_string());
        assert_eq!(new_event_name("foo", &t, false, true).unwrap(), "foo_2");
        assert!(new_event_name("foo", &t, false, false).is_err());
    }
}
