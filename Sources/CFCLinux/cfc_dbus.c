// The document portal through sd-bus, loaded at run time (cfc_dbus.h). sd-bus's ABI is stable (libsystemd.so.0);
// the few declarations needed are written here, so that no libsystemd development package is needed to build.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cfc_dbus.h"

typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;
typedef struct {
    const char *name;
    const char *message;
    int need_free;
} sd_bus_error;

static struct {
    int (*open_user)(sd_bus **);
    sd_bus *(*flush_close_unref)(sd_bus *);
    int (*new_method_call)(sd_bus *, sd_bus_message **, const char *, const char *, const char *, const char *);
    int (*append)(sd_bus_message *, const char *, ...);
    int (*set_auto_start)(sd_bus_message *, int);
    int (*call)(sd_bus *, sd_bus_message *, uint64_t, sd_bus_error *, sd_bus_message **);
    int (*read_array)(sd_bus_message *, char, const void **, size_t *);
    sd_bus_message *(*message_unref)(sd_bus_message *);
    void (*error_free)(sd_bus_error *);
    int loaded;
} sdbus;

static pthread_once_t sdbus_once = PTHREAD_ONCE_INIT;

static void sdbus_load(void) {
    void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return;
    // The casts go through void * as POSIX allows for dlsym's result.
    *(void **)&sdbus.open_user = dlsym(library, "sd_bus_open_user");
    *(void **)&sdbus.flush_close_unref = dlsym(library, "sd_bus_flush_close_unref");
    *(void **)&sdbus.new_method_call = dlsym(library, "sd_bus_message_new_method_call");
    *(void **)&sdbus.append = dlsym(library, "sd_bus_message_append");
    *(void **)&sdbus.set_auto_start = dlsym(library, "sd_bus_message_set_auto_start");
    *(void **)&sdbus.call = dlsym(library, "sd_bus_call");
    *(void **)&sdbus.read_array = dlsym(library, "sd_bus_message_read_array");
    *(void **)&sdbus.message_unref = dlsym(library, "sd_bus_message_unref");
    *(void **)&sdbus.error_free = dlsym(library, "sd_bus_error_free");
    sdbus.loaded = sdbus.open_user && sdbus.flush_close_unref && sdbus.new_method_call && sdbus.append
        && sdbus.set_auto_start && sdbus.call && sdbus.read_array && sdbus.message_unref && sdbus.error_free;
    // The library stays loaded for the life of the process (its functions are kept above).
}

long cfc_document_portal_call(
    const char *method, const char *argument, uint64_t timeout_usec, uint8_t *buffer, size_t capacity,
    struct cfc_dbus_failure *failure) {
    int saved = errno;
    failure->name[0] = 0;
    failure->message[0] = 0;
    pthread_once(&sdbus_once, sdbus_load);
    if (!sdbus.loaded) {
        errno = saved;
        return -ENOSYS;
    }
    sd_bus *bus = NULL;
    sd_bus_message *request = NULL, *reply = NULL;
    sd_bus_error error = {NULL, NULL, 0};
    long result = sdbus.open_user(&bus);
    if (result >= 0) {
        result = sdbus.new_method_call(
            bus, &request, "org.freedesktop.portal.Documents", "/org/freedesktop/portal/documents",
            "org.freedesktop.portal.Documents", method);
    }
    if (result >= 0 && argument != NULL) result = sdbus.append(request, "s", argument);
    if (result >= 0) result = sdbus.set_auto_start(request, 0);
    if (result >= 0) result = sdbus.call(bus, request, timeout_usec, &error, &reply);
    if (result < 0 && error.name != NULL) {
        snprintf(failure->name, sizeof failure->name, "%s", error.name);
        snprintf(failure->message, sizeof failure->message, "%s", error.message ? error.message : "");
    }
    if (result >= 0) {
        const void *bytes = NULL;
        size_t size = 0;
        result = sdbus.read_array(reply, 'y', &bytes, &size);
        if (result > 0) {
            if (size > 0 && ((const uint8_t *)bytes)[size - 1] == 0) size -= 1;
            if (size > capacity) {
                result = -ERANGE;
            } else {
                if (size > 0) memcpy(buffer, bytes, size);
                result = (long)size;
            }
        } else if (result == 0) {
            result = -EBADMSG;
        }
    }
    if (reply) sdbus.message_unref(reply);
    if (request) sdbus.message_unref(request);
    sdbus.error_free(&error);
    if (bus) sdbus.flush_close_unref(bus);
    errno = saved;
    return result;
}
