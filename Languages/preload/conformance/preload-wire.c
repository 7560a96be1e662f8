/* The preload library's side of the wire conformance test (PreloadWireConformanceTests.swift): its own client code
 * (Languages/preload/src without the wrappers) makes three claims, reports a move and finishes claims against a
 * socket this program serves itself. The daemon's side is a file of frames the Swift code encoded: this program
 * writes them to the library's connection one by one, each after the Hello or RequestClaim it answers, and saves every
 * byte the library sent, for the Swift code to decode and compare with its own encoding of the same messages.
 *
 *   preload-wire REPLIES SENT COUNTERS   (FILECOORDD_SOCKET names the socket to serve, in a folder of mode 0700;
 *                                         COUNTERS is the lease counter file the Swift side's LeaseGranted names)
 *
 * Prints what each claim returned: "claims 1 0 3" when the library read the replies as the Swift code meant them;
 * then "leased 1 1 idle 1" when a fourth claim, answered by LeaseGranted and ClaimInsideLease, and a fifth in the same
 * folder were decided in the lease, and the word, recalled here as the daemon recalls, came back to 0 at their ends
 * (the library then sends LeaseCounterIdle). */
#include "../src/client.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int listener;
static const char *replies_path, *sent_path, *counters_path;

static void fail(const char *what) {
    perror(what);
    exit(2);
}

/* The next frame of `buffer` (length prefix and body) from `*at`, or 0 bytes when none is complete. */
static size_t next_frame(const uint8_t *buffer, size_t size, size_t at) {
    if (size - at < 4) return 0;
    size_t length = (size_t)buffer[at] << 24 | (size_t)buffer[at + 1] << 16 | (size_t)buffer[at + 2] << 8 | buffer[at + 3];
    return size - at - 4 < length ? 0 : 4 + length;
}

/* The daemon's side: accepts the library's connection and answers as a daemon does, in step: the next reply after
 * each Hello and RequestClaim the library sends; saves every byte it sends until it closes the connection. */
static void *serve(void *unused) {
    (void)unused;
    int peer = accept(listener, NULL, NULL);
    if (peer < 0) fail("accept");
    FILE *file = fopen(replies_path, "rb");
    if (!file) fail("replies");
    static uint8_t replies[1 << 16], received[1 << 16];
    size_t replies_size = fread(replies, 1, sizeof replies, file), replies_at = 0;
    fclose(file);
    FILE *sent = fopen(sent_path, "wb");
    if (!sent) fail("sent");
    size_t size = 0, at = 0;
    ssize_t got;
    while ((got = read(peer, received + size, sizeof received - size)) > 0) {
        fwrite(received + size, 1, (size_t)got, sent);
        size += (size_t)got;
        size_t frame;
        while ((frame = next_frame(received, size, at)) > 0) {
            Filecoord__V1__Frame *unpacked = filecoord__v1__frame__unpack(NULL, frame - 4, received + at + 4);
            if (!unpacked) fail("a frame the library sent does not decode");
            int answered = unpacked->payload_case == FILECOORD__V1__FRAME__PAYLOAD_HELLO ||
                           unpacked->payload_case == FILECOORD__V1__FRAME__PAYLOAD_REQUEST_CLAIM;
            filecoord__v1__frame__free_unpacked(unpacked, NULL);
            at += frame;
            /* A LeaseGranted goes out with the reply after it (the daemon's grant, then its ClaimInsideLease). */
            int more = answered;
            while (more) {
                size_t reply = next_frame(replies, replies_size, replies_at);
                if (reply == 0) break;
                Filecoord__V1__Frame *out = filecoord__v1__frame__unpack(NULL, reply - 4, replies + replies_at + 4);
                more = out && out->payload_case == FILECOORD__V1__FRAME__PAYLOAD_LEASE_GRANTED;
                if (out) filecoord__v1__frame__free_unpacked(out, NULL);
                if (write(peer, replies + replies_at, reply) != (ssize_t)reply) fail("write reply");
                replies_at += reply;
            }
        }
    }
    fclose(sent);
    close(peer);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) return 64;
    replies_path = argv[1];
    sent_path = argv[2];
    counters_path = argv[3];
    listener = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(fcp_settings.socket_path) >= sizeof address.sun_path) return 65;
    memcpy(address.sun_path, fcp_settings.socket_path, strlen(fcp_settings.socket_path) + 1);
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 4) != 0) {
        fail("listen");
    }
    pthread_t server;
    pthread_create(&server, NULL, serve, NULL);

    struct fcp_item merging = {.path = "/d/a.txt", .write = 1, .options = FCP_FOR_MERGING};
    uint64_t first = fcp_claim(&merging, 1, 5000);
    struct fcp_item two[2] = {{.path = "/d/b.txt", .write = 1, .options = FCP_FOR_MOVING},
                               {.path = "/d/c.txt", .write = 1}};
    uint64_t second = fcp_claim(two, 2, 0);
    fcp_moved(first, "/d/a.txt", "/d/e.txt");
    fcp_finish(first);
    struct fcp_item reading = {.path = "/d/\xc3\xa9t\xc3\xa9.txt"};
    uint64_t third = fcp_claim(&reading, 1, 0);
    fcp_finish(third);
    printf("claims %llu %llu %llu\n", (unsigned long long)first, (unsigned long long)second,
           (unsigned long long)third);

    /* The daemon's side of the counters: word 3 of the file, generation 5, as the Swift side's LeaseGranted says. */
    int fd = open(counters_path, O_RDWR);
    uint64_t *words = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (words == MAP_FAILED) fail("counters");
    close(fd);
    __atomic_store_n(&words[3], (uint64_t)5 << 32, __ATOMIC_SEQ_CST);
    struct fcp_item inside = {.path = "/d/f.txt", .write = 1};
    uint64_t fourth = fcp_claim(&inside, 1, 0); /* answered LeaseGranted, ClaimInsideLease: decided in the lease */
    struct fcp_item again = {.path = "/d/g.txt", .write = 1};
    uint64_t fifth = fcp_claim(&again, 1, 0); /* in the lease, no frame */
    uint64_t counted = __atomic_load_n(&words[3], __ATOMIC_SEQ_CST);
    __atomic_fetch_or(&words[3], (uint64_t)1 << 63, __ATOMIC_SEQ_CST); /* recalled, as the daemon does */
    fcp_finish(fourth);
    fcp_finish(fifth); /* the count is 0 again: LeaseCounterIdle */
    printf("leased %d %d idle %d\n", fourth >> 63 == 1, fifth >> 63 == 1,
           counted == ((uint64_t)5 << 32 | 2) && __atomic_load_n(&words[3], __ATOMIC_SEQ_CST) == ((uint64_t)1 << 63 | (uint64_t)5 << 32));
    fcp_lock();
    disconnect_locked();
    fcp_unlock();
    pthread_join(server, NULL);
    return 0;
}
