// CFCLinux: C shims for what Swift cannot import from glibc (macros with casts or GNU extensions, flexible array
// members, constants behind #ifdef). One header per concern, all included here; each shim is `static inline`,
// except those that need glibc's GNU declarations (defined in CFCLinux.c). Only FCSystem imports this module.
#ifndef CFCLINUX_H
#define CFCLINUX_H

#include "cfc_atomics.h"
#include "cfc_dbus.h"
#include "cfc_files.h"
#include "cfc_fs.h"
#include "cfc_process.h"
#include "cfc_socket.h"

#endif
