//! From settings to jobs: the settings applied in order, and a job for
//! every combination of the sweep options' comma lists (`--iodepth 1,2,4
//! --ioengine uring,sync`).

use std::ffi::OsString;

use crate::model::defs::{all, priority};
use crate::model::job::{Job, Settings};
use crate::model::opt::Opt;
#[cfg(test)]
use crate::model::parse::parse_args;
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
/// does not give, in fio's priority order (`kb_base` first, `filename`
/// last), then the combination's values.
pub fn apply(
    settings: &[Setting],
    combo: &Combination<'_>,
    job: &mut Job,
    run: &mut Settings,
) -> Result<(), String> {
    let mut plain: Vec<(&'static Opt, &Setting)> = settings
        .iter()
        .map(|s| (find(s.name).expect("settings hold known names"), s))
        .filter(|(o, _)| !combo.iter().any(|(c, _, _)| c.name == o.name))
        .collect();
    plain.sort_by_key(|(o, _)| -priority(o.name));
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

/// The one job of the command line `s` (for tests).
#[cfg(test)]
pub(crate) fn job_of(s: &str) -> Job {
    let (set, files, _) = parse_args(&crate::base::args::words(s)).unwrap();
    assert!(files.is_empty());
    let (jobs, _) = expand(&set, &Job::default()).unwrap();
    assert_eq!(jobs.len(), 1);
    jobs.into_iter().next().unwrap()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use nowait::{BackendKind, CachePolicy, NowaitMode};

    use super::{job_of as job, *};
    use crate::base::args::words as args;
    use crate::model::job::{Format, Rw};
    use crate::model::opt::Example;
    use crate::model::parse::{find, parse_args};

    fn err(s: &str) -> String {
        match parse_args(&args(s)) {
            Err(e) => e,
            Ok((set, _, _)) => expand(&set, &Job::default()).unwrap_err(),
        }
    }

    /// The job and the settings of the command line `s`.
    fn parsed(s: &str) -> (Job, Settings) {
        let (set, files, _) = parse_args(&args(s)).unwrap();
        assert!(files.is_empty(), "{s}");
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
        let (set, _, _) = parse_args(&args(
            "--output-format json --output=/tmp/o --plot /tmp/p.svg --compare-fio --compare-rounds 3",
        ))
        .unwrap();
        let (_, s) = expand(&set, &Job::default()).unwrap();
        assert_eq!(s.format, Format::JSON);
        assert_eq!(s.output.as_deref(), Some("/tmp/o".as_ref()));
        assert_eq!(s.plot.as_deref(), Some("/tmp/p.svg".as_ref()));
        assert!(s.compare_fio);
        assert_eq!(s.compare_rounds, 3);
        let (set, _, _) = parse_args(&args("--abba 3")).unwrap();
        let (_, s) = expand(&set, &Job::default()).unwrap();
        assert!(s.compare_fio && s.abba == 3);
        assert!(err("--abba=x").contains("--abba"));
        assert!(err("--compare-rounds=0").contains("--compare-rounds"));
    }

    #[test]
    fn flags_take_a_value_only_when_it_is_boolean() {
        let (set, files, _) =
            parse_args(&args("--time_based job.fio --verify 0 --norandommap")).unwrap();
        assert_eq!(files, vec![PathBuf::from("job.fio")]);
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        assert!(jobs[0].time_based && !jobs[0].verify && jobs[0].norandommap);
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
        // Each says what is wrong: negative, or the real range.
        for (a, want) in [
            ("--iodepth=-1", "cannot be negative"),
            ("--iodepth=0", "0 is out of range; use 1 to 16384"),
            ("--numjobs=-2", "cannot be negative"),
            ("--numjobs=2000", "use 1 to 1024"),
            ("--number_ios=-5", "cannot be negative"),
            ("--runtime=-1", "a time cannot be negative"),
            ("--bs=-4k", "cannot be negative"),
        ] {
            let e = err(a);
            assert!(e.contains(want) && !e.contains("0 or more"), "{a}: {e}");
        }
        assert!(err("--iodepth_batch_submit=-1").contains("0 or more"));
        assert!(err("--iodepth").contains("needs a value"));
    }

    #[test]
    fn group_reporting_and_thread_are_fios_on_the_command_line_too() {
        let j = job("--numjobs=2 --group_reporting --thread --rw=randread");
        assert_eq!(
            (j.numjobs, j.rw, j.group_reporting),
            (2, Rw::RandRead, true)
        );
        assert!(err("--thread=0").contains("--thread"));
        // fio's default: each clone reported on its own.
        assert!(!job("--numjobs=2 --group_reporting=0").group_reporting);
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
        let (set, _, _) = parse_args(&args("--iodepth 1,2,4 --ioengine uring,sync")).unwrap();
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

    /// fio reads `bs=4k,8k` as read size 4k, write size 8k: for a read job
    /// that is one block size, not a sweep of two.
    #[test]
    fn bs_lists_are_fios_read_write_sizes_not_a_sweep() {
        let (set, _, _) = parse_args(&args("--bs=8k,64k")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].bs, 8192);
        assert_eq!(job("--bs=,16k").bs, 4096);
        assert_eq!(job("--bs=16k,,4k").bs, 16384);
        assert_eq!(job("--bs=4k,8k").bs_write, 8192);
        let e = err("--bs=4k,8q");
        assert!(e.contains("--bs") && e.contains("unknown unit"), "{e}");
        assert!(err("--bs=4k,8k,8k,8k").contains("at most three"));
    }

    #[test]
    fn fio_aliases_of_option_names() {
        assert_eq!(job("--iodepth_batch=4").iodepth_batch_submit, 4);
        assert_eq!(job("--blocksize=8k").bs, 8192);
    }

    #[test]
    fn small_fast_path_is_an_alias_of_small_direct() {
        assert!(job("--small_direct=1").small_direct);
        assert!(!job("--small_direct=0").small_direct);
        assert!(!job("--small_fast_path=0").small_direct);
        assert!(job("--small_fast_path=1").small_direct);
        assert!(find("small_fast_path").is_some_and(|o| o.name == "small_direct"));
        assert!(err("--small_fast_path=maybe").contains("small_direct"));
    }

    #[test]
    fn nowait_modes_sweep_and_bad_values_name_the_option() {
        let (set, _, _) =
            parse_args(&args("--ioengine pool --nowait off,always,adaptive")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        let modes: Vec<_> = jobs.iter().map(|j| j.nowait.unwrap()).collect();
        assert_eq!(modes, NowaitMode::ALL.to_vec());
        assert_eq!(jobs[0].engine_label(), "pool:off");
        let e = err("--nowait=sometimes");
        assert!(e.contains("--nowait") && e.contains("adaptive"), "{e}");
    }

    /// nowait's --cache sweeps like any engine option; fio's uncached=N is
    /// the same setting (0 keep, else drop), and direct reads have none.
    #[test]
    fn cache_policies_sweep_and_uncached_is_fios_name_for_drop() {
        let (set, _, _) = parse_args(&args("--cache keep,drop,adaptive")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        let labels: Vec<_> = jobs.iter().map(|j| j.engine_label()).collect();
        assert_eq!(
            labels,
            ["uring", "uring+cache=drop", "uring+cache=adaptive"]
        );
        assert_eq!(job("--uncached=1").cache, CachePolicy::Drop);
        assert_eq!(job("--uncached=0").cache, CachePolicy::Keep);
        assert_eq!(
            job("--uncached=1 --ioengine=aio").engine_label(),
            "aio+cache=drop"
        );
        let direct = job("--cache=drop --direct=1");
        assert_eq!(direct.normalized().cache, CachePolicy::Keep);
        assert_eq!(direct.engine_label(), "uring");
        let e = err("--cache=sometimes");
        assert!(e.contains("--cache") && e.contains("adaptive"), "{e}");
        assert!(err("--uncached=yes").contains("--uncached"));
    }

    #[test]
    fn pool_workers_out_of_range_names_the_option() {
        assert!(err("--pool_workers=0").contains("--pool_workers"));
        assert!(err("--pool_workers=5000").contains("--pool_workers"));
        assert_eq!(job("--pool-workers=8").pool_workers, Some(8));
    }

    #[test]
    fn pool_options_apply_to_the_buffered_half_of_aio_pool() {
        let j = job("--ioengine=aio+pool --nowait=off --pool_workers=8 --hipri");
        assert_eq!(j.inapplicable(), vec!["--hipri"]);
        assert_eq!(j.engine_label(), "aio+pool:off");
        let n = j.normalized();
        assert_eq!(n.pool_workers, Some(8));
        assert!(n.nowait.is_some());
    }

    #[test]
    fn uring_options_and_their_engine() {
        let j = job("--ioengine=uring --sqthread_poll --hipri --fixedbufs --spin_us=10");
        assert!(j.inapplicable().is_empty());
        assert_eq!(j.engine_label(), "uring+hipri+sqpoll");
        assert!(err("--spin_us=abc").contains("--spin_us"));
        assert!(err("--sqthread_poll_idle=-1").contains("--sqthread_poll_idle"));
        assert!(err("--hipri=maybe").contains("--hipri"));
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

    #[test]
    fn peak_is_a_run_setting() {
        let (set, _, _) = parse_args(&args("--peak --runtime=1")).unwrap();
        let (_, s) = expand(&set, &Job::default()).unwrap();
        assert!(s.peak);
        assert!(err("--peak=perhaps").contains("--peak"));
    }

    #[test]
    fn filename_colons_are_fios_file_separators() {
        let j = job("--filename=/tmp/fa:/tmp/fb");
        assert_eq!(
            j.filenames(),
            [PathBuf::from("/tmp/fa"), PathBuf::from("/tmp/fb")]
        );
        assert_eq!(
            job(r"--filename=/dev/dsk/foo@3,0\:c").filenames(),
            [PathBuf::from("/dev/dsk/foo@3,0:c")]
        );
        // Other backslashes are the name's own.
        assert_eq!(
            job(r"--filename=/tmp/a\b").filenames(),
            [PathBuf::from(r"/tmp/a\b")]
        );
        let e = err("--filename=/tmp/a::/tmp/b");
        assert!(e.contains("--filename") && e.contains("empty file"), "{e}");
    }
}
