// D-Bus shim: asks the document portal (org.freedesktop.portal.Documents) on the session bus, through sd-bus loaded
// at run time (`dlopen("libsystemd.so.0")`), so that nothing is linked against libsystemd and a machine without it
// merely has no portal mapping (issue 26).
#ifndef CFCLINUX_DBUS_H
#define CFCLINUX_DBUS_H

#include <stddef.h>
#include <stdint.h>

/// Why a call failed, as the bus or the portal named it (both empty when the failure is local: `errno` only).
struct cfc_dbus_failure {
    char name[128];
    char message[256];
};

/// Calls `method` of `org.freedesktop.portal.Documents` at `/org/freedesktop/portal/documents` on the session bus
/// (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`), with no argument (`argument == NULL`) or one string
/// argument, without letting the bus start the portal, and waits at most `timeout_usec` for the reply. Copies the
/// byte array the reply starts with (`ay`, its trailing NUL dropped) into `buffer`.
///
/// Returns the number of bytes copied, or a negative errno: `-ENOSYS` when libsystemd cannot be loaded, `-ERANGE`
/// when `buffer` is too small, `-EBADMSG` when the reply does not start with `ay`, sd-bus's own otherwise (with the
/// error's name and message in `failure` when the bus or the portal answered with one).
///
/// Thread-safe: each call opens its own connection and closes it before returning.
long cfc_document_portal_call(
    const char *method, const char *argument, uint64_t timeout_usec, uint8_t *buffer, size_t capacity,
    struct cfc_dbus_failure *failure);

#endif
