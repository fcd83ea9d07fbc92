//! Lists of values: one per data direction (`bs=4k,8k`, with fio's
//! separators and its filling of the missing ones), `low-high` ranges, and
//! `bssplit`'s block sizes with their shares.

use super::{err, parse_bytes, KbBase, ValueError};

/// A value per data direction: reads, writes, trims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerDdir<T> {
    /// Reads.
    pub read: T,
    /// Writes.
    pub write: T,
    /// Trims.
    pub trim: T,
}

impl<T: Clone> PerDdir<T> {
    /// The same value for all three.
    pub fn all(v: T) -> PerDdir<T> {
        PerDdir {
            read: v.clone(),
            write: v.clone(),
            trim: v,
        }
    }
}

/// How a list option separates its per-direction values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSeps {
    /// `,`, else `:`, else `-` (not a leading minus): integer options
    /// (`bs=4k,8k`, `rate=1m:2m`, `rate_iops=100-200`).
    Any,
    /// `,` only: ranges (`bsrange=1k-4k,8k-16k`).
    Comma,
}

/// A per-direction list as fio fills it (`handle_option`): the first value
/// is for reads, the second for writes, the third for trims; the last value
/// given fills the directions after it; an empty entry (`,8k`) leaves that
/// direction unset (`None`, fio keeps its default).
pub fn parse_per_ddir<T: Clone>(
    s: &str,
    seps: ListSeps,
    mut parse: impl FnMut(&str) -> Result<T, ValueError>,
) -> Result<PerDdir<Option<T>>, ValueError> {
    let mut rest = s.trim();
    if let Some(r) = rest.strip_suffix(',') {
        rest = r;
    }
    let mut vals: Vec<Option<T>> = Vec::new();
    loop {
        let cut = match seps {
            ListSeps::Comma => rest.find(','),
            ListSeps::Any => rest.find(',').or_else(|| rest.find(':')).or_else(|| {
                rest.char_indices()
                    .skip(1)
                    .find(|&(_, c)| c == '-')
                    .map(|(i, _)| i)
            }),
        };
        let (head, tail) = match cut {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        if vals.len() == 3 {
            return err(format!(
                "`{s}`: at most three values (reads, writes, trims)"
            ));
        }
        vals.push(
            if head.trim().is_empty() && (tail.is_some() || !vals.is_empty()) {
                None
            } else {
                Some(parse(head)?)
            },
        );
        match tail {
            Some(t) => rest = t,
            None => break,
        }
    }
    let last = vals.last().cloned().flatten();
    let get = |i: usize| -> Option<T> {
        match vals.get(i) {
            Some(v) => v.clone(),
            None => last.clone(),
        }
    };
    Ok(PerDdir {
        read: get(0),
        write: get(1),
        trim: get(2),
    })
}

/// A range `lo-hi` or `lo:hi` of sizes, swapped when given high first
/// (`bsrange=`, one direction).
pub fn parse_range(s: &str, kb: KbBase) -> Result<(u64, u64), ValueError> {
    let t = s.trim();
    let i = t
        .find('-')
        .or_else(|| t.find(':'))
        .ok_or_else(|| ValueError(format!("`{t}` is not a range; write low-high, e.g. 4k-16k")))?;
    let lo = parse_bytes(&t[..i], kb)?;
    let hi = parse_bytes(&t[i + 1..], kb)?;
    Ok(if lo > hi { (hi, lo) } else { (lo, hi) })
}

/// One `bssplit` entry: a block size and its share in percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsSplit {
    /// Block size in bytes.
    pub bs: u64,
    /// Percent of reads of this size.
    pub perc: u32,
}

/// The most entries one direction's `bssplit` takes (fio's `BSSPLIT_MAX`).
pub const BSSPLIT_MAX: usize = 64;

/// fio's `str_split_parse`: `r,w,t`, `r,w` (trims as writes) or one list
/// for all three.
pub(super) fn split_ddirs(s: &str) -> PerDdir<&str> {
    let parts: Vec<&str> = s.splitn(3, ',').collect();
    match parts.as_slice() {
        [one] => PerDdir::all(*one),
        [r, w] => PerDdir {
            read: r,
            write: w,
            trim: w,
        },
        [r, w, t] => PerDdir {
            read: r,
            write: w,
            trim: t,
        },
        _ => PerDdir::all(""),
    }
}

/// `bssplit=4k/10:64k/50:32k/40[,writes[,trims]]` as fio's `bssplit_ddir`
/// builds it: an entry without a share (or with `/0`) gets an equal part of
/// what the others leave, shares above 100 count as 100, and the entries are
/// sorted by share, smallest first (fio picks from that order).
pub fn parse_bssplit(s: &str, kb: KbBase) -> Result<PerDdir<Vec<BsSplit>>, ValueError> {
    let d = split_ddirs(s.trim());
    Ok(PerDdir {
        read: bssplit_one(d.read, kb)?,
        write: bssplit_one(d.write, kb)?,
        trim: bssplit_one(d.trim, kb)?,
    })
}

fn bssplit_one(s: &str, kb: KbBase) -> Result<Vec<BsSplit>, ValueError> {
    let mut v: Vec<(u64, Option<u32>)> = Vec::new();
    for entry in s.split(':') {
        if entry.is_empty() {
            break;
        }
        if v.len() == BSSPLIT_MAX {
            return err(format!("bssplit `{s}`: at most {BSSPLIT_MAX} entries"));
        }
        let (bs, perc) = match entry.split_once('/') {
            Some((b, p)) => {
                let n = whole_percent(p).map_err(|_| {
                    ValueError(format!(
                        "bssplit `{entry}`: `{p}` is not a whole percentage"
                    ))
                })?;
                (
                    b,
                    if n == 0 {
                        None
                    } else {
                        Some(n.min(100) as u32)
                    },
                )
            }
            None => (entry, None),
        };
        v.push((parse_bytes(bs, kb)?, perc));
    }
    let given: u32 = v.iter().filter_map(|e| e.1).sum();
    let missing = v.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 && missing > 1 {
        return err(format!(
            "bssplit `{s}`: the percentages add up to more than 100"
        ));
    }
    let share = if missing == 1 && v.len() == 1 {
        100
    } else {
        100u32.saturating_sub(given) / missing.max(1)
    };
    let mut out: Vec<BsSplit> = v
        .into_iter()
        .map(|(bs, p)| BsSplit {
            bs,
            perc: p.unwrap_or(share),
        })
        .collect();
    // fio sorts with qsort by share; glibc's is stable for these sizes.
    out.sort_by_key(|e| e.perc);
    Ok(out)
}

/// A share after `/` as fio's `atoi` reads it: empty is 0 (fio then treats
/// the share as missing); anything but digits is refused.
pub(super) fn whole_percent(s: &str) -> Result<u64, std::num::ParseIntError> {
    let t = s.trim();
    if t.is_empty() {
        Ok(0)
    } else {
        t.parse()
    }
}
