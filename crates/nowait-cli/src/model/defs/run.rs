//! Settings of the invocation rather than of a job (command line only):
//! output, comparisons with fio, `--peak`, job-file section selection.

use super::{Apply, Opt};
#[cfg(test)]
use crate::model::opt::Example;
use crate::model::values::{parse_bool, parse_in};

/// The invocation settings.
pub static OPTIONS: &[Opt] = &[
    run_path!(
        "output",
        "FILE",
        "stdout",
        "Write the report to FILE instead of standard output. FILE is opened (created) \
               before anything runs, so a destination that cannot be written is an error \
               up front, as in fio.",
        |s, v| s.output = Some(v),
        example: "/tmp/o" => |s| s.output.as_deref() == Some("/tmp/o".as_ref())
    ),
    run_path!(
        "plot",
        "FILE.svg",
        "none",
        "Draw IOPS and p99 completion latency against queue depth, one line per \
               engine, as an SVG (meant for --iodepth sweeps). Like --output, FILE is \
               opened before anything runs.",
        |s, v| s.plot = Some(v),
        example: "/tmp/p.svg" => |s| s.plot.as_deref() == Some("/tmp/p.svg".as_ref())
    ),
    run!(
        "compare-fio" | "compare_fio",
        "",
        "0",
        "Also run fio with the same job, alternating with ours, and print both with \
               the ratio (needs fio: apt-get install fio).",
        |s, v| s.compare_fio = parse_bool(v)?,
        example: "1" => |s| s.compare_fio
    ),
    run!(
        "compare-rounds",
        "INT",
        "1",
        "With --compare-fio: run ours then fio this many times per job, alternating, \
               and report each side's median round (a shared disk is noisy).",
        |s, v| s.compare_rounds = parse_in(v, 1, 100)? as usize,
        example: "3" => |s| s.compare_rounds == 3
    ),
    run!(
        "fio-timeout" | "fio_timeout",
        "SECS|auto",
        "auto",
        "With --compare-fio: end a fio run that has not ended after this long \
               (SIGTERM, then SIGKILL 5 s later), report it as failed with fio's version and \
               print nowait's results all the same; 0 waits without limit. auto: for jobs \
               bounded by runtime, twice the sum over stonewalled groups of the longest \
               startdelay + ramp_time + runtime, plus 60 s; for jobs that end when their size \
               is read, 10 times nowait's own run of the same jobs (fio within 10x of nowait \
               on one workload) plus 60 s, and 10 minutes before nowait has run them (--abba \
               starts with fio).",
        |s, v| {
            s.fio_timeout = match v.trim() {
                "auto" => None,
                t => Some(crate::model::values::parse_time(t)?),
            }
        },
        example: "90" => |s| s.fio_timeout == Some(std::time::Duration::from_secs(90))
    ),
    run!(
        "abba",
        "SETS",
        "0",
        "Compare with fio (implies --compare-fio) in ABBA order: per set fio, nowait, \
               nowait, fio, so drift of a shared disk falls on both alike. Reports every run, \
               each side's median and spread, and the ratio of the medians, which is the \
               headline ratio (text, table, JSON iops_ratio). Use 3 or more sets for \
               anything disk-bound.",
        |s, v| {
            s.abba = parse_in(v, 0, 100)? as usize;
            s.compare_fio |= s.abba > 0;
        },
        example: "3" => |s| s.compare_fio && s.abba == 3
    ),
    run!(
        "peak",
        "",
        "0",
        "Peak IOPS, like fio's t/io_uring: a lean loop with registered files and \
               buffers, direct reads, random offsets, iodepth 128, batches of 32 submitted \
               per call, runtime 10s (each overridable), no latency histogram; prints IOPS \
               every second and reads per submit and per reap call.",
        |s, v| s.peak = parse_bool(v)?,
        example: "1" => |s| s.peak
    ),
    run!(
        "section",
        "NAME",
        "every job",
        "Run only this job of the first job file (repeatable); its global sections \
               still apply, as in fio.",
        |s, v| s.sections.push(crate::model::values::nonempty(v)?.to_string()),
        example: "a" => |s| s.sections == ["a"]
    ),
    run!(
        "exclude-section" | "exclude_section",
        "NAME",
        "none",
        "Skip this job in every job file (repeatable; nowait's own).",
        |s, v| s.exclude_sections.push(crate::model::values::nonempty(v)?.to_string()),
        example: "b" => |s| s.exclude_sections == ["b"]
    ),
    run!(
        "like-fio" | "like_fio",
        "VERSION",
        "3.35 and later",
        "Follow this fio version's rules where fio versions differ: fio before 3.35 \
               seeds random offsets from a constant under randrepeat=1 whatever randseed says \
               (Debian 12 ships 3.33). --compare-fio sets it to the fio it runs.",
        |s, v| {
            let t = v.trim().trim_start_matches("fio-");
            let mut it = t.split('.');
            let (Some(a), Some(b)) = (it.next(), it.next()) else {
                return Err(format!("'{v}' is not a fio version; give one such as 3.33"));
            };
            let n = |x: &str| {
                x.parse::<u32>()
                    .map_err(|_| format!("'{v}' is not a fio version; give one such as 3.33"))
            };
            s.like_fio = Some(crate::model::job::FioVersion {
                major: n(a)?,
                minor: n(b)?,
            });
        },
        example: "3.33" => |s| s.like_fio == Some(crate::model::job::FioVersion { major: 3, minor: 33 })
    ),
];
