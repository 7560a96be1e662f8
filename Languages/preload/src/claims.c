/* Claims: RequestClaim and the wait for its answer (the reader hands replies to their waiters), FinishClaim and
 * ItemMoved. */
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

static uint64_t next_claim = 1;

// MARK: Claims

/* Waits until the slot is answered, the connection ends or the deadline passes (WAITING), or the daemon's HelloReply
 * is late or did not come (SILENT: refused, or the connection ended before it). With the lock held; the reader drops
 * it while it polls. */
static int await_locked(int slot, struct timespec deadline) {
    while (1) {
        if (pending[slot].state != WAITING) return pending[slot].state;
        if (connection < 0) return hello_refused ? SILENT : GONE;
        struct timespec until = deadline;
        /* Only a thread that could read the HelloReply judges it late: a reader may hold it, unhandled yet. */
        if (hello_awaited && !reader_active) {
            if (!before(now(), hello_deadline)) return SILENT;
            if (before(hello_deadline, until)) until = hello_deadline;
        }
        if (!before(now(), deadline)) return WAITING;
        /* The program's handlers wait until the claim is decided (fcp_defer_signals); a signal without one is let
         * act at each slice's end. */
        fcp_defer_signals();
        fcp_deliver_default_signals();
        struct timespec slice = after(now(), FCP_WAIT_SLICE_MS);
        if (before(slice, until)) until = slice;
        if (reader_active) {
            pthread_cond_timedwait(&replied, &lock, &until);
            continue;
        }
        reader_active = 1;
        int fd = connection;
        uint64_t read_generation = generation;
        size_t room = sizeof receive_buffer - received;
        pthread_mutex_unlock(&lock);
        struct pollfd poller = {.fd = fd, .events = POLLIN};
        int ready = poll(&poller, 1, milliseconds_until(until));
        ssize_t count = 0;
        int error = 0;
        if (ready > 0) {
            count = recv(fd, receive_buffer + received, room, MSG_DONTWAIT);
            error = count < 0 ? errno : 0;
        }
        pthread_mutex_lock(&lock);
        reader_active = 0;
        if (close_after_read >= 0) {
            fcp_real.close(close_after_read);
            close_after_read = -1;
        }
        if (read_generation == generation && ready > 0) {
            if (count == 0 || (count < 0 && error != EAGAIN && error != EINTR) || room == 0) {
                disconnect_locked();
            } else if (count > 0) {
                received += (size_t)count;
                if (!handle_frames_locked()) disconnect_locked();
            }
        }
        pthread_cond_broadcast(&replied);
    }
}

/* Sends RequestClaim for `claim` (waiting in pending[slot]) and waits for its answer: the answer's state. */
static int request_locked(int slot, uint64_t claim, const struct fcp_item *items, size_t count, uint64_t maximum_hold_ms,
                          int in_handler) {
    Filecoord__V1__ClaimItem wire_items[2];
    Filecoord__V1__ClaimItem *item_pointers[2];
    Filecoord__V1__FileIdentity identities[2];
    for (size_t index = 0; index < count; index++) {
        Filecoord__V1__ClaimItem initial = FILECOORD__V1__CLAIM_ITEM__INIT;
        wire_items[index] = initial;
        wire_items[index].path.data = (uint8_t *)items[index].path;
        wire_items[index].path.len = strlen(items[index].path);
        wire_items[index].write = items[index].write;
        wire_items[index].options = items[index].options;
        wire_items[index].has_other_names = items[index].other_names;
        if (items[index].has_identity) {
            Filecoord__V1__FileIdentity identity = FILECOORD__V1__FILE_IDENTITY__INIT;
            identity.device = items[index].device;
            identity.inode = items[index].inode;
            identities[index] = identity;
            wire_items[index].identity = &identities[index];
        }
        item_pointers[index] = &wire_items[index];
    }
    Filecoord__V1__RequestClaim request = FILECOORD__V1__REQUEST_CLAIM__INIT;
    request.claim_id = claim;
    request.coordinator_id = 1;
    request.purpose = purpose;
    request.n_items = count;
    request.items = item_pointers;
    request.timeout_milliseconds = fcp_settings.timeout_ms;
    request.maximum_hold_milliseconds = maximum_hold_ms; /* 0 is not sent: no limit */
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_REQUEST_CLAIM;
    frame.request_claim = &request;

    int state = GONE;
    if (send_frame_locked(&frame)) {
        /* The daemon answers TIMED_OUT after timeout_ms; a little longer here for a daemon that does not answer. */
        uint64_t wait = in_handler ? FCP_SIGNAL_WAIT_MS : fcp_settings.timeout_ms + 2000;
        state = await_locked(slot, after(now(), wait));
        if (state == SILENT) {
            daemon_silent_locked(); /* no HelloReply: nothing was granted, and this daemon is not asked for a while */
        } else if (state == WAITING && in_handler) {
            fcp_finish_locked(claim); /* cancelled: the handler's call goes through */
        } else if (state == WAITING) {
            /* Not even TIMED_OUT: the daemon is stopped or hung. Abandoned (before the grant a finish counts as a
             * cancel), and the daemon is not asked again for a while: each later call would wait as long. */
            fcp_finish_locked(claim);
            daemon_silent_locked();
        }
    } else if (hello_refused) {
        daemon_silent_locked(); /* the daemon closed before its HelloReply, found by this send: refused */
    } else {
        state = NOT_SENT; /* the connection had ended: no daemon saw this claim */
    }
    return state;
}

uint64_t fcp_claim(const struct fcp_item *asked, size_t count, uint64_t maximum_hold_ms) {
    if (__atomic_load_n(&fcp_settings.disabled, __ATOMIC_RELAXED) || count == 0 || count > 2) return 0;
    if (!fcp_same_process()) return 0; /* a vfork child shares the parent's memory and connection */
    /* The file each item names, by identity (ClaimItem.identity: the daemon meets the claims of its other names, issue
     * 26), and whether it has other names (hard links), which a lease never decides (docs/SEMANTICS.md §13 rule 7):
     * one lstat, for both. */
    struct fcp_item items[2];
    int saved = errno;
    for (size_t index = 0; index < count; index++) {
        items[index] = asked[index];
        struct stat status;
        items[index].has_identity = lstat(items[index].path, &status) == 0 && !S_ISDIR(status.st_mode);
        items[index].other_names = items[index].has_identity && status.st_nlink > 1;
        items[index].device = items[index].has_identity ? (uint64_t)status.st_dev : 0;
        items[index].inode = items[index].has_identity ? (uint64_t)status.st_ino : 0;
    }
    errno = saved;
    int in_handler = fcp_in_signal_handler();
    if (!fcp_lock_for(in_handler)) return 0;
    if (in_handler ? connection < 0 : !connect_locked()) {
        fcp_unlock();
        return 0;
    }
    /* Inside a lease of ours: decided here, no round trip (leases.c). */
    uint64_t leased = fcp_lease_claim_locked(items, count, 0);
    if (leased) {
        fcp_unlock();
        return leased;
    }
    /* The lease check read the connection's end (a daemon that crashed or restarted): the claim goes to whichever
     * daemon answers now. */
    if (connection < 0 && (in_handler || !connect_locked())) {
        fcp_unlock();
        return 0;
    }
    int slot = -1;
    for (int index = 0; index < FCP_MAX_PENDING; index++) {
        if (pending[index].claim == 0) {
            slot = index;
            break;
        }
    }
    if (slot < 0) {
        fcp_unlock();
        return 0;
    }
    uint64_t claim = 0;
    int state = GONE;
    /* A claim the daemon hands back (ClaimInsideLease: a lease of ours was granted meanwhile) is decided in that
     * lease, or, recalled by then, asked for again; one that could not be sent because the connection had ended (the
     * daemon crashed or restarted; no daemon saw it, so none holds it for us) is asked once of whichever daemon
     * answers now. At most three requests. */
    int reconnected = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        claim = next_claim++;
        pending[slot].claim = claim;
        pending[slot].state = WAITING;
        state = request_locked(slot, claim, items, count, maximum_hold_ms, in_handler);
        if (state == NOT_SENT && !reconnected && !in_handler) {
            reconnected = 1;
            retry_after.tv_sec = 0;
            retry_after.tv_nsec = 0;
            if (!connect_locked()) break;
            continue;
        }
        if (state != INSIDE_LEASE) break;
        leased = fcp_lease_claim_locked(items, count, pending[slot].lease);
        if (leased) {
            pending[slot].claim = 0;
            fcp_unlock();
            return leased;
        }
        state = GONE;
    }
    if (state == NOT_SENT) state = GONE;
    pending[slot].claim = 0;
    fcp_unlock();
    return state == GRANTED ? claim : 0;
}

void fcp_finish_locked(uint64_t claim) {
    if (fcp_lease_claim_id(claim)) {
        fcp_lease_end_locked(claim);
        return;
    }
    if (claim == 0 || connection < 0) return;
    Filecoord__V1__FinishClaim finish = FILECOORD__V1__FINISH_CLAIM__INIT;
    finish.claim_id = claim;
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_FINISH_CLAIM;
    frame.finish_claim = &finish;
    send_frame_locked(&frame);
}

void fcp_finish(uint64_t claim) {
    if (claim == 0 || !fcp_same_process()) return;
    fcp_lock();
    fcp_finish_locked(claim);
    fcp_unlock();
}

void fcp_moved(uint64_t claim, const char *from, const char *to) {
    /* A move inside a lease is told nobody: nobody presents there (docs/SEMANTICS.md §13 rule 6). */
    if (claim == 0 || fcp_lease_claim_id(claim) || !fcp_same_process()) return;
    Filecoord__V1__ItemMoved moved = FILECOORD__V1__ITEM_MOVED__INIT;
    moved.claim_id = claim;
    moved.from.data = (uint8_t *)from;
    moved.from.len = strlen(from);
    moved.to.data = (uint8_t *)to;
    moved.to.len = strlen(to);
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_ITEM_MOVED;
    frame.item_moved = &moved;
    fcp_lock();
    send_frame_locked(&frame);
    fcp_unlock();
}
