//! `rw`: what a job does, and the `:N` postfix of its sequential holes or
//! random runs.

use super::{err, parse_signed_bytes, KbBase, ValueError};

/// `rw=`: what a job does. nowait reads; the write and trim modes are named
/// so that a refusal can say which it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    /// `read`.
    Read,
    /// `randread`.
    RandRead,
    /// A mode that writes or trims (`write`, `randwrite`, `rw`, `readwrite`,
    /// `randrw`, `trim`, `randtrim`, `trimwrite`, `randtrimwrite`).
    Writes(&'static str),
}

/// `rw=MODE[:N]` as fio reads it: for random modes `N` is how many reads
/// share one random offset (the others follow `rw_sequencer`); for
/// sequential ones it is a gap added after each read, negative for
/// backwards (`rw=read:-8k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RwSpec {
    /// The mode.
    pub mode: RwMode,
    /// fio's `ddir_seq_nr` (1 unless `randread:N`).
    pub seq_nr: u32,
    /// fio's `ddir_seq_add` (0 unless `read:N`).
    pub seq_add: i64,
}

/// Read `rw=` by fio's mode names.
pub fn parse_rw(s: &str, kb: KbBase) -> Result<RwSpec, ValueError> {
    const NAMES: [(&str, RwMode); 11] = [
        ("read", RwMode::Read),
        ("randread", RwMode::RandRead),
        ("write", RwMode::Writes("write")),
        ("randwrite", RwMode::Writes("randwrite")),
        ("rw", RwMode::Writes("rw")),
        ("readwrite", RwMode::Writes("readwrite")),
        ("randrw", RwMode::Writes("randrw")),
        ("trim", RwMode::Writes("trim")),
        ("randtrim", RwMode::Writes("randtrim")),
        ("trimwrite", RwMode::Writes("trimwrite")),
        ("randtrimwrite", RwMode::Writes("randtrimwrite")),
    ];
    let t = s.trim();
    let (name, post) = match t.split_once(':') {
        Some((n, p)) => (n.trim(), Some(p.trim())),
        None => (t, None),
    };
    let mode = NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, m)| m)
        .ok_or_else(|| ValueError(format!("rw={t}: fio's modes are read, randread, write, randwrite, rw, randrw, trim, randtrim, trimwrite, randtrimwrite")))?;
    let random = matches!(mode, RwMode::RandRead) || name.starts_with("rand");
    let mut spec = RwSpec {
        mode,
        seq_nr: 1,
        seq_add: 0,
    };
    if let Some(p) = post {
        let v = parse_signed_bytes(p, kb)?;
        if random {
            if v <= 0 || v > i64::from(u32::MAX) {
                return err(format!(
                    "rw={t}: the number of reads per random offset must be 1 to 4294967295"
                ));
            }
            spec.seq_nr = v as u32;
        } else {
            spec.seq_add = v;
        }
    }
    Ok(spec)
}
