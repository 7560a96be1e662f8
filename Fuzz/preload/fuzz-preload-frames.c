/* libFuzzer target: the preload library's frame reader (Languages/preload/src/frames.c, handle_frames_locked), the
 * code that reads what arrives on the daemon's socket inside someone else's program. Built with the library's own
 * sources (not the wrappers: interpose.c and names.c would wrap the fuzzer's calls) under AddressSanitizer and
 * UndefinedBehaviorSanitizer by Fuzz/run.sh (target preload-frames).
 *
 * The input is split at its first byte's offset into two reads, so a frame split across reads is exercised; the
 * handshake is still awaited when that byte is odd. After each read the reader must keep only an incomplete frame
 * (less than its length), settle only claims that wait, and leave the buffer's count within the buffer. */
#include "../../Languages/preload/src/client.h"

#include <stdlib.h>
#include <string.h>

static void check(int condition, const char *what) {
    if (!condition) {
        fprintf(stderr, "preload frame reader: %s\n", what);
        abort();
    }
}

/* Feeds `size` bytes as one read (received from the socket), as the reader in claims.c does. 0: the connection
 * ends (the library disconnects). */
static int feed(const uint8_t *data, size_t size) {
    size_t room = FCP_BUFFER_SIZE - received;
    if (size > room) size = room;
    memcpy(receive_buffer + received, data, size);
    received += size;
    int ok = handle_frames_locked();
    check(received <= FCP_BUFFER_SIZE, "the buffer's count beyond the buffer");
    if (ok && received >= 4) {
        uint32_t length = (uint32_t)receive_buffer[0] << 24 | (uint32_t)receive_buffer[1] << 16 |
                          (uint32_t)receive_buffer[2] << 8 | receive_buffer[3];
        check(received - 4 < length, "a complete frame left unread");
    }
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    received = 0;
    connection = -1; /* nothing is sent: the reader only reads */
    hello_awaited = size > 0 && (data[0] & 1);
    memset(pending, 0, sizeof pending);
    for (int index = 0; index < 4; index++) {
        pending[index].claim = (uint64_t)index + 1;
        pending[index].state = WAITING;
    }
    pending[4].claim = 0; /* a free slot: never settled */
    size_t split = size > 0 ? data[0] % (size + 1) : 0;
    if (feed(data, split)) feed(data + split, size - split);
    for (int index = 0; index < FCP_MAX_PENDING; index++) {
        int state = pending[index].state;
        check(state >= WAITING && state <= SILENT, "a claim settled to no state");
        if (pending[index].claim == 0) check(state == WAITING, "a free slot settled");
    }
    return 0;
}
