//! Which of a job's files the next read goes to, as fio picks it
//! (`__get_next_file`, `get_next_file_rr`, `get_next_file_rand` and
//! `set_io_u_file` in fio's `io_u.c`): `file_service_type` round robin,
//! sequential or random with `:N` reads per pick, or zipf, pareto or
//! normal over the files; at most `openfiles` files open, a file closed
//! when it is done (a pass of it is over) and, for the non-uniform kinds,
//! started over instead of being done.

use super::fio_dist::{Gauss, Zipf};
use super::fio_random::{FioRand, JobSeeds, Stream};
use crate::model::fio_ini::choice::FileService;

/// fio's `FIO_FSERVICE_SHIFT`: the non-uniform kinds draw among `files <<
/// 10` ranges and keep the top bits.
const SHIFT: u32 = 10;

#[derive(Debug, Clone)]
enum Draw {
    /// Round robin or sequential: the next file in turn.
    Turn,
    /// Uniform over the files (`FIO_RAND_FILE_OFF`).
    Uniform(FioRand),
    Zipf(Zipf),
    Pareto(Zipf),
    Gauss(Gauss),
}

/// The file choice of one job thread.
#[derive(Debug, Clone)]
pub struct FileChoice {
    kind: FileService,
    draw: Draw,
    /// Reads per pick (`:N`).
    per_pick: u32,
    /// Reads left on the current pick.
    left: u32,
    current: Option<usize>,
    next_turn: usize,
    done: Vec<bool>,
    open: Vec<bool>,
    n_open: usize,
    n_done: usize,
    open_limit: usize,
}

impl FileChoice {
    /// The choice among `files` files (`openfiles`: at most that many open;
    /// `use64`: the job's generator is tausworthe64, as fio seeds the file
    /// stream with it).
    pub fn new(
        kind: FileService,
        per_pick: u32,
        files: usize,
        openfiles: Option<u32>,
        seeds: &JobSeeds,
        use64: bool,
    ) -> FileChoice {
        let seed = seeds.get(Stream::File);
        let nranges = (files as u64) << SHIFT;
        let draw = match kind {
            FileService::RoundRobin | FileService::Sequential => Draw::Turn,
            FileService::Random => Draw::Uniform(seeds.rand(Stream::File, use64)),
            FileService::Zipf { theta, center } => {
                Draw::Zipf(Zipf::new_zipf(nranges, theta, center, seed as u32).without_hash())
            }
            FileService::Pareto { h, center } => {
                Draw::Pareto(Zipf::new_pareto(nranges, h, center, seed as u32).without_hash())
            }
            FileService::Normal { dev, center } => {
                Draw::Gauss(Gauss::new(nranges, dev, center, seed as u32).without_hash())
            }
        };
        FileChoice {
            kind,
            draw,
            per_pick: per_pick.max(1),
            left: 0,
            current: None,
            next_turn: 0,
            done: vec![false; files],
            open: vec![false; files],
            n_open: 0,
            n_done: 0,
            open_limit: openfiles.map_or(files, |n| n as usize).max(1),
        }
    }

    /// Whether a file that is done starts over instead (the non-uniform kinds).
    pub fn restarts_files(&self) -> bool {
        matches!(self.draw, Draw::Zipf(_) | Draw::Pareto(_) | Draw::Gauss(_))
    }

    /// Every file is done: the pass is over.
    pub fn all_done(&self) -> bool {
        self.n_done >= self.done.len()
    }

    /// Start a new pass: no file done or open.
    pub fn reset(&mut self) {
        self.done.iter_mut().for_each(|d| *d = false);
        self.open.iter_mut().for_each(|o| *o = false);
        (self.n_done, self.n_open, self.current, self.left) = (0, 0, None, 0);
    }

    fn open_it(&mut self, f: usize) -> bool {
        if self.open[f] {
            return true;
        }
        if self.n_open >= self.open_limit {
            return false;
        }
        self.open[f] = true;
        self.n_open += 1;
        true
    }

    /// The next file to read from, or `None` when every file is done.
    pub fn pick(&mut self) -> Option<usize> {
        if self.all_done() {
            return None;
        }
        if let Some(f) = self.current.filter(|&f| self.open[f]) {
            if self.kind == FileService::Sequential {
                return Some(f);
            }
            if self.left > 0 {
                self.left -= 1;
                return Some(f);
            }
        }
        let n = self.done.len();
        let f = match &mut self.draw {
            Draw::Turn => {
                // fio gives up its turn at a file it may not open yet
                // (EBUSY) and tries the next one on its next call.
                let mut pick = None;
                for _ in 0..n {
                    let f = self.next_turn;
                    self.next_turn = (self.next_turn + 1) % n;
                    if self.done[f] || !self.open_it(f) {
                        continue;
                    }
                    pick = Some(f);
                    break;
                }
                pick?
            }
            _ => loop {
                let f = match &mut self.draw {
                    Draw::Uniform(r) => {
                        let max = r.max() as f64 + 1.0;
                        (n as f64 * (r.rand() as f64 / max)) as usize
                    }
                    Draw::Zipf(z) => (z.next_zipf() >> SHIFT) as usize,
                    Draw::Pareto(z) => (z.next_pareto() >> SHIFT) as usize,
                    Draw::Gauss(g) => (g.next_range() >> SHIFT) as usize,
                    Draw::Turn => unreachable!("handled above"),
                };
                let f = f.min(n - 1);
                if !self.done[f] && self.open_it(f) {
                    break f;
                }
            },
        };
        self.current = Some(f);
        self.left = self.per_pick - 1;
        Some(f)
    }

    /// File `f` has no more reads this pass: it is closed and done (or, for
    /// the non-uniform kinds, the caller starts it over and it stays open).
    pub fn finished(&mut self, f: usize) {
        if self.open[f] {
            self.open[f] = false;
            self.n_open -= 1;
        }
        if !self.restarts_files() && !self.done[f] {
            self.done[f] = true;
            self.n_done += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio_random::{SeedOptions, Seeding};

    fn seeds() -> JobSeeds {
        JobSeeds::new(
            &SeedOptions::default(),
            1,
            false,
            Seeding::Since3_35,
            || unreachable!(),
        )
    }

    fn picks(kind: FileService, nr: u32, files: usize, open: Option<u32>, n: usize) -> Vec<usize> {
        let mut c = FileChoice::new(kind, nr, files, open, &seeds(), false);
        (0..n).map(|_| c.pick().unwrap()).collect()
    }

    #[test]
    fn round_robin_takes_n_reads_per_turn() {
        assert_eq!(
            picks(FileService::RoundRobin, 1, 3, None, 7),
            [0, 1, 2, 0, 1, 2, 0]
        );
        assert_eq!(
            picks(FileService::RoundRobin, 2, 3, None, 7),
            [0, 0, 1, 1, 2, 2, 0]
        );
    }

    /// With openfiles below the files, turns stay among the open ones
    /// until one is done.
    #[test]
    fn openfiles_keeps_the_turns_among_open_files() {
        let mut c = FileChoice::new(FileService::RoundRobin, 1, 4, Some(2), &seeds(), false);
        let got: Vec<usize> = (0..4).map(|_| c.pick().unwrap()).collect();
        assert_eq!(got, [0, 1, 0, 1]);
        c.finished(0);
        let got: Vec<usize> = (0..4).map(|_| c.pick().unwrap()).collect();
        assert_eq!(got, [2, 1, 2, 1]);
        c.finished(1);
        c.finished(2);
        assert_eq!(c.pick(), Some(3));
        c.finished(3);
        assert_eq!(c.pick(), None);
        assert!(c.all_done());
    }

    #[test]
    fn sequential_stays_on_a_file_until_it_is_done() {
        let mut c = FileChoice::new(FileService::Sequential, 1, 3, None, &seeds(), false);
        assert_eq!([c.pick(), c.pick()], [Some(0), Some(0)]);
        c.finished(0);
        assert_eq!([c.pick(), c.pick()], [Some(1), Some(1)]);
    }

    #[test]
    fn random_and_zipf_spread_over_the_files() {
        let mut n = [0u32; 4];
        for f in picks(FileService::Random, 1, 4, None, 4000) {
            n[f] += 1;
        }
        assert!(n.iter().all(|&c| (800..1200).contains(&c)), "{n:?}");
        let mut z = [0u32; 4];
        let zipf = FileService::Zipf {
            theta: 1.2,
            center: None,
        };
        for f in picks(zipf, 1, 4, None, 4000) {
            z[f] += 1;
        }
        // fio moves the hot rank by a random offset: one file, not
        // necessarily the first, gets most reads.
        let max = *z.iter().max().unwrap();
        assert!(
            max > 2000 && z.iter().filter(|&&c| c == max).count() == 1,
            "{z:?}"
        );
    }
}
