/* pysched's native minder: the same job as minder.py, in a small C program.
 *
 * Built on first use by pysched.launch.native_minder (any C compiler; on x86-64 with no C
 * library at all, see minder_sys.h, elsewhere with the C library only) and started by the
 * minder host (pysched.launch.host) with posix_spawn, one per attempt. A forked Python minder
 * costs about 5 ms of CPU an attempt; this one about 0.1 ms built freestanding, 0.5 ms with
 * glibc on a virtual machine (whose start-up asks the CPU what it is, dozens of times).
 *
 * It does exactly what minder.py's run() does and writes the same two files, byte for byte
 * the same JSON: see minder.py for the contract. The job comes on standard input, prepared by
 * the host (host.native_job): NUL-terminated fields, in this order:
 *
 *   "pysched-minder 1", note, started, stdout, stderr, has_cwd ("0" or "1"), cwd,
 *   error_head, what_program, what_cwd, what_stdout, what_stderr,
 *   argc, argv..., execc, executables..., envc, "KEY=value"...
 *
 * error_head and the what_* fields are already JSON-escaped (without quotes) by the host,
 * which writes JSON as Python's json module does; the error of a command that cannot start is
 * error_head + strerror(errno) + " (" + what + ")", as in minder.py. A job minder.py would
 * refuse (a NUL byte in a text, a bad variable name, no command) never comes here: the host
 * forks a Python minder for it.
 *
 * "--check" as the only argument prints "pysched-minder 1" and exits 0: how the builder
 * checks that a built minder runs here (a noexec mount, say).
 *
 * Numbers and times are written by the small helpers below, not printf: built freestanding
 * (minder_sys.h) there is no C library to call.
 */
#include "minder_sys.h" /* the C library, or the few system calls it makes without one */

#define WIRE_MAGIC "pysched-minder 1"
#define NOTE_VERSION 1
#define LOG_FILE_MODE 0640
#define LOG_DIR_MODE 0750

enum step { STEP_EXEC, STEP_NOEXEC, STEP_CHDIR };

static volatile sig_atomic_t term_requested = 0;
static volatile pid_t child_pid = 0;

static void on_term(int signum) {
    (void)signum;
    int saved = errno;
    term_requested = 1;
    if (child_pid > 0) kill(-child_pid, SIGTERM);
    errno = saved;
}

/* A no-op handler: unlike SIG_IGN it is reset to the default across exec. */
static void on_ignore(int signum) { (void)signum; }

static void set_handler(int signum, void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(signum, &action, NULL);
}

/* ---- small text buffers ---------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} text;

/* Room for more bytes; a minder that cannot allocate a few kilobytes stops here rather than
 * write a note with a hole in it (the launcher then finds no note, as after a kill). */
static void grow(text *t, size_t more) {
    if (t->len + more + 1 <= t->cap) return;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + more + 1) cap *= 2;
    char *data = realloc(t->data, cap);
    if (!data) {
        static const char message[] = "minder: out of memory\n";
        if (write(2, message, sizeof message - 1) < 0) { /* nowhere else to say it */
        }
        _exit(1);
    }
    t->data = data;
    t->cap = cap;
}

static void add_bytes(text *t, const char *s, size_t n) {
    grow(t, n);
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

static void add(text *t, const char *s) { add_bytes(t, s, strlen(s)); }

/* value in decimal, at least width characters, a minus included (zeros after it), as
 * printf's "%0*lld" */
static void add_padded(text *t, long long value, int width) {
    if (value < 0) width--;
    char buf[32], *end = buf + sizeof buf, *p = end;
    unsigned long long magnitude = (unsigned long long)value;
    if (value < 0) magnitude = 0ULL - magnitude;
    do {
        *--p = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude || end - p < width);
    if (value < 0) *--p = '-';
    add_bytes(t, p, (size_t)(end - p));
}

static void add_int(text *t, long long value) { add_padded(t, value, 1); }

/* A decimal integer (an optional minus, then digits) from *s, which is moved past it; -1 when
 * there are no digits or too many. */
static int parse_int(const char **s, long long *value) {
    const char *p = *s;
    int negative = *p == '-';
    if (negative) p++;
    if (*p < '0' || *p > '9') return -1;
    unsigned long long magnitude = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (magnitude > 99999999999999999ULL) return -1;
        magnitude = magnitude * 10 + (unsigned long long)(*p - '0');
    }
    *value = negative ? -(long long)magnitude : (long long)magnitude;
    *s = p;
    return 0;
}

/* Words to standard error, as one line (second may be NULL). */
static void say(const char *first, const char *second) {
    text line = {0};
    add(&line, first);
    if (second) add(&line, second);
    add(&line, "\n");
    if (write(2, line.data, line.len) < 0) { /* nowhere else to say it */
    }
}

/* ---- what the job says ------------------------------------------------------------------ */

typedef struct {
    const char *note, *started, *out, *err, *cwd;
    const char *error_head, *what_program, *what_cwd, *what_out, *what_err;
    char **argv, **executables, **envp;
} job_t;

static int read_all(int fd, text *buf) {
    for (;;) {
        grow(buf, 65536);
        ssize_t n = read(fd, buf->data + buf->len, buf->cap - buf->len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) return 0;
        buf->len += (size_t)n;
    }
}

/* The next NUL-terminated field of buf from *at, or NULL past the end. */
static char *field(text *buf, size_t *at) {
    if (*at >= buf->len) return NULL;
    char *start = buf->data + *at;
    char *end = memchr(start, '\0', buf->len - *at);
    if (!end) return NULL;
    *at = (size_t)(end - buf->data) + 1;
    return start;
}

static char **list(text *buf, size_t *at) {
    const char *count = field(buf, at);
    if (!count) return NULL;
    long long n;
    if (parse_int(&count, &n) < 0 || *count != '\0' || n < 0 || n > 1000000) return NULL;
    char **items = calloc((size_t)n + 1, sizeof *items);
    if (!items) return NULL;
    for (long i = 0; i < n; i++)
        if (!(items[i] = field(buf, at))) return NULL;
    return items;
}

static int read_job(job_t *job) {
    static text buf;
    size_t at = 0;
    if (read_all(0, &buf) < 0) return -1;
    const char *magic = field(&buf, &at);
    if (!magic || strcmp(magic, WIRE_MAGIC) != 0) return -1;
    const char **strings[] = {&job->note, &job->started, &job->out, &job->err};
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
        if (!(*strings[i] = field(&buf, &at))) return -1;
    const char *has_cwd = field(&buf, &at);
    const char *cwd = field(&buf, &at);
    if (!has_cwd || !cwd) return -1;
    job->cwd = strcmp(has_cwd, "1") == 0 ? cwd : NULL;
    const char **escaped[] = {&job->error_head, &job->what_program, &job->what_cwd,
                              &job->what_out, &job->what_err};
    for (size_t i = 0; i < sizeof escaped / sizeof *escaped; i++)
        if (!(*escaped[i] = field(&buf, &at))) return -1;
    if (!(job->argv = list(&buf, &at))) return -1;
    if (!(job->executables = list(&buf, &at))) return -1;
    if (!(job->envp = list(&buf, &at))) return -1;
    return at == buf.len ? 0 : -1;
}

/* ---- /proc and the clock ---------------------------------------------------------------- */

/* The start time of pid ("self" when 0) in clock ticks since boot, or -1. */
static long long proc_start_ticks(pid_t pid) {
    char data[4096];
    text path = {0};
    add(&path, "/proc/");
    if (pid) add_int(&path, pid);
    else add(&path, "self");
    add(&path, "/stat");
    int fd = open(path.data, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, data, sizeof data - 1);
    close(fd);
    if (n <= 0) return -1;
    data[n] = '\0';
    char *p = strrchr(data, ')');
    if (!p) return -1;
    p++;
    for (int fieldno = 2; fieldno < 22; fieldno++) { /* field 22 is the start time */
        while (*p == ' ') p++;
        if (fieldno < 21) {
            while (*p && *p != ' ') p++;
            if (!*p) return -1;
        }
    }
    const char *digits = p;
    long long ticks;
    return parse_int(&digits, &ticks) < 0 ? -1 : ticks;
}

/* This boot's id as a JSON value: a quoted string, or null. */
static void add_boot_id(text *t) {
    char data[128];
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, data, sizeof data - 1);
    if (fd >= 0) close(fd);
    if (n < 0) n = 0;
    data[n] = '\0';
    char *start = data, *end = data + n;
    while (start < end && (*start == ' ' || (*start >= '\t' && *start <= '\r'))) start++;
    while (end > start && (end[-1] == ' ' || (end[-1] >= '\t' && end[-1] <= '\r'))) end--;
    *end = '\0';
    for (char *c = start; *c; c++) /* ids are hex and dashes: anything else is not one */
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              *c == '-')) {
            *start = '\0';
            break;
        }
    if (!*start) {
        add(t, "null");
        return;
    }
    add(t, "\"");
    add(t, start);
    add(t, "\"");
}

/* Now in UTC, quoted, as Python's datetime.now(UTC).isoformat() writes it. */
static void add_now(text *t) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long seconds = now.tv_sec, micros = now.tv_nsec / 1000;
    long long days = seconds / 86400, in_day = seconds % 86400;
    if (in_day < 0) in_day += 86400, days--;
    /* the civil date of a day count (days since 1970-01-01; H. Hinnant's days_from_civil,
     * reversed), proleptic Gregorian as Python's datetime */
    long long z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153, day = doy - (153 * mp + 2) / 5 + 1;
    long long month = mp < 10 ? mp + 3 : mp - 9, year = yoe + era * 400 + (month <= 2);
    add(t, "\"");
    add_padded(t, year, 4);
    add(t, "-");
    add_padded(t, month, 2);
    add(t, "-");
    add_padded(t, day, 2);
    add(t, "T");
    add_padded(t, in_day / 3600, 2);
    add(t, ":");
    add_padded(t, in_day / 60 % 60, 2);
    add(t, ":");
    add_padded(t, in_day % 60, 2);
    if (micros) {
        add(t, ".");
        add_padded(t, micros, 6);
    }
    add(t, "+00:00\"");
}

/* ---- files ------------------------------------------------------------------------------ */

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folder part of path, as Python's os.path.dirname gives it, into out. */
static void dirname_of(const char *path, char *out, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        out[0] = '\0';
        return;
    }
    const char *end = slash;
    while (end > path && end[-1] == '/') end--;
    if (end == path) end = slash + 1; /* all slashes: keep them, as dirname does */
    size_t n = (size_t)(end - path);
    if (n >= size) n = size - 1;
    memcpy(out, path, n);
    out[n] = '\0';
}

/* Make the folder path and every missing one above it, each with LOG_DIR_MODE. */
static int make_folders(const char *path) {
    if (!*path) path = ".";
    if (mkdir(path, LOG_DIR_MODE) == 0) return 0;
    if (errno == EEXIST) {
        if (is_dir(path)) return 0;
        errno = EEXIST;
        return -1;
    }
    if (errno != ENOENT) return -1;
    size_t n = strlen(path);
    char *stripped = malloc(n + 1), *parent = malloc(n + 2);
    if (!stripped || !parent) return -1;
    memcpy(stripped, path, n + 1);
    while (n > 1 && stripped[n - 1] == '/') stripped[--n] = '\0';
    dirname_of(stripped, parent, n + 2);
    int failed = !*parent || strcmp(parent, path) == 0;
    if (!failed) failed = make_folders(parent) < 0;
    free(stripped);
    free(parent);
    if (failed) {
        if (!errno) errno = ENOENT;
        return -1;
    }
    if (mkdir(path, LOG_DIR_MODE) == 0) return 0;
    if (errno == EEXIST && is_dir(path)) return 0; /* made meanwhile by another minder */
    return -1;
}

static int write_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Write data to path so a reader sees all of it or nothing (temp file, fsync, rename, fsync
 * of the folder). */
static int write_atomically(const char *path, const text *data) {
    size_t n = strlen(path);
    char *folder = malloc(n + 1);
    if (!folder) return -1;
    dirname_of(path, folder, n + 1);
    const char *name = path + strlen(folder);
    while (*name == '/') name++;
    if (make_folders(folder) < 0) return -1;
    text tmp = {0};
    if (*folder) {
        add(&tmp, folder);
        add(&tmp, "/");
    }
    add(&tmp, ".");
    add(&tmp, name);
    add(&tmp, ".");
    add_int(&tmp, getpid());
    add(&tmp, ".tmp");
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, LOG_FILE_MODE);
    if (fd < 0) return -1;
    int failed = write_all(fd, data->data, data->len) < 0 || fsync(fd) < 0;
    close(fd);
    if (failed || rename(tmp.data, path) < 0) return -1;
    int dir = open(*folder ? folder : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    failed = fsync(dir) < 0;
    close(dir);
    free(folder);
    free(tmp.data);
    return failed ? -1 : 0;
}

/* Write data into path (created if missing) with one write: no temp file, no fsync. */
static int write_in_place(const char *path, const text *data) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, LOG_FILE_MODE);
    if (fd < 0) return -1;
    int failed = write(fd, data->data, data->len) != (ssize_t)data->len ||
                 ftruncate(fd, (off_t)data->len) < 0;
    close(fd);
    return failed ? -1 : 0;
}

/* ---- the note --------------------------------------------------------------------------- */

static void add_field(text *t, const char *key, int first) {
    if (!first) add(t, ",");
    add(t, "\"");
    add(t, key);
    add(t, "\":");
}

static void add_int_or_null(text *t, const char *key, long long value, int present) {
    add_field(t, key, 0);
    if (present) add_int(t, value);
    else add(t, "null");
}

/* The note: exit_code or signal, or error (already JSON text, quotes included, or NULL). */
static int write_note(const job_t *job, int has_code, int code, const char *error, pid_t pid,
                      const text *started_at) {
    text note = {0};
    add(&note, "{");
    add_field(&note, "version", 1);
    add_int(&note, NOTE_VERSION);
    add_int_or_null(&note, "exit_code", code, has_code && code >= 0);
    add_int_or_null(&note, "signal", -code, has_code && code < 0);
    add_field(&note, "error", 0);
    add(&note, error ? error : "null");
    add_int_or_null(&note, "pid", pid, pid > 0);
    add_int_or_null(&note, "minder_pid", getpid(), 1);
    add_field(&note, "started_at", 0);
    add(&note, started_at ? started_at->data : "null");
    add_field(&note, "ended_at", 0);
    add_now(&note);
    add(&note, "}");
    return write_atomically(job->note, &note);
}

/* A note saying the command could not start: error_head + strerror + " (" + what + ")". */
static int write_cannot_start(const job_t *job, int err_no, const char *what,
                              const text *started_at) {
    text error = {0};
    add(&error, "\"");
    add(&error, job->error_head);
    add(&error, err_no ? strerror(err_no) : "Unknown error");
    add(&error, " (");
    add(&error, what);
    add(&error, ")\"");
    return write_note(job, 0, 0, error.data, 0, started_at);
}

static int write_minder_failed(const job_t *job, const char *escaped) {
    text error = {0};
    add(&error, "\"");
    add(&error, escaped);
    add(&error, "\"");
    return write_note(job, 0, 0, error.data, 0, NULL);
}

/* ---- the command ------------------------------------------------------------------------ */

/* Every signal back to its default and none blocked: the raw system calls, since the C
 * library keeps two signals of its own (32 and 33) from its wrappers, and a minder started
 * with posix_spawn has them ignored. The kernel's signal set is _NSIG - 1 bits (8 bytes on
 * most machines, 16 on MIPS), whatever the size of a long. Then, with a C library, its own
 * calls, for what they can reach, in case the raw ones were refused. */
static void reset_signals(void) {
    unsigned long long zeroed[16] = {0}; /* a kernel sigaction: SIG_DFL, no flags, no mask */
    const size_t set_size = (_NSIG - 1) / 8;
    for (int signum = 1; signum < _NSIG; signum++)
        if (signum != SIGKILL && signum != SIGSTOP)
            raw_syscall4(SYS_rt_sigaction, signum, (long)zeroed, 0, (long)set_size);
    raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)zeroed, 0, (long)set_size);
#ifndef PYSCHED_MINDER_FREESTANDING
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int signum = 1; signum < SIGRTMIN; signum++)
        if (signum != SIGKILL && signum != SIGSTOP) signal(signum, SIG_DFL);
#endif
}

/* Close every descriptor above 2 but keep, as listed in /proc/self/fd (getdents64 entries:
 * the record's length at byte 16, its name from byte 19). */
static void close_other_fds(int keep) {
    int listing = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (listing < 0) return;
    _Alignas(8) char entries[4096];
    long got;
    while ((got = raw_syscall4(SYS_getdents64, listing, (long)entries, sizeof entries, 0)) > 0) {
        for (long at = 0; at < got;) {
            unsigned short length;
            memcpy(&length, entries + at + 16, sizeof length);
            const char *name = entries + at + 19;
            long long fd;
            if (parse_int(&name, &fd) == 0 && *name == '\0' && fd > 2 && fd != keep &&
                fd != listing)
                close((int)fd);
            at += length;
        }
    }
    close(listing);
}

static void report(int fd, int err_no, int step) {
    text message = {0};
    add_int(&message, err_no);
    add(&message, ":");
    add_int(&message, step);
    if (write(fd, message.data, message.len) < 0) { /* nobody to tell */
    }
}

/* In the forked child: become the command, or report why not and exit 127. */
static void become_command(const job_t *job, int out_fd, int err_fd, int report_fd) {
    reset_signals();
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
        report(report_fd, errno, STEP_NOEXEC);
        _exit(127);
    }
    close_other_fds(report_fd);
    /* last of all: a session of its own, which is also its own process group */
    setsid();
    if (job->cwd && chdir(job->cwd) < 0) {
        report(report_fd, errno, STEP_CHDIR);
        _exit(127);
    }
    int saved = 0, last = 0;
    for (char **executable = job->executables; *executable; executable++) {
        execve(*executable, job->argv, job->envp);
        if (errno != ENOENT && errno != ENOTDIR && !saved) saved = errno;
        last = errno;
    }
    report(report_fd, saved ? saved : last, STEP_EXEC);
    _exit(127);
}

static int wait_for(pid_t pid) {
    int status;
    for (;;) {
        if (waitpid(pid, &status, 0) < 0) {
            if (errno == EINTR) continue;
            return -1000; /* not ours to wait for: cannot happen once SIGCHLD is default */
        }
        if (WIFSIGNALED(status)) return -WTERMSIG(status);
        if (WIFEXITED(status)) return WEXITSTATUS(status);
    }
}

/* Start the command; its pid, or -1 with *err_no and *step saying why it could not start. */
static pid_t start_command(const job_t *job, int out_fd, int err_fd, int *err_no, int *step) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
        *err_no = errno;
        *step = STEP_NOEXEC;
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *err_no = errno;
        *step = STEP_NOEXEC;
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(pipe_fds[0]);
        become_command(job, out_fd, err_fd, pipe_fds[1]);
    }
    close(pipe_fds[1]);
    char buf[64];
    size_t got = 0;
    for (;;) { /* end of file: the exec closed the pipe */
        ssize_t n = read(pipe_fds[0], buf + got, sizeof buf - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
        if (got == sizeof buf - 1) break;
    }
    close(pipe_fds[0]);
    if (!got) return pid;
    wait_for(pid); /* reap the child that could not exec */
    buf[got] = '\0';
    const char *p = buf;
    long long number, which;
    if (parse_int(&p, &number) == 0 && *p++ == ':' && parse_int(&p, &which) == 0) {
        *err_no = (int)number;
        *step = (int)which;
    } else {
        *err_no = 0;
        *step = STEP_NOEXEC;
    }
    return -1;
}

/* ---- the minder ------------------------------------------------------------------------- */

static int run(const job_t *job) {
    const char *paths[] = {job->out, job->err, job->note, job->started};
    char *folders[4];
    for (int i = 0; i < 4; i++) {
        size_t size = strlen(paths[i]) + 1;
        if (!(folders[i] = malloc(size))) _exit(1);
        dirname_of(paths[i], folders[i], size);
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= strcmp(folders[j], folders[i]) == 0;
        if (!seen && make_folders(folders[i]) < 0) {
            text message = {0};
            add(&message, "minder failed: cannot make the log folder: ");
            add(&message, strerror(errno));
            write_minder_failed(job, message.data);
            return 1;
        }
    }
    set_handler(SIGTERM, on_term);

    text started_at = {0};
    add_now(&started_at);
    int err_no = 0, step = STEP_NOEXEC;
    const char *what = NULL;
    pid_t pid = -1;
    int out_fd = open(job->out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, LOG_FILE_MODE);
    if (out_fd < 0) {
        err_no = errno;
        what = job->what_out;
    } else {
        int err_fd = open(job->err, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, LOG_FILE_MODE);
        if (err_fd < 0) {
            err_no = errno;
            what = job->what_err;
        } else {
            pid = start_command(job, out_fd, err_fd, &err_no, &step);
            if (pid < 0) what = step == STEP_CHDIR ? job->what_cwd : job->what_program;
            close(err_fd);
        }
        close(out_fd);
    }
    if (pid < 0) return write_cannot_start(job, err_no, what, &started_at) < 0 ? 1 : 0;
    child_pid = pid;
    if (term_requested) kill(-pid, SIGTERM); /* SIGTERM came before the command had started */

    text marker = {0};
    add(&marker, "{");
    add_field(&marker, "version", 1);
    add_int(&marker, NOTE_VERSION);
    add_int_or_null(&marker, "minder_pid", getpid(), 1);
    long long minder_start = proc_start_ticks(0), pid_start = proc_start_ticks(pid);
    add_int_or_null(&marker, "minder_start", minder_start, minder_start >= 0);
    add_int_or_null(&marker, "pid", pid, 1);
    add_int_or_null(&marker, "pgid", pid, 1);
    add_int_or_null(&marker, "pid_start", pid_start, pid_start >= 0);
    add_field(&marker, "boot_id", 0);
    add_boot_id(&marker);
    add_field(&marker, "started_at", 0);
    add(&marker, started_at.data);
    add(&marker, "}");
    if (write_in_place(job->started, &marker) < 0) { /* the command runs regardless */
        say("minder: cannot write what it started: ", strerror(errno));
    }
    int code = wait_for(pid);
    if (write_note(job, 1, code, NULL, pid, &started_at) < 0) {
        say("minder failed: cannot write the note: ", strerror(errno));
        return 1;
    }
    return 0;
}

/* "--check": the system calls a minder needs beyond writing work here (a sandbox might refuse
 * fork or sigaction), then the magic line. */
static int check(void) {
    set_handler(SIGTERM, on_term);
    struct stat info;
    if (stat("/", &info) < 0 || !S_ISDIR(info.st_mode)) return 1;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) _exit(0);
    if (wait_for(pid) != 0) return 1;
    return write(1, WIRE_MAGIC "\n", sizeof WIRE_MAGIC) < 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--check") == 0) return check();
    if (argc != 1) {
        say("usage: minder < job (see minder.c): no arguments but --check", NULL);
        return 2;
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* none blocked: SIGTERM must reach the minder */
    set_handler(SIGHUP, on_ignore);
    set_handler(SIGINT, on_ignore);
    signal(SIGCHLD, SIG_DFL); /* the host ignores it: the minder waits for its command */
    signal(SIGPIPE, SIG_IGN);
    job_t job;
    memset(&job, 0, sizeof job);
    if (read_job(&job) < 0) {
        say("minder: cannot read the job", NULL);
        return 2;
    }
    return run(&job);
}
