//! The figures of each stream of a multi-stream run (the mixed scenario's
//! f1, f2, f3 in one queue): reads, share, IOPS, bandwidth and the
//! latency percentiles of each, and the total, as its JSON `configs[]`
//! and its table show them.

use std::time::Duration;

use serde::Serialize;

use crate::base::units::{short_ns, short_num};
use crate::measure::latency::Latency;

/// All streams together.
#[derive(Serialize)]
pub struct Total {
    pub ios: u64,
    pub iops: f64,
    pub bw_bytes: f64,
    pub bw_kbs: f64,
}

/// One stream's figures.
#[derive(Serialize)]
pub struct Stream {
    pub stream: &'static str,
    pub ios: u64,
    pub share_pct: f64,
    pub iops: f64,
    pub bw_bytes: f64,
    pub bw_kbs: f64,
    pub lat: Lat,
}

/// A stream's completion latency.
#[derive(Serialize)]
pub struct Lat {
    #[serde(rename = "N")]
    pub n: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    /// Share of reads of at most 2 us, % (the seed's figure for cached reads).
    pub pct_le_2us: f64,
}

/// The figures of streams `names` (latencies `lat`, one histogram each)
/// of a run of `elapsed` reading `bs`-byte blocks, and their total.
pub fn per_stream(
    names: &[&'static str],
    lat: &[Latency],
    bs: u64,
    elapsed: Duration,
) -> (Vec<Stream>, Total) {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let ios: Vec<u64> = lat.iter().map(|l| l.summary().n).collect();
    let total: u64 = ios.iter().sum();
    let bw = |n: u64| n as f64 * bs as f64 / secs;
    let streams = (0..names.len())
        .map(|i| {
            let s = lat[i].summary();
            Stream {
                stream: names[i],
                ios: ios[i],
                share_pct: ios[i] as f64 / total.max(1) as f64 * 100.0,
                iops: ios[i] as f64 / secs,
                bw_bytes: bw(ios[i]),
                bw_kbs: bw(ios[i]) / 1024.0,
                lat: Lat {
                    n: s.n,
                    mean_ns: s.mean_ns,
                    min_ns: s.min_ns,
                    max_ns: s.max_ns,
                    p50_ns: s.at(50.0),
                    p90_ns: s.at(90.0),
                    p99_ns: s.at(99.0),
                    p99_9_ns: s.at(99.9),
                    pct_le_2us: lat[i].pct_at_or_below(2000),
                },
            }
        })
        .collect();
    let total = Total {
        ios: total,
        iops: total as f64 / secs,
        bw_bytes: bw(total),
        bw_kbs: bw(total) / 1024.0,
    };
    (streams, total)
}

/// The headings of [`stream_cells`]' columns.
pub fn header_cells() -> String {
    format!(
        "{:<3} {:>6} {:>8} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "", "share", "IOPS", "bw KB/s", "p50", "p90", "p99", "p99.9", "max", "<=2us"
    )
}

/// A stream's cells of a table row: name, share, IOPS, KB/s, clat p50,
/// p90, p99, p99.9, max, share of reads of at most 2 us.
pub fn stream_cells(st: &Stream) -> String {
    let (l, ns) = (&st.lat, |v: u64| short_ns(v as f64));
    format!(
        "{:<3} {:>5.1}% {:>8} {:>10.0} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6.1}%",
        st.stream,
        st.share_pct,
        short_num(st.iops),
        st.bw_kbs,
        ns(l.p50_ns),
        ns(l.p90_ns),
        ns(l.p99_ns),
        ns(l.p99_9_ns),
        ns(l.max_ns),
        l.pct_le_2us,
    )
}

/// The total's cells, under the first four of [`stream_cells`].
pub fn total_cells(t: &Total) -> String {
    format!(
        "{:<3} {:>6} {:>8} {:>10.0}",
        "all",
        "",
        short_num(t.iops),
        t.bw_kbs
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_rates_and_percentiles_per_stream() {
        let mut lat = vec![Latency::new(), Latency::new()];
        lat[0].record_n(Duration::from_nanos(1500), 3);
        lat[1].record(Duration::from_millis(3));
        let (s, t) = per_stream(&["a", "b"], &lat, 4096, Duration::from_secs(2));
        assert_eq!((t.ios, t.iops, t.bw_bytes), (4, 2.0, 8192.0));
        assert_eq!((s[0].ios, s[0].share_pct, s[0].iops), (3, 75.0, 1.5));
        assert_eq!((s[0].lat.pct_le_2us, s[1].lat.pct_le_2us), (100.0, 0.0));
        assert!((s[1].lat.p99_ns as f64 - 3e6).abs() / 3e6 < 0.01);
    }
}
