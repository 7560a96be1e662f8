// Socket shims: what Swift cannot import from glibc without _GNU_SOURCE.
#ifndef CFCLINUX_SOCKET_H
#define CFCLINUX_SOCKET_H

#include <stdint.h>

/// The peer of a connected Unix socket as the kernel saw it when it connected (`getsockopt(SO_PEERCRED)` into a
/// `struct ucred`, which glibc declares only with `_GNU_SOURCE`). Returns 0, or an errno value.
///
/// Defined in CFCLinux.c, the one translation unit compiled with `_GNU_SOURCE`, so that `struct ucred` and
/// `SO_PEERCRED` are used by name and this header changes no declaration seen by the other C modules.
int cfc_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

/// `struct ucred` under a name Swift imports without `_GNU_SOURCE`, for a `getsockopt(SO_PEERCRED)` made by another
/// socket layer (the daemon reads it through NIO's socket-option API). CFCLinux.c, which sees `struct ucred` by
/// name, asserts at compile time that both have the same size and field offsets.
struct cfc_ucred {
    int32_t pid;
    uint32_t uid;
    uint32_t gid;
};

/// Accepts a connection on the listening socket `fd`, the new descriptor close-on-exec from the start (`accept4`,
/// a GNU extension). Returns the descriptor, or -1 and `errno`.
int cfc_accept_cloexec(int fd);

/// Opens the directory at `path` as a path-only descriptor (`O_PATH | O_DIRECTORY | O_CLOEXEC`; `O_PATH` is a GNU
/// name), to reach a socket in it as `/proc/self/fd/N/NAME` when its full path does not fit in a socket address.
/// Returns the descriptor, or -1 and `errno`.
int cfc_open_directory_path(const char *path);

#endif
