/* The sockets calls the library watches (Languages/preload/README.md):
 *
 *   connect, bind: a process that talks to the daemon itself (a FileCoordination client, fcdump) or serves its
 *       socket stops coordinating through this library, so that it never waits for its own claims.
 *
 * Each passes the call through unchanged, with its result and errno. */
#include "internal.h"

#include <sys/socket.h>

int connect(int fd, const struct sockaddr *address, socklen_t length) {
    if (!fcp_real.connect) fcp_resolve_real();
    /* Not from a vfork child (shared memory): its connect says nothing of its parent. */
    if (fcp_is_daemon_address(address, length) && fcp_same_process()) fcp_disable_process();
    return fcp_real.connect(fd, address, length);
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
    if (!fcp_real.bind) fcp_resolve_real();
    /* Not from a vfork child (shared memory): its bind says nothing of its parent. */
    if (fcp_is_daemon_address(address, length) && fcp_same_process()) fcp_disable_process();
    return fcp_real.bind(fd, address, length);
}
