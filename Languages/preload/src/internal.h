/*
 * libfilecoord-preload: the parts of the library and how they meet (Languages/preload/README.md).
 *
 *   interpose.c    the libc functions a program calls (open, close, rename, ...), each turned into a claim
 *   descriptors.c  which descriptor holds which claim, so that the last close of an open file ends its claim
 *   paths.c        absolute, canonical paths as the daemon compares them, and the paths never coordinated
 *   client.c       the client of filecoordd: its state, settings, the lock, fork (client.h lists its other parts:
 *                  connection.c for trust checks and Hello, frames.c, claims.c for RequestClaim/Granted/FinishClaim
 *                  and ItemMoved)
 *   real.c         the next definition of each wrapped function (dlsym(RTLD_NEXT))
 *
 * Threading: every piece of shared state is guarded by fcp_lock (client.c), taken only by the calls that need the
 * daemon or the descriptor table; a thread already inside the library (a signal handler that interrupts it, or a
 * libc call the library makes itself) passes straight through (fcp_enter). Nothing here writes to the program's
 * standard streams, and every wrapper leaves errno as the wrapped call set it.
 */
#ifndef FCP_INTERNAL_H
#define FCP_INTERNAL_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The next definitions of the wrapped functions (real.c). */
struct fcp_real {
    int (*open)(const char *, int, ...);
    int (*open64)(const char *, int, ...);
    int (*openat)(int, const char *, int, ...);
    int (*openat64)(int, const char *, int, ...);
    int (*open_2)(const char *, int);
    int (*open64_2)(const char *, int);
    int (*openat_2)(int, const char *, int);
    int (*openat64_2)(int, const char *, int);
    int (*creat)(const char *, mode_t);
    int (*creat64)(const char *, mode_t);
    FILE *(*fopen)(const char *, const char *);
    FILE *(*fopen64)(const char *, const char *);
    FILE *(*freopen)(const char *, const char *, FILE *);
    FILE *(*freopen64)(const char *, const char *, FILE *);
    int (*fclose)(FILE *);
    int (*close)(int);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*fcntl)(int, int, ...);
    int (*fcntl64)(int, int, ...);
    int (*flock)(int, int);
    int (*rename)(const char *, const char *);
    int (*renameat)(int, const char *, int, const char *);
    int (*renameat2)(int, const char *, int, const char *, unsigned int);
    int (*unlink)(const char *);
    int (*unlinkat)(int, const char *, int);
    int (*rmdir)(const char *);
    int (*remove)(const char *);
    int (*link)(const char *, const char *);
    int (*linkat)(int, const char *, int, const char *, int);
    int (*truncate)(const char *, off_t);
    int (*truncate64)(const char *, off_t);
    int (*connect)(int, const void *, unsigned int);
    int (*bind)(int, const void *, unsigned int);
    int (*close_range)(unsigned int, unsigned int, int); /* NULL in a libc without it (before glibc 2.34) */
    void (*closefrom)(int);                               /* likewise */
};
extern struct fcp_real fcp_real;
void fcp_resolve_real(void);

/* Settings, read once from the environment at load (client.c). */
struct fcp_settings {
    int disabled;              /* FILECOORD_PRELOAD_DISABLE=1, or the process is filecoordd */
    int coordinate_reads;      /* FILECOORD_PRELOAD_READS=1 */
    uint64_t timeout_ms;       /* FILECOORD_PRELOAD_TIMEOUT_MS, default 30000 (filecoordd's presenter timeout) */
    char socket_path[4096];    /* resolved as FCProtocol's DaemonAddress does */
    char runtime_dir[4096];    /* the socket's folder, canonical: never coordinated */
    size_t runtime_dir_len;
};
extern struct fcp_settings fcp_settings;

/* Per-thread re-entry guard: fcp_enter returns 0 when the caller must pass straight through (the thread is in the
 * library's own code: a signal handler's call there, or a call the library makes). A wrapper leaves it for the
 * program's real call (fcp_leave) and takes it back after (fcp_resume), so that a handler that jumps out of the real
 * call (siglongjmp) leaves the thread coordinated. fcp_leave also gives the thread its signals back. */
int fcp_enter(void);
void fcp_leave(void);
void fcp_resume(void);

/* The program's signals, deferred while the library waits for the daemon (claims.c): a handler that ran there could
 * jump out of the wait (siglongjmp) and leave the library's state, the reader's role and the claim's slot, taken for
 * ever. fcp_defer_signals blocks every signal in the calling thread (once: the mask before is kept until released);
 * fcp_release_signals (fcp_leave, before the program's real call) restores it, and a deferred signal's handler runs
 * then. While deferred, fcp_deliver_default_signals lets a pending signal without a handler act at once (a Ctrl-C or
 * SIGTERM still ends the program, SIGTSTP stops it): only handlers wait, and never longer than the claim's wait. */
void fcp_defer_signals(void);
void fcp_release_signals(void);
void fcp_deliver_default_signals(void);

/* A claim's item. */
struct fcp_item {
    const char *path; /* canonical, absolute */
    int write;
    uint64_t options; /* Apple's raw WritingOptions / ReadingOptions */
    int other_names;  /* set by fcp_claim: the file had more than one name (ClaimItem.has_other_names) */
    int has_identity; /* set by fcp_claim: an existing item that is not a directory, and its st_dev and st_ino */
    uint64_t device, inode;
};

#define FCP_FOR_DELETING (1u << 0)
#define FCP_FOR_MOVING (1u << 1)
#define FCP_FOR_MERGING (1u << 2)
#define FCP_FOR_REPLACING (1u << 3)

/* Asks the daemon for a claim and waits for it. Returns the claim id (> 0) when granted, 0 when the call must go
 * through uncoordinated (no daemon, not trusted, timed out, refused). `maximum_hold_ms` (0: none) is the longest the
 * claim may hold back another one (RequestClaim.maximum_hold_milliseconds): past it, the daemon ends the claim as soon
 * as a conflicting claim waits for it. Takes and releases fcp_lock. */
uint64_t fcp_claim(const struct fcp_item *items, size_t count, uint64_t maximum_hold_ms);
/* Ends a granted claim (FinishClaim). Takes fcp_lock. */
void fcp_finish(uint64_t claim);
/* Reports a move inside a granted write claim (ItemMoved). Takes fcp_lock. */
void fcp_moved(uint64_t claim, const char *from, const char *to);
/* The process stops coordinating: it talks to the daemon itself (client.c). */
void fcp_disable_process(void);
/* Whether the connection's descriptor is fd (so that a program's close/dup2 of it is noticed). */
void fcp_descriptor_replaced(int fd);
/* Before a close of the numbers first..last all at once (close_range, closefrom): the connection among them is
 * forgotten, as fcp_descriptor_replaced does for one; returns its number (-1: none), which the caller closes itself
 * when the call fails. */
int fcp_descriptors_replaced(unsigned int first, unsigned int last);
/* Whether `addr` names the daemon's socket. */
int fcp_is_daemon_address(const void *addr, unsigned int len);
/* Whether this is the process that loaded the library, and not a vfork child sharing its memory. */
int fcp_same_process(void);

/* Canonical paths (paths.c). Each returns 0 when the path must not be coordinated (ignored, unresolvable, too
 * long); `out` holds PATH_MAX bytes. */
int fcp_canonical(int dirfd, const char *path, int follow_final_link, char *out);
/* Whether a path names something that exists (following a final link when asked). */
int fcp_exists(int dirfd, const char *path, int follow_final_link);
/* Whether a path names an existing regular file (following links). */
int fcp_is_regular(int dirfd, const char *path);
/* Whether canonical path `to_path` names a backup of `from_path` as editors name it when they save by renaming the
 * document away and writing a new one under its name: the same folder, and the name followed by `~` (Emacs, Vim),
 * `.~N~` (Emacs's numbered backups) or `.bak`. */
int fcp_is_backup_name(const char *from_path, const char *to_path);

/* The descriptor table (descriptors.c). Called with fcp_lock held unless said otherwise. */
void fcp_fd_attach(int fd, uint64_t claim);       /* takes fcp_lock; finishes the claim if it cannot attach */
/* Around a close of fd (each takes fcp_lock): fcp_fd_closing marks fd's entry before the real close and returns its
 * open file (0: none); fcp_fd_closed drops it after, finishing the claim of the last descriptor, unless an open or a
 * dup that got the number in between dropped it already. */
int fcp_fd_closing(int fd);
void fcp_fd_closed(int fd, int slot);
/* Around a dup of `from` (each takes fcp_lock): fcp_fd_hold takes a hold on from's open file before the real call
 * and returns it (0: none); after it, fcp_fd_place puts the hold on the new number (dropping what the number held),
 * or fcp_fd_unhold gives it back when the call failed. A hold taken before the table was forgotten (the connection
 * ended meanwhile) is nothing. */
/* Around a close of the numbers first..last all at once (each takes fcp_lock): fcp_fd_range_closing marks their
 * entries closing before the real call, fcp_fd_range_closed drops those still marked after it (or unmarks them all
 * when it failed), as fcp_fd_closing and fcp_fd_closed do for one. */
void fcp_fd_range_closing(unsigned int first, unsigned int last);
void fcp_fd_range_closed(unsigned int first, unsigned int last, int closed);
int fcp_fd_hold(int from);
void fcp_fd_place(int to, int hold);
void fcp_fd_unhold(int hold);
int fcp_fd_has_claim(int fd);                     /* lock-free read, a hint */
/* The program took a lock of its own (fcntl F_SETLK/F_SETLKW/F_OFD_SETLK/F_OFD_SETLKW, flock) on fd: the claim of
 * fd's open file ends now (issue 42: a database, a log with its own locking, is coordinated by its lock with its
 * peers; held to the last close, the claim kept every other process waiting). Takes fcp_lock. */
void fcp_fd_own_lock(int fd);
void fcp_fd_forget_all(void);                     /* in a forked child, with fcp_lock held */
/* Leases (leases.c): whether a claim id is one decided in a lease; its end (with fcp_lock held). */
int fcp_lease_claim_id(uint64_t claim);
void fcp_lease_end_locked(uint64_t claim);
/* The connection ended: the claims decided in leases end too, as the daemon's end with it (with fcp_lock held). */
void fcp_fd_end_lease_claims(void);

void fcp_lock(void);
void fcp_unlock(void);

/* Signal handlers (issue 42, item 6): a call made in one waits for the library at most FCP_SIGNAL_WAIT_MS, for its
 * lock and for a claim's answer, and connects to no daemon; past that it goes through uncoordinated. A thread is
 * taken to be in a handler when a signal that has a handler, and that was not blocked when the library loaded (a
 * mask inherited from the parent), is blocked in it (the kernel blocks the signal while its handler runs, unless
 * installed with SA_NODEFER), or, with such a signal blocked, when it runs on its alternate signal stack. A thread
 * that blocks such a signal outside the handler (to leave it to another thread) is taken for one too: its claims
 * wait as briefly, never longer than without the library. A handler for a signal blocked at load is not seen. */
#define FCP_SIGNAL_WAIT_MS 5
int fcp_in_signal_handler(void);
/* Whether the thread's stack has room for the library's paths: 0 when it runs on its alternate signal stack (a
 * handler installed with SA_ONSTACK) with less than FCP_STACK_NEEDED left below the caller. A call that would claim
 * goes through uncoordinated at once then: the library's paths take about 26 KB of stack, and a crash handler's 8 to
 * 24 KB alternate stack overflowed, the program dying of a SIGSEGV it never had without the library (until stop 68).
 * A wrapper asks once it knows it will claim, before any frame that holds a path. One system call; errno kept. */
#define FCP_STACK_NEEDED (40 * 1024)
int fcp_stack_has_room(void);
/* fcp_lock, or in a signal handler the lock within FCP_SIGNAL_WAIT_MS; 0 when not taken. */
int fcp_lock_for(int in_handler);
/* Sends FinishClaim with fcp_lock held. */
void fcp_finish_locked(uint64_t claim);

#endif
