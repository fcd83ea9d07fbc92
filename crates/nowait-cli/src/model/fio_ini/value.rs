//! fio's option values: sizes with `kb_base`, times, percentages, booleans,
//! ranges, per-direction lists, `bssplit`, `random_distribution` and `rw`,
//! read as fio's `parse.c` and `options.c` read them.
//!
//! One deliberate difference: where fio would quietly read a value as
//! something other than what was written (`1.5g` as 1 byte, `10sec` as 10
//! microseconds, `4 k` as 4, `1kx` as 1k), these parsers answer an error that
//! says so, instead of running a different workload.

use std::fmt;

/// A value that cannot be read: what was asked, what is wrong, what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError(pub String);

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ValueError {}

fn err<T>(msg: impl Into<String>) -> Result<T, ValueError> {
    Err(ValueError(msg.into()))
}

/// `kb_base=`: what `k`, `m`, `g`… mean. fio's default, 1024, reads `4k` as
/// 4096 and the IEC names (`4kib`) as powers of 1000; `kb_base=1000` turns
/// both round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KbBase {
    /// `kb_base=1024` (fio's default).
    #[default]
    Binary,
    /// `kb_base=1000`.
    Decimal,
}

impl KbBase {
    /// `kb_base=1024` or `kb_base=1000`.
    pub fn parse(s: &str) -> Result<KbBase, ValueError> {
        match s.trim() {
            "1024" => Ok(KbBase::Binary),
            "1000" => Ok(KbBase::Decimal),
            v => err(format!("kb_base={v}: fio accepts 1024 or 1000")),
        }
    }

    fn base(self) -> u64 {
        match self {
            KbBase::Binary => 1024,
            KbBase::Decimal => 1000,
        }
    }

    fn other(self) -> u64 {
        match self {
            KbBase::Binary => 1000,
            KbBase::Decimal => 1024,
        }
    }
}

/// A size that may be a share of the file (`size=50%`, `offset=25%`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Bytes.
    Bytes(u64),
    /// Percent of the file or device, 0 to 100.
    Percent(u64),
}

/// The leading integer of `s` (optional sign, decimal digits, or `0x` hex)
/// and the rest.
fn split_number(s: &str) -> Result<(i64, &str, bool), ValueError> {
    let t = s.trim();
    let blank = s.starts_with(char::is_whitespace);
    if t.is_empty() {
        return err("an empty value where a number is needed");
    }
    let (neg, body) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = body.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        let n = u64::from_str_radix(hex, 16).map_err(|_| {
            ValueError(format!(
                "`{t}` is not a hexadecimal number (fio takes no unit after 0x)"
            ))
        })?;
        let v = i64::try_from(n).map_err(|_| ValueError(format!("`{t}` is too large")))?;
        return Ok((if neg { -v } else { v }, "", true));
    }
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return err(format!("`{t}` does not start with a number"));
    }
    let v: i64 = body[..digits]
        .parse()
        .map_err(|_| ValueError(format!("`{t}` is too large")))?;
    let unit = &body[digits..];
    if blank && !unit.is_empty() {
        return err(format!(
            "`{}`: fio reads a value that starts with a blank without its unit ({v}); remove the blank after `=`",
            s.trim_end()
        ));
    }
    Ok((if neg { -v } else { v }, unit, false))
}

/// The multiplier of a size unit (case-insensitive), as fio's
/// `__get_mult_bytes` reads it; `None` for `%`.
fn size_unit(unit: &str, kb: KbBase, whole: &str) -> Result<Option<u64>, ValueError> {
    let u = unit.to_ascii_lowercase();
    let (pow, mult) = match u.as_str() {
        "" | "b" => (0, 1),
        "%" => return Ok(None),
        _ => {
            let pow = match u.as_bytes()[0] {
                b'k' => 1,
                b'm' => 2,
                b'g' => 3,
                b't' => 4,
                b'p' => 5,
                _ => return err(format!("`{whole}`: unknown unit `{unit}`; fio's size units are k, m, g, t, p (with b, i or ib)")),
            };
            match &u[1..] {
                // fio reads `ki` (without b) as `k`.
                "" | "b" | "i" => (pow, kb.base()),
                "ib" => (pow, kb.other()),
                _ => return err(format!("`{whole}`: unknown unit `{unit}`; fio's size units are k, m, g, t, p (with b, i or ib)")),
            }
        }
    };
    let mut m: u64 = 1;
    for _ in 0..pow {
        m = m
            .checked_mul(mult)
            .ok_or_else(|| ValueError(format!("`{whole}` is too large")))?;
    }
    Ok(Some(m))
}

/// A value in parentheses, by fio's expression grammar ([`super::arith`]),
/// scaled by the option's implied unit when it names none.
fn expression(s: &str, is_time: bool, unit: f64) -> Result<i64, ValueError> {
    let v = super::arith::eval(s, is_time).map_err(|e| ValueError(format!("`{s}`: {e}")))?;
    super::arith::implied(&v, unit).map_err(|e| ValueError(format!("`{s}`: {e}")))
}

/// A signed byte count with a unit (`rw=read:-8k`, `offset_increment`).
pub fn parse_signed_bytes(s: &str, kb: KbBase) -> Result<i64, ValueError> {
    if s.starts_with('(') {
        return expression(s, false, 1.0);
    }
    let (v, unit, hex) = split_number(s)?;
    if hex {
        return Ok(v);
    }
    match size_unit(unit, kb, s.trim())? {
        Some(m) => v
            .checked_mul(i64::try_from(m).unwrap_or(i64::MAX))
            .ok_or_else(|| ValueError(format!("`{}` is too large", s.trim()))),
        None => err(format!("`{}`: a percentage is not allowed here", s.trim())),
    }
}

/// A size or a percentage (`size=`, `offset=`, `io_size=`, `filesize=`).
pub fn parse_size(s: &str, kb: KbBase) -> Result<Size, ValueError> {
    if s.starts_with('(') {
        let v = expression(s, false, 1.0)?;
        return u64::try_from(v)
            .map(Size::Bytes)
            .map_err(|_| ValueError(format!("`{s}` is {v}; a size cannot be negative")));
    }
    let (v, unit, hex) = split_number(s)?;
    if v < 0 {
        return err(format!("`{}`: a size cannot be negative", s.trim()));
    }
    let v = v as u64;
    if hex {
        return Ok(Size::Bytes(v));
    }
    match size_unit(unit, kb, s.trim())? {
        Some(m) => v
            .checked_mul(m)
            .map(Size::Bytes)
            .ok_or_else(|| ValueError(format!("`{}` is too large", s.trim()))),
        None if v <= 100 => Ok(Size::Percent(v)),
        None => err(format!("`{}`: a percentage is at most 100", s.trim())),
    }
}

/// A byte count or integer with an optional unit (`bs=4k`, `iodepth=32`,
/// `rate=1m`: fio reads every integer option this way).
pub fn parse_bytes(s: &str, kb: KbBase) -> Result<u64, ValueError> {
    match parse_size(s, kb)? {
        Size::Bytes(b) => Ok(b),
        Size::Percent(_) => err(format!("`{}`: a percentage is not allowed here", s.trim())),
    }
}

/// What a time without a unit means: seconds (`runtime`, `ramp_time`,
/// `startdelay`) or microseconds (`thinktime`, `thinktime_spin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds.
    Seconds,
    /// Microseconds.
    Micros,
}

/// A time in microseconds: `10` (in `default`), `10us`/`10usec`,
/// `10ms`/`10msec`, `10s`, `10m`, `10h`, `10d` (units case-insensitive).
pub fn parse_time_us(s: &str, default: TimeUnit) -> Result<u64, ValueError> {
    if s.starts_with('(') {
        let unit = if default == TimeUnit::Seconds {
            1e6
        } else {
            1.0
        };
        let v = expression(s, true, unit)?;
        if default == TimeUnit::Seconds && v % 1_000_000 != 0 {
            return err(format!("`{s}` is {v} us; fio keeps whole seconds of an expression for this option (it would cut it to {}s)", v / 1_000_000));
        }
        return u64::try_from(v)
            .map_err(|_| ValueError(format!("`{s}` is {v}; a time cannot be negative")));
    }
    let (v, unit, _) = split_number(s)?;
    if v < 0 {
        return err(format!("`{}`: a time cannot be negative", s.trim()));
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" => match default {
            TimeUnit::Seconds => 1_000_000,
            TimeUnit::Micros => 1,
        },
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        "sec" => {
            return err(format!(
                "`{}`: fio reads `sec` as microseconds; write `{v}s` for seconds",
                s.trim()
            ))
        }
        u => {
            return err(format!(
                "`{}`: unknown time unit `{u}`; use us, ms, s, m, h or d",
                s.trim()
            ))
        }
    };
    (v as u64)
        .checked_mul(mult)
        .ok_or_else(|| ValueError(format!("`{}` is too long", s.trim())))
}

/// A boolean: an integer, 0 false, anything else true (fio's `check_int`).
pub fn parse_bool(s: &str) -> Result<bool, ValueError> {
    let t = s.trim();
    let n = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else {
        t.parse::<u32>().ok()
    };
    n.map(|n| n != 0)
        .ok_or_else(|| ValueError(format!("`{t}` is not a boolean; fio takes 0 or 1")))
}

/// A flag option (`norandommap`, `time_based`, `thread`…): bare means set,
/// `=N` as [`parse_bool`].
pub fn parse_flag(v: Option<&str>) -> Result<bool, ValueError> {
    v.map_or(Ok(true), parse_bool)
}

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
fn split_ddirs(s: &str) -> PerDdir<&str> {
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
fn whole_percent(s: &str) -> Result<u64, std::num::ParseIntError> {
    let t = s.trim();
    if t.is_empty() {
        Ok(0)
    } else {
        t.parse()
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_kb_base_as_fio_reads_them() {
        let b = KbBase::Binary;
        let d = KbBase::Decimal;
        assert_eq!(parse_bytes("4k", b), Ok(4096));
        assert_eq!(parse_bytes("4KB", b), Ok(4096));
        assert_eq!(parse_bytes("4kib", b), Ok(4000));
        assert_eq!(parse_bytes("4ki", b), Ok(4096), "fio reads `ki` as `k`");
        assert_eq!(parse_bytes("4kib", d), Ok(4096));
        assert_eq!(parse_bytes("4k", d), Ok(4000));
        assert_eq!(parse_bytes("1g", b), Ok(1 << 30));
        assert_eq!(parse_bytes("2t", b), Ok(2 << 40));
        assert_eq!(parse_bytes("4096b", b), Ok(4096));
        assert_eq!(parse_bytes("0x1000", b), Ok(4096));
        assert_eq!(parse_size("50%", b), Ok(Size::Percent(50)));
        assert!(parse_size("150%", b).is_err());
        assert!(parse_bytes("1.5g", b)
            .unwrap_err()
            .0
            .contains("unknown unit"));
        assert!(parse_bytes("4 k", b).is_err());
        assert!(
            parse_bytes(" 4k", b).unwrap_err().0.contains("blank"),
            "fio reads ` 4k` as 4"
        );
        assert_eq!(parse_bytes(" 4096", b), Ok(4096));
        assert_eq!(parse_bytes("(8*1024)", b), Ok(8192));
        assert_eq!(parse_time_us("(2*60)", TimeUnit::Seconds), Ok(120_000_000));
        assert_eq!(parse_time_us("(1m)", TimeUnit::Seconds), Ok(60_000_000));
        assert!(parse_time_us("(5ms)", TimeUnit::Seconds).is_err());
        assert_eq!(parse_time_us("(5ms)", TimeUnit::Micros), Ok(5000));
        assert!(parse_bytes("-4k", b).is_err());
        assert_eq!(parse_signed_bytes("-8k", b), Ok(-8192));
    }

    #[test]
    fn times_default_to_the_options_unit() {
        assert_eq!(parse_time_us("10", TimeUnit::Seconds), Ok(10_000_000));
        assert_eq!(parse_time_us("10", TimeUnit::Micros), Ok(10));
        assert_eq!(parse_time_us("5ms", TimeUnit::Seconds), Ok(5000));
        assert_eq!(parse_time_us("2m", TimeUnit::Micros), Ok(120_000_000));
        assert_eq!(parse_time_us("1H", TimeUnit::Micros), Ok(3_600_000_000));
        assert!(parse_time_us("10sec", TimeUnit::Seconds)
            .unwrap_err()
            .0
            .contains("microseconds"));
    }

    #[test]
    fn per_ddir_lists_fill_as_fio_does() {
        let p = |s| parse_per_ddir(s, ListSeps::Any, |v| parse_bytes(v, KbBase::Binary)).unwrap();
        assert_eq!(p("4k"), PerDdir::all(Some(4096)));
        assert_eq!(
            p("4k,8k"),
            PerDdir {
                read: Some(4096),
                write: Some(8192),
                trim: Some(8192)
            }
        );
        assert_eq!(
            p("4k:8k"),
            PerDdir {
                read: Some(4096),
                write: Some(8192),
                trim: Some(8192)
            }
        );
        assert_eq!(
            p(",8k"),
            PerDdir {
                read: None,
                write: Some(8192),
                trim: Some(8192)
            }
        );
        assert_eq!(p("4k,"), PerDdir::all(Some(4096)));
        let r = parse_per_ddir("1k-4k,8k-16k", ListSeps::Comma, |v| {
            parse_range(v, KbBase::Binary)
        })
        .unwrap();
        assert_eq!(r.read, Some((1024, 4096)));
        assert_eq!(r.trim, Some((8192, 16384)));
        assert_eq!(parse_range("16k:4k", KbBase::Binary), Ok((4096, 16384)));
    }

    #[test]
    fn bssplit_fills_missing_shares_and_sorts() {
        let s = parse_bssplit("4k/10:64k/50:32k", KbBase::Binary).unwrap();
        assert_eq!(
            s.read,
            vec![
                BsSplit { bs: 4096, perc: 10 },
                BsSplit {
                    bs: 32768,
                    perc: 40
                },
                BsSplit {
                    bs: 65536,
                    perc: 50
                }
            ]
        );
        assert_eq!(s.trim, s.read);
        let s = parse_bssplit("4k,8k/50:16k", KbBase::Binary).unwrap();
        assert_eq!(
            s.read,
            vec![BsSplit {
                bs: 4096,
                perc: 100
            }]
        );
        assert_eq!(s.write.len(), 2);
        assert!(parse_bssplit("4k/90:8k:16k/20:32k", KbBase::Binary).is_err());
    }

    #[test]
    fn distributions_and_rw_postfixes() {
        let b = KbBase::Binary;
        assert_eq!(
            parse_random_distribution("zipf", b),
            Ok(DistSpec::Zipf {
                theta: 1.1,
                center: None
            })
        );
        assert_eq!(
            parse_random_distribution("pareto:0.3:0.5", b),
            Ok(DistSpec::Pareto {
                h: 0.3,
                center: Some(0.5)
            })
        );
        assert!(parse_random_distribution("zipf:1", b).is_err());
        assert!(parse_random_distribution("normal:100", b).is_err());
        let DistSpec::Zoned(z) = parse_random_distribution("zoned:60/10:30/20:10/70", b).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            z.read[1],
            ZoneSplit {
                access_perc: 30,
                size: 20
            }
        );
        assert!(parse_random_distribution("zoned:60/10:30/20", b)
            .unwrap_err()
            .0
            .contains("90"));
        // fio's examples/rand-zones.fio: the last zone's size is what is left.
        let DistSpec::Zoned(z) = parse_random_distribution("zoned:50/5:30/15:20/", b).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            z.read[2],
            ZoneSplit {
                access_perc: 20,
                size: 80
            }
        );
        assert_eq!(
            parse_bssplit("4k/:8k/50", b).unwrap().read[0],
            BsSplit { bs: 4096, perc: 50 }
        );
        let DistSpec::ZonedAbs(z) = parse_random_distribution("zoned_abs:60/1m:40/2m", b).unwrap()
        else {
            panic!()
        };
        assert_eq!(z.read[1].size, 2 << 20);
        assert_eq!(
            parse_rw("read:-8k", b),
            Ok(RwSpec {
                mode: RwMode::Read,
                seq_nr: 1,
                seq_add: -8192
            })
        );
        assert_eq!(
            parse_rw("randread:8", b),
            Ok(RwSpec {
                mode: RwMode::RandRead,
                seq_nr: 8,
                seq_add: 0
            })
        );
        assert!(parse_rw("randread:0", b).is_err());
        assert_eq!(
            parse_rw("randrw", b).unwrap().mode,
            RwMode::Writes("randrw")
        );
    }
}
