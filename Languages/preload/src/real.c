/* The next definition of each wrapped function: dlsym(RTLD_NEXT), resolved once when the library loads (so that
 * a wrapper never calls dlsym, which may allocate, from a signal handler), and again on first use if a program's
 * constructor calls a wrapper before this library's constructor ran. */
#include "internal.h"

#include <dlfcn.h>

struct fcp_real fcp_real;

#define RESOLVE(field, name)                                                                                           \
    do {                                                                                                               \
        if (!fcp_real.field) *(void **)(&fcp_real.field) = dlsym(RTLD_NEXT, name);                                     \
    } while (0)

void fcp_resolve_real(void) {
    RESOLVE(flock, "flock");
    RESOLVE(open, "open");
    RESOLVE(open64, "open64");
    RESOLVE(openat, "openat");
    RESOLVE(openat64, "openat64");
    RESOLVE(open_2, "__open_2");
    RESOLVE(open64_2, "__open64_2");
    RESOLVE(openat_2, "__openat_2");
    RESOLVE(openat64_2, "__openat64_2");
    RESOLVE(creat, "creat");
    RESOLVE(creat64, "creat64");
    RESOLVE(fopen, "fopen");
    RESOLVE(fopen64, "fopen64");
    RESOLVE(freopen, "freopen");
    RESOLVE(freopen64, "freopen64");
    RESOLVE(fclose, "fclose");
    RESOLVE(close, "close");
    RESOLVE(dup, "dup");
    RESOLVE(dup2, "dup2");
    RESOLVE(dup3, "dup3");
    RESOLVE(fcntl, "fcntl");
    RESOLVE(fcntl64, "fcntl64");
    RESOLVE(rename, "rename");
    RESOLVE(renameat, "renameat");
    RESOLVE(renameat2, "renameat2");
    RESOLVE(unlink, "unlink");
    RESOLVE(unlinkat, "unlinkat");
    RESOLVE(rmdir, "rmdir");
    RESOLVE(remove, "remove");
    RESOLVE(link, "link");
    RESOLVE(linkat, "linkat");
    RESOLVE(truncate, "truncate");
    RESOLVE(truncate64, "truncate64");
    RESOLVE(connect, "connect");
    RESOLVE(bind, "bind");
    RESOLVE(close_range, "close_range");
    RESOLVE(closefrom, "closefrom");
}
