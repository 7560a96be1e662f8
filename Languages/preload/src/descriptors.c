/* Which descriptor holds which claim. One claim per open file (open file description): `dup`, `dup2`, `dup3` and
 * `fcntl(F_DUPFD...)` add descriptors to it, and the claim ends when the last of them is closed.
 *
 * Fixed sizes, no allocation: descriptors up to FCP_MAX_FDS and FCP_MAX_OPEN_FILES claimed open files at once;
 * beyond either, an open goes through uncoordinated (its claim is finished at once).
 *
 * A forked child forgets the table (fcp_fd_forget_all): its closes never end its parent's claims. Descriptors a
 * program closes without close/fclose/dup2 (close_range, closefrom, the kernel at exit) keep their claims until
 * the process exits, when the daemon sees its connection close and releases them. */
#include "internal.h"

#include <string.h>

#define FCP_MAX_FDS 65536
#define FCP_MAX_OPEN_FILES 4096

struct open_file {
    uint64_t claim; /* 0: free */
    uint32_t descriptors;
};

static uint16_t table[FCP_MAX_FDS]; /* 1 + index into files, or 0 */
static struct open_file files[FCP_MAX_OPEN_FILES];

int fcp_fd_has_claim(int fd) {
    return fd >= 0 && fd < FCP_MAX_FDS && __atomic_load_n(&table[fd], __ATOMIC_RELAXED) != 0;
}

/* Drops fd's hold on its open file; finishes the claim when it was the last. With fcp_lock held. */
static void drop_locked(int fd) {
    if (fd < 0 || fd >= FCP_MAX_FDS || table[fd] == 0) return;
    struct open_file *file = &files[table[fd] - 1];
    __atomic_store_n(&table[fd], 0, __ATOMIC_RELAXED);
    if (--file->descriptors == 0) {
        uint64_t claim = file->claim;
        file->claim = 0;
        fcp_finish_locked(claim);
    }
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

uint64_t fcp_fd_detach(int fd) {
    uint64_t ending = 0;
    fcp_lock();
    if (fd >= 0 && fd < FCP_MAX_FDS && table[fd] != 0) {
        struct open_file *file = &files[table[fd] - 1];
        __atomic_store_n(&table[fd], 0, __ATOMIC_RELAXED);
        if (--file->descriptors == 0) {
            ending = file->claim;
            file->claim = 0;
        }
    }
    fcp_unlock();
    return ending;
}

void fcp_fd_duplicate(int from, int to) {
    if (to < 0 || to >= FCP_MAX_FDS || from == to) return;
    fcp_lock();
    drop_locked(to);
    if (from >= 0 && from < FCP_MAX_FDS && table[from] != 0) {
        files[table[from] - 1].descriptors++;
        __atomic_store_n(&table[to], table[from], __ATOMIC_RELAXED);
    }
    fcp_unlock();
}

void fcp_fd_forget_all(void) {
    memset(table, 0, sizeof table);
    memset(files, 0, sizeof files);
}
