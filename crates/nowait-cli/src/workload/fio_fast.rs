//! The common job's reads in a few instructions: one file, one block size,
//! sequential reads without holes or uniform random reads without a random
//! map (`norandommap`, tausworthe) — `bench --peak`, fio's `null` engine
//! jobs, most job files. Read for read what [`JobOffsets`] makes for such
//! a job (its tests check it), without its per-read choices.
//!
//! [`JobOffsets`]: super::fio_offsets::JobOffsets

use super::fio_offsets::{FileGeometry, OffsetOptions, Read};
use super::fio_random::{taus32, FioRand, Generator, JobSeeds, Stream};
use crate::model::fio_ini::value::{DistSpec, RwMode};

/// The fast path of one job thread's one file.
#[derive(Debug, Clone)]
pub enum FastPath {
    /// Sequential, from the region's start.
    Seq {
        next: u64,
        geo: FileGeometry,
        bs: u64,
        time_based: bool,
    },
    /// Uniform random blocks from the 32-bit generator, no map.
    Rand32 {
        state: [u32; 3],
        scale: Scale,
        geo: FileGeometry,
        bs: u64,
    },
    /// The same from the 64-bit generator (`tausworthe64`).
    Rand64 {
        rand: FioRand,
        scale: Scale,
        geo: FileGeometry,
        bs: u64,
    },
}

/// fio's block from a random number: `lastb * (r / (max + 1))`, truncated.
/// `max + 1` is a power of two, so multiplying by its inverse is the same
/// division, exactly; the block is below `lastb` (< 2^53), so the
/// conversions through `i64` give what fio's through `unsigned long long` do.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    lastb: u64,
    lastb_f: f64,
    inv_span: f64,
}

impl Scale {
    fn new(lastb: u64, max: u64) -> Scale {
        Scale {
            lastb,
            lastb_f: lastb as f64,
            inv_span: 1.0 / (max as f64 + 1.0),
        }
    }
}

impl FastPath {
    /// The fast path for a job of `opts` over one file of `geo`, if its
    /// options allow one (`gen`: the generator in force).
    pub fn of(
        opts: &OffsetOptions,
        geo: FileGeometry,
        gen: Generator,
        seeds: &JobSeeds,
    ) -> Option<FastPath> {
        let bs = opts.min_bs;
        let simple = opts.bssplit.is_empty()
            && opts.min_bs == opts.max_bs
            && bs > 0
            && opts.rw.seq_add == 0
            && opts.rw.seq_nr == 1
            && opts.percentage_random >= 100
            && matches!(opts.distribution, DistSpec::Random)
            && opts.strided.is_none()
            && opts.blockalign.is_none_or(|b| b == bs || b == 0);
        if !simple {
            return None;
        }
        let lastb = geo.io_size.min(geo.real_file_size) / bs;
        match opts.rw.mode {
            RwMode::Read => Some(FastPath::Seq {
                next: geo.file_offset,
                geo,
                bs,
                time_based: opts.time_based,
            }),
            RwMode::RandRead if opts.norandommap && gen != Generator::Lfsr => Some(
                match seeds.rand(Stream::Block, gen == Generator::Tausworthe64) {
                    FioRand::Taus32(state) => FastPath::Rand32 {
                        state,
                        scale: Scale::new(lastb, u64::from(u32::MAX)),
                        geo,
                        bs,
                    },
                    rand => FastPath::Rand64 {
                        scale: Scale::new(lastb, rand.max()),
                        rand,
                        geo,
                        bs,
                    },
                },
            ),
            _ => None,
        }
    }

    /// The read at block `block` of a random job, if it is inside the file.
    #[inline(always)]
    fn at_block(block: u64, geo: &FileGeometry, bs: u64) -> Option<Read> {
        let rel = block * bs;
        let offset = rel + geo.file_offset;
        if rel >= geo.io_size || offset + bs > geo.real_file_size {
            return None;
        }
        Some(Read { offset, len: bs })
    }

    /// The next read, or `None` when the pass over the file is over.
    #[inline(always)]
    pub fn next_read(&mut self) -> Option<Read> {
        match self {
            FastPath::Rand32 {
                state,
                scale,
                geo,
                bs,
            } => {
                if scale.lastb == 0 {
                    return None;
                }
                // fio's `__get_next_rand_offset`, in its order of operations.
                let r = taus32(state);
                let block = (scale.lastb_f * (f64::from(r) * scale.inv_span)) as i64 as u64;
                Self::at_block(block, geo, *bs)
            }
            FastPath::Seq {
                next,
                geo,
                bs,
                time_based,
            } => {
                if *time_based && *next >= geo.io_size + geo.file_offset {
                    *next = geo.file_offset;
                }
                let offset = *next;
                if offset - geo.file_offset >= geo.io_size || offset + *bs > geo.real_file_size {
                    return None;
                }
                *next = offset + *bs;
                Some(Read { offset, len: *bs })
            }
            FastPath::Rand64 {
                rand,
                scale,
                geo,
                bs,
            } => {
                if scale.lastb == 0 {
                    return None;
                }
                let r = rand.rand();
                let block = (scale.lastb_f * (r as f64 * scale.inv_span)) as i64 as u64;
                Self::at_block(block, geo, *bs)
            }
        }
    }

    /// Start the file over (a new pass, or a time-based wrap); `reseed`:
    /// the random stream starts again from its seed (`randrepeat`).
    pub fn restart(&mut self, seeds: &JobSeeds, reseed: bool) {
        match self {
            FastPath::Seq { next, geo, .. } => *next = geo.file_offset,
            FastPath::Rand32 { state, .. } if reseed => {
                if let FioRand::Taus32(s) = seeds.rand(Stream::Block, false) {
                    *state = s;
                }
            }
            FastPath::Rand64 { rand, .. } if reseed => *rand = seeds.rand(Stream::Block, true),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fio_ini::value::{RwMode, RwSpec};
    use crate::workload::fio_offsets::JobOffsets;
    use crate::workload::fio_random::{SeedOptions, Seeding};

    /// For every option set the fast path takes, its reads are the general
    /// sequencer's, read for read, across passes and time-based wraps.
    #[test]
    fn the_fast_path_reads_what_the_general_one_reads() {
        let geos = [
            FileGeometry {
                real_file_size: 1 << 20,
                file_offset: 0,
                io_size: 1 << 20,
            },
            FileGeometry {
                real_file_size: 3 << 20,
                file_offset: 12288,
                io_size: (1 << 20) + 1000,
            },
        ];
        let mut compared = 0;
        for mode in [RwMode::Read, RwMode::RandRead] {
            for gen in [None, Some(Generator::Tausworthe64)] {
                for time_based in [false, true] {
                    for bs in [4096u64, 512, 65536] {
                        for geo in geos {
                            let mut o = OffsetOptions::new(
                                RwSpec {
                                    mode,
                                    seq_nr: 1,
                                    seq_add: 0,
                                },
                                bs,
                            );
                            o.norandommap = true;
                            o.generator = gen;
                            o.time_based = time_based;
                            o.thread_number = 3;
                            o.seeds = SeedOptions {
                                randseed: Some(77),
                                ..SeedOptions::default()
                            };
                            let seeds = JobSeeds::new(
                                &o.seeds,
                                3,
                                mode == RwMode::RandRead,
                                Seeding::Since3_35,
                                || unreachable!(),
                            );
                            let hint = geo.io_size / bs;
                            let g = Generator::for_blocks(o.generator, hint);
                            let mut fast = FastPath::of(&o, geo, g, &seeds).expect("fast");
                            let mut job = JobOffsets::new(o.clone(), &seeds, hint).unwrap();
                            let mut file = job.file(geo, b"f", &seeds).unwrap();
                            let case = format!("{mode:?} {gen:?} tb={time_based} bs={bs} {geo:?}");
                            for pass in 0..2 {
                                for i in 0..(geo.io_size / bs + 3) {
                                    let want = job.next_read(&mut file);
                                    assert_eq!(
                                        fast.next_read(),
                                        want,
                                        "{case} pass {pass} read {i}"
                                    );
                                    compared += 1;
                                    if want.is_none() {
                                        break;
                                    }
                                }
                                job.new_loop(&seeds, std::slice::from_mut(&mut file));
                                fast.restart(&seeds, o.seeds.reseeds_each_loop());
                            }
                        }
                    }
                }
            }
        }
        assert!(compared > 70_000, "{compared} reads compared");
    }

    #[test]
    fn only_simple_jobs_take_it() {
        let seeds = JobSeeds::new(
            &SeedOptions::default(),
            1,
            true,
            Seeding::Since3_35,
            || unreachable!(),
        );
        let geo = FileGeometry {
            real_file_size: 1 << 20,
            file_offset: 0,
            io_size: 1 << 20,
        };
        let rand = RwSpec {
            mode: RwMode::RandRead,
            seq_nr: 1,
            seq_add: 0,
        };
        let o = OffsetOptions::new(rand, 4096);
        assert!(
            FastPath::of(&o, geo, Generator::Tausworthe, &seeds).is_none(),
            "the random map needs the general path"
        );
        let mut o = OffsetOptions::new(rand, 4096);
        o.norandommap = true;
        o.distribution = DistSpec::Zipf {
            theta: 1.1,
            center: None,
        };
        assert!(FastPath::of(&o, geo, Generator::Tausworthe, &seeds).is_none());
        let mut o = OffsetOptions::new(rand, 4096);
        o.norandommap = true;
        assert!(FastPath::of(&o, geo, Generator::Lfsr, &seeds).is_none());
        assert!(FastPath::of(&o, geo, Generator::Tausworthe, &seeds).is_some());
    }
}
