//! The mixed scenario's report: its table and JSON document, beside the
//! seed's own figures for each stream and in total.

use nowait::File;
use serde_json::{json, Value};

use crate::base::host::Host;
use crate::base::units::short_ns;
use crate::report::streams::{header_cells, stream_cells, total_cells};

use super::{Args, Ran, STREAMS};

/// A seed figure set for one stream: average bandwidth (KB/s) and its latency in words.
type SeedStream = (f64, &'static str);

/// The seed's "before" (thread pool only) figures, f1..f3.
const SEED_BEFORE: [SeedStream; 3] = [
    (969.54, "49.86% 1-2 s, 17.27% 0.75-1 s, 9.42% >=2 s"),
    (273.28, "46.56% 1-2 s, 24.59% 0.75-1 s"),
    (174575.10, "50.34% 50-100 us, 10.82% 20-50 us, 8.73% 1-2 ms"),
];

/// The seed's "after" (preadv2 fast read before submit) figures, f1..f3.
const SEED_AFTER: [SeedStream; 3] = [
    (2276.69, "70.63% <=2 us, 25.53% >=2 s"),
    (249.83, "52.18% 1-2 s, 20.49% 0.75-1 s"),
    (177366.50, "64.04% <=2 us, 14.27% 1-2 ms"),
];

/// The seed's aggregate bandwidth, KB/s: before, after.
const SEED_TOTAL_KBS: (f64, f64) = (174669.0, 177339.0);

/// The seed's figures of a part (`before`, `after`): per stream, and the total KB/s.
fn seed(part: Option<&str>) -> Option<(&'static [SeedStream; 3], f64)> {
    match part? {
        "before" => Some((&SEED_BEFORE, SEED_TOTAL_KBS.0)),
        _ => Some((&SEED_AFTER, SEED_TOTAL_KBS.1)),
    }
}

pub(super) fn table(a: &Args, results: &[Ran]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{:<26} {} | seed {:<6} {:>10}  latency",
        "configuration",
        header_cells(),
        "",
        "bw KB/s"
    );
    let ns = |v: u64| short_ns(v as f64);
    for r in results {
        let r = match r {
            Ran::Config(r) => r,
            Ran::Skipped { name, skipped } => {
                let _ = writeln!(s, "{name:<26} skipped: {skipped}");
                continue;
            }
        };
        let seed = seed(r.seed_part);
        for (i, st) in r.streams.iter().enumerate() {
            let seed_cols = match (r.seed_part, seed) {
                (Some(when), Some((ss, _))) => {
                    format!("{:<6} {:>10.0}  {}", when, ss[i].0, ss[i].1)
                }
                _ => format!("{:<6} {:>10}  {}", "-", "-", "(no seed figure)"),
            };
            let _ = writeln!(
                s,
                "{:<26} {} | seed {seed_cols}",
                if i == 0 { r.name.as_str() } else { "" },
                stream_cells(st)
            );
        }
        let seed_total = seed.map_or("-".to_string(), |(_, t)| format!("{t:.0}"));
        let _ = writeln!(
            s,
            "{:<26} {} | usr {:.1}% sys {:.1}% ctx {} syscalls {} | seed total {seed_total} KB/s",
            "",
            total_cells(&r.total),
            r.usr_cpu,
            r.sys_cpu,
            r.ctx,
            r.syscalls,
        );
        for line in &r.pool_lines {
            let _ = writeln!(s, "{:<26} {line}", "");
        }
        if a.verify {
            let _ = writeln!(
                s,
                "{:<26} verify: {} reads checked, all bytes match",
                "", r.verified_ios
            );
        }
    }
    // The seed's claim, on our numbers: same bandwidth, f1 latency collapses.
    let find = |part: &str| {
        results.iter().find_map(|r| match r {
            Ran::Config(c) if c.seed_part == Some(part) => Some(c),
            _ => None,
        })
    };
    if let (Some(before), Some(after)) = (find("before"), find("after")) {
        let (b, f) = (&before.streams[0].lat, &after.streams[0].lat);
        let _ = writeln!(
            s,
            "\n{} vs {}: total bandwidth {:+.1}% (seed {:+.1}%); f1 p50 {} -> {}, p99 {} -> {}; \
             f1 reads <=2us {:.1}% -> {:.1}% (seed 0% -> 70.63%)",
            after.name,
            before.name,
            (after.total.bw_bytes / before.total.bw_bytes.max(1e-9) - 1.0) * 100.0,
            (SEED_TOTAL_KBS.1 / SEED_TOTAL_KBS.0 - 1.0) * 100.0,
            ns(b.p50_ns),
            ns(f.p50_ns),
            ns(b.p99_ns),
            ns(f.p99_ns),
            b.pct_le_2us,
            f.pct_le_2us,
        );
    }
    let _ = writeln!(
        s,
        "\nLatency: from just before the read is pushed to the reap that returns it (fio's clat \
         for the seed). The seed ran 10 min on ext4 over RAID0 with fio's posixaio engine; its \
         bandwidth is dominated by f3."
    );
    s
}

pub(super) fn json_report(a: &Args, files: &[File], results: &[Ran]) -> Value {
    let seed_streams = |ss: &[SeedStream; 3]| -> Vec<Value> {
        (0..3)
            .map(|i| json!({"stream": STREAMS[i], "bw_kbs": ss[i].0, "lat": ss[i].1}))
            .collect()
    };
    json!({
        "scenario": "mixed",
        "host": Host::of(files.first().map(|f| f.path())),
        "bs": a.bs,
        "iodepth": a.iodepth,
        "runtime_ms": a.runtime.as_millis() as u64,
        "mix_pct": { "f1": a.mix[0], "f2": a.mix[1], "f3": a.mix[2] },
        "zipf": a.zipf,
        "verify": a.verify,
        "files": files.iter().enumerate().map(|(i, f)| json!({
            "stream": STREAMS[i],
            "filename": f.path().display().to_string(),
            "size": a.sizes[i],
            "fs": f.fs(),
        })).collect::<Vec<_>>(),
        "configs": results,
        "seed": {
            "source": "003_445ef0f4a2de0632.txt",
            "before": { "streams": seed_streams(&SEED_BEFORE), "total_kbs": SEED_TOTAL_KBS.0 },
            "after": { "streams": seed_streams(&SEED_AFTER), "total_kbs": SEED_TOTAL_KBS.1,
                       "f1_pct_le_2us": 70.63 },
        },
    })
}
