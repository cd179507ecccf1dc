// SPDX-License-Identifier: GPL-2.0

//! Byte output: command text, names and strings are bytes, not UTF-8, so
//! everything the parser and the printers write goes to a [`ByteWrite`]
//! (what the kernel's `seq_file` and `trace_seq` are); [`Fmt`] lets
//! `write!` format into one, [`FmtWriter`] adapts a `core::fmt::Write` and
//! [`SliceWriter`] fills a fixed buffer.

use core::fmt;

/// A byte sink: what the kernel's `seq_file`/`trace_seq` are.
pub trait ByteWrite {
    /// Appends `b`.
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result;
}

impl<W: ByteWrite + ?Sized> ByteWrite for &mut W {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        (**self).write_bytes(b)
    }
}

/// Lets `write!` format into a [`ByteWrite`].
pub struct Fmt<'w, W: ?Sized>(pub &'w mut W);

impl<W: ByteWrite + ?Sized> fmt::Write for Fmt<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write_bytes(s.as_bytes())
    }
}

/// A [`ByteWrite`] over a `core::fmt::Write`: bytes that are not UTF-8
/// (which the kernel would copy verbatim) become U+FFFD.
pub struct FmtWriter<'w, W: ?Sized>(pub &'w mut W);

impl<W: fmt::Write + ?Sized> ByteWrite for FmtWriter<'_, W> {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        // `<[u8]>::utf8_chunks` would do, but the kernel's minimum Rust
        // version (1.78) predates it.
        let mut rest = b;
        while !rest.is_empty() {
            match core::str::from_utf8(rest) {
                Ok(s) => return self.0.write_str(s),
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // `valid_up_to` bytes are valid UTF-8 by definition.
                    self.0
                        .write_str(core::str::from_utf8(valid).unwrap_or(""))?;
                    self.0.write_char(char::REPLACEMENT_CHARACTER)?;
                    let skip = e.error_len().unwrap_or(after.len()).max(1);
                    rest = after.get(skip..).unwrap_or(&[]);
                }
            }
        }
        Ok(())
    }
}

/// A [`ByteWrite`] into a fixed buffer; fails when the buffer is full,
/// keeping what fitted.
pub struct SliceWriter<B> {
    buf: B,
    len: usize,
}

impl<B: AsMut<[u8]> + AsRef<[u8]>> SliceWriter<B> {
    /// An empty writer over `buf`.
    pub fn new(buf: B) -> SliceWriter<B> {
        SliceWriter { buf, len: 0 }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes written.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref().get(..self.len).unwrap_or(&[])
    }

    /// The buffer and the number of bytes written.
    pub fn into_parts(self) -> (B, usize) {
        (self.buf, self.len)
    }
}

impl<B: AsMut<[u8]> + AsRef<[u8]>> ByteWrite for SliceWriter<B> {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        let buf = self.buf.as_mut();
        let room = buf.len().saturating_sub(self.len);
        let n = b.len().min(room);
        if let (Some(dst), Some(src)) = (buf.get_mut(self.len..self.len + n), b.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.len += n;
        if n < b.len() {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_writer_truncates() {
        let mut w = SliceWriter::new([0u8; 4]);
        assert!(w.write_bytes(b"abcdef").is_err());
        assert_eq!(w.as_bytes(), b"abcd");
    }
}
