// Process shims: starting a detached daemon.
#ifndef CFCLINUX_PROCESS_H
#define CFCLINUX_PROCESS_H

// No feature macros here (_GNU_SOURCE would change glibc's declarations in this module against those of the other
// C modules, such as swift-system's): GNU-only calls go through syscall().
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/// Names the calling thread as the kernel shows it (`comm`, 15 bytes and a NUL at most: longer is cut): prctl's
/// PR_SET_NAME, through syscall() as this header's other GNU-only calls go (no feature macros here, see above).
/// 0, or -1 with errno.
static inline int cfc_set_thread_name(const char *name) { return (int)syscall(SYS_prctl, PR_SET_NAME, name, 0, 0, 0); }

/// Notes from now on, once per process, whether this process is a child that fork() made (a pthread_atfork child
/// handler, which runs in every forked child of this process and of its own forked children; not for vfork or
/// posix_spawn, whose children run nothing of this process before exec). CFCLinux.c.
void cfc_watch_fork(void);
/// 1 in a forked child of a process that called cfc_watch_fork, else 0 (one relaxed atomic load).
int cfc_forked_child(void);

/// What the status pipe of `cfc_spawn_detached` carries: a tag and a value.
struct cfc_spawn_report {
    int tag;    // 1: the daemon's pid; 2: errno of setsid or fork in the middle process; 3: errno of execve
    int value;
};

// Everything below runs between fork and execve in a copy of a multi-threaded process: only async-signal-safe calls
// (raw system calls, write, _exit), no allocation, no locks.

static inline void cfc_report(int fd, int tag, int value) {
    struct cfc_spawn_report report = {tag, value};
    ssize_t written;
    do {
        written = write(fd, &report, sizeof report);
    } while (written < 0 && errno == EINTR);
}

/// Closes every descriptor from `first` up, except `keep` (which must be `first` or above): close_range (Linux 5.9+),
/// or a loop on older kernels.
static inline void cfc_close_from(int first, int keep) {
    int closed = 1;
    if (keep > first) closed = syscall(SYS_close_range, (unsigned)first, (unsigned)(keep - 1), 0u) == 0;
    if (closed) closed = syscall(SYS_close_range, (unsigned)(keep + 1), ~0u, 0u) == 0;
    if (closed) return;
    for (int fd = first; fd < 65536; fd++) {
        if (fd != keep) close(fd);
    }
}

/// Starts `path` as a daemon detached from the calling process: a grandchild (fork, setsid, fork; the middle process
/// exits at once and is reaped here), so that it is not the caller's child and leaves no zombie and no SIGCHLD
/// later; in a session of its own; with default signal dispositions and an empty signal mask; with `stdin_fd` as
/// its standard input, `log_fd` as its standard output and error, and no other descriptor of the caller (everything
/// from 3 up is closed). `stdin_fd` and `log_fd` should be close-on-exec in the caller.
///
/// Returns 0 and the daemon's pid in `*pid`, or an errno value: of pipe2 or fork here, of setsid or fork in the
/// middle process, or of execve in the daemon (so a missing or non-executable file is reported to the caller).
/// `passed_fd`, when not -1, is the started program's descriptor 3 (not close-on-exec there): the one descriptor of
/// the caller it gets besides the standard ones (``cfc_spawn_detached_passing``).
static inline int cfc_spawn_detached_passing(const char *path, char *const argv[], char *const envp[], int stdin_fd,
                                             int log_fd, int passed_fd, pid_t *pid) {
    int status_pipe[2];
    if (syscall(SYS_pipe2, status_pipe, O_CLOEXEC) != 0) return errno;
    pid_t middle = fork();
    if (middle < 0) {
        int error = errno;
        close(status_pipe[0]);
        close(status_pipe[1]);
        return error;
    }
    if (middle == 0) {
        // The middle process: a new session, then the daemon, then exit.
        close(status_pipe[0]);
        if (setsid() < 0) {
            cfc_report(status_pipe[1], 2, errno);
            _exit(127);
        }
        pid_t daemon = fork();
        if (daemon < 0) {
            cfc_report(status_pipe[1], 2, errno);
            _exit(127);
        }
        if (daemon > 0) {
            cfc_report(status_pipe[1], 1, (int)daemon);
            _exit(0);
        }
        // The daemon. The status pipe moves above the standard descriptors (it may be 0, 1 or 2 if the caller
        // closed those), keeping close-on-exec, so that a successful execve closes it.
        // With a descriptor to pass, it goes above them too, and 3 stays free for it.
        int report = fcntl(status_pipe[1], F_DUPFD_CLOEXEC, passed_fd >= 0 ? 4 : 3);
        if (report < 0) _exit(127);
        int passed = passed_fd >= 0 ? fcntl(passed_fd, F_DUPFD_CLOEXEC, 4) : -1;
        if (passed_fd >= 0 && passed < 0) {
            cfc_report(report, 3, errno);
            _exit(127);
        }
        if (dup2(stdin_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) {
            cfc_report(report, 3, errno);
            _exit(127);
        }
        // dup2 onto 3 clears close-on-exec there (`passed` is 4 or above, never 3 itself).
        if (passed >= 0 && dup2(passed, 3) < 0) {
            cfc_report(report, 3, errno);
            _exit(127);
        }
        cfc_close_from(passed >= 0 ? 4 : 3, report);
        // Default dispositions for every signal, the reserved ones included (raw rt_sigaction: glibc refuses
        // those), and an empty mask. An all-zero kernel sigaction is SIG_DFL with no flags whatever its layout.
        unsigned char default_action[64];
        memset(default_action, 0, sizeof default_action);
        for (int signal_number = 1; signal_number < 65; signal_number++) {
            syscall(SYS_rt_sigaction, signal_number, default_action, (void *)0, (size_t)8);
        }
        unsigned char empty_mask[8];
        memset(empty_mask, 0, sizeof empty_mask);
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, empty_mask, (void *)0, (size_t)8);
        execve(path, argv, envp);
        cfc_report(report, 3, errno);
        _exit(127);
    }
    // The caller: reap the middle process, then read the daemon's pid and, if execve failed, why.
    close(status_pipe[1]);
    while (waitpid(middle, (int *)0, 0) < 0 && errno == EINTR) {
    }
    int result = ECHILD;
    *pid = 0;
    for (;;) {
        struct cfc_spawn_report report;
        ssize_t got = read(status_pipe[0], &report, sizeof report);
        if (got < 0 && errno == EINTR) continue;
        if (got != (ssize_t)sizeof report) break;  // end of file: execve succeeded (or nothing was started)
        if (report.tag == 1) {
            *pid = (pid_t)report.value;
            result = 0;
        } else {
            result = report.value;
            break;
        }
    }
    close(status_pipe[0]);
    return result;
}

/// ``cfc_spawn_detached_passing`` with no descriptor to pass.
static inline int cfc_spawn_detached(const char *path, char *const argv[], char *const envp[], int stdin_fd,
                                     int log_fd, pid_t *pid) {
    return cfc_spawn_detached_passing(path, argv, envp, stdin_fd, log_fd, -1, pid);
}

/// `pidfd_open(pid, 0)` (Linux 5.3+): a descriptor, close-on-exec, that polls readable once the process has exited;
/// -1 and errno (ENOSYS on an older kernel, ESRCH when no such process).
static inline int cfc_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0u);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/// `pipe2(ends, O_CLOEXEC)` (GNU-only in glibc's header, so through syscall()): 0, or -1 and errno.
static inline int cfc_pipe_cloexec(int ends[2]) { return (int)syscall(SYS_pipe2, ends, O_CLOEXEC); }

/// Adds to `actions` (a `posix_spawn_file_actions_t *`) the closing of every descriptor from `from` up in the child
/// (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34+): 0; ENOSYS when the C library has it not (musl, for the
/// static daemon: the child then inherits them). Defined in CFCLinux.c, the one translation unit compiled with
/// `_GNU_SOURCE` (and this header includes no `spawn.h`, whose types would then be this module's to Swift).
int cfc_spawn_close_from(void *actions, int from);

/// Makes this process ignore `signal` (`sigaction` with `SIG_IGN`): 0, or the errno. (`SIG_IGN` and `SIG_ERR` are
/// casts Swift cannot import.)
static inline int cfc_ignore_signal(int signal) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_IGN;
    sigemptyset(&action.sa_mask);
    return sigaction(signal, &action, NULL) == 0 ? 0 : errno;
}

#endif
