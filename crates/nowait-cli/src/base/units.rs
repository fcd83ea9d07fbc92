//! Units and numbers as reports print them: sizes in powers of 1024
//! (`4 KiB`), counts (`12.3k`), latencies in the unit that suits them
//! (`850ns`, `12.3us`), fio's `num2str` (`1024k`, `4000MiB/s`), and
//! ratios that are 0 rather than NaN.

/// Human size: 4.0 GiB, 512 MiB, 4 KiB.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else if (v - v.round()).abs() < 0.05 {
        format!("{:.0} {}", v, UNITS[u])
    } else {
        format!("{:.1} {}", v, UNITS[u])
    }
}

/// 950, 12.3k, 1.25M.
pub fn short_num(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if x >= 1e3 {
        format!("{:.2}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// A latency in the unit that suits it: 850ns, 12.3us, 4.56ms.
pub fn short_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}us", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// What a number counts, for [`num2str`]'s unit (fio's `N2S_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum N2s {
    /// No unit.
    None,
    /// Bytes (`B`).
    Byte,
    /// Bytes per second (`B/s`).
    BytePerSec,
}

/// fio's `num2str`: `num` (counted in units of `base`) in at most `maxlen`
/// digits (the point included), with SI (`pow2` false: k, M, G) or IEC
/// (Ki, Mi, Gi) prefixes and fio's rounding, so that reports print
/// `IOPS=1024k`, `BW=4000MiB/s (4194MB/s)` as fio does.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, unit: N2s) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefixes = if pow2 { IEC } else { SI };
    let unit = match unit {
        N2s::None => "",
        N2s::Byte => "B",
        N2s::BytePerSec => "B/s",
    };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = 0;
    let mut b = base;
    while b > 1 {
        b /= thousand;
        post += 1;
    }
    let digits = |n: u64| n.to_string().len();
    let (mut num, mut modulo, mut carry) = (num, None, false);
    while post < SI.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= SI.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let len = digits(num);
    if maxlen as i64 - len as i64 <= 1 {
        return format!("{}{}{unit}", num + u64::from(carry), prefixes[post]);
    }
    let decimals = maxlen - len - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefixes[post])
}

/// `a / b`, 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(4 << 30), "4 GiB");
        assert_eq!(human_bytes(1536 << 20), "1.5 GiB");
        assert_eq!(human_bytes(12), "12 B");
    }

    /// fio's own outputs for the same numbers.
    #[test]
    fn num2str_as_fio() {
        assert_eq!(num2str(1_024_000, 4, 1, false, N2s::None), "1024k");
        assert_eq!(
            num2str(4_194_304_000, 4, 1, true, N2s::BytePerSec),
            "4000MiB/s"
        );
        assert_eq!(
            num2str(4_194_304_000, 4, 1, false, N2s::BytePerSec),
            "4194MB/s"
        );
        assert_eq!(num2str(4_194_304, 4, 1, true, N2s::Byte), "4096KiB");
        assert_eq!(num2str(4_194_304, 4, 1, false, N2s::Byte), "4194kB");
        assert_eq!(num2str(917_343, 4, 1, false, N2s::None), "917k");
        assert_eq!(
            num2str(3_757_000_000, 4, 1, false, N2s::BytePerSec),
            "3757MB/s"
        );
        assert_eq!(num2str(9668, 6, 1, false, N2s::None), "9668");
        assert_eq!(num2str(12_345, 4, 1, false, N2s::None), "12.3k");
        assert_eq!(num2str(19_999, 4, 1, false, N2s::None), "20.0k");
        assert_eq!(num2str(1_999_999, 4, 1, false, N2s::None), "2000k");
        assert_eq!(num2str(0, 4, 1, false, N2s::None), "0");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(short_num(950.0), "950");
        assert_eq!(short_num(53_100.0), "53.1k");
        assert_eq!(short_num(1_250_000.0), "1.25M");
        assert_eq!(short_ns(850.0), "850ns");
        assert_eq!(short_ns(12_300.0), "12.3us");
    }
}
