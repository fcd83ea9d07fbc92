//! The value parsers of the options: sizes with fio's suffixes (powers of
//! 1024), times (seconds unless a unit says otherwise), counts and ranges,
//! booleans, engines, fio's `filename` and `bs` lists. Each error says
//! what the value should look like; the caller adds the option's name.

use std::path::PathBuf;
use std::time::Duration;

use nowait::{BackendKind, NowaitMode};

use crate::base::args::bool_word;

/// A `filename` as fio reads it: files separated by `:`, a colon of a name
/// written `\\:`. Each must be named (an empty one is an error).
pub fn split_filenames(v: &std::path::Path) -> Result<Vec<PathBuf>, String> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let bytes = v.as_os_str().as_bytes();
    let mut parts: Vec<Vec<u8>> = vec![Vec::new()];
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'\\', Some(b':')) => {
                parts.last_mut().expect("one part").push(b':');
                i += 2;
                continue;
            }
            (b':', _) => parts.push(Vec::new()),
            (b, _) => parts.last_mut().expect("one part").push(b),
        }
        i += 1;
    }
    if parts.iter().any(Vec::is_empty) {
        return Err(if parts.len() == 1 {
            "needs a value".into()
        } else {
            format!(
                "'{}' names an empty file between colons (fio separates several files \
                 with ':'; write a colon that is part of a name as '\\:')",
                v.display()
            )
        });
    }
    Ok(parts
        .into_iter()
        .map(|p| PathBuf::from(std::ffi::OsString::from_vec(p)))
        .collect())
}

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

/// fio's `bs=R[,W[,T]]`: the read size (an empty R is fio's default,
/// 4k); the write and trim sizes are checked and otherwise ignored, since
/// nowait only reads.
pub fn fio_read_bs(v: &str) -> Result<u64, String> {
    let mut parts = v.split(',').map(str::trim);
    let read = match parts.next() {
        Some("") | None => 4096,
        Some(r) => in_range(parse_size(r)?, 1, nowait::MAX_READ as u64)?,
    };
    let rest: Vec<&str> = parts.collect();
    if rest.len() > 2 {
        return Err(format!(
            "{} sizes given; fio's bs takes at most three (read,write,trim)",
            rest.len() + 1
        ));
    }
    for w in rest.into_iter().filter(|w| !w.is_empty()) {
        parse_size(w).map_err(|e| format!("write/trim size '{w}': {e}"))?;
    }
    Ok(read)
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

/// fio's value parsers (`model/fio_ini/value.rs`) with the job's
/// `kb_base`, their errors in words.
pub mod fio {
    use std::time::Duration;

    use crate::model::fio_ini::value::{
        self, parse_per_ddir, KbBase, ListSeps, Size, TimeUnit, ValueError,
    };

    fn words<T>(r: Result<T, ValueError>) -> Result<T, String> {
        r.map_err(|e| e.0)
    }

    /// An integer with fio's units (`16`, `4k`, `0x10`), no percentage.
    pub fn bytes(kb: KbBase, v: &str) -> Result<u64, String> {
        words(value::parse_bytes(v, kb))
    }

    /// An integer from `lo` to `hi` (fio's `INT` options take units too).
    pub fn int(kb: KbBase, v: &str, lo: u64, hi: u64) -> Result<u64, String> {
        super::in_range(bytes(kb, v)?, lo, hi)
    }

    /// A size or a percentage of the file.
    pub fn size(kb: KbBase, v: &str) -> Result<Size, String> {
        words(value::parse_size(v, kb))
    }

    /// A signed byte count (`offset_increment` may not be negative; holes may).
    pub fn signed(kb: KbBase, v: &str) -> Result<i64, String> {
        words(value::parse_signed_bytes(v, kb))
    }

    /// A time whose plain numbers are seconds (`runtime`, `startdelay`).
    pub fn secs(v: &str) -> Result<Duration, String> {
        words(value::parse_time_us(v, TimeUnit::Seconds)).map(Duration::from_micros)
    }

    /// A time whose plain numbers are microseconds (`thinktime`).
    pub fn micros(v: &str) -> Result<u64, String> {
        words(value::parse_time_us(v, TimeUnit::Micros))
    }

    /// A boolean: fio's integers (0 false, else true), and nowait's words
    /// (true/false, yes/no, on/off).
    pub fn flag(v: &str) -> Result<bool, String> {
        match crate::base::args::bool_word(v) {
            Some(b) => Ok(b),
            None => words(value::parse_bool(v))
                .map_err(|_| format!("`{}` is not a boolean; use 1 or 0", v.trim())),
        }
    }

    /// The read value of a per-direction list (`rate=1m,2m`: 1m): `None`
    /// when the list gives writes or trims only.
    pub fn read_of<T: Clone>(
        v: &str,
        seps: ListSeps,
        parse: impl FnMut(&str) -> Result<T, ValueError>,
    ) -> Result<Option<T>, String> {
        words(parse_per_ddir(v, seps, parse)).map(|d| d.read)
    }

    /// The read value of an integer list (`rate=1m,2m`, `blockalign`).
    pub fn read_bytes(kb: KbBase, v: &str) -> Result<Option<u64>, String> {
        read_of(v, ListSeps::Any, |x| value::parse_bytes(x, kb))
    }

    /// A time range `lo-hi` (seconds unless a unit says otherwise), or one time.
    pub fn secs_range(v: &str) -> Result<(Duration, Duration), String> {
        let t = v.trim();
        match t.split_once('-').filter(|(a, _)| !a.is_empty()) {
            Some((a, b)) => {
                let (a, b) = (secs(a)?, secs(b)?);
                Ok(if a <= b { (a, b) } else { (b, a) })
            }
            None => secs(t).map(|d| (d, d)),
        }
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
