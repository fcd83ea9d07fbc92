//! The value parsers of the options: sizes with fio's suffixes (powers of
//! 1024), times (seconds unless a unit says otherwise), counts and ranges,
//! booleans, engines. Each error says
//! what the value should look like; the caller adds the option's name.

use std::time::Duration;

use nowait::{BackendKind, NowaitMode};

use crate::base::args::bool_word;

pub fn nonempty(v: &str) -> Result<&str, String> {
    if v.trim().is_empty() {
        Err("needs a value".into())
    } else {
        Ok(v.trim())
    }
}

fn negative(v: &str) -> Option<String> {
    v.trim()
        .starts_with('-')
        .then(|| format!("'{v}' is negative; give a number of 0 or more"))
}

/// An engine name: nowait's, or fio's alias (`io_uring`, `libaio`, `psync`).
pub fn parse_engine(v: &str) -> Result<BackendKind, String> {
    v.trim().parse::<BackendKind>().map_err(|e| {
        let known: Vec<&str> = BackendKind::ALL.iter().map(|k| k.as_str()).collect();
        format!("{e}; this build has {}", known.join(", "))
    })
}

/// An engine with the pool's `RWF_NOWAIT` mode (`pool:off`, `pool` =
/// `pool:adaptive`, `uring`); only the pool takes a mode.
pub fn parse_engine_mode(v: &str) -> Result<(BackendKind, Option<NowaitMode>), String> {
    let (engine, mode) = match v.split_once(':') {
        Some((e, m)) => (e, Some(m)),
        None => (v, None),
    };
    let k = parse_engine(engine)?;
    let mode = match (k, mode) {
        (BackendKind::Pool, Some(m)) => Some(m.parse::<NowaitMode>()?),
        (BackendKind::Pool, None) => Some(NowaitMode::Adaptive),
        (_, Some(_)) => return Err(format!("'{v}': only pool takes a :MODE")),
        (_, None) => None,
    };
    Ok((k, mode))
}

/// A size: bytes with an optional k/m/g/t/p suffix in powers of 1024 (fio's
/// default `kb_base`), `KiB`/`kb` spellings too.
pub fn parse_size(v: &str) -> Result<u64, String> {
    let v = v.trim();
    if v.starts_with('-') {
        return Err(format!("'{v}' is negative; give a size such as 4k or 1g"));
    }
    let lower = v.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "'{v}' is not a size; give bytes with an optional k, m, g or t suffix (e.g. 4k, 1g)"
        ));
    }
    let mult: u64 = match unit {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        _ => {
            return Err(format!(
                "'{v}' has an unknown unit '{unit}'; use k, m, g or t (e.g. 4k, 1g)"
            ))
        }
    };
    let n: u64 = num.parse().map_err(|_| format!("'{v}' is too large"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{v}' is too large"))
}

/// A count: a plain non-negative integer.
pub fn parse_count(v: &str) -> Result<u64, String> {
    let v = v.trim();
    if let Some(e) = negative(v) {
        return Err(e);
    }
    v.parse()
        .map_err(|_| format!("'{v}' is not a whole number (e.g. 32)"))
}

/// A count from `lo` to `hi`.
pub fn parse_in(v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    if v.trim().starts_with('-') {
        return Err(format!("'{}' is negative; {}", v.trim(), range(lo, hi)));
    }
    in_range(parse_count(v)?, lo, hi)
}

/// `n` if it is from `lo` to `hi`.
pub fn in_range(n: u64, lo: u64, hi: u64) -> Result<u64, String> {
    match n {
        n if (lo..=hi).contains(&n) => Ok(n),
        n if hi == u64::MAX => Err(format!("{n} is too small; {}", range(lo, hi))),
        n => Err(format!("{n} is out of range; {}", range(lo, hi))),
    }
}

/// The values from `lo` to `hi`, in words.
fn range(lo: u64, hi: u64) -> String {
    match hi {
        u64::MAX => format!("use at least {lo}"),
        _ => format!("use {lo} to {hi}"),
    }
}

/// An integer in decimal or `0x` hex (for seeds).
pub fn parse_u64(v: &str) -> Result<u64, String> {
    let v = v.trim();
    if let Some(e) = negative(v) {
        return Err(e);
    }
    let r = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => v.parse(),
    };
    r.map_err(|_| format!("'{v}' is not a whole number (decimal or 0x hex)"))
}

/// A duration: plain numbers are seconds (fio's default unit); suffixes us, ms, s, m, h.
pub fn parse_time(v: &str) -> Result<Duration, String> {
    let v = v.trim();
    if let Some(e) = negative(v) {
        return Err(e);
    }
    let lower = v.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let n: f64 = num.parse().map_err(|_| {
        format!("'{v}' is not a time; give seconds or a suffix us, ms, s, m, h (e.g. 10s)")
    })?;
    let secs = match unit {
        "" | "s" | "sec" => n,
        "us" | "usec" => n / 1e6,
        "ms" | "msec" => n / 1e3,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86400.0,
        _ => {
            return Err(format!(
                "'{v}' has an unknown unit '{unit}'; use us, ms, s, m or h"
            ))
        }
    };
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("'{v}' is too long"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration of more than 0.
pub fn parse_runtime(v: &str) -> Result<Duration, String> {
    if v.trim().starts_with('-') {
        return Err(format!(
            "'{}' is negative; give a time of more than 0 (e.g. 10s)",
            v.trim()
        ));
    }
    match parse_time(v)? {
        d if d.is_zero() => Err("must be more than 0 (e.g. 10s)".into()),
        d => Ok(d),
    }
}

/// A boolean: 1/0, true/false, yes/no, on/off.
pub fn parse_bool(v: &str) -> Result<bool, String> {
    bool_word(v).ok_or_else(|| format!("'{v}' is not a boolean; use 1 or 0"))
}

/// A queue depth, 1 to the engine's maximum.
pub fn parse_depth(v: &str) -> Result<usize, String> {
    parse_in(v, 1, nowait::MAX_DEPTH as u64).map(|n| n as usize)
}

/// `--output-format` of a scenario: true for `json`, false for `normal`.
pub fn parse_json_format(value: &str) -> Result<bool, String> {
    match value {
        "json" => Ok(true),
        "normal" => Ok(false),
        _ => Err("use normal or json".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_fio_suffixes() {
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1t").unwrap(), 1 << 40);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("k").is_err());
    }

    #[test]
    fn times_default_to_seconds() {
        assert_eq!(parse_time("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_time("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_time("250us").unwrap(), Duration::from_micros(250));
    }
}
