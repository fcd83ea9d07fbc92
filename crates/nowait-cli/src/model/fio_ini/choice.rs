//! fio's options that take one of a few words: `random_generator`,
//! `rw_sequencer`, `rate_process`, `thinktime_blocks_type` and
//! `file_service_type` (with its `:N` or distribution postfix), read as
//! fio's `options.c` reads them.

use super::value::ValueError;

fn err<T>(msg: impl Into<String>) -> Result<T, ValueError> {
    Err(ValueError(msg.into()))
}

/// `random_generator=`: which generator draws random blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandomGenerator {
    /// `tausworthe` (32-bit; fio switches to the 64-bit one for files of
    /// more than 2^32 - 1 blocks unless this was asked for).
    Tausworthe,
    /// `lfsr`: a maximal-length shift register, each block once per pass.
    Lfsr,
    /// `tausworthe64`.
    Tausworthe64,
}

/// Read `random_generator=`.
pub fn parse_random_generator(s: &str) -> Result<RandomGenerator, ValueError> {
    match s.trim() {
        "tausworthe" => Ok(RandomGenerator::Tausworthe),
        "lfsr" => Ok(RandomGenerator::Lfsr),
        "tausworthe64" => Ok(RandomGenerator::Tausworthe64),
        v => err(format!(
            "random_generator={v}: fio's generators are tausworthe, lfsr, tausworthe64"
        )),
    }
}

/// `rw_sequencer=`: where the reads between two random offsets of
/// `randread:N` go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RwSequencer {
    /// `sequential` (default): on from the previous read.
    #[default]
    Sequential,
    /// `identical`: the previous read's offset again.
    Identical,
}

/// Read `rw_sequencer=`.
pub fn parse_rw_sequencer(s: &str) -> Result<RwSequencer, ValueError> {
    match s.trim() {
        "sequential" => Ok(RwSequencer::Sequential),
        "identical" => Ok(RwSequencer::Identical),
        v => err(format!(
            "rw_sequencer={v}: fio's sequencers are sequential and identical"
        )),
    }
}

/// `rate_process=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateProcess {
    /// `linear` (default): reads evenly spaced.
    #[default]
    Linear,
    /// `poisson`: exponential gaps with the same mean.
    Poisson,
}

/// Read `rate_process=`.
pub fn parse_rate_process(s: &str) -> Result<RateProcess, ValueError> {
    match s.trim() {
        "linear" => Ok(RateProcess::Linear),
        "poisson" => Ok(RateProcess::Poisson),
        v => err(format!(
            "rate_process={v}: fio's processes are linear and poisson"
        )),
    }
}

/// `thinktime_blocks_type=`: what `thinktime_blocks` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThinkBlocks {
    /// `complete` (default): reads completed.
    #[default]
    Complete,
    /// `issue`: reads issued.
    Issue,
}

/// Read `thinktime_blocks_type=`.
pub fn parse_think_blocks(s: &str) -> Result<ThinkBlocks, ValueError> {
    match s.trim() {
        "complete" => Ok(ThinkBlocks::Complete),
        "issue" => Ok(ThinkBlocks::Issue),
        v => err(format!(
            "thinktime_blocks_type={v}: fio counts complete or issue"
        )),
    }
}

/// `file_service_type=`: which of a job's files the next read goes to.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum FileService {
    /// `roundrobin` (default): each open file in turn.
    #[default]
    RoundRobin,
    /// `sequential`: a file until it is done, then the next.
    Sequential,
    /// `random`: a file drawn uniformly.
    Random,
    /// `zipf:theta` over the files.
    Zipf { theta: f64, center: Option<f64> },
    /// `pareto:h` over the files.
    Pareto { h: f64, center: Option<f64> },
    /// `normal:dev` (or `gauss`) over the files.
    Normal { dev: f64, center: Option<f64> },
}

/// `file_service_type=` with its postfix: the kind, and for `random`,
/// `roundrobin` and `sequential` how many reads go to a file before the
/// next is chosen (`:N`, default 1; fio's `file_service_nr`).
pub fn parse_file_service(s: &str) -> Result<(FileService, u32), ValueError> {
    let t = s.trim();
    let (name, post) = match t.split_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (t, None),
    };
    let batch = |p: Option<&str>| -> Result<u32, ValueError> {
        match p {
            None => Ok(1),
            Some(p) => match p.trim().parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => err(format!(
                    "file_service_type={t}: `{p}` is not a number of reads (1 or more)"
                )),
            },
        }
    };
    let dist = |default: f64| -> Result<(f64, Option<f64>), ValueError> {
        let Some(p) = post else {
            return Ok((default, None));
        };
        let (v, c) = match p.split_once(':') {
            Some((v, c)) => (v, Some(c)),
            None => (p, None),
        };
        let num = |x: &str| {
            x.trim()
                .parse::<f64>()
                .map_err(|_| ValueError(format!("file_service_type={t}: `{x}` is not a number")))
        };
        let center = c.map(num).transpose()?;
        if center.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
            return err(format!("file_service_type={t}: the center is outside 0..1"));
        }
        Ok((num(v)?, center))
    };
    Ok(match name {
        "roundrobin" => (FileService::RoundRobin, batch(post)?),
        "sequential" => (FileService::Sequential, batch(post)?),
        "random" => (FileService::Random, batch(post)?),
        "zipf" => {
            let (theta, center) = dist(1.1)?;
            if theta == 1.0 {
                return err(format!(
                    "file_service_type={t}: zipf's theta must not be 1.0"
                ));
            }
            (FileService::Zipf { theta, center }, 1)
        }
        "pareto" => {
            let (h, center) = dist(0.2)?;
            if !(h > 0.0 && h < 1.0) {
                return err(format!(
                    "file_service_type={t}: pareto's h must be between 0 and 1"
                ));
            }
            (FileService::Pareto { h, center }, 1)
        }
        "normal" | "gauss" => {
            let (dev, center) = dist(0.0)?;
            if !(0.0..100.0).contains(&dev) {
                return err(format!(
                    "file_service_type={t}: normal's deviation must be at least 0 and below 100"
                ));
            }
            (FileService::Normal { dev, center }, 1)
        }
        _ => {
            return err(format!(
                "file_service_type={t}: fio's types are random, roundrobin, sequential, zipf, pareto, normal"
            ))
        }
    })
}
