/* The client's parts (docs/PROTOCOL.md), one file per concern, and the state they share:
 *
 *   client.c      the state below, the settings read at load, the re-entry guard, the lock and fork
 *   connection.c  connecting to filecoordd (trust checks, the socket's address, Hello), disconnecting
 *   frames.c      frames on the wire: packing and writing them, reading and unpacking replies and HelloReply
 *   claims.c      RequestClaim and its wait, FinishClaim, ItemMoved
 *
 * Every name here is hidden: it is the library's own, never exported to the program it is loaded into. Guarded by
 * fcp_lock (the mutex `lock`) unless said otherwise. */
#ifndef FCP_CLIENT_H
#define FCP_CLIENT_H

#include "internal.h"

#include "../generated/filecoord.pb-c.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define FCP_HIDDEN __attribute__((visibility("hidden")))

FCP_HIDDEN extern pthread_mutex_t lock;
FCP_HIDDEN extern pthread_cond_t replied;

/* The connection: -1 when there is none. `generation` changes on every connect and disconnect, so that a reader
 * that polled a descriptor the program closed under it drops what it read. */
FCP_HIDDEN extern int connection;
FCP_HIDDEN extern uint64_t generation;
FCP_HIDDEN extern int reader_active;
FCP_HIDDEN extern int close_after_read;
FCP_HIDDEN extern struct timespec retry_after;
/* The HelloReply is not yet read: the Hello went out with the first claim behind it (no wait of its own, and none
 * with the lock held), and whoever waits for that claim's answer reads it. Past `hello_deadline` without it, the
 * daemon is taken as silent. */
FCP_HIDDEN extern int hello_awaited;
/* The connection ended while its HelloReply was awaited (refused, closed, a protocol error): the daemon is treated as
 * one that does not answer (daemon_silent_locked), not asked again for a while. Cleared at the next connect. */
FCP_HIDDEN extern int hello_refused;
FCP_HIDDEN extern struct timespec hello_deadline;
FCP_HIDDEN extern char purpose[256];
FCP_HIDDEN extern char client_name[256];

/* Replies awaited: one slot per thread waiting for a claim. */
/* INSIDE_LEASE: the daemon handed the claim back (ClaimInsideLease): it lies in a lease of ours granted meanwhile,
 * named in `lease` (the daemon's judgement, by its keys: a path spelled otherwise than the lease's folder, in a folder
 * the daemon folds, lies in it too). */
/* NOT_SENT: the request could not be sent, the connection having ended (not a refusal): no daemon saw it. */
enum { WAITING = 0, GRANTED, FAILED, GONE, TIMED_OUT, SILENT, INSIDE_LEASE, NOT_SENT };
#define FCP_MAX_PENDING 64
/* A wait for the daemon is cut in slices this long, at whose ends a pending signal without a handler acts. */
#define FCP_WAIT_SLICE_MS 50
struct fcp_pending {
    uint64_t claim; /* 0: free */
    int state;
    uint64_t lease; /* INSIDE_LEASE: the lease the daemon handed the claim back into */
};
FCP_HIDDEN extern struct fcp_pending pending[FCP_MAX_PENDING];

#define FCP_BUFFER_SIZE (256 * 1024)
FCP_HIDDEN extern uint8_t receive_buffer[FCP_BUFFER_SIZE];
FCP_HIDDEN extern size_t received;

/* connection.c */
/* Connects and sends Hello when there is no connection; returns at once, the HelloReply unread (hello_awaited). */
FCP_HIDDEN int connect_locked(void);
FCP_HIDDEN void disconnect_locked(void);
/* The daemon did not answer (its HelloReply, or a claim by the claim's own timeout and 2 s more): the connection is
 * closed, and the daemon behind this socket file is not asked again for FCP_SILENT_BACKOFF_MS, while the socket is
 * the same file (a new daemon makes a new one and is asked at once). Until then every call passes through at once,
 * as without a daemon. */
FCP_HIDDEN void daemon_silent_locked(void);
#define FCP_SILENT_BACKOFF_MS 60000
/* How long a HelloReply is awaited. */
#define FCP_HELLO_WAIT_MS 2000

/* leases.c: leases kept with counters (issue 42; docs/PROTOCOL.md section 10.1), with the lock held. */
/* Whether Hello may offer lease counters (a mapping is left for this connection). */
FCP_HIDDEN int fcp_leases_offered_locked(void);
FCP_HIDDEN void fcp_lease_granted_locked(const Filecoord__V1__LeaseGranted *granted);
/* A claim decided in a lease of ours (its id), or 0 when it must go to the daemon. `handed_back`: 0, the lease whose
 * folder holds every item's path; else the id of the lease the daemon handed the claim back into (ClaimInsideLease),
 * whatever the paths' spelling. */
FCP_HIDDEN uint64_t fcp_lease_claim_locked(const struct fcp_item *items, size_t count, uint64_t handed_back);
/* The connection ended: its leases with it (the mappings stay). */
FCP_HIDDEN void fcp_leases_connection_ended_locked(void);
/* In a forked child: no lease, no mapping of the parent's. */
FCP_HIDDEN void fcp_leases_forked_child(void);

/* frames.c */
FCP_HIDDEN int send_frame_locked(Filecoord__V1__Frame *frame);
FCP_HIDDEN int handle_frames_locked(void);

// MARK: Time

static inline struct timespec now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t;
}

static inline struct timespec after(struct timespec t, uint64_t milliseconds) {
    t.tv_sec += (time_t)(milliseconds / 1000);
    t.tv_nsec += (long)(milliseconds % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static inline int before(struct timespec a, struct timespec b) {
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

static inline int milliseconds_until(struct timespec deadline) {
    struct timespec t = now();
    if (!before(t, deadline)) return 0;
    int64_t ms = (int64_t)(deadline.tv_sec - t.tv_sec) * 1000 + (deadline.tv_nsec - t.tv_nsec) / 1000000 + 1;
    return ms > 60000 ? 60000 : (int)ms;
}

#endif
