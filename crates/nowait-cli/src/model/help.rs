//! Help text: `nowait bench --help`, with every option's entry drawn from
//! the table (`model/defs.rs`), wrapped to 78 columns.

use crate::model::defs::all;

/// Help for `nowait bench`.
pub fn bench() -> String {
    format!(
        "\
nowait bench — nowait's own read loop, with fio's option names and JSON shape

USAGE:
    nowait bench [OPTIONS]

Runs what fio cannot drive: nowait's queue on every backend, the pool's
RWF_NOWAIT cache-first path, nowait's cache policies, and --peak. The basic
options carry fio's names and meanings (filename, size, rw, bs, iodepth,
direct, runtime, time_based, numjobs, ioengine, invalidate, norandommap,
randseed), and --output-format=json prints fio's JSON shape (jobs[].read:
io_bytes, bw_bytes, bw, iops, runtime, clat_ns/slat_ns/lat_ns with
percentiles; usr_cpu, sys_cpu, ctx), so scripts written against fio's JSON
keep working. fio job files run in fio itself, with nowait's engine:
`nowait fio JOBFILE`. An option nowait does not have is an error naming it,
never ignored.

Options take --name=value or --name value. Options marked [comma list
sweeps] take lists (--iodepth 1,2,4,8,16,32 --ioengine uring,sync): every
combination runs and one table is printed.

OPTIONS:
{}
  -h, --help
      This help.

MEASURES:
    IOPS, bandwidth, completion latency (clat: from the return of the submit
    call to the reap that returned the read, as fio's io_uring and libaio
    engines count it; at iodepth 1, where the reap's call also submits the
    read, from just before that call, as fio's lat), submission latency
    (slat) and total latency (lat), in fio's histogram buckets with fio's
    percentiles; CPU of the reading threads (usr_cpu, sys_cpu, ctx) and of
    the whole process (the engine's workers, io-wq and SQPOLL included:
    jobs[].nowait.usr_us/sys_us); reads per system call as the engine counts
    them; the engine's path and counters.

EXAMPLES:
    nowait bench --filename=/tmp/f --size=1g --rw=randread --iodepth=32 --runtime=10
    nowait bench --filename=/tmp/f --size=1g --rw=randread --iodepth 1,4,16,32 \\
        --ioengine uring,sync --runtime=3
    nowait bench --filename=/tmp/f --size=1g --ioengine pool --nowait off,adaptive --rw=randread
    nowait bench --filename=/tmp/f --size=1g --peak --runtime=5
    nowait bench --filename=/tmp/f --rw=randread --iodepth=32 --runtime=5 --compare-fio --abba=3
    nowait bench --filename=/tmp/f --rw=randread --runtime=5 --output-format=json

EXIT STATUS:
    0 success, 1 a run failed (I/O error, data mismatch, fio failed),
    2 usage error (the message names the option at fault), 130 interrupted:
    Ctrl-C (SIGINT) stops the run and prints the results so far; a second
    Ctrl-C stops at once
",
        options()
    )
}

/// The help text of every option, from the table.
pub fn options() -> String {
    let mut s = String::new();
    for o in all() {
        let head = if o.arg.is_empty() {
            format!("--{}", o.name)
        } else {
            format!("--{}={}", o.name, o.arg)
        };
        let sweep = if o.sweep { " [comma list sweeps]" } else { "" };
        s.push_str(&format!("  {head}   (default {}){sweep}\n", o.default));
        s.push_str(&wrap(o.help, 6, 78));
    }
    s
}

fn wrap(text: &str, indent: usize, width: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    let mut line = pad.clone();
    for w in text.split_whitespace() {
        if line.len() + w.len() + 1 > width && !line.trim().is_empty() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = pad.clone();
        }
        line.push_str(w);
        line.push(' ');
    }
    if !line.trim().is_empty() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_mentions_every_option() {
        let h = options();
        for o in all() {
            assert!(h.contains(&format!("--{}", o.name)), "{}", o.name);
        }
    }
}
