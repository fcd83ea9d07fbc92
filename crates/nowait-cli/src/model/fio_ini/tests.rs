//! Unit tests of fio's job-file syntax.

use super::*;
use std::collections::HashMap;

struct Files(HashMap<&'static str, &'static str>);

impl Loader for Files {
    fn read(&self, path: &str) -> std::io::Result<String> {
        self.0
            .get(path)
            .map(|s| s.to_string())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }
    fn exists(&self, path: &str) -> bool {
        self.0.contains_key(path)
    }
}

fn env(n: &str) -> Option<String> {
    (n == "QD").then(|| "32".to_string())
}

const FACTS: SystemFacts = SystemFacts {
    pagesize: 4096,
    mb_memory: 1024,
    ncpus: 2,
};

fn parse(
    files: &[(&'static str, &'static str)],
    paths: &[&str],
    sel: &Selection,
) -> Result<Vec<Job>, IniError> {
    let loader = Files(files.iter().copied().collect());
    let ctx = Context {
        loader: &loader,
        var: &env,
        facts: FACTS,
    };
    parse_job_files(paths, sel, &ctx)
}

fn pairs(j: &Job) -> Vec<(String, Option<String>)> {
    j.options
        .iter()
        .map(|o| (o.name.clone(), o.value.clone()))
        .collect()
}

fn kv(k: &str, v: Option<&str>) -> (String, Option<String>) {
    (k.into(), v.map(Into::into))
}

#[test]
fn globals_apply_to_the_jobs_after_them() {
    let f = "; a comment\n[global]\nbs=4k\n[a]\nrw=read\n[global]\nbs=8k ; inline comment\n# another\n[b]\nnorandommap\n";
    let jobs = parse(&[("j.fio", f)], &["j.fio"], &Selection::default()).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(
        pairs(&jobs[0]),
        vec![kv("bs", Some("4k")), kv("rw", Some("read"))]
    );
    assert_eq!(
        pairs(&jobs[1]),
        vec![
            kv("bs", Some("4k")),
            kv("bs", Some("8k")),
            kv("norandommap", None)
        ]
    );
    assert_eq!(jobs[1].get("bs"), Some(Some("8k")));
    assert_eq!(jobs[1].options[1].at.to_string(), "j.fio:7");
    assert!(!jobs[0].file_stonewall);
}

#[test]
fn inline_comments_are_cut_as_fio_cuts_them() {
    let f = "[a]\nfilename=/tmp/x#y\nsize=1g # the size\nbs = 4k\ndescription=a;b\n";
    let jobs = parse(&[("j", f)], &["j"], &Selection::default()).unwrap();
    assert_eq!(
        pairs(&jobs[0]),
        vec![
            kv("filename", Some("/tmp/x")),
            kv("size", Some("1g")),
            kv("bs", Some(" 4k")),
            kv("description", Some("a"))
        ]
    );
}

#[test]
fn environment_and_reserved_words_are_substituted() {
    let f = "[buf-test]\niodepth=${QD}\nnumjobs=$ncpus\nsize=$mb_memory/2\nx=${NOPE}\n";
    let jobs = parse(&[("j", f)], &["j"], &Selection::default()).unwrap();
    assert_eq!(jobs[0].get("iodepth"), Some(Some("32")));
    assert_eq!(jobs[0].get("numjobs"), Some(Some("2")));
    assert_eq!(jobs[0].get("size"), Some(Some("512")));
    assert_eq!(jobs[0].get("x"), Some(Some("")));
}

#[test]
fn includes_resolve_beside_the_including_file_and_nest() {
    let files = [
        (
            "dir/main.fio",
            "[global]\ninclude glob.fio\n[t]\nrw=randread\ninclude sub/t.fio\n",
        ),
        ("dir/glob.fio", "thread=1\n; c\n"),
        ("dir/sub/t.fio", "ioengine=psync\ninclude more.fio\n"),
        ("dir/sub/more.fio", "iodepth=4\n"),
        ("dir/bad.fio", "[x]\n"),
        ("dir/inc_bad.fio", "[t]\ninclude bad.fio\n"),
    ];
    let jobs = parse(&files, &["dir/main.fio"], &Selection::default()).unwrap();
    assert_eq!(
        pairs(&jobs[0]),
        vec![
            kv("thread", Some("1")),
            kv("rw", Some("randread")),
            kv("ioengine", Some("psync")),
            kv("iodepth", Some("4"))
        ]
    );
    assert_eq!(jobs[0].options[3].at.to_string(), "dir/sub/more.fio:1");
    let e = parse(&files, &["dir/inc_bad.fio"], &Selection::default()).unwrap_err();
    assert_eq!(e.at.unwrap().to_string(), "dir/bad.fio:1");
    let e = parse(
        &[("j", "[t]\ninclude nope.fio\n")],
        &["j"],
        &Selection::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("j:2: cannot read job file `nope.fio`"),
        "{e}"
    );
}

#[test]
fn sections_are_selected_in_the_first_file_only() {
    let a = "[global]\nbs=4k\n[x]\nrw=read\n[y]\nrw=randread\n";
    let b = "[x]\nrw=read\n[z]\nrw=read\n";
    let sel = Selection {
        sections: vec!["y".into()],
        exclude: vec![],
    };
    let jobs = parse(&[("a", a), ("b", b)], &["a", "b"], &sel).unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["y", "x", "z"]);
    assert_eq!(
        jobs[0].get("bs"),
        Some(Some("4k")),
        "globals are never skipped"
    );
    assert!(
        jobs[1].file_stonewall && !jobs[2].file_stonewall,
        "a later file starts with a stonewall"
    );
    let sel = Selection {
        sections: vec![],
        exclude: vec!["x".into()],
    };
    let names: Vec<String> = parse(&[("a", a), ("b", b)], &["a", "b"], &sel)
        .unwrap()
        .into_iter()
        .map(|j| j.name)
        .collect();
    assert_eq!(names, ["y", "z"]);
    assert!(parse(
        &[("a", a)],
        &["a"],
        &Selection {
            sections: vec!["global".into()],
            exclude: vec![]
        }
    )
    .is_err());
}

#[test]
fn errors_say_where_and_what_to_do() {
    let e = parse(&[("j", "bs=4k\n[a]\n")], &["j"], &Selection::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "j:1: option `bs=4k` outside of a [] job section; start a section (e.g. [global]) above it"
    );
    let e = parse(&[("j", "[a\n")], &["j"], &Selection::default()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("j:1: `[a` is not a section header"),
        "{e}"
    );
    let e = parse(&[], &["missing.fio"], &Selection::default()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cannot read job file `missing.fio`"),
        "{e}"
    );
    assert!(parse(&[("j", "[a]\n=4\n")], &["j"], &Selection::default()).is_err());
}
