// SPDX-License-Identifier: GPL-2.0-only
/*
 * fio-nowait: fio's I/O engine over libnowait's queue.
 *
 * fio hands the engine one io_u at a time (queue), then asks it to submit
 * what it queued (commit) and to reap completions (getevents, event).
 * These map onto libnowait's push, submit and reap: each read lands in the
 * io_u's own buffer (no copy) and carries the io_u as its user data; the
 * queue's depth is fio's iodepth. The engine reads only: a job that
 * writes or trims, and every fio option it cannot honour, is refused in
 * init with a message.
 *
 * Load it as `ioengine=external:<path>/fio-nowait.so`, or preload it
 * (LD_PRELOAD) and say `ioengine=nowait`: its constructor registers it
 * under that name.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"
#include "engines/cmdprio.h"

#include "nowait.h"

/* Engine options (fio's option table below). */
struct nowait_options {
	void *pad; /* fio: the first member must not be an option (off1 != 0) */
	unsigned int backend;
	unsigned int nowait_mode;
	unsigned int cache;
	unsigned int direct_auto;
	unsigned int pool_workers;
	unsigned int stats;
	struct cmdprio_options cmdprio_options;
};

/* One job's (thread's) engine state. */
struct nowait_data {
	struct nowait_queue *q;
	struct nowait_cqe *cqes;
	/* io_us pushed since the last commit: their issue time is the submit. */
	struct io_u **queued;
	unsigned int nr_queued;
	unsigned int depth;
	struct cmdprio cmdprio;
};

static struct fio_option options[] = {
	{
		.name	= "backend",
		.lname	= "nowait backend",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct nowait_options, backend),
		.help	= "nowait's backend: the fastest available, or the one named",
		.def	= "auto",
		.posval = {
			{ .ival = "auto", .oval = NOWAIT_BACKEND_AUTO,
			  .help = "io_uring, else native AIO + thread pool, else pool, else sync" },
			{ .ival = "uring", .oval = NOWAIT_BACKEND_URING,
			  .help = "io_uring" },
			{ .ival = "aio", .oval = NOWAIT_BACKEND_AIO,
			  .help = "Linux native AIO (asynchronous for O_DIRECT files)" },
			{ .ival = "aio+pool", .oval = NOWAIT_BACKEND_AIO_POOL,
			  .help = "native AIO for O_DIRECT files, the thread pool for buffered ones" },
			{ .ival = "pool", .oval = NOWAIT_BACKEND_POOL,
			  .help = "worker threads doing pread, RWF_NOWAIT tried first on the submitter" },
			{ .ival = "sync", .oval = NOWAIT_BACKEND_SYNC,
			  .help = "pread on fio's thread, inside commit" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "nowait_mode",
		.lname	= "nowait page-cache-first mode",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct nowait_options, nowait_mode),
		.help	= "pool backend: try preadv2(RWF_NOWAIT) on the submitting thread first",
		.def	= "adaptive",
		.posval = {
			{ .ival = "adaptive", .oval = NOWAIT_MODE_ADAPTIVE,
			  .help = "while the file's page-cache hit ratio stays high" },
			{ .ival = "always", .oval = NOWAIT_MODE_ALWAYS,
			  .help = "every buffered read" },
			{ .ival = "off", .oval = NOWAIT_MODE_OFF,
			  .help = "never: every read goes to a worker" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "cache",
		.lname	= "nowait cache policy",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct nowait_options, cache),
		.help	= "what buffered reads leave in the page cache",
		.def	= "keep",
		.posval = {
			{ .ival = "keep", .oval = NOWAIT_CACHE_KEEP,
			  .help = "keep the pages reads bring in" },
			{ .ival = "drop", .oval = NOWAIT_CACHE_DROP,
			  .help = "uncached reads (RWF_DONTCACHE) where the filesystem allows" },
			{ .ival = "adaptive", .oval = NOWAIT_CACHE_ADAPTIVE,
			  .help = "uncached only the scans of files too big to keep" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "direct_auto",
		.lname	= "nowait O_DIRECT where possible",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct nowait_options, direct_auto),
		.help	= "with direct=1: O_DIRECT where the filesystem allows it, unaligned reads bounced",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "pool_workers",
		.lname	= "nowait pool workers",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct nowait_options, pool_workers),
		.help	= "worker threads of the pool backend (0: nowait's default)",
		.def	= "0",
		.minval	= 0,
		.maxval	= 1024,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "nowait_stats",
		.lname	= "nowait counters",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct nowait_options, stats),
		.help	= "print nowait's counters when the job ends",
		.def	= "1",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "cmdprio_percentage",
		.lname	= "high priority percentage",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct nowait_options, cmdprio_options.percentage[DDIR_READ]),
		.off2	= offsetof(struct nowait_options, cmdprio_options.percentage[DDIR_WRITE]),
		.minval	= 0,
		.maxval	= 100,
		.help	= "Send high priority I/O this percentage of the time",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "cmdprio_class",
		.lname	= "Asynchronous I/O priority class",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct nowait_options, cmdprio_options.class[DDIR_READ]),
		.off2	= offsetof(struct nowait_options, cmdprio_options.class[DDIR_WRITE]),
		.help	= "Set asynchronous IO priority class",
		.minval	= IOPRIO_MIN_PRIO_CLASS + 1,
		.maxval	= IOPRIO_MAX_PRIO_CLASS,
		.interval = 1,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "cmdprio",
		.lname	= "Asynchronous I/O priority level",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct nowait_options, cmdprio_options.level[DDIR_READ]),
		.off2	= offsetof(struct nowait_options, cmdprio_options.level[DDIR_WRITE]),
		.help	= "Set asynchronous IO priority level",
		.minval	= IOPRIO_MIN_PRIO,
		.maxval	= IOPRIO_MAX_PRIO,
		.interval = 1,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "cmdprio_bssplit",
		.lname	= "Priority percentage block size split",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct nowait_options, cmdprio_options.bssplit_str),
		.help	= "Set priority percentages for different block sizes",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= NULL,
	},
};

/* libnowait's words for the last failure, for fio's error log. */
static const char *nowait_why(void)
{
	const char *m = nowait_last_error();
	return (m && *m) ? m : "(no message)";
}

/*
 * fio's options this engine cannot honour, refused before any I/O: the
 * engine reads, through nowait's own descriptors and queue.
 */
static int nowait_check_job(struct thread_data *td)
{
	struct thread_options *o = &td->o;

	if (td_write(td) || td_trim(td)) {
		log_err("fio: ioengine=nowait reads only, and job %s %s (its rw=); use rw=read or randread, or an engine that %s (psync, io_uring, libaio)\n",
			o->name, td_trim(td) ? "trims" : "writes",
			td_trim(td) ? "trims" : "writes");
		return 1;
	}
	if (o->end_fsync) {
		log_err("fio: ioengine=nowait reads only: end_fsync=1 asks it for an fsync; drop end_fsync (a read job has nothing to sync)\n");
		return 1;
	}
	if (o->odirect == 0 && td->eo &&
	    ((struct nowait_options *)td->eo)->direct_auto) {
		log_err("fio: ioengine=nowait: direct_auto=1 needs direct=1 (it chooses O_DIRECT where the filesystem allows it)\n");
		return 1;
	}
	return 0;
}

static int fio_nowait_init(struct thread_data *td)
{
	struct nowait_options *o = td->eo;
	struct nowait_queue_options qo;
	struct nowait_data *nd;
	int r;

	if (nowait_check_job(td))
		return 1;
	if (td->o.iodepth > NOWAIT_MAX_DEPTH) {
		log_err("fio: ioengine=nowait: iodepth=%u is over nowait's deepest queue (%u); lower iodepth\n",
			td->o.iodepth, NOWAIT_MAX_DEPTH);
		return 1;
	}

	nd = calloc(1, sizeof(*nd));
	if (!nd) {
		log_err("fio: ioengine=nowait: out of memory for the engine's state\n");
		return 1;
	}
	nd->depth = td->o.iodepth ? td->o.iodepth : 1;
	nd->cqes = calloc(nd->depth, sizeof(*nd->cqes));
	nd->queued = calloc(nd->depth, sizeof(*nd->queued));
	if (!nd->cqes || !nd->queued) {
		log_err("fio: ioengine=nowait: out of memory for %u completions\n", nd->depth);
		goto fail;
	}

	nowait_queue_options_init(&qo);
	qo.depth = nd->depth;
	qo.backend = o->backend;
	qo.nowait_mode = o->nowait_mode;
	qo.pool_workers = o->pool_workers;
	qo.cache = o->cache;
	r = nowait_queue_create(&qo, &nd->q);
	if (r < 0) {
		log_err("fio: ioengine=nowait: cannot create a queue of depth %u: %s\n",
			nd->depth, nowait_why());
		td_verror(td, -r, "nowait_queue_create");
		goto fail;
	}

	r = fio_cmdprio_init(td, &nd->cmdprio, &o->cmdprio_options);
	if (r) {
		td_verror(td, EINVAL, "fio_cmdprio_init");
		goto fail;
	}

	td->io_ops_data = nd;
	return 0;
fail:
	if (nd->q)
		nowait_queue_destroy(nd->q);
	free(nd->cqes);
	free(nd->queued);
	free(nd);
	return 1;
}

static int fio_nowait_prep(struct thread_data *td, struct io_u *io_u)
{
	if (io_u->ddir != DDIR_READ) {
		/* fio_nowait_init refused writes and trims: only a sync is left. */
		log_err("fio: ioengine=nowait reads only: a %s request reached it\n",
			io_ddir_name(io_u->ddir));
		return EINVAL;
	}
	return 0;
}

static enum fio_q_status fio_nowait_queue(struct thread_data *td,
					  struct io_u *io_u)
{
	struct nowait_data *nd = td->io_ops_data;
	struct nowait_file *f = FILE_ENG_DATA(io_u->file);
	struct nowait_read read;
	int r;

	fio_ro_check(td, io_u);

	if (io_u->ddir != DDIR_READ) {
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	if (nd->cmdprio.mode != CMDPRIO_MODE_NONE)
		fio_cmdprio_set_ioprio(td, &nd->cmdprio, io_u);

	/* fio's prio/prioclass, or cmdprio_* per read: io_u->ioprio. */
	read.file = f;
	read.buf = io_u->xfer_buf;
	read.len = io_u->xfer_buflen;
	read.offset = io_u->offset;
	read.user_data = (uint64_t)(uintptr_t)io_u;
	read.ioprio = io_u->ioprio;
	r = nowait_push_read(nd->q, &read);
	if (r == -EBUSY)
		return FIO_Q_BUSY;
	if (r < 0) {
		log_err("fio: ioengine=nowait: read of %llu bytes at %llu of %s refused: %s\n",
			io_u->xfer_buflen, io_u->offset, io_u->file->file_name,
			nowait_why());
		io_u->error = -r;
		return FIO_Q_COMPLETED;
	}
	nd->queued[nd->nr_queued++] = io_u;
	return FIO_Q_QUEUED;
}

static int fio_nowait_commit(struct thread_data *td)
{
	struct nowait_data *nd = td->io_ops_data;
	struct timespec now;
	unsigned int i;
	int r;

	if (!nd->nr_queued)
		return 0;
	r = nowait_submit(nd->q);
	if (r < 0) {
		log_err("fio: ioengine=nowait: submit failed: %s\n", nowait_why());
		td_verror(td, -r, "nowait_submit");
		return r;
	}
	if (fio_fill_issue_time(td)) {
		fio_gettime(&now, NULL);
		for (i = 0; i < nd->nr_queued; i++) {
			struct io_u *io_u = nd->queued[i];

			memcpy(&io_u->issue_time, &now, sizeof(now));
			io_u_queued(td, io_u);
		}
	}
	io_u_mark_submit(td, nd->nr_queued);
	nd->nr_queued = 0;
	return 0;
}

static int fio_nowait_getevents(struct thread_data *td, unsigned int min,
				unsigned int max, const struct timespec *t)
{
	struct nowait_data *nd = td->io_ops_data;
	int timeout_ms = -1;
	int r;

	if (max > nd->depth)
		max = nd->depth;
	if (min > max)
		min = max;
	if (t) {
		long long ms = (long long)t->tv_sec * 1000 + t->tv_nsec / 1000000;

		timeout_ms = ms > INT32_MAX ? INT32_MAX : (int)ms;
	}
	/* Reads pushed and not committed yet go out with this reap. */
	if (nd->nr_queued) {
		r = fio_nowait_commit(td);
		if (r < 0)
			return r;
	}
	r = nowait_reap(nd->q, nd->cqes, max, min, timeout_ms);
	if (r < 0) {
		log_err("fio: ioengine=nowait: reap failed: %s\n", nowait_why());
		td_verror(td, -r, "nowait_reap");
	}
	return r;
}

static struct io_u *fio_nowait_event(struct thread_data *td, int event)
{
	struct nowait_data *nd = td->io_ops_data;
	struct nowait_cqe *c = &nd->cqes[event];
	struct io_u *io_u = (struct io_u *)(uintptr_t)c->user_data;

	if (c->res < 0) {
		io_u->error = (int)-c->res;
		log_err("fio: ioengine=nowait: read of %llu bytes at %llu of %s failed: %s\n",
			io_u->xfer_buflen, io_u->offset, io_u->file->file_name,
			nowait_why());
	} else {
		io_u->error = 0;
		/* Fewer bytes than asked: end of file (nowait finishes short reads). */
		io_u->resid = io_u->xfer_buflen - (unsigned long long)c->res;
	}
	return io_u;
}

static void fio_nowait_print_stats(struct thread_data *td, struct nowait_data *nd)
{
	char *s = NULL;
	char *line, *save = NULL;

	if (nowait_queue_stats(nd->q, 0, &s) < 0) {
		log_err("fio: ioengine=nowait: no counters: %s\n", nowait_why());
		return;
	}
	log_info("%s: nowait counters:", td->o.name);
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_info(" %s%s", line, strncmp(line, "reason:", 7) ? ";" : ";\n   ");
	log_info("\n");
	nowait_string_free(s);
}

static void fio_nowait_cleanup(struct thread_data *td)
{
	struct nowait_data *nd = td->io_ops_data;
	struct nowait_options *o = td->eo;

	if (!nd)
		return;
	if (o && o->stats)
		fio_nowait_print_stats(td, nd);
	fio_cmdprio_cleanup(&nd->cmdprio);
	nowait_queue_destroy(nd->q);
	free(nd->cqes);
	free(nd->queued);
	free(nd);
	td->io_ops_data = NULL;
}

static int fio_nowait_open_file(struct thread_data *td, struct fio_file *f)
{
	struct nowait_options *o = td->eo;
	struct nowait_file *nf = NULL;
	int direct = NOWAIT_DIRECT_OFF;
	int r;

	if (td->o.odirect)
		direct = (o && o->direct_auto) ? NOWAIT_DIRECT_AUTO : NOWAIT_DIRECT_ON;
	r = nowait_file_open(f->file_name, direct, &nf);
	if (r < 0) {
		log_err("fio: ioengine=nowait: cannot open %s: %s\n", f->file_name,
			nowait_why());
		td_verror(td, -r, "nowait_file_open");
		return 1;
	}
	/*
	 * fio's own calls on the file (invalidate's fadvise(DONTNEED), the
	 * fadvise_hint read-ahead hints, a block device's BLKFLSBUF) act on
	 * the descriptor nowait reads through.
	 */
	f->fd = nowait_file_fd(nf);
	FILE_SET_ENG_DATA(f, nf);
	return 0;
}

static int fio_nowait_close_file(struct thread_data *td, struct fio_file *f)
{
	struct nowait_file *nf = FILE_ENG_DATA(f);

	/* Reads still in flight keep nowait's descriptor open. */
	nowait_file_close(nf);
	FILE_SET_ENG_DATA(f, NULL);
	f->fd = -1;
	return 0;
}

struct ioengine_ops ioengine = {
	.name			= "nowait",
	.version		= FIO_IOOPS_VERSION,
	.flags			= FIO_ASYNCIO_SETS_ISSUE_TIME,
	.init			= fio_nowait_init,
	.prep			= fio_nowait_prep,
	.queue			= fio_nowait_queue,
	.commit			= fio_nowait_commit,
	.getevents		= fio_nowait_getevents,
	.event			= fio_nowait_event,
	.cleanup		= fio_nowait_cleanup,
	.open_file		= fio_nowait_open_file,
	.close_file		= fio_nowait_close_file,
	.get_file_size		= generic_get_file_size,
	.options		= options,
	.option_struct_size	= sizeof(struct nowait_options),
};

/*
 * Preloaded (LD_PRELOAD), the engine registers itself, so job files can
 * say ioengine=nowait. The library is linked with -z nodelete: fio's
 * list of engines may keep pointing at this struct after a dlclose.
 */
static void fio_init fio_nowait_register(void)
{
	register_ioengine(&ioengine);
}
