/* The libc functions a program calls, each turned into a coordinated operation (Languages/preload/README.md):
 *
 *   open, open64, openat, openat64, creat, creat64, fopen, fopen64, __open_2 and friends (_FORTIFY_SOURCE)
 *       with write intent (write access or O_TRUNC; with O_CREAT only when the name exists; never O_CREAT|O_EXCL,
 *       O_TMPFILE or O_PATH): a write claim held until the last descriptor of the open file is closed. With
 *       FILECOORD_PRELOAD_READS=1, a read-only open of a regular file: a read claim, held the same way.
 *   close, fclose, dup, dup2, dup3, fcntl(F_DUPFD, F_DUPFD_CLOEXEC): the descriptors that hold a claim.
 *   fcntl(F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW), flock: a lock of the program's own ends the claim of the
 *       open file it locks (databases and logs coordinate with their peers by their locks).
 *   freopen, freopen64: the stream's old descriptor's claim ends, the new open's claim is taken as fopen's.
 *   rename, unlink, rmdir, remove, link, truncate and their variants: names.c.
 *   connect, bind: sockets.c.
 *
 * Every wrapper passes straight through when the library is disabled or the thread is already inside it, and
 * returns the wrapped call's result with its errno. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

static int active(void) { return !__atomic_load_n(&fcp_settings.disabled, __ATOMIC_RELAXED); }

// MARK: Opening

enum { NONE = 0, WRITE, READ };

static int open_intent(int dirfd, const char *path, int flags) {
    if (flags & O_PATH) return NONE;
    if ((flags & O_TMPFILE) == O_TMPFILE) return NONE;
    int access = flags & O_ACCMODE;
    if (access == O_WRONLY || access == O_RDWR || (flags & O_TRUNC)) {
        if (flags & O_CREAT) {
            if (flags & O_EXCL) return NONE;
            if (!fcp_exists(dirfd, path, !(flags & O_NOFOLLOW))) return NONE;
        }
        return WRITE;
    }
    if (fcp_settings.coordinate_reads && !(flags & O_DIRECTORY) && fcp_is_regular(dirfd, path)) return READ;
    return NONE;
}

/* `intent`, or NONE in a signal handler whose alternate stack has no room for the claim (fcp_stack_has_room): asked
 * before claim_for_open's frame, which holds a path. */
static int with_room(int intent) { return intent != NONE && !fcp_stack_has_room() ? NONE : intent; }

/* The claim an open with `intent` needs, or 0. A write that keeps the file's contents (no O_TRUNC: appending, or
 * editing in place) merges with them, so presenters are asked to save first (forMerging), as before a coordinated
 * read; a write that truncates replaces them, and presenters are asked only to relinquish. */
static __attribute__((noinline)) uint64_t claim_for_open(int dirfd, const char *path, int flags, int intent,
                                                          int follow) {
    if (intent == NONE) return 0;
    char canonical[PATH_MAX];
    if (!fcp_canonical(dirfd, path, follow, canonical)) return 0;
    struct fcp_item item = {
        .path = canonical, .write = intent == WRITE, .options = intent == WRITE && !(flags & O_TRUNC) ? FCP_FOR_MERGING : 0};
    /* Held until the last close, however long that is: past the claim's own timeout a waiting claim ends it
     * (issue 42, item 4), so that a file kept open holds nobody back longer than this program would wait itself. */
    return fcp_claim(&item, 1, fcp_settings.timeout_ms);
}

/* What an open call returned: its descriptor holds the claim, or the claim ends at once. A number opened without a
 * claim loses what the table still held for it (a descriptor closed by close_range or closefrom, which the library
 * does not see), so that a later dup of it does not prolong that claim. */
static void opened(int fd, uint64_t claim) {
    if (claim == 0) {
        if (fd >= 0 && fcp_fd_has_claim(fd) && fcp_same_process()) fcp_fd_place(fd, 0);
        return;
    }
    if (fd >= 0) {
        fcp_fd_attach(fd, claim);
    } else {
        fcp_finish(claim);
    }
}

enum open_kind { OPEN, OPEN64, OPENAT, OPENAT64, OPEN_2, OPEN64_2, OPENAT_2, OPENAT64_2 };

static int call_open(enum open_kind kind, int dirfd, const char *path, int flags, mode_t mode) {
    if (!fcp_real.open) fcp_resolve_real();
    switch (kind) {
    case OPEN: return fcp_real.open(path, flags, mode);
    case OPEN64: return fcp_real.open64(path, flags, mode);
    case OPENAT: return fcp_real.openat(dirfd, path, flags, mode);
    case OPENAT64: return fcp_real.openat64(dirfd, path, flags, mode);
    case OPEN_2: return fcp_real.open_2(path, flags);
    case OPEN64_2: return fcp_real.open64_2(path, flags);
    case OPENAT_2: return fcp_real.openat_2(dirfd, path, flags);
    case OPENAT64_2: return fcp_real.openat64_2(dirfd, path, flags);
    }
    errno = ENOSYS;
    return -1;
}

static int coordinated_open(enum open_kind kind, int dirfd, const char *path, int flags, mode_t mode) {
    if (!active() || !fcp_enter()) return call_open(kind, dirfd, path, flags, mode);
    int saved = errno;
    int intent = with_room(open_intent(dirfd, path, flags));
    uint64_t claim = claim_for_open(dirfd, path, flags, intent, !(flags & O_NOFOLLOW));
    errno = saved;
    fcp_leave();
    int fd = call_open(kind, dirfd, path, flags, mode);
    int result_errno = errno;
    fcp_resume();
    opened(fd, claim);
    fcp_leave();
    errno = result_errno;
    return fd;
}

static mode_t mode_argument(int flags, va_list arguments) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(arguments, int) : 0;
}

#define OPEN_WRAPPER(name, kind)                                                                                       \
    int name(const char *path, int flags, ...) {                                                                       \
        va_list arguments;                                                                                             \
        va_start(arguments, flags);                                                                                    \
        mode_t mode = mode_argument(flags, arguments);                                                                 \
        va_end(arguments);                                                                                             \
        return coordinated_open(kind, AT_FDCWD, path, flags, mode);                                                    \
    }

#define OPENAT_WRAPPER(name, kind)                                                                                     \
    int name(int dirfd, const char *path, int flags, ...) {                                                            \
        va_list arguments;                                                                                             \
        va_start(arguments, flags);                                                                                    \
        mode_t mode = mode_argument(flags, arguments);                                                                 \
        va_end(arguments);                                                                                             \
        return coordinated_open(kind, dirfd, path, flags, mode);                                                       \
    }

OPEN_WRAPPER(open, OPEN)
OPEN_WRAPPER(open64, OPEN64)
OPENAT_WRAPPER(openat, OPENAT)
OPENAT_WRAPPER(openat64, OPENAT64)

int __open_2(const char *path, int flags) { return coordinated_open(OPEN_2, AT_FDCWD, path, flags, 0); }
int __open64_2(const char *path, int flags) { return coordinated_open(OPEN64_2, AT_FDCWD, path, flags, 0); }
int __openat_2(int dirfd, const char *path, int flags) { return coordinated_open(OPENAT_2, dirfd, path, flags, 0); }
int __openat64_2(int dirfd, const char *path, int flags) {
    return coordinated_open(OPENAT64_2, dirfd, path, flags, 0);
}

int creat(const char *path, mode_t mode) {
    return coordinated_open(OPEN, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode) {
    return coordinated_open(OPEN64, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

/* The open(2) flags a fopen mode stands for, as far as intent goes. */
static int fopen_flags(const char *mode) {
    if (!mode) return O_RDONLY;
    int flags = O_RDONLY;
    switch (mode[0]) {
    case 'w': flags = O_WRONLY | O_CREAT | O_TRUNC; break;
    case 'a': flags = O_WRONLY | O_CREAT | O_APPEND; break;
    default: break;
    }
    for (const char *c = mode + 1; *c && *c != ','; c++) {
        if (*c == '+') flags = (flags & ~O_ACCMODE) | O_RDWR;
        if (*c == 'x') flags |= O_EXCL;
    }
    return flags;
}

static FILE *coordinated_fopen(int large, const char *path, const char *mode) {
    if (!fcp_real.fopen) fcp_resolve_real();
    FILE *(*call)(const char *, const char *) = large && fcp_real.fopen64 ? fcp_real.fopen64 : fcp_real.fopen;
    if (!active() || !fcp_enter()) return call(path, mode);
    int saved = errno;
    int flags = fopen_flags(mode);
    uint64_t claim = claim_for_open(AT_FDCWD, path, flags, with_room(open_intent(AT_FDCWD, path, flags)), 1);
    errno = saved;
    fcp_leave();
    FILE *file = call(path, mode);
    int result_errno = errno;
    fcp_resume();
    opened(file ? fileno(file) : -1, claim);
    fcp_leave();
    errno = result_errno;
    return file;
}

FILE *fopen(const char *path, const char *mode) { return coordinated_fopen(0, path, mode); }
FILE *fopen64(const char *path, const char *mode) { return coordinated_fopen(1, path, mode); }

/* freopen closes the stream's descriptor and opens `path` in its place through glibc's internal calls, which the
 * library does not see: the old descriptor's claim ends here, as at its close, and the new open takes the claim its
 * intent needs, as fopen's would. With no path (the same file in another mode) nothing changes hands. */
static FILE *coordinated_freopen(int large, const char *path, const char *mode, FILE *stream) {
    if (!fcp_real.freopen) fcp_resolve_real();
    FILE *(*call)(const char *, const char *, FILE *) =
        large && fcp_real.freopen64 ? fcp_real.freopen64 : fcp_real.freopen;
    if (!path || !stream || !active() || !fcp_enter()) return call(path, mode, stream);
    int saved = errno;
    int flags = fopen_flags(mode);
    uint64_t claim = claim_for_open(AT_FDCWD, path, flags, with_room(open_intent(AT_FDCWD, path, flags)), 1);
    int old = fileno(stream);
    int slot = old >= 0 && fcp_fd_has_claim(old) && fcp_same_process() ? fcp_fd_closing(old) : 0;
    errno = saved;
    fcp_leave();
    FILE *file = call(path, mode, stream);
    int result_errno = errno;
    fcp_resume();
    if (old >= 0) fcp_fd_closed(old, slot);
    opened(file ? fileno(file) : -1, claim);
    fcp_leave();
    errno = result_errno;
    return file;
}

FILE *freopen(const char *path, const char *mode, FILE *stream) { return coordinated_freopen(0, path, mode, stream); }
FILE *freopen64(const char *path, const char *mode, FILE *stream) {
    return coordinated_freopen(1, path, mode, stream);
}

// MARK: Descriptors

int close(int fd) {
    if (!fcp_real.close) fcp_resolve_real();
    if (!fcp_enter()) return fcp_real.close(fd);
    fcp_descriptor_replaced(fd);
    int slot = fcp_fd_has_claim(fd) && fcp_same_process() ? fcp_fd_closing(fd) : 0;
    fcp_leave();
    int result = fcp_real.close(fd);
    int result_errno = errno;
    fcp_resume();
    fcp_fd_closed(fd, slot);
    fcp_leave();
    errno = result_errno;
    return result;
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

/* close_range and closefrom close many numbers at once: the library's connection among them is forgotten before
 * (not closed by the library: the call closes it, and the number may be the program's after), and their claims end
 * as close's do. With CLOSE_RANGE_CLOEXEC nothing is closed. Until stop 67 the library kept the number, and later
 * wrote its frames to, read from, and closed whatever the program opened there. */
int close_range(unsigned int first, unsigned int last, int flags) {
    if (!fcp_real.close_range) fcp_resolve_real();
    if (!fcp_real.close_range) {
        errno = ENOSYS; /* not reached: a program that calls it was linked against a libc that has it */
        return -1;
    }
    /* CLOSE_RANGE_UNSHARE closes in a table of the calling thread's own: the process's others keep theirs. */
    if ((flags & (CLOSE_RANGE_CLOEXEC | CLOSE_RANGE_UNSHARE)) || first > last || !fcp_enter()) {
        return fcp_real.close_range(first, last, flags);
    }
    int same = fcp_same_process();
    int forgotten = -1;
    if (same) {
        forgotten = fcp_descriptors_replaced(first, last);
        fcp_fd_range_closing(first, last);
    }
    fcp_leave();
    int result = fcp_real.close_range(first, last, flags);
    int result_errno = errno;
    fcp_resume();
    if (result != 0 && forgotten >= 0) fcp_real.close(forgotten); /* nothing closed: the socket is still ours */
    if (same) fcp_fd_range_closed(first, last, result == 0);
    fcp_leave();
    errno = result_errno;
    return result;
}

void closefrom(int lowfd) {
    if (!fcp_real.closefrom) fcp_resolve_real();
    if (!fcp_real.closefrom) return;
    if (lowfd < 0 || !fcp_enter()) {
        fcp_real.closefrom(lowfd);
        return;
    }
    int saved = errno;
    int same = fcp_same_process();
    if (same) {
        fcp_descriptors_replaced((unsigned int)lowfd, ~0U);
        fcp_fd_range_closing((unsigned int)lowfd, ~0U);
    }
    fcp_leave();
    fcp_real.closefrom(lowfd); /* closes them all, or aborts the process */
    fcp_resume();
    if (same) fcp_fd_range_closed((unsigned int)lowfd, ~0U, 1);
    fcp_leave();
    errno = saved;
}

int fclose(FILE *file) {
    if (!fcp_real.fclose) fcp_resolve_real();
    if (!fcp_enter()) return fcp_real.fclose(file);
    int saved = errno;
    int fd = file ? fileno(file) : -1; /* -1 and EBADF for a FILE with no descriptor (fmemopen) */
    errno = saved;
    fcp_descriptor_replaced(fd);
    int slot = fcp_fd_has_claim(fd) && fcp_same_process() ? fcp_fd_closing(fd) : 0;
    fcp_leave();
    int result = fcp_real.fclose(file);
    int result_errno = errno;
    fcp_resume();
    fcp_fd_closed(fd, slot);
    fcp_leave();
    errno = result_errno;
    return result;
}

/* Before a call that makes a copy of `from`: a hold on its open file (0: none, or a vfork child). */
static int holding(int from) { return fcp_fd_has_claim(from) && fcp_same_process() ? fcp_fd_hold(from) : 0; }

/* After it: the copy `to` (-1: the call failed) gets the hold, and loses what it held before. */
static void duplicated(int slot, int to) {
    if (to < 0) {
        fcp_fd_unhold(slot);
    } else if ((slot != 0 || fcp_fd_has_claim(to)) && fcp_same_process()) {
        fcp_fd_place(to, slot);
    }
}

int dup(int fd) {
    if (!fcp_real.dup) fcp_resolve_real();
    if (!fcp_enter()) return fcp_real.dup(fd);
    int slot = holding(fd);
    fcp_leave();
    int result = fcp_real.dup(fd);
    int result_errno = errno;
    fcp_resume();
    duplicated(slot, result);
    fcp_leave();
    errno = result_errno;
    return result;
}

int dup2(int from, int to) {
    if (!fcp_real.dup2) fcp_resolve_real();
    if (!fcp_enter()) return fcp_real.dup2(from, to);
    if (from != to) fcp_descriptor_replaced(to);
    int slot = from != to ? holding(from) : 0;
    fcp_leave();
    int result = fcp_real.dup2(from, to);
    int result_errno = errno;
    fcp_resume();
    if (from != to) duplicated(slot, result);
    fcp_leave();
    errno = result_errno;
    return result;
}

int dup3(int from, int to, int flags) {
    if (!fcp_real.dup3) fcp_resolve_real();
    if (!fcp_enter()) return fcp_real.dup3(from, to, flags);
    if (from != to) fcp_descriptor_replaced(to);
    int slot = from != to ? holding(from) : 0; /* dup3 fails (EINVAL) when they are equal */
    fcp_leave();
    int result = fcp_real.dup3(from, to, flags);
    int result_errno = errno;
    fcp_resume();
    if (from != to) duplicated(slot, result);
    fcp_leave();
    errno = result_errno;
    return result;
}

/* Whether `command` takes a lock of the program's own (fcntl's record locks, classic or open file description). */
static int is_lock_command(int command) {
    return command == F_SETLK || command == F_SETLKW || command == F_OFD_SETLK || command == F_OFD_SETLKW;
}

/* After the program's own lock on fd was taken: the claim of fd's open file ends (fcp_fd_own_lock). A lock's
 * release (F_UNLCK, LOCK_UN) changes nothing. */
static void took_own_lock(int fd) {
    /* Not a vfork child's (shared memory): its record lock is its own and goes when it exits, the parent's claim
     * stays (until stop 68 the child's lock ended the parent's claim, which then held nothing). */
    if (!fcp_fd_has_claim(fd) || !fcp_same_process() || !fcp_enter()) return;
    fcp_fd_own_lock(fd);
    fcp_leave();
}

static int coordinated_fcntl(int large, int fd, int command, void *argument) {
    if (!fcp_real.fcntl) fcp_resolve_real();
    int (*call)(int, int, ...) = large && fcp_real.fcntl64 ? fcp_real.fcntl64 : fcp_real.fcntl;
    if (is_lock_command(command)) {
        int result = call(fd, command, argument);
        int result_errno = errno;
        const struct flock *lock = argument;
        if (result == 0 && lock && lock->l_type != F_UNLCK) took_own_lock(fd);
        errno = result_errno;
        return result;
    }
    if ((command != F_DUPFD && command != F_DUPFD_CLOEXEC) || !fcp_enter()) return call(fd, command, argument);
    int slot = holding(fd);
    fcp_leave();
    int result = call(fd, command, argument);
    int result_errno = errno;
    fcp_resume();
    duplicated(slot, result);
    fcp_leave();
    errno = result_errno;
    return result;
}

int fcntl(int fd, int command, ...) {
    va_list arguments;
    va_start(arguments, command);
    void *argument = va_arg(arguments, void *);
    va_end(arguments);
    return coordinated_fcntl(0, fd, command, argument);
}

int fcntl64(int fd, int command, ...) {
    va_list arguments;
    va_start(arguments, command);
    void *argument = va_arg(arguments, void *);
    va_end(arguments);
    return coordinated_fcntl(1, fd, command, argument);
}

int flock(int fd, int operation) {
    if (!fcp_real.flock) fcp_resolve_real();
    int result = fcp_real.flock(fd, operation);
    int result_errno = errno;
    if (result == 0 && (operation & (LOCK_SH | LOCK_EX))) took_own_lock(fd);
    errno = result_errno;
    return result;
}
