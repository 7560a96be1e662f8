// CFCLinux's shims are `static inline` in its headers, except the few below that need glibc's GNU declarations:
// this translation unit alone is compiled with `_GNU_SOURCE`, so the headers (and so every other C module) keep
// glibc's default declarations.
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include "CFCLinux.h"

_Static_assert(sizeof(struct cfc_ucred) == sizeof(struct ucred), "cfc_ucred must have struct ucred's size");
_Static_assert(offsetof(struct cfc_ucred, pid) == offsetof(struct ucred, pid), "cfc_ucred.pid");
_Static_assert(offsetof(struct cfc_ucred, uid) == offsetof(struct ucred, uid), "cfc_ucred.uid");
_Static_assert(offsetof(struct cfc_ucred, gid) == offsetof(struct ucred, gid), "cfc_ucred.gid");

int cfc_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return errno;
    if (length != sizeof credentials) return EINVAL;
    *pid = (int32_t)credentials.pid;
    *uid = (uint32_t)credentials.uid;
    *gid = (uint32_t)credentials.gid;
    return 0;
}

int cfc_accept_cloexec(int fd) {
    return accept4(fd, (struct sockaddr *)0, (socklen_t *)0, SOCK_CLOEXEC);
}

int cfc_open_directory_path(const char *path) {
    int fd;
    do {
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

int cfc_statx(const char *path, int follow, struct cfc_status *out) {
    struct statx buffer;
    int result = statx(AT_FDCWD, path, follow ? 0 : AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_MNT_ID, &buffer);
    if (result != 0) return result;
    out->device = makedev(buffer.stx_dev_major, buffer.stx_dev_minor);
    out->inode = buffer.stx_ino;
    out->rdev = makedev(buffer.stx_rdev_major, buffer.stx_rdev_minor);
    out->link_count = buffer.stx_nlink;
    out->mount_id = buffer.stx_mnt_id;
    out->mode = buffer.stx_mode;
    out->uid = buffer.stx_uid;
    out->has_mount_id = (buffer.stx_mask & STATX_MNT_ID) != 0;
    return 0;
}

// Weak: a C library without it (musl, for the static daemon) still links, and the call says ENOSYS.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
#pragma weak posix_spawn_file_actions_addclosefrom_np

int cfc_spawn_close_from(void *actions, int from) {
    if (!posix_spawn_file_actions_addclosefrom_np) return ENOSYS;
    return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, from);
}

// MARK: fork

static atomic_int forked_child;
static pthread_once_t fork_watch = PTHREAD_ONCE_INIT;

static void mark_forked_child(void) { atomic_store_explicit(&forked_child, 1, memory_order_relaxed); }

static void register_fork_handler(void) { pthread_atfork(NULL, NULL, mark_forked_child); }

void cfc_watch_fork(void) { pthread_once(&fork_watch, register_fork_handler); }

int cfc_forked_child(void) { return atomic_load_explicit(&forked_child, memory_order_relaxed); }
