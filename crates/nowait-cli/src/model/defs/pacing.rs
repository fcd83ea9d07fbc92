//! Options about when reads are issued: rates, think time, submission.

use super::{Apply, Opt};
use crate::model::fio_ini::choice::{parse_rate_process, parse_think_blocks};
#[cfg(test)]
use crate::model::fio_ini::choice::{RateProcess, ThinkBlocks};
use crate::model::job::SubmitMode;
#[cfg(test)]
use crate::model::opt::Example;
use crate::model::values::fio::{flag, int, micros, read_bytes, secs};

/// The job options about pacing.
pub static OPTIONS: &[Opt] = &[
    job!(
        "rate",
        "SIZE[,W[,T]]",
        "0 (none)",
        "Cap reads at this many bytes per second: each read is issued when the bytes \
               before it are due (fio's usec_for_io), waiting for the reads in flight first \
               unless io_submit_mode=offload.",
        |j, v| j.rate = read_bytes(j.kb_base, v)?.unwrap_or(0),
        example: "1m" => |j| j.rate == 1 << 20
    ),
    job!(
        "rate_iops",
        "INT[,W[,T]]",
        "0 (none)",
        "Cap reads at this many per second (as bytes of the smallest block size, as fio; \
               per read with bssplit).",
        |j, v| j.rate_iops = read_bytes(j.kb_base, v)?.unwrap_or(0),
        example: "500" => |j| j.rate_iops == 500
    ),
    job!(
        "rate_min" | "ratemin",
        "SIZE[,W[,T]]",
        "0 (none)",
        "End the job with an error when reads fall below this many bytes per second over \
               a rate_cycle (after 2 s to settle), as fio does.",
        |j, v| j.rate_min = read_bytes(j.kb_base, v)?.unwrap_or(0),
        example: "1k" => |j| j.rate_min == 1024
    ),
    job!(
        "rate_iops_min",
        "INT[,W[,T]]",
        "0 (none)",
        "Like rate_min, in reads per second.",
        |j, v| j.rate_iops_min = read_bytes(j.kb_base, v)?.unwrap_or(0),
        example: "10" => |j| j.rate_iops_min == 10
    ),
    job!(
        "rate_process",
        "linear|poisson",
        "linear",
        "How rated reads are spaced: evenly (linear) or with exponential gaps drawn \
               from fio's stream (poisson).",
        |j, v| j.rate_process = parse_rate_process(v).map_err(|e| e.0)?,
        example: "poisson" => |j| j.rate_process == RateProcess::Poisson
    ),
    job!(
        "rate_cycle" | "ratecycle",
        "INT",
        "1000",
        "Milliseconds over which rate_min and rate_iops_min are checked.",
        |j, v| j.rate_cycle_ms = int(j.kb_base, v, 1, u32::MAX as u64)?,
        example: "500" => |j| j.rate_cycle_ms == 500
    ),
    job!(
        "rate_ignore_thinktime",
        "BOOL",
        "0",
        "The bytes a think would have read count as read, so the rate catches up after it.",
        |j, v| j.rate_ignore_thinktime = flag(v)?,
        example: "1" => |j| j.rate_ignore_thinktime
    ),
    job!(
        "thinktime",
        "TIME",
        "0",
        "After each thinktime_blocks reads, wait for the reads in flight, then pause this \
               long (plain numbers are microseconds).",
        |j, v| j.thinktime_us = micros(v)?,
        example: "2ms" => |j| j.thinktime_us == 2000
    ),
    job!(
        "thinktime_spin",
        "TIME",
        "0",
        "Spend this much of each think spinning on the CPU instead of sleeping \
               (microseconds).",
        |j, v| j.thinktime_spin_us = micros(v)?,
        example: "100" => |j| j.thinktime_spin_us == 100
    ),
    job!(
        "thinktime_blocks",
        "INT",
        "1",
        "Think after this many reads.",
        |j, v| j.thinktime_blocks = Some(int(j.kb_base, v, 1, u64::MAX)?),
        example: "8" => |j| j.thinktime_blocks == Some(8)
    ),
    job!(
        "thinktime_blocks_type",
        "complete|issue",
        "complete",
        "Whether thinktime_blocks counts reads completed or issued.",
        |j, v| j.thinktime_blocks_type = parse_think_blocks(v).map_err(|e| e.0)?,
        example: "issue" => |j| j.thinktime_blocks_type == ThinkBlocks::Issue
    ),
    job!(
        "thinktime_iotime",
        "TIME",
        "0",
        "Think once this long has passed since the last think (plain numbers are \
               seconds), besides thinktime_blocks if given.",
        |j, v| j.thinktime_iotime_us = secs(v)?.as_micros() as u64,
        example: "1" => |j| j.thinktime_iotime_us == 1_000_000
    ),
    job!(
        "io_submit_mode",
        "inline|offload",
        "inline",
        "inline: before a rated read that is not due yet the job waits for its reads \
               in flight, then sleeps. offload: reads are issued when due whatever is in \
               flight (fio hands them to a submitting thread; nowait's job thread reaps \
               completions while it waits for the next read's time, which issues the same \
               reads at the same times).",
        |j, v| {
            j.io_submit_mode = match v.trim() {
                "inline" => SubmitMode::Inline,
                "offload" => SubmitMode::Offload,
                o => return Err(format!("unknown io_submit_mode '{o}'; use inline or offload")),
            };
        },
        example: "offload" => |j| j.io_submit_mode == SubmitMode::Offload
    ),
    job!(
        "flow",
        "INT",
        "0 (none)",
        "Weight in fio's token flow between the jobs of one flow_id: a job reads only \
               while its share of the group's reads is at most its share of the weights, \
               so flow=2 beside flow=1 reads twice as often (examples/butterfly.fio).",
        |j, v| j.flow = int(j.kb_base, v, 0, u32::MAX as u64)? as u32,
        example: "2" => |j| j.flow == 2
    ),
    job!(
        "flow_id",
        "INT",
        "0",
        "The flow group a job's flow weight belongs to.",
        |j, v| j.flow_id = int(j.kb_base, v, 0, u32::MAX as u64)? as u32,
        example: "3" => |j| j.flow_id == 3
    ),
    job!(
        "flow_sleep",
        "INT",
        "0",
        "Microseconds a job held back by its flow sleeps (after waiting for its reads \
               in flight); 0: it tries again at once.",
        |j, v| j.flow_sleep_us = int(j.kb_base, v, 0, u32::MAX as u64)?,
        example: "100" => |j| j.flow_sleep_us == 100
    ),
];
