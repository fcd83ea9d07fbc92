//! From settings to jobs: the settings applied in order, and a job for
//! every combination of the sweep options' comma lists (`--iodepth 1,2,4
//! --ioengine uring,sync`).

use std::ffi::OsString;

use crate::model::defs::all;
use crate::model::job::{Job, Settings};
use crate::model::opt::Opt;
use crate::model::parse::{find, Setting};

/// One combination of the sweep options: each option with its value.
pub type Combination<'s> = Vec<(&'static Opt, OsString, &'s Setting)>;

/// The combinations of the sweep options' comma lists among `settings`
/// (the last setting of each sweep option wins, like any other option), in
/// table order (rw, ioengine, iodepth, …; the last varies fastest). One
/// empty combination when nothing sweeps.
pub fn combinations(settings: &[Setting]) -> Vec<Combination<'_>> {
    let mut sweeps: Vec<(&'static Opt, &Setting)> = Vec::new();
    for s in settings {
        let opt = find(s.name).expect("settings hold known names");
        if opt.sweep {
            sweeps.retain(|(o, _)| o.name != opt.name);
            sweeps.push((opt, s));
        }
    }
    sweeps.sort_by_key(|(o, _)| all().position(|x| x.name == o.name));
    let mut combos: Vec<Combination<'_>> = vec![Vec::new()];
    for (opt, s) in sweeps {
        let mut next = Vec::new();
        for c in &combos {
            for v in s.values(opt) {
                let mut c = c.clone();
                c.push((opt, v, s));
                next.push(c);
            }
        }
        combos = next;
    }
    combos
}

/// Apply `settings` to `job` and `run`: those of options the combination
/// does not give, in order, then the combination's values.
pub fn apply(
    settings: &[Setting],
    combo: &Combination<'_>,
    job: &mut Job,
    run: &mut Settings,
) -> Result<(), String> {
    let plain: Vec<(&'static Opt, &Setting)> = settings
        .iter()
        .map(|s| (find(s.name).expect("settings hold known names"), s))
        .filter(|(o, _)| !combo.iter().any(|(c, _, _)| c.name == o.name))
        .collect();
    for (opt, s) in plain {
        opt.apply
            .to(job, run, &s.value)
            .map_err(|e| s.err(opt, &s.value, e))?;
    }
    for (opt, v, s) in combo {
        opt.apply.to(job, run, v).map_err(|e| s.err(opt, v, e))?;
    }
    Ok(())
}

/// Apply settings in order: a job for every combination of sweep lists,
/// and the invocation settings.
pub fn expand(settings: &[Setting], base: &Job) -> Result<(Vec<Job>, Settings), String> {
    let mut run = Settings::default();
    let mut jobs = Vec::new();
    for combo in combinations(settings) {
        let mut job = base.clone();
        run = Settings::default();
        apply(settings, &combo, &mut job, &mut run)?;
        jobs.push(job);
    }
    Ok((jobs, run))
}

#[cfg(test)]
mod tests {
    use nowait::{BackendKind, CachePolicy, NowaitMode};

    use super::*;
    use crate::base::args::words as args;
    use crate::model::job::Format;
    use crate::model::opt::Example;
    use crate::model::parse::parse_args;

    /// The one job of the command line `s`.
    pub(crate) fn job(s: &str) -> Job {
        let (set, _) = parse_args(&args(s)).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        assert_eq!(jobs.len(), 1);
        jobs.into_iter().next().unwrap()
    }

    fn err(s: &str) -> String {
        match parse_args(&args(s)) {
            Err(e) => e,
            Ok((set, _)) => expand(&set, &Job::default()).unwrap_err(),
        }
    }

    /// The job and the settings of the command line `s`.
    fn parsed(s: &str) -> (Job, Settings) {
        let (set, _) = parse_args(&args(s)).unwrap();
        let (jobs, settings) = expand(&set, &Job::default()).unwrap();
        assert_eq!(jobs.len(), 1, "{s}");
        (jobs.into_iter().next().unwrap(), settings)
    }

    /// Each option's example (`model/defs.rs`), under its name and each
    /// alias, in both spellings (`--name=value`, `--name value`), sets what
    /// the example says.
    #[test]
    fn every_option_sets_what_its_example_says_in_both_spellings() {
        for o in all() {
            let (Example::Job(value, _) | Example::Run(value, _)) = o.example;
            for name in std::iter::once(&o.name).chain(o.aliases) {
                let a = parsed(&format!("--{name}={value}"));
                let b = parsed(&format!("--{name} {value}"));
                assert_eq!(a, b, "--{name} {value}");
                let ok = match o.example {
                    Example::Job(_, check) => check(&a.0),
                    Example::Run(_, check) => check(&a.1),
                };
                assert!(ok, "--{name}={value} -> {a:?}");
            }
        }
    }

    #[test]
    fn run_settings_parse() {
        let (_, s) = parsed("--output-format json --output=/tmp/o --compare-fio");
        assert_eq!(s.format, Format::Json);
        assert_eq!(s.output.as_deref(), Some("/tmp/o".as_ref()));
        assert!(s.compare_fio);
        let (_, s) = parsed("--abba 3");
        assert!(s.compare_fio && s.abba == 3);
        assert!(err("--abba=x").contains("--abba"));
    }

    #[test]
    fn flags_take_a_value_only_when_it_is_boolean() {
        let (j, _) = parsed("--time_based --verify 0 --norandommap");
        assert!(j.time_based && !j.verify && j.norandommap);
    }

    /// Job files are fio's: bench says how to run one with nowait's engine.
    #[test]
    fn a_job_file_points_to_nowait_fio() {
        let e = err("--runtime=1 seed.fio");
        assert!(e.contains("nowait fio seed.fio"), "{e}");
    }

    #[test]
    fn unknown_option_is_an_error_naming_it() {
        let e = err("--iodepht=4");
        assert!(e.contains("iodepht") && e.contains("iodepth"), "{e}");
        let e = err("--rwmixread=50");
        assert!(
            e.contains("rwmixread") && e.contains("never ignores"),
            "{e}"
        );
        assert!(err("--rw=randwrite").contains("reads only"));
    }

    #[test]
    fn bad_numbers_name_the_option() {
        for (a, name) in [
            ("--iodepth=0", "iodepth"),
            ("--iodepth=-4", "iodepth"),
            ("--iodepth=abc", "iodepth"),
            ("--bs=-4k", "bs"),
            ("--bs=4q", "bs"),
            ("--size=lots", "size"),
            ("--runtime=-1", "runtime"),
            ("--runtime=5x", "runtime"),
            ("--numjobs=0", "numjobs"),
            ("--direct=maybe", "direct"),
        ] {
            let e = err(a);
            assert!(e.contains(&format!("--{name}")), "{a}: {e}");
        }
        assert!(err("--iodepth=-4").contains("negative"));
        assert!(err("--iodepth").contains("needs a value"));
    }

    #[test]
    fn unknown_engine_lists_what_works() {
        let e = err("--ioengine=posixaio");
        assert!(
            e.contains("--ioengine") && e.contains("posixaio") && e.contains("uring"),
            "{e}"
        );
    }

    #[test]
    fn fio_engine_aliases() {
        assert_eq!(job("--ioengine=io_uring").ioengine, BackendKind::Uring);
        assert_eq!(job("--ioengine=psync").ioengine, BackendKind::Sync);
    }

    #[test]
    fn sweeps_expand_every_combination_engine_outer() {
        let (set, _) = parse_args(&args("--iodepth 1,2,4 --ioengine uring,sync")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        let got: Vec<(BackendKind, usize)> = jobs.iter().map(|j| (j.ioengine, j.iodepth)).collect();
        use BackendKind::*;
        assert_eq!(
            got,
            vec![
                (Uring, 1),
                (Uring, 2),
                (Uring, 4),
                (Sync, 1),
                (Sync, 2),
                (Sync, 4)
            ]
        );
        assert!(err("--iodepth 1,0").contains("--iodepth"));
    }

    #[test]
    fn nowait_modes_sweep_and_bad_values_name_the_option() {
        let (set, _) = parse_args(&args("--ioengine pool --nowait off,always,adaptive")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        let modes: Vec<_> = jobs.iter().map(|j| j.nowait.unwrap()).collect();
        assert_eq!(modes, NowaitMode::ALL.to_vec());
        assert_eq!(jobs[0].engine_label(), "pool:off");
        let e = err("--nowait=sometimes");
        assert!(e.contains("--nowait") && e.contains("adaptive"), "{e}");
    }

    #[test]
    fn cache_policies_sweep() {
        let (set, _) = parse_args(&args("--cache keep,drop,adaptive")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        let labels: Vec<_> = jobs.iter().map(|j| j.engine_label()).collect();
        assert_eq!(
            labels,
            ["uring", "uring+cache=drop", "uring+cache=adaptive"]
        );
        let direct = job("--cache=drop --direct=1");
        assert_eq!(direct.normalized().cache, CachePolicy::Keep);
        assert_eq!(direct.engine_label(), "uring");
        let e = err("--cache=sometimes");
        assert!(e.contains("--cache") && e.contains("adaptive"), "{e}");
    }

    #[test]
    fn pool_options_apply_to_the_buffered_half_of_aio_pool() {
        let j = job("--ioengine=aio+pool --nowait=off --pool_workers=8 --hipri=1");
        assert_eq!(j.inapplicable(), vec!["--hipri"]);
        assert_eq!(j.engine_label(), "aio+pool:off");
        let n = j.normalized();
        assert_eq!(n.pool_workers, Some(8));
        assert!(n.nowait.is_some());
        assert!(err("--pool_workers=0").contains("--pool_workers"));
    }

    #[test]
    fn uring_options_and_their_engine() {
        let j = job("--ioengine=uring --sqthread_poll --hipri=1 --fixedbufs --spin_us=10");
        assert!(j.inapplicable().is_empty());
        assert_eq!(j.engine_label(), "uring+hipri+sqpoll");
        assert!(err("--spin_us=abc").contains("--spin_us"));
        let j = job("--ioengine=aio --sqthread_poll --nowait=off");
        assert_eq!(j.inapplicable(), vec!["--nowait", "--sqthread_poll"]);
        assert_eq!(
            j.normalized(),
            Job {
                ioengine: BackendKind::Aio,
                ..Job::default()
            }
        );
    }
}
