//! Options about the files a job reads and the region of each.

use super::{Apply, Opt};
use crate::model::fio_ini::choice::parse_file_service;
use crate::model::fio_ini::value::{parse_range, Size};
#[cfg(test)]
use crate::model::opt::Example;
use crate::model::values::fio::{bytes, flag, int, size};
use crate::model::values::split_filenames;

/// The job options about files.
pub static OPTIONS: &[Opt] = &[
    job_path!(
        "filename",
        "PATH[:PATH...]",
        "$jobname.$jobnum.$filenum",
        "File or block device to read; several separated by ':' are read by the one \
               job (file_service_type picks which is next); a colon that is part of a name \
               is written '\\:', as in fio. A missing file is laid out at `size` (or \
               filesize) with nowait's verifiable pattern (each byte a function of its \
               offset), under a temporary name renamed when complete. Without it, the files \
               are named by filename_format in directory, as fio names them.",
        |j, v| {
            split_filenames(&v)?;
            j.filename = Some(v);
        },
        example: "/tmp/a:/tmp/b" => |j| j.filenames().len() == 2
    ),
    job_path!(
        "directory",
        "DIR[:DIR...]",
        "the current directory",
        "Where the job's files are (a relative filename too). Several directories \
               separated by ':' spread a job's clones over them (clone N uses directory \
               N modulo their count), as in fio.",
        |j, v| j.directory = Some(v),
        example: "/tmp" => |j| j.directory.as_deref() == Some("/tmp".as_ref())
    ),
    job!(
        "filename_format",
        "STR",
        "$jobname.$jobnum.$filenum",
        "How files are named when filename is not given: $jobname (the section's \
               name), $jobnum (the clone's number: 0, then numjobs-1 down to 1), $filenum \
               (0 to nrfiles-1).",
        |j, v| j.filename_format = Some(crate::model::values::nonempty(v)?.to_string()),
        example: "$jobname.f$filenum" => |j| j.filename_format.as_deref() == Some("$jobname.f$filenum")
    ),
    job!(
        "nrfiles" | "nr_files",
        "INT",
        "1",
        "Files per job when filename does not list them (named by filename_format); \
               size is split over them.",
        |j, v| j.nrfiles = int(j.kb_base, v, 1, 1 << 20)? as u32,
        example: "4" => |j| j.nrfiles == 4
    ),
    job!(
        "filesize",
        "SIZE[-SIZE]",
        "size / nrfiles",
        "Size of each file (a range draws each file's size from the job's stream).",
        |j, v| {
            j.filesize = Some(if v.contains('-') || v.contains(':') {
                parse_range(v, j.kb_base).map_err(|e| e.0)?
            } else {
                let b = bytes(j.kb_base, v)?;
                (b, b)
            });
        },
        example: "1m" => |j| j.filesize == Some((1 << 20, 1 << 20))
    ),
    job!(
        "openfiles" | "open_files",
        "INT",
        "nrfiles",
        "At most this many of the job's files open at once: the next file is chosen \
               among the open ones until one is done, as in fio.",
        |j, v| j.openfiles = Some(int(j.kb_base, v, 1, 1 << 20)? as u32),
        example: "2" => |j| j.openfiles == Some(2)
    ),
    job!(
        "file_service_type",
        "TYPE[:N]",
        "roundrobin",
        "Which file the next read goes to: roundrobin (each open file in turn), \
               sequential (a file until it is done), random (uniform), each with :N reads \
               per pick; or zipf[:theta], pareto[:h], normal[:dev] over the files.",
        |j, v| (j.file_service, j.file_service_nr) = parse_file_service(v).map_err(|e| e.0)?,
        example: "random:4" => |j| j.file_service_nr == 4
    ),
    job!(
        "unique_filename",
        "BOOL",
        "1",
        "fio's option for its client/server mode (file names per client); accepted, \
               without effect on a single machine, as in fio.",
        |j, v| j.unique_filename = flag(v)?,
        example: "0" => |j| !j.unique_filename
    ),
    job!(
        "size",
        "SIZE|N%",
        "the files' sizes",
        "Bytes the job reads per pass, split over its files, or a percentage of each \
               file; also the size a missing file is laid out at. Units as fio reads them: \
               4k is 4096 (kb_base=1024), 4kib is 4000.",
        |j, v| {
            let s = size(j.kb_base, v)?;
            if s == Size::Bytes(0) || s == Size::Percent(0) {
                return Err("must be more than 0".into());
            }
            j.size = Some(s);
        },
        example: "2m" => |j| j.size == Some(Size::Bytes(2 << 20))
    ),
    job!(
        "io_size" | "io_limit",
        "SIZE|N%",
        "size",
        "Bytes the job reads in all, if not size: more than size reads the region \
               again, less stops early.",
        |j, v| j.io_size = Some(size(j.kb_base, v)?),
        example: "50%" => |j| j.io_size == Some(Size::Percent(50))
    ),
    job!(
        "offset" | "fileoffset",
        "SIZE|N%",
        "0",
        "Where the job's region starts in each file (a percentage is aligned up to \
               offset_align, else the block size).",
        |j, v| j.offset = size(j.kb_base, v)?,
        example: "1m" => |j| j.offset == Size::Bytes(1 << 20)
    ),
    job!(
        "offset_increment",
        "SIZE|N%",
        "0",
        "Added to offset once per clone (its subjob number), so numjobs clones read \
               side by side regions.",
        |j, v| j.offset_increment = size(j.kb_base, v)?,
        example: "25%" => |j| j.offset_increment == Size::Percent(25)
    ),
    job!(
        "offset_align",
        "SIZE",
        "block size",
        "What a percentage offset is aligned up to.",
        |j, v| {
            let a = bytes(j.kb_base, v)?;
            j.offset_align = (a > 0).then_some(a);
        },
        example: "64k" => |j| j.offset_align == Some(65536)
    ),
    job!(
        "invalidate",
        "BOOL",
        "1",
        "Drop the files' pages from the page cache (posix_fadvise DONTNEED) before \
               the job, as fio does by default. 0 keeps a warm cache.",
        |j, v| j.invalidate = flag(v)?,
        example: "0" => |j| !j.invalidate
    ),
    job!(
        "fadvise_hint",
        "BOOL",
        "1",
        "Advise the kernel of the access pattern before the run, as fio does by default: \
               posix_fadvise RANDOM (no readahead) for randread, SEQUENTIAL for read.",
        |j, v| j.fadvise_hint = flag(v)?,
        example: "0" => |j| !j.fadvise_hint
    ),
    job!(
        "verify",
        "",
        "0",
        "Check every byte read against nowait's offset pattern and stop at the first \
               mismatch, reporting its file offset (the file must have been laid out by \
               nowait). fio's checksum types (md5, crc32c...) verify data fio wrote, which \
               nowait does not write: refused.",
        |j, v| {
            j.verify = match v.trim() {
                "pattern" | "nowait" => true,
                "0" | "none" => false,
                t => flag(t).map_err(|_| {
                    format!(
                        "'{t}' is not supported: fio's verify types check data fio wrote, \
                         and nowait only reads; verify=1 checks nowait's own offset pattern \
                         (or give 0)"
                    )
                })?,
            };
        },
        example: "1" => |j| j.verify
    ),
    job_path!(
        "write_iolog",
        "FILE",
        "none",
        "Write each read as it is issued to FILE in fio's I/O log format (version 3: \
               milliseconds, file, read, offset, length), so nowait's reads can be compared \
               with fio's line for line. With numjobs, each thread writes FILE.N (its thread \
               number).",
        |j, v| j.write_iolog = Some(v),
        example: "/tmp/io.log" => |j| j.write_iolog.as_deref() == Some("/tmp/io.log".as_ref())
    ),
];
