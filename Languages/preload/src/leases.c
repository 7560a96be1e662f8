/* Leases without a thread (issue 42; docs/PROTOCOL.md section 10.1, docs/SEMANTICS.md §13 and §15).
 *
 * The daemon may lend this process a folder it works in alone (a lease); claims inside it are then decided here, with
 * no round trip. A Swift client answers the daemon's recall from a thread; this library has none, so it keeps, for
 * each lease, a count of the claims it runs in it in a word of a file the daemon shares (Hello.lease_counters):
 *
 *   word = recalled (bit 63) | generation (bits 32-62) | count (bits 0-31)
 *
 * A claim starts by adding 1 and checking that the word's upper half is still the lease's generation (not recalled,
 * not handed to another lease); otherwise it takes the 1 back and goes to the daemon. It ends by taking 1 back, and
 * when that leaves a recalled word at 0 it sends LeaseCounterIdle so that the daemon lets the waiting claim in. The
 * daemon recalls by setting bit 63. Both sides write, then read, sequentially consistent: either the claim sees the
 * recall, or the daemon sees the claim counted. The daemon returns a lease whose count is 0 at once, and one still
 * counted past the program's timeout (the claim's longest hold, as for a claim of the daemon's).
 *
 * A claim inside a lease first polls the connection (POLLRDHUP, without waiting), so that a lost connection ends
 * every lease at once: a daemon that crashed marks nothing recalled, but its end is seen here, also behind unread
 * frames and while another thread is the reader; and it reads what came (a LeaseGranted). A grant this process cannot
 * keep (the table is full, the file cannot be mapped) is given back at once (LeaseReturned). When the connection ends,
 * the claims counted on it end too (fcp_fd_end_lease_claims), as the daemon's claims end with it.
 *
 * Threading: everything here runs with fcp_lock held. Mappings
 * stay mapped for the process's life (at most FCP_MAX_MAPPINGS: a claim's end may come after its connection is gone)
 * and are unmapped in a forked child, which holds none of its parent's claims. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define FCP_LEASE_CLAIM (1ull << 63)
#define RECALLED (1ull << 63)
#define COUNT_MASK 0xFFFFFFFFull
#define WORDS 512
#define FCP_MAX_LEASES 128
#define FCP_MAX_MAPPINGS 4

struct lease {
    uint64_t id;
    uint32_t slot;
    uint32_t generation;
    size_t length;
    char subtree[PATH_MAX];
};

static struct lease leases[FCP_MAX_LEASES];
static int lease_count;
static uint64_t *mappings[FCP_MAX_MAPPINGS];
static int mapping_count;
static int current = -1; /* the mapping of the present connection, or -1 */
static char current_file[PATH_MAX];

int fcp_lease_claim_id(uint64_t claim) { return (claim & FCP_LEASE_CLAIM) != 0; }

int fcp_leases_offered_locked(void) { return current >= 0 || mapping_count < FCP_MAX_MAPPINGS; }

void fcp_leases_connection_ended_locked(void) {
    lease_count = 0;
    current = -1;
    current_file[0] = '\0';
}

void fcp_leases_forked_child(void) {
    for (int index = 0; index < mapping_count; index++) munmap(mappings[index], WORDS * sizeof(uint64_t));
    mapping_count = 0;
    fcp_leases_connection_ended_locked();
}

/* Tells the daemon that a recalled word reached 0 (it then lets in what waits for the lease). */
static void send_idle_locked(uint32_t slot) {
    Filecoord__V1__LeaseCounterIdle idle = FILECOORD__V1__LEASE_COUNTER_IDLE__INIT;
    idle.slot = slot;
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_LEASE_COUNTER_IDLE;
    frame.lease_counter_idle = &idle;
    send_frame_locked(&frame);
}

/* Takes one claim's 1 back from `word` (the counter `slot` of the present connection's file when `tell`); a recalled
 * word left at 0 is the daemon's to know: it then lets in what waits for the lease. */
static void take_back_locked(uint64_t *word, uint32_t slot, int tell) {
    uint64_t after_word = __atomic_sub_fetch(word, 1, __ATOMIC_SEQ_CST);
    if (tell && (after_word & RECALLED) && (after_word & COUNT_MASK) == 0) send_idle_locked(slot);
}

/* Maps the daemon's counter file: a regular file of this user, in the daemon's folder, large enough. */
static int map_counters(const char *path) {
    if (mapping_count >= FCP_MAX_MAPPINGS) return 0;
    static const char folder[] = "/lease-counters/";
    size_t base = fcp_settings.runtime_dir_len;
    if (base == 0 || strncmp(path, fcp_settings.runtime_dir, base) != 0 ||
        strncmp(path + base, folder, sizeof folder - 1) != 0 || strchr(path + base + sizeof folder - 1, '/'))
        return 0;
    int fd;
    do {
        fd = fcp_real.open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return 0;
    struct stat status;
    void *mapped = MAP_FAILED;
    if (fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_uid == geteuid() &&
        status.st_size >= (off_t)(WORDS * sizeof(uint64_t))) {
        mapped = mmap(NULL, WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    fcp_real.close(fd);
    if (mapped == MAP_FAILED) return 0;
    mappings[mapping_count] = mapped;
    current = mapping_count++;
    memcpy(current_file, path, strlen(path) + 1);
    return 1;
}

/* Gives a lease back unused (LeaseReturned, declaring nothing): one this process cannot keep (its table is full, the
 * counter file cannot be mapped), so that the daemon neither holds the folder for it nor hands it claims to decide
 * there. Only for a lease in which no claim of ours was counted. */
static void give_back_locked(uint64_t id) {
    Filecoord__V1__LeaseReturned returned = FILECOORD__V1__LEASE_RETURNED__INIT;
    returned.lease_id = id;
    Filecoord__V1__Frame frame = FILECOORD__V1__FRAME__INIT;
    frame.payload_case = FILECOORD__V1__FRAME__PAYLOAD_LEASE_RETURNED;
    frame.lease_returned = &returned;
    send_frame_locked(&frame);
}

void fcp_lease_granted_locked(const Filecoord__V1__LeaseGranted *granted) {
    size_t file_length = granted->counters_file.len;
    size_t length = granted->subtree.len;
    char file[PATH_MAX];
    int usable = file_length > 0 && file_length < PATH_MAX && length > 0 && length < PATH_MAX &&
                 granted->counter_slot < WORDS && granted->counter_generation != 0 &&
                 granted->counter_generation <= 0x7FFFFFFF;
    if (usable) {
        memcpy(file, granted->counters_file.data, file_length);
        file[file_length] = '\0';
        usable = strlen(file) == file_length && memchr(granted->subtree.data, 0, length) == NULL;
    }
    if (usable && current < 0) usable = map_counters(file);
    if (usable) usable = strcmp(file, current_file) == 0; /* one file per connection */
    if (usable && lease_count == FCP_MAX_LEASES) {
        /* Room is made by forgetting leases already recalled. */
        for (int index = lease_count - 1; index >= 0; index--) {
            uint64_t word = __atomic_load_n(&mappings[current][leases[index].slot], __ATOMIC_SEQ_CST);
            if (word >> 32 != leases[index].generation) leases[index] = leases[--lease_count];
        }
        usable = lease_count < FCP_MAX_LEASES;
    }
    if (!usable) {
        give_back_locked(granted->lease_id);
        return;
    }
    struct lease *lease = &leases[lease_count++];
    lease->id = granted->lease_id;
    lease->slot = granted->counter_slot;
    lease->generation = granted->counter_generation;
    memcpy(lease->subtree, granted->subtree.data, length);
    lease->subtree[length] = '\0';
    lease->length = length;
}

/* Reads, without waiting, what the daemon sent: a lost connection ends every lease (POLLRDHUP: seen even behind
 * unread frames and while another thread is the reader); LeaseGranted adds one. */
static void read_pending_locked(void) {
    if (connection < 0) return;
    struct pollfd poller = {.fd = connection, .events = POLLIN | POLLRDHUP};
    if (poll(&poller, 1, 0) <= 0) return;
    if (poller.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
        disconnect_locked();
        /* Ended by the daemon (it stopped, crashed or restarted), not refused at connect: the claim at hand may ask
         * a new daemon at once. */
        retry_after.tv_sec = 0;
        retry_after.tv_nsec = 0;
        return;
    }
    if (reader_active) return; /* the reader hands what came to whom it is for */
    size_t room = FCP_BUFFER_SIZE - received;
    ssize_t count = room == 0 ? -1 : recv(connection, receive_buffer + received, room, MSG_DONTWAIT);
    if (count > 0) {
        received += (size_t)count;
        if (!handle_frames_locked()) disconnect_locked();
        pthread_cond_broadcast(&replied);
    } else if (count == 0 || room == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        disconnect_locked();
    }
}

static int inside(const char *path, const struct lease *lease) {
    return strncmp(path, lease->subtree, lease->length) == 0 &&
           (path[lease->length] == '\0' || path[lease->length] == '/' ||
            (lease->length == 1 && lease->subtree[0] == '/'));
}

uint64_t fcp_lease_claim_locked(const struct fcp_item *items, size_t count, uint64_t handed_back) {
    if (lease_count == 0) return 0;
    int saved = errno;
    read_pending_locked();
    errno = saved;
    if (lease_count == 0 || current < 0 || connection < 0) return 0;
    int found = -1;
    for (int index = 0; index < lease_count && found < 0; index++) {
        if (handed_back != 0) {
            /* The daemon judged the claim inside this lease by its own keys: its names folded below a case-insensitive
             * mount (Hello.daemon_folds_names), where the program's spelling need not be the folder's. */
            if (leases[index].id == handed_back) found = index;
            continue;
        }
        int all = 1;
        for (size_t item = 0; item < count && all; item++) all = inside(items[item].path, &leases[index]);
        if (all) found = index;
    }
    if (found < 0) return 0;
    /* A file with other names is never decided in a lease (docs/SEMANTICS.md §13 rule 7): its other names may lie
     * outside it. The daemon hands back no such claim (it was sent with has_other_names). */
    for (size_t item = 0; item < count; item++) {
        if (items[item].other_names) return 0;
    }
    struct lease *lease = &leases[found];
    uint64_t *word = &mappings[current][lease->slot];
    uint64_t before = __atomic_fetch_add(word, 1, __ATOMIC_SEQ_CST);
    if (before >> 32 == lease->generation) {
        return FCP_LEASE_CLAIM | (uint64_t)current << 40 | (uint64_t)lease->generation << 9 | lease->slot;
    }
    /* Recalled (or handed on): the 1 goes back. */
    take_back_locked(word, lease->slot, 1);
    leases[found] = leases[--lease_count];
    return 0;
}

void fcp_lease_end_locked(uint64_t claim) {
    int mapping = (int)((claim >> 40) & 3);
    uint32_t slot = (uint32_t)(claim & (WORDS - 1));
    uint64_t generation = (claim >> 9) & 0x7FFFFFFF;
    if (mapping >= mapping_count) return;
    uint64_t *word = &mappings[mapping][slot];
    /* The claim's 1 is in the word, which therefore still carries its generation; anything else (a doubled end) takes
     * nothing from another lease's count. */
    if (((__atomic_load_n(word, __ATOMIC_SEQ_CST) >> 32) & 0x7FFFFFFF) != generation) return;
    take_back_locked(word, slot, mapping == current && connection >= 0);
}
