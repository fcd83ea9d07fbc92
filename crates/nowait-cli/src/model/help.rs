//! Help text: `nowait bench --help`, with every option's entry drawn from
//! the table (`model/defs.rs`), wrapped to 78 columns.

use crate::model::defs::all;

/// Help for `nowait bench`.
pub fn bench() -> String {
    format!(
        "\
nowait bench — measure file reads like fio, with fio's option names

USAGE:
    nowait bench [OPTIONS] [JOBFILE...]

Options take --name=value or --name value. JOBFILEs are fio job files
([global] plus one section per job; sections run one after another);
command-line options apply on top of every job. The command line is one
job: a second --name is an error (fio would start a second job there); put
several jobs in a job file. An option nowait does not support is an error
naming it, never ignored.

Options marked [comma list sweeps] take lists (--iodepth 1,2,4,8,16,32
--ioengine uring,sync): every combination runs and one table is printed.

OPTIONS:
{}
  -h, --help
      This help.

DEFAULTS:
    fio's, so one command line is one workload in both tools:
    iodepth_batch_submit=1 (each read handed over as soon as its slot is
    free), iodepth_batch_complete_min=1, iodepth_batch_complete_max=iodepth
    (each reap takes every completion there is), iodepth_low=iodepth (refill
    at once), registerfiles=0, fixedbufs=0, hipri=0, sqthread_poll=0,
    invalidate=1, fadvise_hint=1, norandommap=0, rw=read, bs=4k, iodepth=1,
    direct=0, numjobs=1, uncached=0 (cache=keep). Not fio's: ioengine=uring
    (fio: psync), randseed, and nowait's own options (nowait, pool_workers,
    small_direct, memory_inline, inline_window, spin_us, submit, cache).
    nowait's faster modes stay options: --iodepth_batch_submit=0 (every free
    slot in one call), --registerfiles=1, --fixedbufs, and --peak, which
    sets them all. At
    iodepth=1 the read rides on the reap's io_uring_enter (one system call
    per read; fio's engine makes two).

MEASURES:
    As fio measures them: IOPS, bandwidth, completion latency (clat: from
    the return of the submit call to the reap that returned the read, as
    fio's io_uring and libaio engines count it; at iodepth 1, where the call
    that waits for the read also submits it, and for sync, from just before
    that call, so there it matches fio's lat (and psync's clat)), submission
    latency (slat: from just before the read's own push to the return of the
    submit call, so with --iodepth_batch_submit > 1 it holds the later reads'
    pushes of its batch, as fio's; none where clat holds the submission, at
    iodepth 1, so slat + clat = lat as in fio), total latency (lat: from just
    before the read's own push to the reap); each in fio's histogram
    buckets, with fio's percentiles (percentile_list) and exact min, max,
    mean and deviation; bandwidth and IOPS sampled every bwavgtime and
    iopsavgtime ms; reads by queue depth, reads per submit and reap call,
    clat in fio's ns/us/ms buckets; CPU of each reading thread (fio's
    usr/sys/ctx) and of the whole process (every thread, the engine's
    workers, io-wq and SQPOLL included: nowait's `process cpu` line and
    jobs[].nowait.usr_us/sys_us); reads per system call as counted by the
    engine; the block devices' statistics (/sys/block/DEV/stat). Logs
    (write_lat_log, write_bw_log, write_iops_log) and steady state
    (steadystate) work as fio's.

OUTPUT:
    --output-format takes fio's formats, several with commas, printed in
    fio's order: terse (one line per reported job, fio's fields), json (or
    json+ with each latency's histogram), normal: fio's text (each job's
    line, a block per reported job, `Run status group N (all jobs)` lines,
    `Disk stats (read/write)`), with nowait's lines after each job's block
    (process CPU, system calls, the engine's path and counters, the data,
    fio's side when compared) and a table of all jobs when there are
    several or fio was compared. Every job and every numjobs clone is
    reported on its own, as fio does; group_reporting folds a group into
    one report. The forms are fio 3.42's; fio 3.33 prints `latency :
    target=0, window=0`, no `sectors=` in disk lines, no job_start,
    latency_target_ns or latency_window_us in JSON, and has no lat steady
    state and no log_max_value=both.

EXAMPLES:
    nowait bench --filename=/tmp/f --size=1g --rw=randread --iodepth=32 --runtime=10
    nowait bench --filename=/tmp/f --size=1g --rw=randread --iodepth 1,4,16,32 \\
        --ioengine uring,sync --runtime=3 --plot qd.svg
    nowait bench --filename=/tmp/f --rw=randread --iodepth=32 --invalidate=0 --compare-fio
    nowait bench --filename=/tmp/f --rw=randread --iodepth=32 --direct=1 --runtime=5 --abba=3
    nowait bench seed.fio --output-format=json --output result.json
    nowait bench --filename=/tmp/f --rw=randread --numjobs=4 --group_reporting \\
        --write_lat_log=run --log_avg_msec=1000 --output-format=normal,json+ --runtime=10
    nowait bench --filename=/tmp/f --rw=randread --time_based --runtime=300 \\
        --ss=iops_slope:0.1% --ss_dur=30 --output-format=terse

EXIT STATUS:
    0 success, 1 a run failed (I/O error, data mismatch, fio failed),
    2 usage error (the message names the option at fault), 130 interrupted:
    Ctrl-C (SIGINT) stops the run and prints the results so far, as fio
    does: the jobs finished, and the run cut short marked interrupted
    (measured nothing, if during ramp_time) and left out of medians and
    ratios; no run starts after it; a second Ctrl-C stops at once
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
