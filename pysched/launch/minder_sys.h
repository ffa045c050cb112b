/* What minder.c needs of the system: the C library's headers, or, built freestanding
 * (PYSCHED_MINDER_FREESTANDING, the first build pysched.launch.native_minder tries), the same
 * few calls made straight to the kernel, with no C library at all.
 *
 * Why freestanding: a C library's start-up is most of a small program's start. glibc asks the
 * CPU about its caches and features (CPUID, eighty-odd times) before main, and under a
 * hypervisor each CPUID leaves the virtual machine: on the project's machine a static glibc
 * program that does nothing costs 0.53 ms of CPU to start, one with no C library 0.035 ms (see
 * docs/benchmarks.md). A minder starts once an attempt, so that is most of its CPU.
 *
 * Freestanding is for x86-64 Linux (the system call convention below, and only system calls
 * Linux has had since 2.6.27); anywhere else this fails to compile and the builder takes the
 * C library's build. (AArch64 would need its own entry point and system call numbers, and a
 * machine to test them on.) The texts of error numbers come from pysched_errors.h, which the
 * builder writes from Python's os.strerror, escaped for JSON as Python's json module escapes
 * them, so a note says what minder.py's says. Memory is taken from the kernel in blocks and
 * never given back: a minder allocates a few kilobytes once.
 */
#ifndef PYSCHED_MINDER_SYS_H
#define PYSCHED_MINDER_SYS_H

#ifndef PYSCHED_MINDER_FREESTANDING

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h> /* rename */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long raw_syscall4(long number, long a, long b, long c, long d) {
    return syscall(number, a, b, c, d);
}

#else /* PYSCHED_MINDER_FREESTANDING */

#if !defined(__linux__) || !defined(__x86_64__) || defined(__ILP32__) /* not x32 */
#error "the freestanding minder is for x86-64 Linux; the builder falls back to the C library"
#endif

#include <asm/stat.h> /* struct stat, as the kernel fills it in */
#include <asm/unistd.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/stat.h>
#include <stddef.h>
#include <stdint.h>

#include <pysched_errors.h> /* PYSCHED_ERROR_TEXTS, written by the builder (its -I folder) */

typedef long ssize_t;
typedef int pid_t;
typedef long off_t;
typedef long time_t;
typedef int sig_atomic_t;

struct timespec {
    time_t tv_sec;
    long tv_nsec;
};

#define CLOCK_REALTIME 0
#define SIGHUP 1
#define SIGINT 2
#define SIGKILL 9
#define SIGPIPE 13
#define SIGTERM 15
#define SIGCHLD 17
#define SIGSTOP 19
#define _NSIG 65
#define SIG_DFL ((void (*)(int))0)
#define SIG_IGN ((void (*)(int))1)
#define SA_RESTART 0x10000000UL
#define SA_RESTORER 0x04000000UL
#define SIG_SETMASK 2
#define WTERMSIG(status) ((status) & 0x7f)
#define WIFEXITED(status) (WTERMSIG(status) == 0)
#define WEXITSTATUS(status) (((status) >> 8) & 0xff)
#define WIFSIGNALED(status) (((signed char)(WTERMSIG(status) + 1) >> 1) > 0)
#ifndef S_ISDIR
#define S_ISDIR(mode) (((mode) & S_IFMT) == S_IFDIR)
#endif
#define SYS_rt_sigaction __NR_rt_sigaction
#define SYS_rt_sigprocmask __NR_rt_sigprocmask
#define SYS_getdents64 __NR_getdents64

int errno;

/* ---- system calls ------------------------------------------------------------------------ */

static long raw_syscall6(long number, long a, long b, long c, long d, long e, long f) {
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long result;
    __asm__ volatile("syscall"
                     : "=a"(result)
                     : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return result;
}

/* Where a signal handler returns to: rt_sigreturn (the kernel needs it named on x86-64). */
void pysched_restore_rt(void);
__asm__(".text\n"
        ".global pysched_restore_rt\n"
        "pysched_restore_rt:\n"
        "  mov $15, %rax\n"
        "  syscall\n");

/* The entry point: the stack holds argc, argv..., NULL, envp..., NULL. */
__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  xor %rbp, %rbp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call pysched_start\n"
        "  hlt\n");

/* A system call's result, or -1 with errno set. */
static long checked(long result) {
    if ((unsigned long)result > -4096UL) {
        errno = (int)-result;
        return -1;
    }
    return result;
}

#define SYSCALL6(n, a, b, c, d, e, f) \
    checked(raw_syscall6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f)))
#define SYSCALL3(n, a, b, c) SYSCALL6(n, a, b, c, 0, 0, 0)

static long raw_syscall4(long number, long a, long b, long c, long d) {
    return checked(raw_syscall6(number, a, b, c, d, 0, 0));
}

static _Noreturn void _exit(int code) {
    for (;;) raw_syscall6(__NR_exit_group, code, 0, 0, 0, 0, 0);
}

static ssize_t read(int fd, void *buf, size_t n) { return SYSCALL3(__NR_read, fd, buf, n); }
static ssize_t write(int fd, const void *buf, size_t n) { return SYSCALL3(__NR_write, fd, buf, n); }
static int close(int fd) { return (int)SYSCALL3(__NR_close, fd, 0, 0); }
static int fsync(int fd) { return (int)SYSCALL3(__NR_fsync, fd, 0, 0); }
static int ftruncate(int fd, off_t length) { return (int)SYSCALL3(__NR_ftruncate, fd, length, 0); }
static int chdir(const char *path) { return (int)SYSCALL3(__NR_chdir, path, 0, 0); }
static pid_t getpid(void) { return (pid_t)SYSCALL3(__NR_getpid, 0, 0, 0); }
static pid_t setsid(void) { return (pid_t)SYSCALL3(__NR_setsid, 0, 0, 0); }
static int kill(pid_t pid, int signum) { return (int)SYSCALL3(__NR_kill, pid, signum, 0); }
static int pipe2(int fds[2], int flags) { return (int)SYSCALL3(__NR_pipe2, fds, flags, 0); }

static int open(const char *path, int flags, ...) {
    __builtin_va_list rest;
    __builtin_va_start(rest, flags);
    int mode = (flags & O_CREAT) ? __builtin_va_arg(rest, int) : 0;
    __builtin_va_end(rest);
    return (int)SYSCALL6(__NR_openat, AT_FDCWD, path, flags, mode, 0, 0);
}

static int mkdir(const char *path, int mode) {
    return (int)SYSCALL3(__NR_mkdirat, AT_FDCWD, path, mode);
}

static int rename(const char *from, const char *to) {
    return (int)SYSCALL3(__NR_rename, from, to, 0);
}

static int stat(const char *path, struct stat *info) {
    return (int)SYSCALL3(__NR_stat, path, info, 0);
}

static int dup2(int from, int to) { return (int)SYSCALL3(__NR_dup2, from, to, 0); }

static pid_t fork(void) { return (pid_t)SYSCALL3(__NR_fork, 0, 0, 0); }

static int execve(const char *path, char *const argv[], char *const envp[]) {
    return (int)SYSCALL3(__NR_execve, path, argv, envp);
}

static pid_t waitpid(pid_t pid, int *status, int options) {
    return (pid_t)SYSCALL6(__NR_wait4, pid, status, options, 0, 0, 0);
}

static int clock_gettime(int clock, struct timespec *now) {
    return (int)SYSCALL3(__NR_clock_gettime, clock, now, 0);
}

/* ---- signals ----------------------------------------------------------------------------- */

typedef unsigned long sigset_t; /* the kernel's set: 64 signals, one bit each */

struct sigaction {
    void (*sa_handler)(int);
    unsigned long sa_flags;
    void (*sa_restorer)(void);
    sigset_t sa_mask;
};

static int sigemptyset(sigset_t *set) {
    *set = 0;
    return 0;
}

static int sigaction(int signum, const struct sigaction *action, struct sigaction *old) {
    struct sigaction given = *action;
    if (given.sa_handler != SIG_DFL && given.sa_handler != SIG_IGN) {
        given.sa_flags |= SA_RESTORER; /* x86-64's kernel needs to be told where to return */
        given.sa_restorer = pysched_restore_rt;
    }
    return (int)SYSCALL6(__NR_rt_sigaction, signum, &given, old, sizeof(sigset_t), 0, 0);
}

static int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    return (int)SYSCALL6(__NR_rt_sigprocmask, how, set, old, sizeof(sigset_t), 0, 0);
}

static void (*signal(int signum, void (*handler)(int)))(int) {
    struct sigaction action = {0};
    action.sa_handler = handler;
    sigaction(signum, &action, 0);
    return SIG_DFL;
}

/* ---- memory and text --------------------------------------------------------------------- */

/* The compiler may call these four for copies and zeroing of its own: they are not static. */
void *memcpy(void *to, const void *from, size_t n) {
    unsigned char *t = to;
    const unsigned char *f = from;
    while (n--) *t++ = *f++;
    return to;
}

void *memmove(void *to, const void *from, size_t n) {
    unsigned char *t = to;
    const unsigned char *f = from;
    if (t < f)
        while (n--) *t++ = *f++;
    else
        while (n--) t[n] = f[n];
    return to;
}

void *memset(void *to, int byte, size_t n) {
    unsigned char *t = to;
    while (n--) *t++ = (unsigned char)byte;
    return to;
}

int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y) return *x - *y;
    return 0;
}

static size_t strlen(const char *s) {
    const char *end = s;
    while (*end) end++;
    return (size_t)(end - s);
}

static int strcmp(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return (unsigned char)*a - (unsigned char)*b;
}

static char *strrchr(const char *s, int c) {
    const char *found = 0;
    for (;; s++) {
        if (*s == (char)c) found = s;
        if (!*s) return (char *)found;
    }
}

static void *memchr(const void *s, int c, size_t n) {
    const unsigned char *p = s;
    for (; n; n--, p++)
        if (*p == (unsigned char)c) return (void *)p;
    return 0;
}

static const char *strerror(int number) {
    static const char *const texts[] = PYSCHED_ERROR_TEXTS;
    if (number >= 0 && (size_t)number < sizeof texts / sizeof *texts && texts[number])
        return texts[number];
    return "Unknown error";
}

/* Blocks from the kernel, handed out in turn; each allocation remembers its size (realloc). */
static unsigned char *heap_next, *heap_end;

static void *malloc(size_t n) {
    size_t need = ((n + 15) & ~(size_t)15) + 16;
    if (need < n) { /* so large the sum wrapped */
        errno = ENOMEM;
        return 0;
    }
    if ((size_t)(heap_end - heap_next) < need) {
        size_t block = need > (1u << 20) ? need : (1u << 20);
        long got = raw_syscall6(__NR_mmap, 0, (long)block, 3 /* read, write */,
                                0x22 /* private, anonymous */, -1, 0);
        if ((unsigned long)got > -4096UL) {
            errno = ENOMEM;
            return 0;
        }
        heap_next = (unsigned char *)got;
        heap_end = heap_next + block;
    }
    unsigned char *block = heap_next;
    heap_next += need;
    *(size_t *)block = n;
    return block + 16;
}

static void free(void *p) { (void)p; }

static void *calloc(size_t count, size_t size) {
    if (size && count > (size_t)-1 / size) return 0;
    void *p = malloc(count * size);
    return p ? memset(p, 0, count * size) : 0;
}

static void *realloc(void *p, size_t n) {
    void *moved = malloc(n);
    if (moved && p) {
        size_t had = *(size_t *)((unsigned char *)p - 16);
        memcpy(moved, p, had < n ? had : n);
    }
    return moved;
}

int main(int argc, char **argv);

/* Called by _start with the stack as the kernel left it. */
__attribute__((used)) _Noreturn void pysched_start(long *stack) {
    int argc = (int)stack[0];
    _exit(main(argc, (char **)(stack + 1)));
}

#endif /* PYSCHED_MINDER_FREESTANDING */
#endif /* PYSCHED_MINDER_SYS_H */
