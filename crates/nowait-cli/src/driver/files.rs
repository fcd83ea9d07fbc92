//! The files of a job thread, as fio names and sizes them: `filename`
//! (several separated by `:`), else `nrfiles` files named by
//! `filename_format` (`$jobname.$jobnum.$filenum`), each in `directory`
//! (the clones spread over several directories); the region of each
//! (`size` split over the files, `filesize`, `offset`, `offset_increment`
//! per clone); and what each file must hold for that, so a missing one is
//! laid out at that size.

use std::path::PathBuf;

use crate::model::job::Job;
use crate::workload::fio_job::{region_options, JobFile};
use crate::workload::fio_offsets::FileGeometry;
use crate::workload::fio_random::{JobSeeds, Stream};

/// fio's names of `job`'s files (`f->file_name`: they seed the random
/// distributions, so they are kept as fio writes them, any bytes).
pub fn names(job: &Job) -> Vec<PathBuf> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let dir: Option<Vec<u8>> = job.directory.as_ref().map(|d| {
        let dirs = split_dirs(d.as_os_str().as_bytes());
        let i = job.member.clone as usize % dirs.len().max(1);
        let mut d = dirs.get(i).cloned().unwrap_or_default();
        d.push(b'/');
        d
    });
    let with_dir = |name: &[u8]| -> PathBuf {
        let mut v = dir.clone().unwrap_or_default();
        v.extend_from_slice(name);
        PathBuf::from(std::ffi::OsString::from_vec(v))
    };
    let given = job.filenames();
    if !given.is_empty() {
        return given
            .iter()
            .map(|p| with_dir(p.as_os_str().as_bytes()))
            .collect();
    }
    (0..job.nrfiles.max(1))
        .map(|i| with_dir(file_name(job, i).as_bytes()))
        .collect()
}

/// `directory`'s list (fio's `get_next_str`: `:` separates, `\:` is a
/// colon, empty entries are skipped).
fn split_dirs(s: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    let mut i = 0;
    while i < s.len() {
        match (s[i], s.get(i + 1)) {
            (b'\\', Some(b':')) => {
                out.last_mut().expect("one").push(b':');
                i += 1;
            }
            (b':', _) => out.push(Vec::new()),
            (c, _) => out.last_mut().expect("one").push(c),
        }
        i += 1;
    }
    out.retain(|d| !d.is_empty());
    out
}

/// File `filenum` of the job, by `filename_format` (fio's `make_filename`:
/// `$jobname`, `$jobnum`, `$filenum`, matched without regard to case).
fn file_name(job: &Job, filenum: u32) -> String {
    let jobnum = job.member.clone;
    let Some(fmt) = job.filename_format.as_deref() else {
        return format!("{}.{jobnum}.{filenum}", job.section);
    };
    let mut out = fmt.to_string();
    for (key, value) in [
        ("$jobname", job.section.clone()),
        ("$jobnum", jobnum.to_string()),
        ("$filenum", filenum.to_string()),
    ] {
        while let Some(i) = out.to_ascii_lowercase().find(key) {
            out.replace_range(i..i + key.len(), &value);
        }
    }
    out
}

/// Where the job's region lies in each of its files, given each file's size
/// now (0 for one still to be laid out): the file's name, and its geometry
/// (whose `real_file_size` is what the file must hold).
pub fn layout(job: &Job, sizes: &[u64], seeds: &JobSeeds) -> Result<Vec<JobFile>, String> {
    let names = names(job);
    let mut region = region_options(job, names.len());
    // `filesize=LO-HI`: a file outside the range gets a size drawn from the
    // job's stream (fio's `get_rand_file_size`), a multiple of the block size.
    let mut draw = job
        .filesize
        .filter(|(lo, hi)| lo != hi)
        .map(|_| seeds.rand(Stream::FileSize, false));
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.into_iter().enumerate() {
        let size = sizes.get(i).copied().unwrap_or(0);
        if let (Some((lo, hi)), Some(r)) = (job.filesize, draw.as_mut()) {
            region.filesize = Some(if (lo..=hi).contains(&size) {
                size
            } else {
                let span = hi - lo;
                let v = (span as f64 * (r.rand() as f64 / (r.max() as f64 + 1.0))) as u64 + lo;
                v - v % job.bs.max(1)
            });
        }
        let geometry: FileGeometry = region
            .geometry(size, u64::from(job.member.clone), i as u64)
            .map_err(|e| format!("job {}, file {}: {e}", job.name, name.display()))?;
        out.push(JobFile { name, geometry });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::group::Member;

    fn job(clone: u32) -> Job {
        Job {
            section: "seq".into(),
            member: Member {
                clone,
                ..Member::default()
            },
            ..Job::default()
        }
    }

    #[test]
    fn files_are_named_as_fio_names_them() {
        let names =
            |j: &Job| -> Vec<String> { names(j).iter().map(|p| p.display().to_string()).collect() };
        assert_eq!(names(&job(0)), ["seq.0.0"]);
        let j = Job {
            nrfiles: 2,
            directory: Some("/a:/b".into()),
            ..job(3)
        };
        assert_eq!(names(&j), ["/b/seq.3.0", "/b/seq.3.1"]);
        let j = Job {
            filename_format: Some("$JobName-f$filenum".into()),
            ..job(1)
        };
        assert_eq!(names(&j), ["seq-f0"]);
        let j = Job {
            filename: Some(r"x\:y:z".into()),
            directory: Some("d".into()),
            ..job(0)
        };
        assert_eq!(names(&j), ["d/x:y", "d/z"]);
    }
}
