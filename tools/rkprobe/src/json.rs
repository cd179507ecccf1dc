// SPDX-License-Identifier: GPL-2.0

//! The JSON that `--json` prints: a value tree and its RFC 8259 text.
//!
//! The tool only writes JSON, a few kinds of records, so a small value
//! type serves better than a serialization framework: the field names and
//! their order are spelled out where each record is built (`show.rs`,
//! `main.rs`), which is what Documentation/rkprobe-tool.rst documents.

use std::fmt::Write;

/// A JSON value. Objects keep their fields in the order they were given.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer; every number the tool prints is one.
    Int(i128),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Value>),
    /// An object.
    Object(Vec<(&'static str, Value)>),
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Int(i128::from(n))
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Int(i128::from(n))
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(i128::from(n))
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Value {
        o.map_or(Value::Null, Into::into)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Value {
        Value::Array(v.into_iter().map(Into::into).collect())
    }
}

/// Writes `s` as a JSON string: quotes, backslashes and control
/// characters escaped; everything else, non-ASCII included, as it is.
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Value {
    /// The value as JSON text, indented by two spaces a level (one value a
    /// line in arrays and objects), without a final newline.
    pub fn to_pretty(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        let pad = |out: &mut String, d: usize| {
            out.push('\n');
            for _ in 0..d {
                out.push_str("  ");
            }
        };
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Str(s) => write_str(out, s),
            Value::Array(a) if a.is_empty() => out.push_str("[]"),
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    v.write(out, depth + 1);
                }
                pad(out, depth);
                out.push(']');
            }
            Value::Object(o) if o.is_empty() => out.push_str("{}"),
            Value::Object(o) => {
                out.push('{');
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    write_str(out, k);
                    out.push_str(": ");
                    v.write(out, depth + 1);
                }
                pad(out, depth);
                out.push('}');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text() {
        let v = Value::Object(vec![
            ("name", "a\"b\\c\n\t\u{1}é".into()),
            ("n", 42u64.into()),
            ("neg", (-3i64).into()),
            ("none", Value::Null),
            ("list", vec![true, false].into()),
            ("empty", Value::Array(Vec::new())),
        ]);
        assert_eq!(
            v.to_pretty(),
            "{\n  \"name\": \"a\\\"b\\\\c\\n\\t\\u0001é\",\n  \"n\": 42,\n  \"neg\": -3,\n  \
             \"none\": null,\n  \"list\": [\n    true,\n    false\n  ],\n  \"empty\": []\n}"
        );
    }
}
