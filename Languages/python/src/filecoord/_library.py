"""libfilecoord through cffi (ABI mode): the declarations of filecoord.h and where the library is found."""

from __future__ import annotations

import ctypes.util
import os
import subprocess
from typing import Any, Iterator, List

from cffi import FFI

# filecoord.h's declarations (cffi reads no preprocessor): keep in step with Languages/c/CFileCoord/include/filecoord.h.
CDEF = """
int filecoord_abi_version(void);
const char *filecoord_version(void);

typedef struct filecoord_error filecoord_error;
int filecoord_error_code(const filecoord_error *error);
const char *filecoord_error_message(const filecoord_error *error);
int filecoord_error_errno(const filecoord_error *error);
void filecoord_error_free(filecoord_error *error);

typedef struct filecoord_coordinator filecoord_coordinator;
filecoord_coordinator *filecoord_coordinator_new(void);
void filecoord_coordinator_set_timeout(filecoord_coordinator *coordinator, double seconds);
void filecoord_coordinator_set_nonblocking(filecoord_coordinator *coordinator, int nonblocking);
int filecoord_coordinator_set_purpose(filecoord_coordinator *coordinator, const char *purpose,
                                      filecoord_error **error);
char *filecoord_coordinator_copy_purpose(const filecoord_coordinator *coordinator);
void filecoord_coordinator_cancel(filecoord_coordinator *coordinator);
void filecoord_coordinator_free(filecoord_coordinator *coordinator);

typedef void (*filecoord_accessor)(void *context, const char *const *paths, size_t count);
typedef struct filecoord_item {
    const char *path;
    int write;
    unsigned options;
} filecoord_item;
int filecoord_read(filecoord_coordinator *coordinator, const char *path, unsigned options,
                   filecoord_accessor accessor, void *context, filecoord_error **error);
int filecoord_write(filecoord_coordinator *coordinator, const char *path, unsigned options,
                    filecoord_accessor accessor, void *context, filecoord_error **error);
int filecoord_coordinate(filecoord_coordinator *coordinator, const filecoord_item *items, size_t count,
                         filecoord_accessor accessor, void *context, filecoord_error **error);

typedef struct filecoord_claim filecoord_claim;
filecoord_claim *filecoord_claim_begin(filecoord_coordinator *coordinator, const filecoord_item *items, size_t count,
                                       filecoord_error **error);
size_t filecoord_claim_count(const filecoord_claim *claim);
const char *filecoord_claim_path(const filecoord_claim *claim, size_t index);
void filecoord_claim_end(filecoord_claim *claim);

int filecoord_move(filecoord_coordinator *coordinator, const char *source, const char *destination,
                   filecoord_error **error);
int filecoord_delete(filecoord_coordinator *coordinator, const char *path, filecoord_error **error);
int filecoord_add_conflict_version(filecoord_coordinator *coordinator, const char *path, const char *contents_path,
                                   const char *saving_computer, filecoord_error **error);

typedef struct filecoord_presenter_callbacks {
    size_t size;
    void (*relinquish_to_reader)(void *context);
    void (*relinquish_to_writer)(void *context);
    void (*reacquire)(void *context, int after_writer);
    int (*save_presented_item_changes)(void *context);
    int (*accommodate_presented_item_deletion)(void *context);
    int (*accommodate_presented_subitem_deletion)(void *context, const char *path);
    void (*presented_item_did_move)(void *context, const char *new_path);
    void (*presented_item_did_change)(void *context);
    void (*presented_subitem_did_change)(void *context, const char *path);
    void (*presented_subitem_did_appear)(void *context, const char *path);
    void (*presented_subitem_did_move)(void *context, const char *old_path, const char *new_path);
    void (*presented_item_did_gain_version)(void *context);
    void (*presented_item_did_lose_version)(void *context);
    void (*presented_item_did_resolve_conflict_version)(void *context);
} filecoord_presenter_callbacks;

typedef struct filecoord_presenter filecoord_presenter;
filecoord_presenter *filecoord_presenter_add(const char *path, const filecoord_presenter_callbacks *callbacks,
                                             void *context, double timeout_seconds, filecoord_error **error);
char *filecoord_presenter_copy_path(const filecoord_presenter *presenter);
void filecoord_presenter_remove(filecoord_presenter *presenter);
void filecoord_free(void *pointer);
"""

#: The ABI these bindings are written for (FILECOORD_ABI_VERSION).
ABI_VERSION = 1

ffi: Any = FFI()
ffi.cdef(CDEF)


def _candidates() -> Iterator[str]:
    """Where libfilecoord is looked for, in order: FILECOORD_LIBRARY alone when set; the library the wheel carries
    (setup.py bundles it when it can build it); the installed one (the Debian package libfilecoord1, through the
    loader's path and cache); pkg-config's libdir (an install under another prefix)."""
    explicit = os.environ.get("FILECOORD_LIBRARY")
    if explicit:
        yield explicit
        return
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", "libfilecoord.so.%d" % ABI_VERSION)
    if os.path.isfile(bundled):
        yield bundled
    yield "libfilecoord.so.%d" % ABI_VERSION
    found = ctypes.util.find_library("filecoord")
    if found:
        yield found
    try:
        libdir = subprocess.run(
            ["pkg-config", "--variable=libdir", "filecoord"], capture_output=True, text=True, check=True
        ).stdout.strip()
        if libdir:
            yield os.path.join(libdir, "libfilecoord.so.%d" % ABI_VERSION)
    except (OSError, subprocess.CalledProcessError):
        pass


def _load() -> Any:
    tried: List[str] = []
    for candidate in _candidates():
        try:
            # RTLD_NODELETE: the library is never unmapped, not even when the interpreter unloads it at exit. Its
            # threads (the daemon connection's listener, presenter queues) may still run then, and ran into freed
            # code about once in 30 interpreter exits without it (a segfault after the program's own last line).
            library = ffi.dlopen(candidate, ffi.RTLD_NOW | ffi.RTLD_NODELETE)
        except OSError as error:
            tried.append("%s (%s)" % (candidate, error))
            continue
        if library.filecoord_abi_version() != ABI_VERSION:
            tried.append("%s (ABI %d, not %d)" % (candidate, library.filecoord_abi_version(), ABI_VERSION))
            continue
        global path
        path = candidate
        return library
    raise ImportError(
        "libfilecoord not found: install the Debian package libfilecoord1 (scripts/package-deb.sh), reinstall this "
        "package where a Swift toolchain can build the library into it, or set FILECOORD_LIBRARY; tried "
        + "; ".join(tried)
    )


#: Where the loaded library was found (a path, or the soname the loader resolved).
path = ""

#: The loaded library (cffi's view of it: every function of CDEF, untyped).
lib: Any = _load()
