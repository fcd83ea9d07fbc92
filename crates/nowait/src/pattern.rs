//! The verifiable data pattern: every byte is a function of its offset in
//! the file, so any read can be checked byte for byte without a reference
//! copy (fio's `verify` works the same way). Tests, `nowait bench --verify`
//! and the data files the CLI lays out all use it.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// SplitMix64: a fast, well-mixed hash of a 64-bit word.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The pattern byte at `offset`.
#[inline]
pub fn byte_at(offset: u64) -> u8 {
    (mix(offset >> 3) >> ((offset & 7) * 8)) as u8
}

/// Fill `out` with the pattern bytes for `offset..offset + out.len()`.
pub fn fill(offset: u64, out: &mut [u8]) {
    let mut pos = 0usize;
    // Leading bytes up to the next 8-byte boundary.
    while pos < out.len() && (offset + pos as u64) % 8 != 0 {
        out[pos] = byte_at(offset + pos as u64);
        pos += 1;
    }
    // Whole words.
    let tail_start = pos + (out.len() - pos) / 8 * 8;
    let first_word = (offset + pos as u64) >> 3;
    for (word, c) in (first_word..).zip(out[pos..tail_start].chunks_exact_mut(8)) {
        c.copy_from_slice(&mix(word).to_le_bytes());
    }
    for (i, b) in out[tail_start..].iter_mut().enumerate() {
        *b = byte_at(offset + (tail_start + i) as u64);
    }
}

/// The first byte of a read that does not match the pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mismatch {
    /// File offset of the wrong byte.
    pub offset: u64,
    /// The pattern's byte there.
    pub expected: u8,
    /// The byte read.
    pub found: u8,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "data mismatch at file offset {}: expected 0x{:02x}, read 0x{:02x}",
            self.offset, self.expected, self.found
        )
    }
}

impl std::error::Error for Mismatch {}

/// Check that `data` holds the pattern for `offset..offset + data.len()`.
pub fn check(offset: u64, data: &[u8]) -> Result<(), Mismatch> {
    let mut expect = [0u8; 4096];
    let mut pos = 0usize;
    while pos < data.len() {
        let n = (data.len() - pos).min(expect.len());
        fill(offset + pos as u64, &mut expect[..n]);
        if expect[..n] != data[pos..pos + n] {
            let i = (0..n)
                .find(|&i| expect[i] != data[pos + i])
                .expect("slices differ somewhere");
            return Err(Mismatch {
                offset: offset + (pos + i) as u64,
                expected: expect[i],
                found: data[pos + i],
            });
        }
        pos += n;
    }
    Ok(())
}

/// Write a file of `size` bytes holding the pattern, calling `progress`
/// with the bytes written so far after each chunk, and sync it to disk.
pub fn write_file(path: &Path, size: u64, mut progress: impl FnMut(u64)) -> io::Result<()> {
    let mut f = fs::File::create(path)?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut off = 0u64;
    while off < size {
        let n = ((size - off) as usize).min(chunk.len());
        fill(off, &mut chunk[..n]);
        f.write_all(&chunk[..n])?;
        off += n as u64;
        progress(off);
    }
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_matches_byte_at_for_every_alignment() {
        for start in 0..20u64 {
            for len in [0usize, 1, 7, 8, 9, 63, 100] {
                let mut v = vec![0u8; len];
                fill(start, &mut v);
                for (i, b) in v.iter().enumerate() {
                    assert_eq!(
                        *b,
                        byte_at(start + i as u64),
                        "start {start} len {len} i {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn check_reports_first_mismatch_offset() {
        let mut v = vec![0u8; 10_000];
        fill(12_345, &mut v);
        assert_eq!(check(12_345, &v), Ok(()));
        v[5000] ^= 0xff;
        v[7000] ^= 0x01;
        let m = check(12_345, &v).unwrap_err();
        assert_eq!(m.offset, 17_345);
        assert_eq!(m.found, m.expected ^ 0xff);
        // The same bytes at another offset are wrong at once.
        assert!(check(12_346, &v).is_err());
    }

    #[test]
    fn pattern_is_not_trivially_periodic() {
        let mut a = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        fill(0, &mut a);
        fill(4096, &mut b);
        assert_ne!(
            a, b,
            "two pages must differ so a read at the wrong offset is caught"
        );
    }
}
