/* Frames on the wire (docs/PROTOCOL.md): a 4-byte big-endian length, then the protobuf-c body. No allocation:
 * frames are packed into a static buffer and unpacked with an arena allocator over a static buffer, both used with
 * the lock held (client.h). */
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

static uint8_t send_buffer[3 * PATH_MAX + 4096];
static uint8_t arena[FCP_BUFFER_SIZE * 2];
static size_t arena_used;

// MARK: Frames

static void *arena_alloc(void *data, size_t size) {
    (void)data;
    size = (size + 15) & ~(size_t)15;
    if (size > sizeof arena - arena_used) return NULL;
    void *block = arena + arena_used;
    arena_used += size;
    return block;
}

static void arena_free(void *data, void *pointer) {
    (void)data;
    (void)pointer;
}

static ProtobufCAllocator arena_allocator = {arena_alloc, arena_free, NULL};

/* Writes one frame: 4-byte big-endian length, then the body. With the lock held. */
int send_frame_locked(Filecoord__V1__Frame *frame) {
    if (connection < 0) return 0;
    size_t size = protobuf_c_message_get_packed_size(&frame->base);
    if (size == 0 || size + 4 > sizeof send_buffer) return 0;
    send_buffer[0] = (uint8_t)(size >> 24);
    send_buffer[1] = (uint8_t)(size >> 16);
    send_buffer[2] = (uint8_t)(size >> 8);
    send_buffer[3] = (uint8_t)size;
    protobuf_c_message_pack(&frame->base, send_buffer + 4);
    size_t total = size + 4, written = 0;
    while (written < total) {
        ssize_t count = send(connection, send_buffer + written, total - written, MSG_NOSIGNAL);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) {
            disconnect_locked();
            return 0;
        }
        written += (size_t)count;
    }
    return 1;
}

/* Hands a claim's answer to its waiter. Claim 0 is no claim (a free slot's id): an answer for it settles nothing
 * (found by the fuzzer, Fuzz/preload). */
static void settle(uint64_t claim, int state, uint64_t lease) {
    if (claim == 0) return;
    for (int index = 0; index < FCP_MAX_PENDING; index++) {
        if (pending[index].claim == claim && pending[index].state == WAITING) {
            pending[index].state = state;
            pending[index].lease = lease;
            return;
        }
    }
}

/* Handles every complete frame in receive_buffer. Returns 0 when the connection must end (a protocol error, a
 * frame too large for the buffer). With the lock held. */
int handle_frames_locked(void) {
    size_t at = 0;
    int ok = 1;
    while (received - at >= 4) {
        uint32_t length = (uint32_t)receive_buffer[at] << 24 | (uint32_t)receive_buffer[at + 1] << 16 |
                          (uint32_t)receive_buffer[at + 2] << 8 | receive_buffer[at + 3];
        if (length == 0 || length > FCP_BUFFER_SIZE - 4) {
            ok = 0;
            break;
        }
        if (received - at - 4 < length) break;
        arena_used = 0;
        Filecoord__V1__Frame *frame = filecoord__v1__frame__unpack(&arena_allocator, length, receive_buffer + at + 4);
        at += 4 + length;
        if (!frame) {
            ok = 0;
            break;
        }
        if (hello_awaited && frame->payload_case != FILECOORD__V1__FRAME__PAYLOAD_HELLO_REPLY) {
            ok = 0; /* the daemon answers Hello first, or refuses and closes */
            break;
        }
        switch (frame->payload_case) {
        case FILECOORD__V1__FRAME__PAYLOAD_HELLO_REPLY:
            hello_awaited = 0;
            retry_after.tv_sec = 0;
            retry_after.tv_nsec = 0;
            break;
        case FILECOORD__V1__FRAME__PAYLOAD_GRANTED:
            settle(frame->granted->claim_id, GRANTED, 0);
            break;
        case FILECOORD__V1__FRAME__PAYLOAD_CLAIM_FAILED:
            settle(frame->claim_failed->claim_id,
                   frame->claim_failed->kind == FILECOORD__V1__CLAIM_FAILED__FAILURE_KIND__FAILURE_KIND_TIMED_OUT
                       ? TIMED_OUT
                       : FAILED,
                   0);
            break;
        case FILECOORD__V1__FRAME__PAYLOAD_LEASE_GRANTED:
            fcp_lease_granted_locked(frame->lease_granted);
            break;
        case FILECOORD__V1__FRAME__PAYLOAD_CLAIM_INSIDE_LEASE:
            settle(frame->claim_inside_lease->claim_id, INSIDE_LEASE, frame->claim_inside_lease->lease_id);
            break;
        case FILECOORD__V1__FRAME__PAYLOAD_PROTOCOL_ERROR:
        case FILECOORD__V1__FRAME__PAYLOAD_REFUSED:
            ok = 0;
            break;
        default:
            break; /* no presenters, and recalls are read in the counters: nothing else is for this client */
        }
        if (!ok) break;
    }
    if (ok && at > 0) {
        memmove(receive_buffer, receive_buffer + at, received - at);
        received -= at;
    }
    return ok;
}
