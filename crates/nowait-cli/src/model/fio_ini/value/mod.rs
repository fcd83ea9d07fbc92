//! fio's option values: sizes with `kb_base`, times, percentages, booleans,
//! ranges, per-direction lists, `bssplit`, `random_distribution` and `rw`,
//! read as fio's `parse.c` and `options.c` read them.
//!
//! One deliberate difference: where fio would quietly read a value as
//! something other than what was written (`1.5g` as 1 byte, `10sec` as 10
//! microseconds, `4 k` as 4, `1kx` as 1k), these parsers answer an error that
//! says so, instead of running a different workload.

mod dist;
mod list;
mod rw;

pub use dist::{parse_random_distribution, DistSpec, ZoneSplit, SEQUENCE_MAX};
pub use list::{
    parse_bssplit, parse_per_ddir, parse_range, BsSplit, ListSeps, PerDdir, BSSPLIT_MAX,
};
pub use rw::{parse_rw, RwMode, RwSpec};

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

#[cfg(test)]
mod tests;
