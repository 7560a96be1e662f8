/* The connection to filecoordd: settings, trust checks, the Hello handshake, claims and their replies
 * (docs/PROTOCOL.md), spoken with protobuf-c from the same filecoord.proto as the Swift code.
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
#include "internal.h"

#include "../generated/filecoord.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct fcp_settings fcp_settings;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t replied;

/* The connection: -1 when there is none. `generation` changes on every connect and disconnect, so that a reader
 * that polled a descriptor the program closed under it drops what it read. */
static int connection = -1;
static uint64_t generation;
static int reader_active;
static int close_after_read = -1;
static struct timespec retry_after;
static pid_t own_pid;
static uint64_t next_claim = 1;
static char purpose[96];
static char client_name[256];

/* Replies awaited: one slot per thread waiting for a claim. */
enum { WAITING = 0, GRANTED, FAILED, GONE, TIMED_OUT };
#define FCP_MAX_PENDING 64
static struct {
    uint64_t claim; /* 0: free */
    int state;
} pending[FCP_MAX_PENDING];

#define FCP_BUFFER_SIZE (256 * 1024)
static uint8_t receive_buffer[FCP_BUFFER_SIZE];
static size_t received;
static uint8_t send_buffer[3 * PATH_MAX + 4096];
static uint8_t arena[FCP_BUFFER_SIZE * 2];
static size_t arena_used;

static __thread int busy __attribute__((tls_model("initial-exec")));

int fcp_enter(void) {
    if (busy) return 0;
    busy = 1;
    return 1;
}

void fcp_leave(void) { busy = 0; }

void fcp_lock(void) { pthread_mutex_lock(&lock); }
void fcp_unlock(void) { pthread_mutex_unlock(&lock); }

int fcp_same_process(void) { return getpid() == own_pid; }

void fcp_disable_process(void) { __atomic_store_n(&fcp_settings.disabled, 1, __ATOMIC_RELAXED); }

// MARK: Time

static struct timespec now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t;
}

static struct timespec after(struct timespec t, uint64_t milliseconds) {
    t.tv_sec += (time_t)(milliseconds / 1000);
    t.tv_nsec += (long)(milliseconds % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static int before(struct timespec a, struct timespec b) {
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

static int milliseconds_until(struct timespec deadline) {
    struct timespec t = now();
    if (!before(t, deadline)) return 0;
    int64_t ms = (int64_t)(deadline.tv_sec - t.tv_sec) * 1000 + (deadline.tv_nsec - t.tv_nsec) / 1000000 + 1;
    return ms > 60000 ? 60000 : (int)ms;
}

// MARK: Settings, fork

static void after_fork_prepare(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }

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
    received = 0;
    memset(pending, 0, sizeof pending);
    fcp_fd_forget_all();
    own_pid = getpid();
    retry_after.tv_sec = 0;
    retry_after.tv_nsec = 0;
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&replied, &attributes);
    pthread_mutex_unlock(&lock);
}

static uint64_t number_setting(const char *name, uint64_t fallback) {
    const char *value = getenv(name);
    if (!value || !*value) return fallback;
    char *end;
    unsigned long long parsed = strtoull(value, &end, 10);
    return *end == '\0' ? (uint64_t)parsed : fallback;
}

static int flag_setting(const char *name) {
    const char *value = getenv(name);
    return value && strcmp(value, "1") == 0;
}

/* The socket path exactly as FCProtocol's DaemonAddress computes it. */
static void resolve_socket_path(void) {
    const char *explicit_path = getenv("FILECOORDD_SOCKET");
    const char *runtime = getenv("XDG_RUNTIME_DIR");
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
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&replied, &attributes);
    fcp_settings.coordinate_reads = flag_setting("FILECOORD_PRELOAD_READS");
    fcp_settings.timeout_ms = number_setting("FILECOORD_PRELOAD_TIMEOUT_MS", 30000);
    if (fcp_settings.timeout_ms == 0) fcp_settings.timeout_ms = 1;
    fcp_settings.disabled = flag_setting("FILECOORD_PRELOAD_DISABLE") ||
                            strcmp(program_invocation_short_name, "filecoordd") == 0;
    resolve_socket_path();
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != sizeof nonce) {
        nonce = (uint64_t)now().tv_nsec ^ ((uint64_t)own_pid << 32);
    }
    snprintf(purpose, sizeof purpose, "filecoord-preload %d %016llx", (int)own_pid, (unsigned long long)nonce);
    snprintf(client_name, sizeof client_name, "preload:%s", program_invocation_short_name);
    pthread_atfork(after_fork_prepare, after_fork_parent, after_fork_child);
    errno = saved;
}

// MARK: Frames

static void *arena_alloc(void *data, size_t size) {
    (void)data;
    size = (size + 15) & ~(size_t)15;
    if (size > sizeof arena - arena_used) return NULL;
    void *block = arena + arena_used;
    arena_used += size;
    return block;
}

static void arena_free(void *data, void *pointer) {
    (void)data;
    (void)pointer;
}

static ProtobufCAllocator arena_allocator = {arena_alloc, arena_free, NULL};

static void disconnect_locked(void);

/* Writes one frame: 4-byte big-endian length, then the body. With the lock held. */
static int send_frame_locked(Filecoord__V1__Frame *frame) {
    if (connection < 0) return 0;
    size_t size = protobuf_c_message_get_packed_size(&frame->base);
    if (size == 0 || size + 4 > sizeof send_buffer) return 0;
    send_buffer[0] = (uint8_t)(size >> 24);
    send_buffer[1] = (uint8_t)(size >> 16);
    send_buffer[2] = (uint8_t)(size >> 8);
    send_buffer[3] = (uint8_t)size;
    protobuf_c_message_pack(&frame->base, send_buffer + 4);
    size_t total = size + 4, written = 0;
    while (written < total) {
        ssize_t count = send(connection, send_buffer + written, total - written, MSG_NOSIGNAL);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) {
            disconnect_locked();
            return 0;
        }
        written += (size_t)count;
    }
    return 1;
}

static void settle(uint64_t claim, int state) {
    for (int index = 0; index < FCP_MAX_PENDING; index++) {
        if (pending[index].claim == claim && pending[index].state == WAITING) {
            pending[index].state = state;
            return;
        }
    }
}

/* Handles every complete frame in receive_buffer. Returns 0 when the connection must end (a protocol error, a
 * frame too large for the buffer). With the lock held. */
static int handle_frames_locked(void) {
    size_t at = 0;
    int ok = 1;
    while (received - at >= 4) {
        uint32_t length = (uint32_t)receive_buffer[at] << 24 | (uint32_t)receive_buffer[at + 1] << 16 |
                          (uint32_t)receive_buffer[at + 2] << 8 | receive_buffer[at + 3];
        if (length == 0 || length > FCP_BUFFER_SIZE - 4) {
            ok = 0;
            break;
        }
        if (received - at - 4 < length) break;
        arena_used = 0;
        Filecoord__V1__Frame *frame = filecoord__v1__frame__unpack(&arena_allocator, length, receive_buffer + at + 4);
        at += 4 + length;
        if (!frame) {
            ok = 0;
            break;
        }
        switch (frame->payload_case) {
        case FILECOORD__V1__FRAME__PAYLOAD_GRANTED:
            settle(frame->granted->claim_id, GRANTED);
            break;
        case FILECOORD__V1__FRAME__PAYLOAD_CLAIM_FAILED:
            settle(frame->claim_failed->claim_id,
                   frame->claim_failed->kind == FILECOORD__V1__CLAIM_FAILED__FAILURE_KIND__FAILURE_KIND_TIMED_OUT
                       ? TIMED_OUT
                       : FAILED);
            break;
        case FILECOORD__V1__FRAME__PAYLOAD_PROTOCOL_ERROR:
        case FILECOORD__V1__FRAME__PAYLOAD_REFUSED:
            ok = 0;
            break;
        default:
            break; /* no presenters: nothing else is addressed to this client */
        }
        if (!ok) break;
    }
    if (ok && at > 0) {
        memmove(receive_buffer, receive_buffer + at, received - at);
        received -= at;
    }
    return ok;
}

/* The connection is gone (closed by us or by the program): its waiting claims fail, and since the daemon releases
 * its claims, the descriptors that held them hold nothing now. Under the lock. */
static void forget_connection_locked(void) {
    connection = -1;
    generation++;
    received = 0;
    for (int index = 0; index < FCP_MAX_PENDING; index++) {
        if (pending[index].claim != 0 && pending[index].state == WAITING) pending[index].state = GONE;
    }
    fcp_fd_forget_all();
    retry_after = after(now(), 1000);
    pthread_cond_broadcast(&replied);
}

static void disconnect_locked(void) {
    if (connection >= 0) {
        if (reader_active) {
            shutdown(connection, SHUT_RDWR); /* the reader closes it when it returns */
            close_after_read = connection;
        } else {
            fcp_real.close(connection);
        }
    }
    forget_connection_locked();
}

void fcp_descriptor_replaced(int fd) {
    if (fd < 0 || __atomic_load_n(&connection, __ATOMIC_RELAXED) != fd) return;
    fcp_lock();
    if (connection == fd) {
        /* The program closes or replaces the descriptor itself: forget it without closing it. */
        forget_connection_locked();
    }
    fcp_unlock();
}

// MARK: Connecting

/* The daemon is trusted only when its socket's folder is a real directory (not a link) owned by this user with no
 * access for anyone else, the socket is owned by this user, and the peer runs as this user (SO_PEERCRED). An
 * untrusted daemon is never sent a path: the call goes through uncoordinated. */
static int trusted_folder(void) {
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s", fcp_settings.socket_path);
    char *slash = strrchr(folder, '/');
    if (!slash || slash == folder) return 0;
    *slash = '\0';
    struct stat status;
    if (lstat(folder, &status) != 0 || !S_ISDIR(status.st_mode) || status.st_uid != geteuid() ||
        (status.st_mode & 077) != 0) {
        return 0;
    }
    return lstat(fcp_settings.socket_path, &status) == 0 && S_ISSOCK(status.st_mode) && status.st_uid == geteuid();
}

static int trusted_peer(int fd) {
    struct ucred credentials;
    socklen_t size = sizeof credentials;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0 && credentials.uid == geteuid();
}

/* Reads until the handshake's answer arrived; 1 for HelloReply. With the lock held (no reader can be active: no
 * connection existed). */
static int await_hello_reply(int fd) {
    struct timespec deadline = after(now(), 2000);
    while (1) {
        if (received >= 4) {
            uint32_t length = (uint32_t)receive_buffer[0] << 24 | (uint32_t)receive_buffer[1] << 16 |
                              (uint32_t)receive_buffer[2] << 8 | receive_buffer[3];
            if (length == 0 || length > FCP_BUFFER_SIZE - 4) return 0;
            if (received - 4 >= length) {
                arena_used = 0;
                Filecoord__V1__Frame *frame =
                    filecoord__v1__frame__unpack(&arena_allocator, length, receive_buffer + 4);
                if (!frame || frame->payload_case != FILECOORD__V1__FRAME__PAYLOAD_HELLO_REPLY) return 0;
                memmove(receive_buffer, receive_buffer + 4 + length, received - 4 - length);
                received -= 4 + length;
                return 1;
            }
        }
        int wait = milliseconds_until(deadline);
        if (wait == 0) return 0;
        struct pollfd poller = {.fd = fd, .events = POLLIN};
        int ready = poll(&poller, 1, wait);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return 0;
        ssize_t count = recv(fd, receive_buffer + received, sizeof receive_buffer - received, MSG_DONTWAIT);
        if (count < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (count <= 0) return 0;
        received += (size_t)count;
    }
}

#ifndef O_PATH
#define O_PATH 010000000
#endif

/// Moves the library's own descriptor `fd` (closing it) to a high number, so that the program's next open gets the
/// lowest free number it expects (issue 42: a program that closes its standard output and opens a log gets it as
/// descriptor 1, not the daemon's socket). The lowest number at or above half the soft limit of open files (at most
/// 512, at least 10); `fd` itself when no such number is free. Returns the descriptor to use, or -1 for -1.
static int high_descriptor(int fd) {
    if (fd < 0) return fd;
    struct rlimit limit;
    long floor = 512;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && (long)limit.rlim_cur / 2 < floor) {
        floor = (long)limit.rlim_cur / 2;
    }
    if (floor < 10 || fd >= floor) return fd;
    int saved = errno;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, (int)floor);
    if (moved < 0) {
        errno = saved;
        return fd;
    }
    fcp_real.close(fd);
    errno = saved;
    return moved;
}

/// Fills `address` with the daemon's socket path, or, when that is too long for `sun_path`, with
/// `/proc/self/fd/N/NAME`, N a path-only descriptor of its folder left in `*folder` for the caller to close after
/// connecting. Returns 0 when neither fits (the preload then does nothing, as without a daemon).
static int socket_address(struct sockaddr_un *address, int *folder) {
    const char *path = fcp_settings.socket_path;
    size_t length = strlen(path);
    if (length < sizeof address->sun_path) {
        memcpy(address->sun_path, path, length + 1);
        return 1;
    }
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= PATH_MAX) return 0;
    char directory[PATH_MAX];
    size_t directory_length = slash == path ? 1 : (size_t)(slash - path);
    memcpy(directory, path, directory_length);
    directory[directory_length] = 0;
    int fd;
    do {
        fd = fcp_real.open(directory, O_PATH | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    fd = high_descriptor(fd);
    if (fd < 0) return 0;
    int written = snprintf(address->sun_path, sizeof address->sun_path, "/proc/self/fd/%d/%s", fd, slash + 1);
    if (written < 0 || (size_t)written >= sizeof address->sun_path) {
        fcp_real.close(fd);
        return 0;
    }
    *folder = fd;
    return 1;
}

static int connect_locked(void) {
    if (connection >= 0) return 1;
    if (fcp_settings.disabled || reader_active) return 0;
    if (before(now(), retry_after)) return 0;
    retry_after = after(now(), 1000);
    if (!trusted_folder()) return 0;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    // A path too long for a socket address is reached through its folder, as /proc/self/fd/N/NAME (the Swift
    // client's AddressablePath, issue 37); the folder's descriptor lives only for the connect.
    int folder = -1;
    if (!socket_address(&address, &folder)) return 0;
    int fd = high_descriptor(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd < 0) {
        if (folder >= 0) fcp_real.close(folder);
        return 0;
    }
    struct timeval send_timeout = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    int connected;
    do {
        connected = fcp_real.connect(fd, &address, (unsigned)sizeof address);
    } while (connected != 0 && errno == EINTR);
    if (folder >= 0) fcp_real.close(folder);
    if (connected != 0 || !trusted_peer(fd)) {
        fcp_real.close(fd);
        return 0;
    }
    connection = fd;
    generation++;
    received = 0;
    Filecoord__V1__Hello hello = FILECOORD__V1__HELLO__INIT;
    hello.protocol_version = 1;
    hello.client_name = client_name;
    hello.pid = getpid();
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_HELLO;
    frame.hello = &hello;
    if (!send_frame_locked(&frame)) return 0;
    if (!await_hello_reply(fd)) {
        disconnect_locked();
        return 0;
    }
    retry_after.tv_sec = 0;
    retry_after.tv_nsec = 0;
    return 1;
}

// MARK: Claims

/* Waits until the slot is answered, the connection ends or the deadline passes. With the lock held. */
static int await_locked(int slot, struct timespec deadline) {
    while (1) {
        if (pending[slot].state != WAITING) return pending[slot].state;
        if (connection < 0) return GONE;
        if (!before(now(), deadline)) return WAITING;
        if (reader_active) {
            pthread_cond_timedwait(&replied, &lock, &deadline);
            continue;
        }
        reader_active = 1;
        int fd = connection;
        uint64_t read_generation = generation;
        size_t room = sizeof receive_buffer - received;
        pthread_mutex_unlock(&lock);
        struct pollfd poller = {.fd = fd, .events = POLLIN};
        int ready = poll(&poller, 1, milliseconds_until(deadline));
        ssize_t count = 0;
        int error = 0;
        if (ready > 0) {
            count = recv(fd, receive_buffer + received, room, MSG_DONTWAIT);
            error = count < 0 ? errno : 0;
        }
        pthread_mutex_lock(&lock);
        reader_active = 0;
        if (close_after_read >= 0) {
            fcp_real.close(close_after_read);
            close_after_read = -1;
        }
        if (read_generation == generation && ready > 0) {
            if (count == 0 || (count < 0 && error != EAGAIN && error != EINTR) || room == 0) {
                disconnect_locked();
            } else if (count > 0) {
                received += (size_t)count;
                if (!handle_frames_locked()) disconnect_locked();
            }
        }
        pthread_cond_broadcast(&replied);
    }
}

uint64_t fcp_claim(const struct fcp_item *items, size_t count) {
    if (__atomic_load_n(&fcp_settings.disabled, __ATOMIC_RELAXED) || count == 0 || count > 2) return 0;
    if (!fcp_same_process()) return 0; /* a vfork child shares the parent's memory and connection */
    fcp_lock();
    if (!connect_locked()) {
        fcp_unlock();
        return 0;
    }
    int slot = -1;
    for (int index = 0; index < FCP_MAX_PENDING; index++) {
        if (pending[index].claim == 0) {
            slot = index;
            break;
        }
    }
    if (slot < 0) {
        fcp_unlock();
        return 0;
    }
    uint64_t claim = next_claim++;
    pending[slot].claim = claim;
    pending[slot].state = WAITING;

    Filecoord__V1__ClaimItem wire_items[2];
    Filecoord__V1__ClaimItem *item_pointers[2];
    for (size_t index = 0; index < count; index++) {
        Filecoord__V1__ClaimItem initial = FILECOORD__V1__CLAIM_ITEM__INIT;
        wire_items[index] = initial;
        wire_items[index].path.data = (uint8_t *)items[index].path;
        wire_items[index].path.len = strlen(items[index].path);
        wire_items[index].write = items[index].write;
        wire_items[index].options = items[index].options;
        item_pointers[index] = &wire_items[index];
    }
    Filecoord__V1__RequestClaim request = FILECOORD__V1__REQUEST_CLAIM__INIT;
    request.claim_id = claim;
    request.coordinator_id = 1;
    request.purpose = purpose;
    request.n_items = count;
    request.items = item_pointers;
    request.timeout_milliseconds = fcp_settings.timeout_ms;
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_REQUEST_CLAIM;
    frame.request_claim = &request;

    int state = GONE;
    if (send_frame_locked(&frame)) {
        /* The daemon answers TIMED_OUT after timeout_ms; a little longer here for a daemon that does not answer. */
        state = await_locked(slot, after(now(), fcp_settings.timeout_ms + 2000));
        if (state == WAITING) fcp_finish_locked(claim); /* abandoned: before the grant it counts as a cancel */
    }
    pending[slot].claim = 0;
    fcp_unlock();
    return state == GRANTED ? claim : 0;
}

void fcp_finish_locked(uint64_t claim) {
    if (claim == 0 || connection < 0) return;
    Filecoord__V1__FinishClaim finish = FILECOORD__V1__FINISH_CLAIM__INIT;
    finish.claim_id = claim;
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_FINISH_CLAIM;
    frame.finish_claim = &finish;
    send_frame_locked(&frame);
}

void fcp_finish(uint64_t claim) {
    if (claim == 0 || !fcp_same_process()) return;
    fcp_lock();
    fcp_finish_locked(claim);
    fcp_unlock();
}

void fcp_moved(uint64_t claim, const char *from, const char *to) {
    if (claim == 0 || !fcp_same_process()) return;
    Filecoord__V1__ItemMoved moved = FILECOORD__V1__ITEM_MOVED__INIT;
    moved.claim_id = claim;
    moved.from.data = (uint8_t *)from;
    moved.from.len = strlen(from);
    moved.to.data = (uint8_t *)to;
    moved.to.len = strlen(to);
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_ITEM_MOVED;
    frame.item_moved = &moved;
    fcp_lock();
    send_frame_locked(&frame);
    fcp_unlock();
}

int fcp_is_daemon_address(const void *addr, unsigned int len) {
    const struct sockaddr_un *address = addr;
    if (!addr || len <= offsetof(struct sockaddr_un, sun_path) || address->sun_family != AF_UNIX) return 0;
    size_t room = len - offsetof(struct sockaddr_un, sun_path);
    size_t length = strnlen(address->sun_path, room < sizeof address->sun_path ? room : sizeof address->sun_path);
    return length == strlen(fcp_settings.socket_path) &&
           memcmp(address->sun_path, fcp_settings.socket_path, length) == 0;
}
