// Process and spawn shims.
#ifndef CFCLINUX_PROCESS_H
#define CFCLINUX_PROCESS_H

#define _GNU_SOURCE 1
#include <spawn.h>

/// POSIX_SPAWN_SETSID (glibc 2.26+): a macro that Swift does not import.
static inline short cfc_posix_spawn_setsid(void) { return (short)POSIX_SPAWN_SETSID; }

#endif
