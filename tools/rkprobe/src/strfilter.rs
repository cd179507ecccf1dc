// SPDX-License-Identifier: GPL-2.0

//! perf's string filters (`tools/perf/util/strfilter.c`): globs combined
//! with `!` (not), `&` (and), `|` (or) and parentheses, as `--list`,
//! `--del`, `--funcs` and `--filter` take them.
//!
//! ```text
//! vfs_*                 a glob (perf's strglobmatch(): * ? [...] \)
//! !_*                   not starting with _
//! vfs_*|ksys_*          either
//! (vfs_*|ksys_*)&!*at   either, and not ending in "at"
//! ```
//!
//! `&` binds tighter than `|`, `!` tighter than both; white space between
//! tokens is ignored; `\` escapes the next character, and `[!` inside a
//! glob is the glob's negation, not the operator. The parser builds the
//! same tree as perf's (which splices `&` under the last operator and `|`
//! at the root), so a filter matches what it matches in perf, fails where
//! it fails, and reports the same position.

use std::fmt;

use crate::finder::glob_match;

/// A node of the filter's tree, indexing [`Filter::nodes`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    /// The parser's root placeholder: its right child is the tree.
    Root(Option<usize>),
    /// A glob.
    Glob(String),
    /// `!` and its operand (absent while being parsed).
    Not(Option<usize>),
    /// `l & r`.
    And(usize, Option<usize>),
    /// `l | r`.
    Or(usize, Option<usize>),
}

impl Node {
    /// The right operand, which the parser fills in next.
    fn right(&self) -> Option<usize> {
        match self {
            Node::Root(r) | Node::Not(r) | Node::And(_, r) | Node::Or(_, r) => *r,
            Node::Glob(_) => None,
        }
    }

    /// Sets the right operand; a glob has none (the parser never asks).
    fn set_right(&mut self, n: usize) {
        match self {
            Node::Root(r) | Node::Not(r) | Node::And(_, r) | Node::Or(_, r) => *r = Some(n),
            Node::Glob(_) => {}
        }
    }
}

/// A parsed filter.
///
/// # Invariants
///
/// `root` and every child index of a node in `nodes` are indices of
/// `nodes`; every operator node has its right operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    nodes: Vec<Node>,
    root: usize,
}

/// Where a filter could not be parsed: the byte offset (from 0) of the
/// token at which perf's parser gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset in the filter's text.
    pub pos: usize,
}

impl ParseError {
    /// perf's message: the position counted from 1 and a caret under it.
    pub fn message(&self, rules: &str) -> String {
        let at = self.pos + 1;
        format!(
            "Filter parse error at {at}.\nSource: \"{rules}\"\n         {:>at$}",
            "^"
        )
    }
}

fn is_operator(c: u8) -> bool {
    matches!(c, b'|' | b'&' | b'!')
}

fn is_separator(c: u8) -> bool {
    is_operator(c) || c == b'(' || c == b')'
}

/// perf's `get_token()`: the token at or after `from` as (start, end); an
/// empty token at the end of the text.
fn token(s: &[u8], from: usize) -> (usize, usize) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut start = from;
    while at(start).is_ascii_whitespace() {
        start += 1;
    }
    if start >= s.len() {
        return (s.len(), s.len());
    }
    let mut p = start + 1;
    if !is_separator(at(start)) {
        loop {
            while p < s.len() && !is_separator(at(p)) && !at(p).is_ascii_whitespace() {
                p += 1;
            }
            // An escaped character, and `[!` of a glob, do not end it.
            let prev = at(p - 1);
            if p < s.len() && (prev == b'\\' || (at(p) == b'!' && prev == b'[')) {
                p += 1;
                continue;
            }
            break;
        }
    }
    (start, p)
}

impl Filter {
    /// Parses `rules` (perf's `strfilter__new()`).
    pub fn parse(rules: &str) -> Result<Filter, ParseError> {
        let mut nodes = Vec::new();
        let bytes = rules.as_bytes();
        let (root, end) = parse_node(bytes, 0, &mut nodes)?;
        if end < bytes.len() {
            return Err(ParseError { pos: end });
        }
        Ok(Filter { nodes, root })
    }

    /// The filters of repeated options (`texts`) OR'ed, as perf combines
    /// them; `None` for none; perf's message for the first that does not
    /// parse.
    pub fn parse_all(texts: &[String]) -> Result<Option<Filter>, String> {
        let mut out: Option<Filter> = None;
        for t in texts {
            let f = Filter::parse(t).map_err(|e| e.message(t))?;
            out = Some(match out {
                Some(o) => o.or(f),
                None => f,
            });
        }
        Ok(out)
    }

    /// The filter every string passes (`*`).
    pub fn any() -> Filter {
        Filter {
            nodes: vec![Node::Glob("*".into())],
            root: 0,
        }
    }

    /// Whether `s` passes the filter (perf's `strfilter__compare()`).
    pub fn matches(&self, s: &str) -> bool {
        self.eval(self.root, s)
    }

    fn eval(&self, n: usize, s: &str) -> bool {
        match self.nodes.get(n) {
            Some(Node::Glob(g)) => glob_match(s, g),
            Some(Node::Not(Some(r))) => !self.eval(*r, s),
            Some(Node::And(l, Some(r))) => self.eval(*l, s) && self.eval(*r, s),
            Some(Node::Or(l, Some(r))) => self.eval(*l, s) || self.eval(*r, s),
            _ => false,
        }
    }

    /// `self | other` (perf's `strfilter__or()`, which repeated options
    /// use).
    pub fn or(mut self, other: Filter) -> Filter {
        let base = self.nodes.len();
        let shift = |i: usize| i + base;
        for n in other.nodes {
            self.nodes.push(match n {
                Node::Root(r) => Node::Root(r.map(shift)),
                Node::Glob(g) => Node::Glob(g),
                Node::Not(r) => Node::Not(r.map(shift)),
                Node::And(l, r) => Node::And(shift(l), r.map(shift)),
                Node::Or(l, r) => Node::Or(shift(l), r.map(shift)),
            });
        }
        self.nodes
            .push(Node::Or(self.root, Some(shift(other.root))));
        self.root = self.nodes.len() - 1;
        self
    }

    /// perf's `strfilter_node__sprint()`: operands that are themselves
    /// operators are parenthesized.
    fn write(&self, n: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sub = |f: &mut fmt::Formatter<'_>, i: usize| -> fmt::Result {
            match self.nodes.get(i) {
                Some(Node::Glob(_)) => self.write(i, f),
                _ => {
                    f.write_str("(")?;
                    self.write(i, f)?;
                    f.write_str(")")
                }
            }
        };
        match self.nodes.get(n) {
            Some(Node::Glob(g)) => f.write_str(g),
            Some(Node::Not(Some(r))) => {
                f.write_str("!")?;
                sub(f, *r)
            }
            Some(Node::And(l, Some(r))) => {
                sub(f, *l)?;
                f.write_str("&")?;
                sub(f, *r)
            }
            Some(Node::Or(l, Some(r))) => {
                sub(f, *l)?;
                f.write_str("|")?;
                sub(f, *r)
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(self.root, f)
    }
}

/// perf's `strfilter_node__new()`: parses from `from` up to the end or an
/// unmatched `)`, returning the tree's root and where it stopped.
fn parse_node(s: &[u8], from: usize, nodes: &mut Vec<Node>) -> Result<(usize, usize), ParseError> {
    let err = |pos: usize| Err(ParseError { pos });
    let root = nodes.len();
    nodes.push(Node::Root(None));
    let mut cur = root;
    let mut last_op = root;
    let right = |nodes: &Vec<Node>, i: usize| nodes.get(i).and_then(Node::right);
    let (mut start, mut end) = token(s, from);
    while start < s.len() && s.get(start) != Some(&b')') {
        match s.get(start).copied().unwrap_or(0) {
            b'&' => {
                // `&` takes the last operator's right operand as its left.
                let (Some(_), Some(l)) = (right(nodes, cur), right(nodes, last_op)) else {
                    return err(start);
                };
                nodes.push(Node::And(l, None));
                let n = nodes.len() - 1;
                if let Some(lo) = nodes.get_mut(last_op) {
                    lo.set_right(n);
                }
                last_op = n;
                cur = n;
            }
            b'|' => {
                // `|` takes the whole tree so far as its left.
                let (Some(_), Some(l)) = (right(nodes, cur), right(nodes, root)) else {
                    return err(start);
                };
                nodes.push(Node::Or(l, None));
                let n = nodes.len() - 1;
                if let Some(r) = nodes.get_mut(root) {
                    r.set_right(n);
                }
                last_op = n;
                cur = n;
            }
            b'!' => {
                if right(nodes, cur).is_some() {
                    return err(start);
                }
                nodes.push(Node::Not(None));
                let n = nodes.len() - 1;
                if let Some(c) = nodes.get_mut(cur) {
                    c.set_right(n);
                }
                cur = n;
            }
            b'(' => {
                if right(nodes, cur).is_some() {
                    return err(start);
                }
                let (sub, stop) = parse_node(s, start + 1, nodes)?;
                if s.get(stop) != Some(&b')') {
                    return err(stop);
                }
                if let Some(c) = nodes.get_mut(cur) {
                    c.set_right(sub);
                }
                end = stop + 1;
            }
            _ => {
                if right(nodes, cur).is_some() {
                    return err(start);
                }
                let text = s.get(start..end).unwrap_or_default();
                nodes.push(Node::Glob(String::from_utf8_lossy(text).into_owned()));
                let n = nodes.len() - 1;
                if let Some(c) = nodes.get_mut(cur) {
                    c.set_right(n);
                }
            }
        }
        (start, end) = token(s, end);
    }
    match right(nodes, cur).and(right(nodes, root)) {
        Some(tree) => Ok((tree, start)),
        None => err(start),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> Filter {
        Filter::parse(s).unwrap()
    }

    #[test]
    fn globs_and_operators() {
        assert!(f("vfs_*").matches("vfs_read"));
        assert!(!f("!vfs_*").matches("vfs_read"));
        assert!(f("!my*").matches("vfs_read"));
        assert!(!f("!my*").matches("myread"));
        let either = f("a*|b*");
        assert!(either.matches("abc") && either.matches("bcd") && !either.matches("cde"));
        let both = f("(a*|b*)&!*c");
        assert!(both.matches("ab") && both.matches("bd"));
        assert!(!both.matches("abc") && !both.matches("cd"));
        let p = f("(vfs_r*|vfs_w*)&!*iter*");
        assert!(p.matches("vfs_read") && p.matches("vfs_write") && p.matches("vfs_rmdir"));
        assert!(!p.matches("vfs_iter_read") && !p.matches("vfs_write_iter"));
        let p = f("!(a*|b*)");
        assert!(p.matches("c") && !p.matches("a") && !p.matches("b"));
        // & binds tighter than |.
        let p = f("a* | b* & *z");
        assert!(p.matches("ax") && p.matches("bz") && !p.matches("bx"));
        let p = f("b* & *z | a*");
        assert!(p.matches("ax") && p.matches("bz") && !p.matches("bx"));
        // ! binds tighter than &.
        let p = f("!a* & *z");
        assert!(p.matches("bz") && !p.matches("az") && !p.matches("b"));
        assert!(f("!!a*").matches("ab"));
        // perf's default filters.
        let d = f("!_* & !*@plt");
        assert!(d.matches("vfs_read") && !d.matches("__x64_sys_read") && !d.matches("f@plt"));
        let v = f("!__k???tab_* & !__crc_*");
        assert!(v.matches("count") && !v.matches("__ksymtab_vfs_read") && !v.matches("__crc_x"));
    }

    #[test]
    fn escapes_and_glob_negation() {
        // `[!` is the glob's negation, not the operator.
        let p = f("vfs_[!w]*");
        assert!(p.matches("vfs_read") && !p.matches("vfs_write"));
        // An escaped operator is part of the glob.
        let p = f("a\\|b");
        assert!(p.matches("a|b") && !p.matches("a"));
    }

    #[test]
    fn errors_where_perf_reports_them() {
        assert_eq!(Filter::parse("a&"), Err(ParseError { pos: 2 }));
        assert_eq!(Filter::parse(""), Err(ParseError { pos: 0 }));
        assert_eq!(Filter::parse("&a"), Err(ParseError { pos: 0 }));
        assert_eq!(Filter::parse("a b"), Err(ParseError { pos: 2 }));
        assert_eq!(Filter::parse("(a|b"), Err(ParseError { pos: 4 }));
        assert_eq!(Filter::parse("a)"), Err(ParseError { pos: 1 }));
        assert_eq!(Filter::parse("!&a"), Err(ParseError { pos: 1 }));
        assert_eq!(Filter::parse("()"), Err(ParseError { pos: 1 }));
        assert_eq!(
            ParseError { pos: 2 }.message("a&"),
            "Filter parse error at 3.\nSource: \"a&\"\n           ^"
        );
    }

    #[test]
    fn or_and_display() {
        let p = f("a*").or(f("b*&!*c"));
        assert!(p.matches("ax") && p.matches("bd") && !p.matches("bc"));
        assert_eq!(p.to_string(), "a*|(b*&(!*c))");
        assert_eq!(f("!_* & !*@plt").to_string(), "(!_*)&(!*@plt)");
        assert_eq!(f("vfs_*").to_string(), "vfs_*");
    }
}
