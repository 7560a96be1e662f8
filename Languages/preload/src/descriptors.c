/* Which descriptor holds which claim. One claim per open file (open file description): `dup`, `dup2`, `dup3` and
 * `fcntl(F_DUPFD...)` add descriptors to it, and the claim ends when the last of them is closed.
 *
 * Fixed sizes, no allocation: descriptors up to FCP_MAX_FDS and FCP_MAX_OPEN_FILES claimed open files at once;
 * beyond either, an open goes through uncoordinated (its claim is finished at once).
 *
 * The table is changed around the program's real call, never after it alone: another thread may close or reuse
 * a number between the two (issue 42). A close marks its entry `closing` before the real close and drops it after
 * (unless an open or a dup that got the number meanwhile dropped it already); a dup takes a hold on the source's
 * open file before the real call and places it on the new number after (or gives it back when the call failed), so
 * the source closed and its number reused in between changes nothing.
 *
 * A forked child forgets the table (fcp_fd_forget_all): its closes never end its parent's claims. close_range and
 * closefrom end the claims of the numbers they close as close does. Descriptors the kernel closes at exit keep their
 * claims until the daemon sees the process's connection close, and releases them. */
#include "internal.h"

#include <string.h>

#define FCP_MAX_FDS 65536
#define FCP_MAX_OPEN_FILES 4096

struct open_file {
    uint64_t claim; /* 0: free; FCP_CLAIM_ENDED: in use, its claim ended early (fcp_fd_own_lock) */
    uint32_t descriptors;
};

#define FCP_CLAIM_ENDED UINT64_MAX

static uint16_t table[FCP_MAX_FDS]; /* 1 + index into files, or 0 */
/* How many times the table was forgotten (fcp_fd_forget_all): a hold taken before carries the count it was taken
 * under, and is nothing once the table was forgotten since (its open file's entry may belong to another claim). */
static uint32_t forgotten;
static uint8_t closing[FCP_MAX_FDS]; /* the entry's descriptor is being closed: dropped by whoever comes first */
static struct open_file files[FCP_MAX_OPEN_FILES];

int fcp_fd_has_claim(int fd) {
    return fd >= 0 && fd < FCP_MAX_FDS && __atomic_load_n(&table[fd], __ATOMIC_RELAXED) != 0;
}

/* Gives back one hold on the open file `slot` (1 + index); finishes its claim when it was the last. With fcp_lock
 * held. */
static void release_locked(uint16_t slot) {
    struct open_file *file = &files[slot - 1];
    if (--file->descriptors == 0) {
        uint64_t claim = file->claim;
        file->claim = 0;
        if (claim != FCP_CLAIM_ENDED) fcp_finish_locked(claim);
    }
}

/* Drops fd's hold on its open file. With fcp_lock held. */
static void drop_locked(int fd) {
    if (fd < 0 || fd >= FCP_MAX_FDS || table[fd] == 0) return;
    uint16_t slot = table[fd];
    __atomic_store_n(&table[fd], 0, __ATOMIC_RELAXED);
    closing[fd] = 0;
    release_locked(slot);
}

void fcp_fd_attach(int fd, uint64_t claim) {
    fcp_lock();
    if (fd < 0 || fd >= FCP_MAX_FDS) {
        fcp_finish_locked(claim);
        fcp_unlock();
        return;
    }
    drop_locked(fd); /* a stale entry: the descriptor was closed behind the library's back */
    for (int index = 0; index < FCP_MAX_OPEN_FILES; index++) {
        if (files[index].claim == 0) {
            files[index].claim = claim;
            files[index].descriptors = 1;
            __atomic_store_n(&table[fd], (uint16_t)(index + 1), __ATOMIC_RELAXED);
            fcp_unlock();
            return;
        }
    }
    fcp_finish_locked(claim);
    fcp_unlock();
}

int fcp_fd_closing(int fd) {
    if (fd < 0 || fd >= FCP_MAX_FDS) return 0;
    /* In a signal handler, with the lock not free at once, the close keeps the entry: the number's next open drops
     * it, as after close_range. */
    if (!fcp_lock_for(fcp_in_signal_handler())) return 0;
    int slot = table[fd];
    if (slot != 0) closing[fd] = 1;
    fcp_unlock();
    return slot;
}

void fcp_fd_closed(int fd, int slot) {
    if (slot == 0) return;
    fcp_lock();
    if (table[fd] == slot && closing[fd]) drop_locked(fd);
    fcp_unlock();
}

/* A hold as fcp_fd_hold returns it: the entry (1 + index, below 1 << 13) and the table's count of forgettings. */
#define FCP_HOLD_SLOT(hold) ((uint16_t)((hold) & 0x1FFF))
#define FCP_HOLD_COUNT(hold) ((uint32_t)(hold) >> 13)

/* The hold's entry, or 0 when the table was forgotten since it was taken. With fcp_lock held. */
static uint16_t held_slot_locked(int hold) {
    if (hold == 0 || FCP_HOLD_COUNT(hold) != (forgotten & 0x3FFFF)) return 0;
    return FCP_HOLD_SLOT(hold);
}

void fcp_fd_range_closing(unsigned int first, unsigned int last) {
    if (first >= FCP_MAX_FDS) return;
    unsigned int end = last < FCP_MAX_FDS - 1 ? last : FCP_MAX_FDS - 1;
    /* In a signal handler, with the lock not free at once, the entries stay: each number's next open drops its own. */
    if (!fcp_lock_for(fcp_in_signal_handler())) return;
    for (unsigned int fd = first; fd <= end; fd++) {
        if (table[fd] != 0) closing[fd] = 1;
    }
    fcp_unlock();
}

void fcp_fd_range_closed(unsigned int first, unsigned int last, int closed) {
    if (first >= FCP_MAX_FDS) return;
    unsigned int end = last < FCP_MAX_FDS - 1 ? last : FCP_MAX_FDS - 1;
    if (!fcp_lock_for(fcp_in_signal_handler())) return;
    for (unsigned int fd = first; fd <= end; fd++) {
        if (!closing[fd]) continue; /* not marked, or an open or a dup that got the number dropped it already */
        if (closed) {
            drop_locked((int)fd);
        } else {
            closing[fd] = 0;
        }
    }
    fcp_unlock();
}

int fcp_fd_hold(int fd) {
    if (fd < 0 || fd >= FCP_MAX_FDS) return 0;
    if (!fcp_lock_for(fcp_in_signal_handler())) return 0; /* the copy holds nothing; the source keeps its claim */
    int slot = table[fd];
    int hold = 0;
    if (slot != 0) {
        files[slot - 1].descriptors++;
        hold = slot | (int)((forgotten & 0x3FFFF) << 13);
    }
    fcp_unlock();
    return hold;
}

void fcp_fd_place(int to, int hold) {
    fcp_lock();
    if (to < 0 || to >= FCP_MAX_FDS) {
        uint16_t slot = held_slot_locked(hold);
        if (slot != 0) release_locked(slot);
    } else {
        drop_locked(to); /* what the number held before: closed by the call itself */
        /* Looked at after the drop, whose finish may have found the connection ended and forgotten the table: the
         * entry the hold names may then be another claim's (until stop 67 the copy ended that claim when closed). */
        uint16_t slot = held_slot_locked(hold);
        if (slot != 0) __atomic_store_n(&table[to], slot, __ATOMIC_RELAXED);
    }
    fcp_unlock();
}

void fcp_fd_unhold(int hold) {
    if (hold == 0) return;
    fcp_lock();
    uint16_t slot = held_slot_locked(hold);
    if (slot != 0) release_locked(slot);
    fcp_unlock();
}

void fcp_fd_own_lock(int fd) {
    if (fd < 0 || fd >= FCP_MAX_FDS) return;
    fcp_lock();
    int slot = table[fd];
    if (slot != 0 && files[slot - 1].claim != FCP_CLAIM_ENDED) {
        uint64_t claim = files[slot - 1].claim;
        files[slot - 1].claim = FCP_CLAIM_ENDED; /* still in use: its descriptors' closes finish nothing */
        fcp_finish_locked(claim);
    }
    fcp_unlock();
}

void fcp_fd_end_lease_claims(void) {
    for (int index = 0; index < FCP_MAX_OPEN_FILES; index++) {
        uint64_t claim = files[index].claim;
        if (claim != 0 && claim != FCP_CLAIM_ENDED && fcp_lease_claim_id(claim)) {
            fcp_lease_end_locked(claim);
            files[index].claim = FCP_CLAIM_ENDED;
        }
    }
}

void fcp_fd_forget_all(void) {
    forgotten++;
    memset(table, 0, sizeof table);
    memset(closing, 0, sizeof closing);
    memset(files, 0, sizeof files);
}
