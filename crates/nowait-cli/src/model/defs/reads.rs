//! Options about where reads go and how long each is.

use super::{Apply, Opt};
#[cfg(test)]
use crate::model::fio_ini::choice::RandomGenerator;
use crate::model::fio_ini::choice::{parse_random_generator, parse_rw_sequencer};
#[cfg(test)]
use crate::model::fio_ini::value::DistSpec;
use crate::model::fio_ini::value::{
    parse_bssplit, parse_random_distribution, parse_range, parse_rw, ListSeps, RwMode,
};
use crate::model::job::{Rw, ZoneMode};
#[cfg(test)]
use crate::model::opt::Example;
use crate::model::values::fio::{bytes, flag, read_bytes};

/// The largest read (the engine's per-request limit).
const MAX_BS: u64 = nowait::MAX_READ as u64;

fn block(v: u64) -> Result<u64, String> {
    crate::model::values::in_range(v, 1, MAX_BS)
}

/// The job options about offsets and sizes.
pub static OPTIONS: &[Opt] = &[
    sweep!(
        "rw" | "readwrite",
        "read|randread[:N]",
        "read",
        "Sequential (read) or random (randread) reads. read:N leaves N bytes after each \
           read (negative: reads backwards, read:-8k); randread:N takes N reads per \
           random offset (the others follow rw_sequencer). Writes and trims are refused: \
           nowait reads only.",
        |j, v| {
            let spec = parse_rw(v, j.kb_base).map_err(|e| e.0)?;
            j.rw = match spec.mode {
                RwMode::Read => Rw::Read,
                RwMode::RandRead => Rw::RandRead,
                RwMode::Writes(m) => {
                    return Err(format!(
                        "'{m}' writes or trims; nowait reads only (use read or randread)"
                    ))
                }
            };
            (j.rw_seq_add, j.rw_seq_nr) = (spec.seq_add, spec.seq_nr);
        },
        example: "randread:4" => |j| j.rw == Rw::RandRead && j.rw_seq_nr == 4
    ),
    job!(
        "rw_sequencer",
        "sequential|identical",
        "sequential",
        "With randread:N, where the reads after each random one go: on from it \
               (sequential) or the same offset again (identical).",
        |j, v| j.rw_sequencer = parse_rw_sequencer(v).map_err(|e| e.0)?,
        example: "identical" => |j| j.rw_sequencer == crate::model::fio_ini::choice::RwSequencer::Identical
    ),
    job!(
        "bs" | "blocksize",
        "SIZE[,W[,T]]",
        "4k",
        "Block size of each read. With direct=1 it must be a multiple of the file's \
           O_DIRECT alignment (`nowait probe FILE` shows it). As in fio, a comma list \
           gives the read, write and trim sizes: the read size counts (empty: the \
           default), the write size only sizes random distributions, as in fio.",
        |j, v| {
            let d = crate::model::fio_ini::value::parse_per_ddir(v, ListSeps::Any, |x| {
                crate::model::fio_ini::value::parse_bytes(x, j.kb_base)
            })
            .map_err(|e| e.0)?;
            let read = block(d.read.unwrap_or(4096))?;
            (j.bs, j.bs_max) = (read, read);
            j.bssplit.clear();
            j.bs_write = d.write.unwrap_or(4096).max(1);
        },
        example: "8k" => |j| j.bs == 8192 && j.bs_max == 8192
    ),
    job!(
        "bsrange" | "blocksize_range",
        "LO-HI[,LO-HI]",
        "bs",
        "Read sizes drawn between LO and HI (multiples of LO unless bs_unaligned), from \
               the job's block-size stream as fio draws them.",
        |j, v| {
            let d = crate::model::fio_ini::value::parse_per_ddir(v, ListSeps::Comma, |x| {
                parse_range(x, j.kb_base)
            })
            .map_err(|e| e.0)?;
            let (lo, hi) = d.read.unwrap_or((4096, 4096));
            (j.bs, j.bs_max) = (block(lo)?, block(hi)?);
            j.bssplit.clear();
            j.bs_write = d.write.map_or(4096, |w| w.0.max(1));
        },
        example: "4k-16k" => |j| (j.bs, j.bs_max) == (4096, 16384)
    ),
    job!(
        "bssplit",
        "BS/PCT:BS/PCT...[,W...]",
        "none",
        "Read sizes by share: 4k/50:64k/50 reads half 4 KiB, half 64 KiB blocks (a \
               missing share gets an equal part of the rest), picked as fio picks them.",
        |j, v| {
            let s = parse_bssplit(v, j.kb_base).map_err(|e| e.0)?;
            if s.read.is_empty() {
                return Err("needs at least one size for reads".into());
            }
            for e in &s.read {
                block(e.bs)?;
            }
            j.bs = s.read.iter().map(|e| e.bs).min().unwrap_or(4096);
            j.bs_max = s.read.iter().map(|e| e.bs).max().unwrap_or(4096);
            j.bs_write = s.write.iter().map(|e| e.bs).min().unwrap_or(4096);
            j.bssplit = s.read;
        },
        example: "4k/25:8k" => |j| j.bssplit.len() == 2 && (j.bs, j.bs_max) == (4096, 8192)
    ),
    job!(
        "blockalign" | "ba",
        "SIZE[,W[,T]]",
        "bs",
        "Align random offsets to this (default: the smallest block size).",
        |j, v| j.blockalign = read_bytes(j.kb_base, v)?.filter(|&b| b > 0),
        example: "8k" => |j| j.blockalign == Some(8192)
    ),
    job!(
        "bs_unaligned" | "blocksize_unaligned",
        "",
        "0",
        "Drawn sizes (bsrange, bssplit) need not be multiples of the smallest.",
        |j, v| j.bs_unaligned = flag(v)?,
        example: "1" => |j| j.bs_unaligned
    ),
    job!(
        "percentage_random",
        "PCT[,W[,T]]",
        "100",
        "randread: this share of reads goes to a random offset, the rest on from the \
               previous read.",
        |j, v| {
            let p = read_bytes(j.kb_base, v)?.unwrap_or(100);
            j.percentage_random = crate::model::values::in_range(p, 0, 100)? as u32;
        },
        example: "30" => |j| j.percentage_random == 30
    ),
    job!(
        "random_distribution",
        "DIST",
        "random",
        "How random offsets spread, with fio's generators: random (uniform), \
               zipf[:theta], pareto[:h], normal[:dev] (each [:center]), zoned:A/S:A/S... \
               (A% of reads to the next S% of the region), zoned_abs:A/SIZE:...",
        |j, v| {
            j.random_distribution = parse_random_distribution(v, j.kb_base).map_err(|e| e.0)?;
        },
        example: "zipf:0.5" => |j| matches!(j.random_distribution, DistSpec::Zipf { theta, .. } if theta == 0.5)
    ),
    job!(
        "random_generator",
        "tausworthe|lfsr|tausworthe64",
        "tausworthe",
        "The generator of random blocks, as fio's: tausworthe (switched to tausworthe64 \
               for more than 2^32 blocks), lfsr (each block once per pass, no map), \
               tausworthe64.",
        |j, v| j.random_generator = Some(parse_random_generator(v).map_err(|e| e.0)?),
        example: "lfsr" => |j| j.random_generator == Some(RandomGenerator::Lfsr)
    ),
    job!(
        "randrepeat" | "rand_repeatable",
        "BOOL",
        "1",
        "The same random streams on every run (0 without randseed: fresh ones from the \
               operating system).",
        |j, v| j.randrepeat = flag(v)?,
        example: "0" => |j| !j.randrepeat
    ),
    job!(
        "allrandrepeat",
        "BOOL",
        "0",
        "fio's option: with fio 3.35 and later the same as randrepeat; with older fio \
               (--compare-fio) every stream is seeded from fio's constant.",
        |j, v| j.allrandrepeat = flag(v)?,
        example: "1" => |j| j.allrandrepeat
    ),
    job!(
        "randseed",
        "INT",
        "0x89 (fio's)",
        "Seed of the job's random streams (offsets, sizes, rates), as fio derives them \
               per thread; fio before 3.35 moved no offsets with it under randrepeat=1, \
               which --compare-fio follows when fio is older.",
        |j, v| {
            j.randseed = bytes(j.kb_base, v)?;
            j.randseed_set = true;
        },
        example: "89" => |j| j.randseed == 89 && j.randseed_set
    ),
    job!(
        "norandommap",
        "",
        "0",
        "randread: draw every offset independently (blocks may repeat). Without it \
               each block is read once per pass (fio's random map).",
        |j, v| j.norandommap = flag(v)?,
        example: "1" => |j| j.norandommap
    ),
    job!(
        "zonemode",
        "none|strided",
        "none",
        "strided: read zonesize bytes of each zonerange, then skip zoneskip bytes, \
               wrapping at the end of the file. zbd (zoned block devices) is refused: it \
               needs a zoned device's write pointers and zone commands.",
        |j, v| {
            j.zonemode = match v.trim() {
                "none" => ZoneMode::None,
                "strided" => ZoneMode::Strided,
                "zbd" => {
                    return Err("zbd drives a zoned block device's zones (write pointers, \
                                zone resets); nowait reads files and ordinary devices: use \
                                none or strided"
                        .into())
                }
                o => return Err(format!("unknown zonemode '{o}'; use none or strided")),
            };
        },
        example: "strided" => |j| j.zonemode == ZoneMode::Strided
    ),
    job!(
        "zonesize",
        "SIZE",
        "0",
        "zonemode=strided: bytes read in each zone.",
        |j, v| j.zonesize = bytes(j.kb_base, v)?,
        example: "1m" => |j| j.zonesize == 1 << 20
    ),
    job!(
        "zonerange",
        "SIZE",
        "zonesize",
        "zonemode=strided: the size of a zone.",
        |j, v| j.zonerange = Some(bytes(j.kb_base, v)?).filter(|&r| r > 0),
        example: "2m" => |j| j.zonerange == Some(2 << 20)
    ),
    job!(
        "zoneskip",
        "SIZE",
        "0",
        "zonemode=strided: bytes skipped after each zone.",
        |j, v| j.zoneskip = bytes(j.kb_base, v)?,
        example: "4m" => |j| j.zoneskip == 4 << 20
    ),
];
