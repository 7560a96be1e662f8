// Atomic operations on 64-bit words in memory shared with another process (the lease counters of clients without a
// thread, issue 42; docs/PROTOCOL.md section 10.1). Sequentially consistent, as the C preload library's side is:
// each side writes its word, then reads the other's, so at least one of them sees the other (the recall against a
// claim's start).
#ifndef CFCLINUX_ATOMICS_H
#define CFCLINUX_ATOMICS_H

#include <stdint.h>

static inline uint64_t cfc_atomic_load_u64(const uint64_t *word) { return __atomic_load_n(word, __ATOMIC_SEQ_CST); }

static inline void cfc_atomic_store_u64(uint64_t *word, uint64_t value) {
    __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
}

/// Sets `bits` in `*word`; returns the value before.
static inline uint64_t cfc_atomic_fetch_or_u64(uint64_t *word, uint64_t bits) {
    return __atomic_fetch_or(word, bits, __ATOMIC_SEQ_CST);
}

/// Replaces `*word` with `desired` if it is `expected`: 1 when it did, 0 when another value was there.
static inline int cfc_atomic_compare_exchange_u64(uint64_t *word, uint64_t expected, uint64_t desired) {
    return __atomic_compare_exchange_n(word, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

#endif
