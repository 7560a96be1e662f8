/* Connecting to filecoordd: the trust checks, the socket's address, the Hello handshake; and the connection's end,
 * by us or by the program. One connection per process, opened on the first call that needs it, close-on-exec. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The connection is gone (closed by us or by the program): its waiting claims fail, and since the daemon releases
 * its claims, the descriptors that held them hold nothing now. Under the lock. */
static void forget_connection_locked(void) {
    connection = -1;
    generation++;
    received = 0;
    hello_awaited = 0;
    for (int index = 0; index < FCP_MAX_PENDING; index++) {
        if (pending[index].claim != 0 && pending[index].state == WAITING) {
            pending[index].state = hello_refused ? SILENT : GONE;
        }
    }
    /* The claims decided in its leases end as the daemon's claims do (their counts back to 0, so the daemon, which
     * reads them at the close, keeps none of the leases for them). */
    fcp_fd_end_lease_claims();
    fcp_fd_forget_all();
    fcp_leases_connection_ended_locked();
    retry_after = after(now(), 1000);
    pthread_cond_broadcast(&replied);
}

void disconnect_locked(void) {
    if (hello_awaited) hello_refused = 1; /* ended before its HelloReply: a refusal, or a daemon that closes */
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

int fcp_descriptors_replaced(unsigned int first, unsigned int last) {
    int fd = __atomic_load_n(&connection, __ATOMIC_RELAXED);
    if (fd < 0 || (unsigned int)fd < first || (unsigned int)fd > last) return -1;
    fcp_descriptor_replaced(fd);
    return fd;
}

void fcp_descriptor_replaced(int fd) {
    /* A vfork child shares the parent's memory but has a descriptor table of its own: its close or dup2 of the
     * number leaves the parent's connection open, which must not be forgotten (nor the parent's lock taken). */
    if (fd < 0 || __atomic_load_n(&connection, __ATOMIC_RELAXED) != fd || !fcp_same_process()) return;
    fcp_lock();
    if (connection == fd) {
        /* The program closes or replaces the descriptor itself: forget it without closing it. */
        forget_connection_locked();
    }
    fcp_unlock();
}

// MARK: A daemon that does not answer

/* The socket file of the daemon that last did not answer, and until when it is not asked again. */
static dev_t silent_device;
static ino_t silent_inode;
static struct timespec silent_until;

static int socket_identity(dev_t *device, ino_t *inode) {
    struct stat status;
    if (lstat(fcp_settings.socket_path, &status) != 0) return 0;
    *device = status.st_dev;
    *inode = status.st_ino;
    return 1;
}

/* The daemon behind the socket now is not asked again for a while. */
static void mark_silent_locked(void) {
    if (!socket_identity(&silent_device, &silent_inode)) return;
    silent_until = after(now(), FCP_SILENT_BACKOFF_MS);
}

void daemon_silent_locked(void) {
    disconnect_locked();
    mark_silent_locked();
}

/* Whether the daemon behind the socket is one that did not answer a moment ago. */
static int known_silent(void) {
    if (!before(now(), silent_until)) return 0;
    dev_t device;
    ino_t inode;
    return socket_identity(&device, &inode) && device == silent_device && inode == silent_inode;
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

int connect_locked(void) {
    if (connection >= 0) return 1;
    if (fcp_settings.disabled || reader_active) return 0;
    if (before(now(), retry_after)) return 0;
    retry_after = after(now(), 1000);
    if (known_silent()) return 0;
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
    int connect_errno = errno;
    if (folder >= 0) fcp_real.close(folder);
    if (connected != 0 || !trusted_peer(fd)) {
        fcp_real.close(fd);
        /* A listener whose backlog is full (a stopped daemon) kept the connect waiting for the whole send timeout:
         * not asked again for a while, or every call a second apart would wait as long (found by a review). */
        if (connected != 0 && (connect_errno == EAGAIN || connect_errno == EWOULDBLOCK)) mark_silent_locked();
        return 0;
    }
    connection = fd;
    generation++;
    received = 0;
    hello_refused = 0;
    Filecoord__V1__Hello hello = FILECOORD__V1__HELLO__INIT;
    hello.protocol_version = 1;
    hello.client_name = client_name;
    hello.pid = getpid();
    /* Names are sent as the program spelled them: the daemon folds them below case-insensitive mounts (paths.c). */
    hello.daemon_folds_names = 1;
    /* Leases are kept with counters (issue 42): a claim's longest hold is the program's own timeout. */
    Filecoord__V1__LeaseCounters counters = FILECOORD__V1__LEASE_COUNTERS__INIT;
    counters.maximum_hold_milliseconds = fcp_settings.timeout_ms;
    if (fcp_leases_offered_locked()) hello.lease_counters = &counters;
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_HELLO;
    frame.hello = &hello;
    /* The answer is read with the first claim's (issue 42, item 6: awaited here, it held the library's lock, and every
     * other thread's call and the program's fork with it, for up to 2 s with a silent daemon). Awaited from before the
     * send: a connection that ends before its HelloReply is a refusal, found by a read or, when the daemon closed
     * first, by this send or the claim's (disconnect_locked). */
    hello_awaited = 1;
    hello_deadline = after(now(), FCP_HELLO_WAIT_MS);
    if (!send_frame_locked(&frame)) {
        daemon_silent_locked(); /* accepted and closed at once (at its connection limit): not asked for a while */
        return 0;
    }
    return 1;
}

int fcp_is_daemon_address(const void *addr, unsigned int len) {
    const struct sockaddr_un *address = addr;
    if (!addr || len <= offsetof(struct sockaddr_un, sun_path) || address->sun_family != AF_UNIX) return 0;
    size_t room = len - offsetof(struct sockaddr_un, sun_path);
    size_t length = strnlen(address->sun_path, room < sizeof address->sun_path ? room : sizeof address->sun_path);
    return length == strlen(fcp_settings.socket_path) &&
           memcmp(address->sun_path, fcp_settings.socket_path, length) == 0;
}
