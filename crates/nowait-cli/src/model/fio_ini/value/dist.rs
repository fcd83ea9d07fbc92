//! `random_distribution`: zipf, pareto, normal (gauss), the zoned tables
//! (`zoned`, `zoned_abs`) and `sequence`, each with its parameter checked.

use super::list::{split_ddirs, whole_percent};
use super::PerDdir;
use super::{err, parse_bytes, KbBase, ValueError};

/// One zone of a `zoned`/`zoned_abs` distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneSplit {
    /// Percent of reads that go to this zone.
    pub access_perc: u32,
    /// The zone's size: percent of the file (`zoned`) or bytes (`zoned_abs`).
    pub size: u64,
}

/// `random_distribution=`: how random offsets are spread.
#[derive(Debug, Clone, PartialEq)]
pub enum DistSpec {
    /// `random`: uniform (the default).
    Random,
    /// `zipf[:theta[:center]]` (theta default 1.1, not 1).
    Zipf { theta: f64, center: Option<f64> },
    /// `pareto[:h[:center]]` (h default 0.2, 0 < h < 1).
    Pareto { h: f64, center: Option<f64> },
    /// `normal[:dev[:center]]`, dev in percent of the file (0 <= dev < 100).
    Normal { dev: f64, center: Option<f64> },
    /// `zoned:access/size%:…[,writes[,trims]]`.
    Zoned(PerDdir<Vec<ZoneSplit>>),
    /// `zoned_abs:access/bytes:…[,writes[,trims]]`.
    ZonedAbs(PerDdir<Vec<ZoneSplit>>),
    /// `sequence:b,b,…` (fio 3.39+): block indices read in this order, over
    /// and over (or, with `random_sequence_stride`, as a pattern that moves
    /// on by its length after each cycle); at most [`SEQUENCE_MAX`].
    Sequence(Vec<u32>),
}

/// The most blocks a `sequence` distribution lists (fio's `FIO_SEQ_MAX`).
pub const SEQUENCE_MAX: usize = 64;

fn parse_float(s: &str, what: &str) -> Result<f64, ValueError> {
    s.trim().parse::<f64>().map_err(|_| {
        ValueError(format!(
            "random_distribution: `{s}` is not a number ({what})"
        ))
    })
}

/// Read `random_distribution=VALUE` as fio's `str_random_distribution_cb`.
pub fn parse_random_distribution(s: &str, kb: KbBase) -> Result<DistSpec, ValueError> {
    let t = s.trim();
    let (name, rest) = match t.split_once(':') {
        Some((n, r)) => (n, Some(r.trim())),
        None => (t, None),
    };
    let params = |default: f64| -> Result<(f64, Option<f64>), ValueError> {
        let Some(r) = rest else {
            return Ok((default, None));
        };
        let (v, c) = match r.split_once(':') {
            Some((v, c)) => (v, Some(parse_float(c, "center")?)),
            None => (r, None),
        };
        if let Some(c) = c {
            if !(0.0..=1.0).contains(&c) {
                return err(format!("the center {c} is outside 0..1"));
            }
        }
        Ok((parse_float(v, "parameter")?, c))
    };
    match name {
        "random" => Ok(DistSpec::Random),
        "zipf" => {
            let (theta, center) = params(1.1)?;
            if theta == 1.0 {
                return err("zipf's theta must not be 1.0");
            }
            Ok(DistSpec::Zipf { theta, center })
        }
        "pareto" => {
            let (h, center) = params(0.2)?;
            if !(h > 0.0 && h < 1.0) {
                return err("pareto's h must be between 0 and 1");
            }
            Ok(DistSpec::Pareto { h, center })
        }
        "normal" => {
            let (dev, center) = params(0.0)?;
            if !(0.0..100.0).contains(&dev) {
                return err("normal's deviation must be at least 0 and below 100");
            }
            Ok(DistSpec::Normal { dev, center })
        }
        "zoned" | "zoned_abs" => {
            let abs = name == "zoned_abs";
            let body = rest.ok_or_else(|| {
                ValueError(format!("give the zones, e.g. {name}:60/10:30/20:10/70"))
            })?;
            let d = split_ddirs(body);
            let z = PerDdir {
                read: zones(d.read, abs, kb)?,
                write: zones(d.write, abs, kb)?,
                trim: zones(d.trim, abs, kb)?,
            };
            Ok(if abs {
                DistSpec::ZonedAbs(z)
            } else {
                DistSpec::Zoned(z)
            })
        }
        "sequence" => {
            let body = rest.filter(|r| !r.is_empty()).ok_or_else(|| {
                ValueError("give the block indices to read in order, e.g. sequence:2,0,1".into())
            })?;
            let blocks: Vec<&str> = body.split(',').map(str::trim).collect();
            if blocks.len() > SEQUENCE_MAX {
                return err(format!(
                    "a sequence lists at most {SEQUENCE_MAX} blocks (fio's limit), not {}",
                    blocks.len()
                ));
            }
            let blocks = (blocks.iter())
                .map(|b| match b.parse::<u32>() {
                    Ok(n) if b.bytes().all(|c| c.is_ascii_digit()) => Ok(n),
                    _ => err(format!(
                        "`{b}` is not a block index (a whole number from 0 to {})",
                        u32::MAX
                    )),
                })
                .collect::<Result<Vec<u32>, ValueError>>()?;
            Ok(DistSpec::Sequence(blocks))
        }
        _ => err("fio knows random, zipf, pareto, normal, zoned, zoned_abs, sequence"),
    }
}

/// fio's `zone_split_ddir`: access shares must add up to exactly 100; a
/// missing share (access or size%) gets an equal part of what is left.
fn zones(s: &str, abs: bool, kb: KbBase) -> Result<Vec<ZoneSplit>, ValueError> {
    let mut v: Vec<(Option<u32>, Option<u64>)> = Vec::new();
    for entry in s.split(':') {
        if entry.is_empty() {
            break;
        }
        let (a, z) = match entry.split_once('/') {
            Some((a, z)) => (a, Some(z)),
            None => (entry, None),
        };
        let access = parse_bytes(a, kb)?;
        if access > 100 {
            return err(format!("zone access share {access} is above 100"));
        }
        let size = match z {
            None => None,
            Some(z) if abs => Some(parse_bytes(z, kb)?),
            Some(z) => {
                let p = whole_percent(z)
                    .map_err(|_| ValueError(format!("`{z}` is not a whole percentage")))?;
                // fio: an empty or 0 share is a missing one.
                (p != 0).then_some(p.min(100))
            }
        };
        v.push((Some(access as u32), size));
    }
    if v.is_empty() {
        return Ok(Vec::new());
    }
    let access: u32 = v.iter().filter_map(|e| e.0).sum();
    let sizes: u64 = if abs {
        0
    } else {
        v.iter().filter_map(|e| e.1).sum()
    };
    if access > 100 || sizes > 100 {
        return err("zone percentages add up to more than 100");
    }
    if access < 100 {
        return err(format!("zone access shares add up to {access}, not 100"));
    }
    let missing = v.iter().filter(|e| e.1.is_none()).count() as u64;
    let share = if abs {
        0
    } else if missing == 1 && v.len() == 1 {
        100
    } else {
        (100 - sizes) / missing.max(1)
    };
    Ok(v.into_iter()
        .map(|(a, z)| ZoneSplit {
            access_perc: a.unwrap_or(0),
            size: z.unwrap_or(share),
        })
        .collect())
}
