//! fio's options and engines that nowait refuses, each with the reason:
//! nowait reads files, so what writes, trims, verifies written data, moves
//! data over a network or drives one kind of device is an error naming the
//! option — never ignored, never run as another workload.

/// Why nowait refuses fio's option `name`, if it does.
pub fn reason(name: &str) -> Option<String> {
    let why = REFUSED
        .iter()
        .find(|(names, _)| names.split(' ').any(|n| n == name))
        .map(|(_, why)| *why)?;
    Some(format!(
        "fio's option '{name}' is refused: {why}; remove it from the job (nowait reads \
         only, and never ignores an option)"
    ))
}

/// Why nowait has no engine `name`, if it is one of fio's.
pub fn engine(name: &str) -> Option<String> {
    let why = ENGINES
        .iter()
        .find(|(names, _)| names.split(' ').any(|n| n == name))
        .map(|(_, why)| *why)
        .or_else(|| {
            name.starts_with("external:")
                .then_some("an external engine library")
        })?;
    Some(format!(
        "fio's engine '{name}' is refused: {why}; nowait reads files through io_uring, \
         libaio, psync, sync, pvsync, pvsync2, mmap and null (and its own pool and \
         aio+pool)"
    ))
}

/// Option names (separated by spaces) and why each group is refused.
const REFUSED: &[(&str, &str)] = &[
    (
        "rwmixread rwmixwrite percentage_sequential",
        "it mixes writes into reads",
    ),
    (
        "fsync fdatasync fsync_on_close end_fsync sync write_barrier overwrite \
         create_on_open create_only create_serialize create_fsync allow_file_create \
         allow_mounted_write fallocate atomic pre_read",
        "it is about writing or creating files",
    ),
    (
        "buffer_pattern buffer_compress_percentage buffer_compress_chunk \
         compress_percentage compress_chunk dedupe_percentage dedupe_mode \
         dedupe_working_set_percentage dedupe_global refill_buffers scramble_buffers \
         zero_buffers",
        "it shapes the data written",
    ),
    (
        "do_verify verify_pattern verify_offset verify_interval verify_fatal verify_dump \
         verify_async verify_backlog verify_backlog_batch verify_state_save \
         verify_state_load verify_only experimental_verify verify_header_seed",
        "it verifies data fio wrote (nowait's verify=1 checks its own offset pattern)",
    ),
    (
        "trim_percentage trim_verify_zero trim_backlog trim_backlog_batch",
        "it trims",
    ),
    (
        "read_iolog iolog replay_no_stall replay_redirect replay_scale \
         replay_align replay_time_scale replay_skip merge_blktrace_file",
        "nowait does not replay fio's I/O logs (its reads come from the job's options; \
         write_iolog writes one)",
    ),
    (
        "cmdprio_percentage cmdprio_class cmdprio cmdprio_bssplit cmdprio_hint prio \
         prioclass priohint",
        "I/O priorities (ioprio_set, per-read priorities) are not set by nowait's engines",
    ),
    (
        "numa_cpu_nodes numa_mem_policy cpus_allowed cpumask cpus_allowed_policy \
         cgroup cgroup_weight cgroup_nodelete nice gid uid",
        "it places or limits the job's threads (CPUs, NUMA memory, cgroups, users), \
         which nowait does not do",
    ),
    (
        "force_async hipri_percentage sqthread_poll_cpu cmd_type fdp fdp_pli \
         dataplacement plids nonvectored registerfiles_sparse",
        "nowait's engines have no such per-read control",
    ),
    (
        "latency_target latency_window latency_percentile latency_run max_latency",
        "fio's queue-depth search for a latency target is not provided (run a sweep: \
         --iodepth 1,2,4,...)",
    ),
    (
        "hostname port protocol interface listen pingpong verb bindname",
        "it is for network engines",
    ),
    (
        "wait_for exitall exitall_on_error exit_what per_job_logs_gz",
        "it couples jobs in ways nowait's scheduler does not",
    ),
    ("exec_prerun exec_postrun", "nowait runs no commands"),
    (
        "log_compression log_store_compressed",
        "nowait writes logs uncompressed (fio compresses them with zlib)",
    ),
    (
        "log_alternate_epoch log_unix_epoch log_alternate_epoch_clock_id",
        "nowait's log times count from the job's start, as fio's default",
    ),
    ("log_issue_time", "nowait's logs have no issue-time column"),
    ("stats", "nowait always collects statistics"),
    (
        "unified_rw_reporting",
        "nowait only reads, so there is nothing to unify",
    ),
    (
        "block_error_percentiles",
        "it reports trim errors, and nowait only reads",
    ),
    (
        "lockfile lockmem lockfile_batch",
        "file locks and locked memory are not provided",
    ),
    (
        "mem iomem mem_align iomem_align hugepage-size",
        "nowait allocates its own aligned buffers (registered with fixedbufs)",
    ),
];

/// fio engines (names separated by spaces) nowait does not run, and why.
const ENGINES: &[(&str, &str)] = &[
    (
        "net netsplice rdma vsock nbd http nfs rados rbd gfapi gfapi_async libhdfs \
         libiscsi dfs ime_psync ime_psyncv ime_aio",
        "it moves data over a network or to a remote store",
    ),
    (
        "sg libzbc io_uring_cmd xnvme spdk libblkio dev-dax libpmem pmemblk mtd \
         libcufile libhipfile binject windowsaio solarisaio",
        "it drives one kind of device or library",
    ),
    (
        "cpuio exec e4defrag falloc ftruncate filecreate filestat filedelete \
         dircreate dirstat dirdelete",
        "it does no file reads",
    ),
    ("splice", "splice(2) reads are not provided"),
    (
        "posixaio guasi",
        "POSIX AIO is not provided (ioengine=pool is nowait's thread offload, libaio \
         the kernel's AIO)",
    ),
];
