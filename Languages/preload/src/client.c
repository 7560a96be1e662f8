/* The client of filecoordd (docs/PROTOCOL.md), spoken with protobuf-c from the same filecoord.proto as the Swift
 * code. This file holds its shared state (client.h), the settings read at load, the re-entry guard, the lock and what
 * a fork does to them; connection.c, frames.c and claims.c hold the rest.
 *
 * One connection per process, opened on the first call that needs it (nothing is done, and no descriptor exists,
 * before), close-on-exec. With no daemon answering, or one that fails the trust checks, calls go through
 * uncoordinated, and a new attempt is made at most once a second.
 *
 * Threading: fcp_lock guards everything here and the descriptor table. Frames are written with the lock held
 * (small, with a send timeout). Replies are read by one waiting thread at a time (the reader), which drops the lock
 * while it polls and hands each reply to its waiter through `pending` and a condition variable.
 *
 * No allocation on the paths a wrapper takes: frames are packed into a static buffer and unpacked with an arena
 * allocator over a static buffer, both used with the lock held. */
#include "client.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <unistd.h>

struct fcp_settings fcp_settings;

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t replied;

int connection = -1;
uint64_t generation;
int reader_active;
int close_after_read = -1;
struct timespec retry_after;
int hello_awaited;
int hello_refused;
struct timespec hello_deadline;
static pid_t own_pid;
char purpose[256];
char client_name[256];

struct fcp_pending pending[FCP_MAX_PENDING];

uint8_t receive_buffer[FCP_BUFFER_SIZE];
size_t received;

/* Set while the thread runs the library's own code, never across the program's real call: a signal handler that
 * jumps out of that call (siglongjmp, an alarm around a blocking open) leaves nothing set. Until stop 68 it was set
 * across the real call too, and such a jump left the thread passing straight through from then on. */
static __thread int busy __attribute__((tls_model("initial-exec")));

int fcp_enter(void) {
    if (busy) return 0;
    busy = 1;
    return 1;
}

void fcp_leave(void) {
    busy = 0;
    fcp_release_signals();
}

void fcp_resume(void) { busy = 1; }

/* The thread's signal mask before the library deferred the program's signals (fcp_defer_signals), while deferred. */
static __thread sigset_t deferred_from __attribute__((tls_model("initial-exec")));
static __thread int deferred __attribute__((tls_model("initial-exec")));

void fcp_defer_signals(void) {
    if (deferred) return;
    sigset_t all;
    sigfillset(&all);
    if (pthread_sigmask(SIG_BLOCK, &all, &deferred_from) == 0) deferred = 1;
}

void fcp_release_signals(void) {
    if (!deferred) return;
    deferred = 0;
    pthread_sigmask(SIG_SETMASK, &deferred_from, NULL);
}

void fcp_deliver_default_signals(void) {
    if (!deferred) return;
    int saved = errno;
    sigset_t waiting;
    if (sigpending(&waiting) == 0 && !sigisemptyset(&waiting)) {
        for (int number = 1; number < NSIG; number++) {
            if (sigismember(&waiting, number) != 1 || sigismember(&deferred_from, number) == 1) continue;
            struct sigaction action;
            if (sigaction(number, NULL, &action) != 0 || (action.sa_flags & SA_SIGINFO)) continue;
            if (action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN) continue;
            /* No code of the program's runs for it: the kernel ends or stops the process, or drops the signal. */
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, number);
            pthread_sigmask(SIG_UNBLOCK, &one, NULL);
            pthread_sigmask(SIG_BLOCK, &one, NULL);
        }
    }
    errno = saved;
}

/* The thread's cancelability before it took the lock: no thread is cancelled while it holds the lock (it would end
 * holding it, and every other thread's call, and fork, would wait for ever: the lock is held across cancellation
 * points, the reader's poll and the waiters' pthread_cond_timedwait among them), so a cancel that comes meanwhile
 * is acted on at the program's own call, after the unlock. One saved state per acquisition, by depth: a signal
 * handler may take the lock while its thread let the mutex go (the reader's poll, a wait), and must give back what
 * it found, not the thread's own saved state (a review found that overwriting it left the thread uncancelable). */
#define FCP_CANCEL_DEPTH 16
static __thread int cancel_saved[FCP_CANCEL_DEPTH] __attribute__((tls_model("initial-exec")));
static __thread int cancel_depth __attribute__((tls_model("initial-exec")));

/* After the mutex is taken with the state `state` saved by the caller. */
static void locked_with(int state) {
    if (cancel_depth < FCP_CANCEL_DEPTH) cancel_saved[cancel_depth] = state;
    cancel_depth++;
}

void fcp_lock(void) {
    int state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    pthread_mutex_lock(&lock);
    locked_with(state);
}

void fcp_unlock(void) {
    int depth = --cancel_depth;
    int state = depth < FCP_CANCEL_DEPTH ? cancel_saved[depth] : PTHREAD_CANCEL_DISABLE;
    pthread_mutex_unlock(&lock);
    pthread_setcancelstate(state, NULL);
}

int fcp_lock_for(int in_handler) {
    if (!in_handler) {
        fcp_lock();
        return 1;
    }
    int state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    struct timespec deadline = after(now(), FCP_SIGNAL_WAIT_MS);
    if (pthread_mutex_clocklock(&lock, CLOCK_MONOTONIC, &deadline) != 0) {
        pthread_setcancelstate(state, NULL);
        return 0;
    }
    locked_with(state);
    return 1;
}

/* The signals blocked when the library was loaded: a mask the program inherited (a parent may leave nearly every
 * signal blocked) says nothing about handlers. The main thread's baseline to start with. */
static sigset_t inherited_mask;

/* Per thread: the signals the thread blocks of its own accord (its baseline), as seen at its calls outside handlers:
 * the mask of its first call (the main thread: the mask at load), narrowed at each later call outside a handler to
 * what is still blocked. A signal blocked beyond it, with a handler, is taken for a handler running (issue 42). A
 * thread that blocks a handled signal from its start (the JVM's threads and SIGQUIT, workers created with a signal
 * left to another thread) is not taken for a handler. */
static __thread sigset_t thread_baseline __attribute__((tls_model("initial-exec")));
static __thread int thread_baseline_set __attribute__((tls_model("initial-exec")));

/* Whether a signal blocked in `blocked` beyond the thread's baseline has a handler. */
static int handled_beyond_baseline(const sigset_t *blocked) {
    int beyond = 0;
    for (int number = 1; number < NSIG && !beyond; number++) {
        beyond = sigismember(blocked, number) == 1 && sigismember(&thread_baseline, number) != 1;
    }
    if (!beyond) return 0;
    stack_t stack;
    if (sigaltstack(NULL, &stack) == 0 && (stack.ss_flags & SS_ONSTACK)) return 1;
    for (int number = 1; number < NSIG; number++) {
        if (sigismember(blocked, number) != 1 || sigismember(&thread_baseline, number) == 1) continue;
        struct sigaction action;
        if (sigaction(number, NULL, &action) != 0) continue;
        if ((action.sa_flags & SA_SIGINFO) || (action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN)) return 1;
    }
    return 0;
}

/* Reads, never changes, the thread's signal mask and the signals' dispositions: one system call for a thread that
 * blocks no more than its baseline (the common case), one more per other blocked signal. errno is kept. */
int fcp_in_signal_handler(void) {
    int saved = errno;
    sigset_t blocked;
    int in_handler = 0;
    if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0) {
        if (!thread_baseline_set) {
            thread_baseline = gettid() == getpid() ? inherited_mask : blocked;
            thread_baseline_set = 1;
        }
        in_handler = handled_beyond_baseline(&blocked);
        if (!in_handler) sigandset(&thread_baseline, &thread_baseline, &blocked);
    }
    errno = saved;
    return in_handler;
}

int fcp_stack_has_room(void) {
    int saved = errno;
    stack_t stack;
    int room = 1;
    if (sigaltstack(NULL, &stack) == 0 && (stack.ss_flags & SS_ONSTACK)) {
        /* The alternate stack grows down to ss_sp: what is left below this frame. */
        uintptr_t here = (uintptr_t)__builtin_frame_address(0), low = (uintptr_t)stack.ss_sp;
        room = here > low && here - low >= FCP_STACK_NEEDED;
    }
    errno = saved;
    return room;
}

int fcp_same_process(void) { return getpid() == own_pid; }

void fcp_disable_process(void) { __atomic_store_n(&fcp_settings.disabled, 1, __ATOMIC_RELAXED); }

// MARK: Settings, fork

/* While the lock is held for a fork, the forking thread's wrappers pass straight through (`busy`): a signal handler
 * run there, between this handler and the next, would otherwise wait for the lock its own thread holds. */
static __thread int busy_before_fork __attribute__((tls_model("initial-exec")));

static void after_fork_prepare(void) {
    pthread_mutex_lock(&lock);
    busy_before_fork = busy;
    busy = 1;
}

static void after_fork_parent(void) {
    busy = busy_before_fork;
    pthread_mutex_unlock(&lock);
}

/* The child keeps no connection and no claims: its parent's claims stay its parent's (its closes release
 * nothing), and it connects on its own when it first needs the daemon. It keeps the parent's purpose, so that the
 * two never wait for each other over a file they share. */
static void after_fork_child(void) {
    if (connection >= 0) fcp_real.close(connection);
    if (close_after_read >= 0 && close_after_read != connection) fcp_real.close(close_after_read);
    connection = -1;
    close_after_read = -1;
    generation++;
    reader_active = 0;
    hello_awaited = 0;
    hello_refused = 0;
    received = 0;
    memset(pending, 0, sizeof pending);
    fcp_fd_forget_all();
    fcp_leases_forked_child();
    own_pid = getpid();
    retry_after.tv_sec = 0;
    retry_after.tv_nsec = 0;
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&replied, &attributes);
    busy = busy_before_fork;
    pthread_mutex_unlock(&lock);
}

static uint64_t number_setting(const char *name, uint64_t fallback) {
    const char *value = secure_getenv(name);
    if (!value || !*value) return fallback;
    char *end;
    unsigned long long parsed = strtoull(value, &end, 10);
    return *end == '\0' ? (uint64_t)parsed : fallback;
}

static int flag_setting(const char *name) {
    const char *value = secure_getenv(name);
    return value && strcmp(value, "1") == 0;
}

/* The socket path exactly as FCProtocol's DaemonAddress computes it. */
static void resolve_socket_path(void) {
    const char *explicit_path = secure_getenv("FILECOORDD_SOCKET");
    const char *runtime = secure_getenv("XDG_RUNTIME_DIR");
    char *out = fcp_settings.socket_path;
    size_t size = sizeof fcp_settings.socket_path;
    if (explicit_path && explicit_path[0] == '/') {
        snprintf(out, size, "%s", explicit_path);
    } else if (runtime && runtime[0] == '/') {
        snprintf(out, size, "%s/filecoordd/socket", runtime);
    } else {
        snprintf(out, size, "/tmp/filecoordd-%u/socket", (unsigned)getuid());
    }
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s", out);
    char *slash = strrchr(folder, '/');
    if (slash && slash != folder) *slash = '\0';
    char resolved[PATH_MAX];
    const char *dir = realpath(folder, resolved) ? resolved : folder;
    snprintf(fcp_settings.runtime_dir, sizeof fcp_settings.runtime_dir, "%s", dir);
    fcp_settings.runtime_dir_len = strlen(fcp_settings.runtime_dir);
    if (fcp_settings.runtime_dir_len == 1) fcp_settings.runtime_dir_len = 0; /* never ignore all of "/" */
}

__attribute__((constructor)) static void fcp_load(void) {
    int saved = errno;
    fcp_resolve_real();
    own_pid = getpid();
    pthread_sigmask(SIG_BLOCK, NULL, &inherited_mask);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&replied, &attributes);
    fcp_settings.coordinate_reads = flag_setting("FILECOORD_PRELOAD_READS");
    fcp_settings.timeout_ms = number_setting("FILECOORD_PRELOAD_TIMEOUT_MS", 30000);
    if (fcp_settings.timeout_ms == 0) fcp_settings.timeout_ms = 1;
    /* A program run with more privilege than its user (setuid, setgid, file capabilities: AT_SECURE) is never
     * coordinated: its environment is not its user's to trust (secure_getenv reads none of it), and its files are
     * not its user's daemon's business. filecoordd never coordinates with itself. */
    fcp_settings.disabled = flag_setting("FILECOORD_PRELOAD_DISABLE") || getauxval(AT_SECURE) != 0 ||
                            strcmp(program_invocation_short_name, "filecoordd") == 0;
    resolve_socket_path();
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != sizeof nonce) {
        nonce = (uint64_t)now().tv_nsec ^ ((uint64_t)own_pid << 32);
    }
    /* Run by a command that holds claims (fccoord sets FILECOORD_PURPOSE): this process's claims are inside them. */
    const char *inherited = secure_getenv("FILECOORD_PURPOSE");
    if (inherited && *inherited && strlen(inherited) < sizeof purpose) {
        snprintf(purpose, sizeof purpose, "%s", inherited);
    } else {
        snprintf(purpose, sizeof purpose, "filecoord-preload %d %016llx", (int)own_pid, (unsigned long long)nonce);
    }
    snprintf(client_name, sizeof client_name, "preload:%s", program_invocation_short_name);
    pthread_atfork(after_fork_prepare, after_fork_parent, after_fork_child);
    errno = saved;
}
