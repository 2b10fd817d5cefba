/*
 * delayfs - a FUSE passthrough filesystem that behaves like a slow disk.
 *
 * It exports the files of one backing directory. Every read and write sleeps
 * (default 5 ms; a different time for non-sequential access with --seek-ms),
 * flush/fsync sleep --flush-ms, and all I/O is serialised by one mutex held
 * during the sleep (a disk has one head). Put a loop device on an image file
 * inside the mount and the loop device behaves like a ~7200 rpm disk.
 *
 * While the control file exists, every read/write/flush/fsync/fallocate
 * returns EIO (fault injection); removing it restores normal operation.
 *
 * Build:
 *   gcc -O2 -Wall -Wextra -o delayfs delayfs.c $(pkg-config fuse3 --cflags --libs)
 *
 * Usage:
 *   delayfs <backing-dir> <mountpoint> [--delay-ms N] [--seek-ms N]
 *           [--flush-ms N] [--control PATH] [--pidfile PATH] [--cached]
 *           [-f] [-s] [-d] [-o fuse-opts]
 *
 * See README-delayfs.md next to this file.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <fuse.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* ---- configuration (set once in main, read-only afterwards) ---- */
static int backing_fd = -1;          /* O_PATH|O_DIRECTORY fd of the backing dir */
static char backing_path[PATH_MAX];
static long delay_us = 5000;         /* --delay-ms */
static long seek_us = -1;            /* --seek-ms; -1 = same as delay */
static long flush_us = -1;           /* --flush-ms; -1 = same as delay */
static char control_path[PATH_MAX];  /* empty = default /run/delayfs-<pid>.fail */
static char pidfile_path[PATH_MAX];  /* empty = none */
static char slow_path[PATH_MAX];     /* --slow; empty = never slowed */
static int use_direct_io = 1;        /* --cached turns it off (for comparison) */

/* Our own SIGTERM/SIGINT/SIGHUP handler (libfuse then keeps its hands off
 * them): it ends the loop like libfuse's would, after which fuse_main
 * unmounts, but the exit status stays 0 (libfuse's handler makes it 8). */
static struct fuse *the_fuse;
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
	if (the_fuse)
		fuse_exit(the_fuse);
}

/* ---- the "head": one mutex serialises all delayed I/O ---- */
static pthread_mutex_t head_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per open file handle. */
struct dfile {
	int fd;
	off_t next;                  /* end offset of the previous read/write; -1 = none */
};

static inline struct dfile *DF(struct fuse_file_info *fi)
{
	return (struct dfile *)(uintptr_t)fi->fh;
}

/* Path inside the backing dir, relative to backing_fd ("/" -> "."). */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* Slowing down (a disk that wears): while the --slow file exists, every delay
 * is multiplied by the number it holds ("3": three times as slow). Read again
 * only when the file changes. Called with head_lock held, so the cache is safe. */
static double slow_factor(void)
{
	static struct timespec seen_mtime;
	static off_t seen_size = -1;
	static double factor = 1.0;
	struct stat st;

	if (!slow_path[0] || stat(slow_path, &st) != 0)
		return 1.0;
	if (st.st_size != seen_size || st.st_mtim.tv_sec != seen_mtime.tv_sec ||
	    st.st_mtim.tv_nsec != seen_mtime.tv_nsec) {
		FILE *fp = fopen(slow_path, "r");
		double read_factor = 1.0;

		if (!fp || fscanf(fp, "%lf", &read_factor) != 1 || read_factor <= 0 || read_factor > 1000)
			read_factor = 1.0;
		if (fp)
			fclose(fp);
		factor = read_factor;
		seen_size = st.st_size;
		seen_mtime = st.st_mtim;
	}
	return factor;
}

static void sleep_us(long us)
{
	struct timespec ts;

	us = (long)(us * slow_factor());
	if (us <= 0)
		return;
	ts.tv_sec = us / 1000000;
	ts.tv_nsec = (us % 1000000) * 1000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Fault injection: the control file exists -> fail. */
static int faulty(void)
{
	struct stat st;

	return stat(control_path, &st) == 0;
}

/* Sleep the access time for an access at off on f (caller holds head_lock). */
static void head_seek(struct dfile *f, off_t off)
{
	long us = delay_us;

	if (seek_us >= 0 && off != f->next)
		us = seek_us;
	sleep_us(us);
}

/* ---- operations ---- */

static void *dfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Nothing may be cached by the kernel, or the delay is hidden. */
	cfg->kernel_cache = 0;
	cfg->auto_cache = 0;
	cfg->direct_io = use_direct_io;
	cfg->use_ino = 0;
	cfg->nullpath_ok = 0;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;

	the_fuse = fuse_get_context()->fuse;
	if (got_signal)                 /* signalled while mounting */
		fuse_exit(the_fuse);

	/* After a possible daemonize (without -f) the pid is final only here. */
	if (!control_path[0])
		snprintf(control_path, sizeof(control_path), "/run/delayfs-%d.fail",
			 (int)getpid());
	if (pidfile_path[0]) {
		FILE *p = fopen(pidfile_path, "w");

		if (p) {
			fprintf(p, "%d\n", (int)getpid());
			fclose(p);
		} else {
			fprintf(stderr, "delayfs: cannot write pidfile %s: %s\n",
				pidfile_path, strerror(errno));
		}
	}
	fprintf(stderr,
		"delayfs: pid %d, backing %s, delay %.3f ms, seek %.3f ms, flush %.3f ms, "
		"direct_io %d, control file %s\n",
		(int)getpid(), backing_path, delay_us / 1000.0,
		(seek_us >= 0 ? seek_us : delay_us) / 1000.0,
		flush_us / 1000.0, use_direct_io, control_path);
	return NULL;
}

static void dfs_destroy(void *data)
{
	(void)data;
	if (pidfile_path[0])
		unlink(pidfile_path);
}

static int dfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int r;

	if (fi && fi->fh)
		r = fstat(DF(fi)->fd, st);
	else
		r = fstatat(backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH);
	return r == -1 ? -errno : 0;
}

static int dfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
		       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	DIR *d;
	struct dirent *e;
	int fd;

	(void)off;
	(void)fi;
	(void)flags;
	fd = openat(backing_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int e2 = errno;

		close(fd);
		return -e2;
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_ino = e->d_ino;
		st.st_mode = (mode_t)DTTOIF(e->d_type);
		if (filler(buf, e->d_name, &st, 0, 0))
			break;
	}
	closedir(d);
	return 0;
}

static int open_common(const char *path, int flags, mode_t mode, struct fuse_file_info *fi)
{
	struct dfile *f;
	int fd;

	/* The kernel already did any O_DIRECT semantics; the backing fd stays buffered. */
	flags &= ~(O_DIRECT | O_NOFOLLOW);
	fd = openat(backing_fd, rel(path), flags | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd == -1)
		return -errno;
	f = malloc(sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	f->next = -1;
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->direct_io = use_direct_io;   /* bypass the page cache of the FUSE file */
	fi->keep_cache = 0;
	return 0;
}

static int dfs_open(const char *path, struct fuse_file_info *fi)
{
	return open_common(path, fi->flags, 0, fi);
}

static int dfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return open_common(path, fi->flags | O_CREAT, mode, fi);
}

static int dfs_release(const char *path, struct fuse_file_info *fi)
{
	struct dfile *f = DF(fi);

	(void)path;
	close(f->fd);
	free(f);
	return 0;
}

/* One read (rbuf) or write (wbuf) at off under the head lock: the head moves there first
 * (head_seek), and a short transfer goes on until size bytes are done, the end of the file
 * (reads) or an error. */
static int transfer(struct dfile *f, char *rbuf, const char *wbuf, size_t size, off_t off)
{
	size_t done = 0;
	int err = 0;

	if (faulty())
		return -EIO;
	pthread_mutex_lock(&head_lock);
	head_seek(f, off);
	while (done < size) {
		ssize_t n = rbuf ? pread(f->fd, rbuf + done, size - done, off + (off_t)done)
				 : pwrite(f->fd, wbuf + done, size - done, off + (off_t)done);

		if (n == -1) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0 && rbuf)
			break;
		done += (size_t)n;
	}
	f->next = off + (off_t)done;
	pthread_mutex_unlock(&head_lock);
	if (err && done == 0)
		return err;
	return (int)done;
}

static int dfs_read(const char *path, char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)path;
	return transfer(DF(fi), buf, NULL, size, off);
}

static int dfs_write(const char *path, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)path;
	return transfer(DF(fi), NULL, buf, size, off);
}

/* flush is called on every close() of a FUSE fd; it does not sync. */
static int dfs_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	if (faulty())
		return -EIO;
	pthread_mutex_lock(&head_lock);
	sleep_us(flush_us);
	pthread_mutex_unlock(&head_lock);
	return 0;
}

static int dfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	int r;

	(void)path;
	if (faulty())
		return -EIO;
	pthread_mutex_lock(&head_lock);
	sleep_us(flush_us);
	r = datasync ? fdatasync(DF(fi)->fd) : fsync(DF(fi)->fd);
	pthread_mutex_unlock(&head_lock);
	return r == -1 ? -errno : 0;
}

/* Discard (loop BLKDISCARD -> punch hole) and fallocate: one access time. */
static int dfs_fallocate(const char *path, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	int r;

	(void)path;
	if (faulty())
		return -EIO;
	pthread_mutex_lock(&head_lock);
	sleep_us(delay_us);
	r = fallocate(DF(fi)->fd, mode, off, len);
	pthread_mutex_unlock(&head_lock);
	return r == -1 ? -errno : 0;
}

static int dfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int r;

	if (fi && fi->fh) {
		r = ftruncate(DF(fi)->fd, size);
	} else {
		int fd = openat(backing_fd, rel(path), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);

		if (fd == -1)
			return -errno;
		r = ftruncate(fd, size);
		if (r == -1) {
			int e = errno;

			close(fd);
			return -e;
		}
		close(fd);
	}
	return r == -1 ? -errno : 0;
}

static int dfs_utimens(const char *path, const struct timespec tv[2],
		       struct fuse_file_info *fi)
{
	int r;

	if (fi && fi->fh)
		r = futimens(DF(fi)->fd, tv);
	else
		r = utimensat(backing_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);
	return r == -1 ? -errno : 0;
}

static int dfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int r;

	if (fi && fi->fh)
		r = fchmod(DF(fi)->fd, mode);
	else
		r = fchmodat(backing_fd, rel(path), mode, 0);
	return r == -1 ? -errno : 0;
}

static int dfs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	int r;

	if (fi && fi->fh)
		r = fchown(DF(fi)->fd, uid, gid);
	else
		r = fchownat(backing_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);
	return r == -1 ? -errno : 0;
}

static int dfs_unlink(const char *path)
{
	return unlinkat(backing_fd, rel(path), 0) == -1 ? -errno : 0;
}

static int dfs_mkdir(const char *path, mode_t mode)
{
	return mkdirat(backing_fd, rel(path), mode) == -1 ? -errno : 0;
}

static int dfs_rmdir(const char *path)
{
	return unlinkat(backing_fd, rel(path), AT_REMOVEDIR) == -1 ? -errno : 0;
}

static int dfs_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags)
		return -EINVAL;
	return renameat(backing_fd, rel(from), backing_fd, rel(to)) == -1 ? -errno : 0;
}

static int dfs_statfs(const char *path, struct statvfs *sv)
{
	int fd, r;

	(void)path;
	fd = openat(backing_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	r = fstatvfs(fd, sv);
	close(fd);
	return r == -1 ? -errno : 0;
}

static const struct fuse_operations dfs_ops = {
	.init = dfs_init,
	.destroy = dfs_destroy,
	.getattr = dfs_getattr,
	.readdir = dfs_readdir,
	.open = dfs_open,
	.create = dfs_create,
	.read = dfs_read,
	.write = dfs_write,
	.flush = dfs_flush,
	.fsync = dfs_fsync,
	.release = dfs_release,
	.fallocate = dfs_fallocate,
	.truncate = dfs_truncate,
	.utimens = dfs_utimens,
	.chmod = dfs_chmod,
	.chown = dfs_chown,
	.unlink = dfs_unlink,
	.mkdir = dfs_mkdir,
	.rmdir = dfs_rmdir,
	.rename = dfs_rename,
	.statfs = dfs_statfs,
};

/* ---- option parsing (by hand; unknown options go to FUSE) ---- */

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s <backing-dir> <mountpoint> [options]\n"
		"  --delay-ms N      sleep per read/write (default 5; fractions allowed)\n"
		"  --seek-ms N       sleep instead for non-sequential read/write\n"
		"                    (offset != end of the previous access on that handle)\n"
		"  --flush-ms N      sleep per flush/fsync (default = delay)\n"
		"  --control PATH    while PATH exists, I/O returns EIO\n"
		"                    (default /run/delayfs-<pid>.fail; not inside backing-dir)\n"
		"  --pidfile PATH    write the daemon's pid there (removed on clean exit)\n"
		"  --slow PATH       while PATH exists, every delay is multiplied by the number in it\n"
		"  --cached          do not force direct_io (the page cache hides the delay)\n"
		"  -f                stay in the foreground (recommended)\n"
		"  -s, -d, -o OPT    passed to FUSE (single-threaded, debug, mount options)\n",
		prog);
}

static int parse_ms(const char *name, const char *v, long *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || d < 0 || d > 3600e3) {
		fprintf(stderr, "delayfs: bad value for %s: '%s'\n", name, v);
		return -1;
	}
	*out = (long)(d * 1000.0 + 0.5);
	return 0;
}

/* Make a path absolute against the current directory (FUSE may chdir("/")). */
static int absolutize(const char *in, char *out, size_t outsz)
{
	char cwd[PATH_MAX];

	if (in[0] == '/') {
		if (strlen(in) >= outsz)
			return -1;
		strcpy(out, in);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	if ((size_t)snprintf(out, outsz, "%s/%s", cwd, in) >= outsz)
		return -1;
	return 0;
}

/* Is PATH (which need not exist) inside directory DIR (a realpath)? */
static int inside(const char *path, const char *dir)
{
	char tmp[PATH_MAX], parent[PATH_MAX];
	char *slash;
	size_t n = strlen(dir);

	strcpy(tmp, path);
	slash = strrchr(tmp, '/');
	if (slash == tmp)
		strcpy(tmp, "/");
	else if (slash)
		*slash = '\0';
	if (!realpath(tmp, parent))
		return 0;   /* parent does not exist yet: cannot be inside */
	return strncmp(parent, dir, n) == 0 && (parent[n] == '\0' || parent[n] == '/' ||
						 strcmp(dir, "/") == 0);
}

int main(int argc, char *argv[])
{
	char **fargv = calloc((size_t)argc + 4, sizeof(char *));
	int fargc = 0, i, ret;
	const char *pos[2] = { NULL, NULL };
	int npos = 0, foreground = 0;
	char mnt_abs[PATH_MAX];

	if (!fargv)
		return 1;
	fargv[fargc++] = argv[0];
	/* First, so that a user's -o can override. max_idle_threads is set
	 * because libfuse 3.14 warns "Ignoring invalid max threads value
	 * 4294967295" when it is left unset (harmless, but noisy). */
	fargv[fargc++] = "-o";
	fargv[fargc++] = "fsname=delayfs,subtype=delayfs,max_idle_threads=10";

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;
		const char *names[] = { "--delay-ms", "--seek-ms", "--flush-ms",
					"--control", "--pidfile", "--slow" };
		int k, matched = -1;

		for (k = 0; k < 6; k++) {
			size_t l = strlen(names[k]);

			if (strncmp(a, names[k], l) == 0 && (a[l] == '\0' || a[l] == '=')) {
				matched = k;
				if (a[l] == '=') {
					val = a + l + 1;
				} else if (i + 1 < argc) {
					val = argv[++i];
				} else {
					fprintf(stderr, "delayfs: %s needs a value\n", a);
					return 2;
				}
				break;
			}
		}
		if (matched >= 0) {
			int bad = 0;

			switch (matched) {
			case 0: bad = parse_ms(a, val, &delay_us); break;
			case 1: bad = parse_ms(a, val, &seek_us); break;
			case 2: bad = parse_ms(a, val, &flush_us); break;
			case 3: bad = absolutize(val, control_path, sizeof(control_path)); break;
			case 4: bad = absolutize(val, pidfile_path, sizeof(pidfile_path)); break;
			case 5: bad = absolutize(val, slow_path, sizeof(slow_path)); break;
			}
			if (bad) {
				if (matched >= 3)
					fprintf(stderr, "delayfs: bad path '%s'\n", val);
				return 2;
			}
		} else if (strcmp(a, "--cached") == 0) {
			use_direct_io = 0;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout, argv[0]);
			return 0;
		} else if (strcmp(a, "-o") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "delayfs: -o needs a value\n");
				return 2;
			}
			fargv[fargc++] = argv[i++];
			fargv[fargc++] = argv[i];
		} else if (a[0] == '-' && a[1] != '\0') {
			if (strcmp(a, "-f") == 0)
				foreground = 1;
			fargv[fargc++] = argv[i];
		} else if (npos < 2) {
			pos[npos++] = a;
		} else {
			fprintf(stderr, "delayfs: unexpected argument '%s'\n", a);
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (npos != 2) {
		usage(stderr, argv[0]);
		return 2;
	}
	if (flush_us < 0)
		flush_us = delay_us;

	if (!realpath(pos[0], backing_path)) {
		fprintf(stderr, "delayfs: backing dir %s: %s\n", pos[0], strerror(errno));
		return 1;
	}
	backing_fd = open(backing_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (backing_fd == -1) {
		fprintf(stderr, "delayfs: backing dir %s: %s\n", backing_path, strerror(errno));
		return 1;
	}
	if (control_path[0] && inside(control_path, backing_path)) {
		fprintf(stderr, "delayfs: --control %s must not be inside the backing dir %s\n",
			control_path, backing_path);
		return 2;
	}
	if (absolutize(pos[1], mnt_abs, sizeof(mnt_abs))) {
		fprintf(stderr, "delayfs: bad mountpoint '%s'\n", pos[1]);
		return 2;
	}
	if (!foreground)
		fprintf(stderr, "delayfs: note: without -f the daemon forks; use --pidfile to find it\n");

	fargv[fargc++] = mnt_abs;
	fargv[fargc] = NULL;

	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	ret = fuse_main(fargc, fargv, &dfs_ops, NULL);
	if (got_signal)
		fprintf(stderr, "delayfs: got signal %d, unmounted, exiting\n", (int)got_signal);
	free(fargv);
	return ret;
}
