//! Units and numbers as reports print them: sizes in powers of 1024
//! (`4 KiB`), counts (`12.3k`), latencies in the unit that suits them
//! (`850ns`, `12.3us`), and ratios that are 0 rather than NaN.

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

    #[test]
    fn numbers_read_well() {
        assert_eq!(short_num(950.0), "950");
        assert_eq!(short_num(53_100.0), "53.1k");
        assert_eq!(short_num(1_250_000.0), "1.25M");
        assert_eq!(short_ns(850.0), "850ns");
        assert_eq!(short_ns(12_300.0), "12.3us");
    }
}
