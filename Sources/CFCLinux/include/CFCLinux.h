// CFCLinux: C shims for what Swift cannot import from glibc (macros with casts or GNU extensions, flexible array
// members, constants behind #ifdef). One header per concern, all included here; each shim is `static inline`, so
// the module has no link-time symbols of its own. Only FCSystem imports this module.
#ifndef CFCLINUX_H
#define CFCLINUX_H

#include "cfc_files.h"
#include "cfc_process.h"

#endif
