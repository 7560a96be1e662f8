/*
 * filecoord.h: libfilecoord, file coordination (NSFileCoordinator / NSFilePresenter) for C and every language with
 * a C FFI. The library is swift-file-coordination's FileCoordination, driven through its public API: it talks to
 * filecoordd (started on demand) exactly as a Swift app does, so C programs, Swift apps, `fccoord` and the Python
 * bindings coordinate with one another.
 *
 * Install: the Debian packages libfilecoord1 and libfilecoord-dev (scripts/package-deb.sh), or
 * scripts/install-libfilecoord.sh PREFIX (README, "Other languages"); then
 *     cc prog.c $(pkg-config --cflags --libs filecoord)
 * The library exports only the functions below (version node FILECOORD_1) and carries Swift's runtime inside it: it
 * depends on Debian's libraries alone. man 3 filecoord has all of this as a manual page.
 *
 * ABI. FILECOORD_ABI_VERSION is the major version of the ABI: it is the soname's number (libfilecoord.so.1) and
 * changes whenever a function, type or constant below changes incompatibly. filecoord_abi_version() says which ABI
 * the loaded library has. Structs passed in start with a `size` member set to sizeof(the struct): members added
 * later are then taken as absent by a newer library.
 *
 * Threads. Every function may be called from any thread. Coordinated calls block the calling thread until their
 * claims are granted, and run the accessor ON THE CALLING THREAD while the claims are held. Presenter callbacks run
 * on a thread of the library's, one at a time per presenter, in the order the arbiter sent them; a callback must not
 * wait for an access that waits for this same presenter (that is a deadlock, which the daemon breaks by failing one
 * call with FILECOORD_ERR_DEADLOCK). Strings passed to callbacks are valid only during the call.
 *
 * Errors. Functions that can fail return FILECOORD_OK (0) or a FILECOORD_ERR_* code and, when `error` is not NULL,
 * store in *error a filecoord_error with the code and a message, which the caller frees with filecoord_error_free.
 *
 * Memory. The library never writes to standard output or error, never installs a signal handler and keeps no
 * descriptor of the caller's. Every handle it returns is freed by the function named with it.
 *
 * fork. The library runs threads of its own (its connection to the daemon, presenter callbacks) from the first call
 * on, so after fork() the child of a program that has called it may call no function of this header (nor anything
 * but async-signal-safe functions, as POSIX says of every multithreaded program) until it calls exec; a program it
 * then runs may use the library from the start. A child that calls one all the same gets FILECOORD_ERR_INVALID_REQUEST
 * from every call that can fail, and filecoord_claim_end of a claim its parent holds does nothing there: the child
 * sends nothing on its parent's connection. The child's descriptor of the daemon connection is closed on exec
 * (it is opened with O_CLOEXEC), and claims held by the parent stay the parent's: a command that must run inside
 * them is given the coordinator's purpose (filecoord_coordinator_copy_purpose).
 *
 * Signals. No function here is async-signal-safe: none may be called from a signal handler. A handler that must end
 * a wait calls nothing of the library; it tells a thread (a self-pipe, an eventfd, a flag) that then calls
 * filecoord_coordinator_cancel, which may be called from any thread while a call of that coordinator waits.
 */
#ifndef FILECOORD_H
#define FILECOORD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FILECOORD_ABI_VERSION 1

/* The ABI version of the loaded library (FILECOORD_ABI_VERSION of the header it was built with). */
int filecoord_abi_version(void);

/* The library's version, "MAJOR.MINOR.PATCH" (static storage). */
const char *filecoord_version(void);

/* --- Errors ---------------------------------------------------------------------------------------------------- */

enum {
    FILECOORD_OK = 0,
    /* 1-13: as FileCoordinationError.Code in Swift. */
    FILECOORD_ERR_UNREACHABLE = 1,        /* no daemon answered and none could be started */
    FILECOORD_ERR_CONNECTION_LOST = 2,    /* the connection to the daemon was lost while the call waited */
    FILECOORD_ERR_DEADLOCK = 3,           /* the call was failed to break a deadlock (the message has the report) */
    FILECOORD_ERR_PRESENTER_TIMEOUT = 4,  /* a presenter did not answer in time */
    FILECOORD_ERR_UNSUPPORTED_PATH = 5,   /* the path cannot be coordinated */
    FILECOORD_ERR_PROTOCOL_VERSION = 6,   /* the daemon speaks another protocol, or has other path rules */
    FILECOORD_ERR_NESTED_WRITE = 7,       /* a write nested in a single-item accessor */
    FILECOORD_ERR_INVALID_REQUEST = 8,    /* the arbiter refused the request (a limit) */
    FILECOORD_ERR_UNRESOLVABLE_PATH = 9,  /* a loop of symbolic links, a component that is no directory */
    FILECOORD_ERR_TIMED_OUT = 10,         /* not granted within the coordinator's timeout */
    FILECOORD_ERR_UNTRUSTED_DAEMON = 11,  /* the daemon's socket folder is not this user's own: nothing was sent */
    FILECOORD_ERR_CLUSTER_UNREACHABLE = 12, /* a shared folder's cluster cannot decide claims now (filecoordd) */
    FILECOORD_ERR_WOULD_WAIT = 13,        /* a nonblocking coordinator's claim met a conflicting one (LOCK_NB) */
    FILECOORD_ERR_CANCELLED = 20,         /* filecoord_coordinator_cancel */
    FILECOORD_ERR_REFUSED = 21,           /* a presenter refused to save or to accommodate a deletion */
    FILECOORD_ERR_IO = 22,                /* the move or delete itself failed: filecoord_error_errno says why */
    FILECOORD_ERR_INVALID_ARGUMENT = 23,  /* a NULL or empty argument */
    FILECOORD_ERR_OTHER = 99
};

typedef struct filecoord_error filecoord_error;

int filecoord_error_code(const filecoord_error *error);
/* The message, valid until filecoord_error_free. */
const char *filecoord_error_message(const filecoord_error *error);
/* The errno of a FILECOORD_ERR_IO failure, else 0. */
int filecoord_error_errno(const filecoord_error *error);
void filecoord_error_free(filecoord_error *error);

/* --- Coordinators ---------------------------------------------------------------------------------------------- */

/* Options of a read and of a write: Apple's NSFileCoordinatorReadingOptions / WritingOptions bits. */
enum {
    FILECOORD_READ_WITHOUT_CHANGES = 1u << 0,
    FILECOORD_READ_RESOLVES_SYMBOLIC_LINK = 1u << 1,
    FILECOORD_WRITE_FOR_DELETING = 1u << 0,
    FILECOORD_WRITE_FOR_MOVING = 1u << 1,
    FILECOORD_WRITE_FOR_MERGING = 1u << 2,
    FILECOORD_WRITE_FOR_REPLACING = 1u << 3
};

/* A coordinator: settings shared by calls, and a way to cancel them. Every function taking one accepts NULL for a
 * coordinator of its own with default settings (no timeout, a unique purpose). */
typedef struct filecoord_coordinator filecoord_coordinator;

filecoord_coordinator *filecoord_coordinator_new(void);
/* How long each later call may wait for its claims; 0 or less: as long as it takes (the default). */
void filecoord_coordinator_set_timeout(filecoord_coordinator *coordinator, double seconds);
/* Nonzero: each later call fails at once with FILECOORD_ERR_WOULD_WAIT instead of waiting for a conflicting claim
 * of another coordinator, granted or queued ahead, as flock's LOCK_NB does (`fccoord -n`); presenters are still asked
 * first, and waited for. 0: calls wait (the default). */
void filecoord_coordinator_set_nonblocking(filecoord_coordinator *coordinator, int nonblocking);
/* The purpose identifier: coordinators with the same one never block each other. Once, before any call. */
int filecoord_coordinator_set_purpose(filecoord_coordinator *coordinator, const char *purpose,
                                      filecoord_error **error);
/* The purpose identifier (the one set, or the coordinator's own unique one), to run a command inside its claims:
 * give the command FILECOORD_PURPOSE=<purpose> in its environment (posix_spawn's envp; setenv before fork only in a
 * program with one thread) and its coordinated calls (fccoord, the preload library, the Python package) are inside
 * this coordinator's claims instead of waiting for them (issue 42; docs/SEMANTICS.md §2 rule 4). libfilecoord itself
 * does not read the variable. A string to free with filecoord_free; NULL for a NULL coordinator. */
char *filecoord_coordinator_copy_purpose(const filecoord_coordinator *coordinator);
/* Fails this coordinator's waiting and later calls with FILECOORD_ERR_CANCELLED. Any thread. */
void filecoord_coordinator_cancel(filecoord_coordinator *coordinator);
/* Frees it; no call of it may be running. */
void filecoord_coordinator_free(filecoord_coordinator *coordinator);

/* --- Coordinated access ---------------------------------------------------------------------------------------- */

/* Runs while the claims are held, on the calling thread, with the paths to use (where the items are now; they
 * may differ from the paths asked for when an item moved while the call waited), in the order of the items. */
typedef void (*filecoord_accessor)(void *context, const char *const *paths, size_t count);

/* One item of a call: a path and whether it is written, with its options. */
typedef struct filecoord_item {
    const char *path;
    int write;          /* 0: read, non-zero: write */
    unsigned options;   /* FILECOORD_READ_* or FILECOORD_WRITE_* */
} filecoord_item;

/* A coordinated read / write of one item: returns once `accessor` has run, or with the error (it then did not). */
int filecoord_read(filecoord_coordinator *coordinator, const char *path, unsigned options,
                   filecoord_accessor accessor, void *context, filecoord_error **error);
int filecoord_write(filecoord_coordinator *coordinator, const char *path, unsigned options,
                    filecoord_accessor accessor, void *context, filecoord_error **error);
/* Any number of items, all taken at once (no deadlock with a process taking them in another order). */
int filecoord_coordinate(filecoord_coordinator *coordinator, const filecoord_item *items, size_t count,
                         filecoord_accessor accessor, void *context, filecoord_error **error);

/* A claim held between two calls instead of during a callback (for `with` statements and RAII): begin returns once
 * the claims are granted, or NULL with the error; the claims stay held, whichever thread the caller is on, until
 * filecoord_claim_end, which releases and frees it (any thread, once). */
typedef struct filecoord_claim filecoord_claim;

filecoord_claim *filecoord_claim_begin(filecoord_coordinator *coordinator, const filecoord_item *items, size_t count,
                                       filecoord_error **error);
size_t filecoord_claim_count(const filecoord_claim *claim);
/* The path to use for item `index`, valid until filecoord_claim_end. */
const char *filecoord_claim_path(const filecoord_claim *claim, size_t index);
void filecoord_claim_end(filecoord_claim *claim);

/* Moves `source` to `destination` (replacing a file there) in one coordinated write of both (.forMoving,
 * .forReplacing); presenters hear that it moved. Like every call here, it runs on `coordinator`: its timeout, its
 * purpose (inside the claims of the same purpose) and its cancellation apply. */
int filecoord_move(filecoord_coordinator *coordinator, const char *source, const char *destination,
                   filecoord_error **error);
/* Deletes `path` (a directory with its contents) in a coordinated write .forDeleting. */
int filecoord_delete(filecoord_coordinator *coordinator, const char *path, filecoord_error **error);

/* For sync tools: in a coordinated write of `path`, records the file at `contents_path` as an unresolved conflict
 * version of it from `saving_computer` (NSFileVersion.addConflictVersionOfItem); its presenters hear that it gained
 * a version, and document apps find it among the item's unresolved conflict versions. */
int filecoord_add_conflict_version(filecoord_coordinator *coordinator, const char *path, const char *contents_path,
                                   const char *saving_computer, filecoord_error **error);

/* --- Presenters ------------------------------------------------------------------------------------------------ */

/* A presenter's callbacks, Apple's NSFilePresenter methods. A NULL member is a callback the presenter does not
 * implement: the arbiter neither sends it nor waits for it. Callbacks returning int answer with 0, or refuse with
 * a non-zero code: the access that asked fails with FILECOORD_ERR_REFUSED. */
typedef struct filecoord_presenter_callbacks {
    size_t size; /* sizeof(filecoord_presenter_callbacks) */
    /* Another process is about to read / write: stop using the item until reacquire (after_writer 0 / 1). */
    void (*relinquish_to_reader)(void *context);
    void (*relinquish_to_writer)(void *context);
    void (*reacquire)(void *context, int after_writer);
    int (*save_presented_item_changes)(void *context);
    int (*accommodate_presented_item_deletion)(void *context);
    int (*accommodate_presented_subitem_deletion)(void *context, const char *path);
    void (*presented_item_did_move)(void *context, const char *new_path);
    void (*presented_item_did_change)(void *context);
    void (*presented_subitem_did_change)(void *context, const char *path);
    void (*presented_subitem_did_appear)(void *context, const char *path);
    void (*presented_subitem_did_move)(void *context, const char *old_path, const char *new_path);
    void (*presented_item_did_gain_version)(void *context);
    void (*presented_item_did_lose_version)(void *context);
    void (*presented_item_did_resolve_conflict_version)(void *context);
} filecoord_presenter_callbacks;

typedef struct filecoord_presenter filecoord_presenter;

/* Registers a presenter of `path`; returns once the arbiter has it (so an access that starts after this returns
 * reaches it), or NULL with the error. `callbacks` is copied; `context` is passed to every callback. Registering
 * waits behind a write claim on the item (the presenter then starts with the writer's result): at most
 * `timeout_seconds` (0 or less: as long as it takes), then it fails with FILECOORD_ERR_TIMED_OUT and nothing is
 * registered. */
filecoord_presenter *filecoord_presenter_add(const char *path, const filecoord_presenter_callbacks *callbacks,
                                             void *context, double timeout_seconds, filecoord_error **error);
/* Where the presented item is now (it follows moves): a string to free with filecoord_free. */
char *filecoord_presenter_copy_path(const filecoord_presenter *presenter);
/* Unregisters the presenter, waits until none of its callbacks runs (unless called from one of them), and frees
 * it: after it returns, no callback is called with its context. */
void filecoord_presenter_remove(filecoord_presenter *presenter);

/* Frees a string the library returned. */
void filecoord_free(void *pointer);

#ifdef __cplusplus
}
#endif

#endif /* FILECOORD_H */
