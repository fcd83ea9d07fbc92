//! Options about a job as a whole and when it runs: its name, threads,
//! groups, start, end and passes.

use super::{Apply, Opt};
use crate::model::fio_ini::value::KbBase;
#[cfg(test)]
use crate::model::opt::Example;
use crate::model::values::fio::{flag, int, secs, secs_range};
use crate::model::values::nonempty;

/// The job options about scheduling.
pub static OPTIONS: &[Opt] = &[
    job!(
        "name",
        "STR",
        "nowait",
        "Job name shown in reports (a job file's section name sets it too). On the \
               command line, as in fio, each --name starts a new job (the options before \
               the first are every job's) and the jobs run side by side.",
        |j, v| j.name = nonempty(v)?.to_string(),
        example: "x" => |j| j.name == "x"
    ),
    sweep!(
        "numjobs",
        "INT",
        "1",
        "Threads of this job, each with its own queue, reading as fio's clones do \
           (thread numbers, offset_increment, file names per clone). Without \
           group_reporting each is reported on its own, as in fio.",
        |j, v| j.numjobs = int(j.kb_base, v, 1, 1024)? as usize,
        example: "2" => |j| j.numjobs == 2
    ),
    job!(
        "stonewall" | "wait_for_previous",
        "",
        "0",
        "Start this job only once every job before it (in this run) has ended; it also \
               starts a new reporting group. Every job file after the first starts with one, \
               as in fio.",
        |j, v| j.stonewall = flag(v)?,
        example: "1" => |j| j.stonewall
    ),
    job!(
        "new_group",
        "",
        "0",
        "Start a new reporting group with this job (without waiting for the jobs before it).",
        |j, v| j.new_group = flag(v)?,
        example: "1" => |j| j.new_group
    ),
    job!(
        "group_reporting",
        "",
        "0",
        "Report the jobs of a reporting group, and their numjobs clones, as one (fio's \
               meaning): one block of text, one jobs[] entry, one terse line, named after \
               the group's first job, with counts and latencies added up and bandwidth and \
               IOPS samples of jobs side by side summed. Without it, as in fio, every job and \
               every clone is reported on its own. The comparison table always shows one row \
               per job.",
        |j, v| j.group_reporting = flag(v)?,
        example: "1" => |j| j.group_reporting
    ),
    job!(
        "thread",
        "",
        "1 (always)",
        "fio's option, accepted with fio's meaning: jobs are threads of one process \
               (fio's default forks processes), which nowait's jobs always are (0 is refused).",
        |_j, v| {
            if !flag(v)? {
                return Err("nowait runs jobs as threads only (no processes); \
                            drop the option (or give 1)"
                    .into());
            }
        },
        example: "1" => |j| *j == crate::model::job::Job::default()
    ),
    job!(
        "startdelay",
        "TIME[-TIME]",
        "0",
        "Start the job this long after the run started (plain numbers are seconds). A \
               range draws the delay from the job's random stream, as fio does.",
        |j, v| j.startdelay = secs_range(v)?,
        example: "2-4" => |j| j.startdelay == (std::time::Duration::from_secs(2), std::time::Duration::from_secs(4))
    ),
    job!(
        "runtime" | "timeout",
        "TIME",
        "0 (none)",
        "Stop the job after this long (after ramp_time). Plain numbers are seconds; \
               suffixes us, ms, s, m, h, d (fio reads `sec` as microseconds, so nowait \
               refuses it). 0: no limit.",
        |j, v| {
            let d = secs(v)?;
            j.runtime = (!d.is_zero()).then_some(d);
        },
        example: "3" => |j| j.runtime == Some(std::time::Duration::from_secs(3))
    ),
    job!(
        "time_based",
        "",
        "0",
        "Run for the whole runtime, starting the region over when it is done \
               (without it a job ends after reading its size). Without a runtime it is \
               ignored with a note, as fio ignores it. Ctrl-C stops any run early and prints \
               the results so far.",
        |j, v| j.time_based = flag(v)?,
        example: "1" => |j| j.time_based
    ),
    job!(
        "ramp_time",
        "TIME",
        "0",
        "Run this long before counting anything (warm-up). Plain numbers are seconds.",
        |j, v| j.ramp_time = secs(v)?,
        example: "500ms" => |j| j.ramp_time == std::time::Duration::from_millis(500)
    ),
    job!(
        "loops",
        "INT",
        "1",
        "Read the job's region this many times (the files start over each time; with \
               randrepeat and no randseed the random streams too, as in fio).",
        |j, v| j.loops = int(j.kb_base, v, 1, u32::MAX as u64)? as u32,
        example: "3" => |j| j.loops == 3
    ),
    job!(
        "number_ios",
        "INT",
        "0 (none)",
        "Stop each thread after this many reads (0: no limit).",
        |j, v| {
            let n = crate::model::values::fio::bytes(j.kb_base, v)?;
            j.number_ios = (n > 0).then_some(n);
        },
        example: "100" => |j| j.number_ios == Some(100)
    ),
    job!(
        "kb_base",
        "1024|1000",
        "1024",
        "What k, m, g mean in this job's sizes, as in fio: 1024 reads 4k as 4096 and the \
               IEC names (4kib) as powers of 1000; 1000 swaps the two.",
        |j, v| j.kb_base = KbBase::parse(v).map_err(|e| e.0)?,
        example: "1000" => |j| j.kb_base == KbBase::Decimal
    ),
];
