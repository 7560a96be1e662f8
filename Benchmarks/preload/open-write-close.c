/* Benchmarks/preload-overhead.sh's probe: the cost of one open-write-close of an existing file (a write-intent open,
 * which the preload library turns into a claim), and of one bare Unix-socket round trip between two processes (the
 * least a claim can cost). Prints `open-write-close NS` or `round-trip NS`, nanoseconds per operation.
 *
 *   open-write-close PATH COUNT
 *   round-trip COUNT */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "open-write-close") == 0) {
        long count = atol(argv[3]);
        double start = seconds();
        for (long i = 0; i < count; i++) {
            int fd = open(argv[2], O_WRONLY | O_TRUNC);
            if (fd < 0 || write(fd, "x", 1) != 1 || close(fd) != 0) return 1;
        }
        printf("open-write-close %.0f\n", (seconds() - start) * 1e9 / (double)count);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "round-trip") == 0) {
        long count = atol(argv[2]);
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
        pid_t child = fork();
        char byte = 0;
        if (child == 0) {
            close(pair[0]);
            while (read(pair[1], &byte, 1) == 1 && write(pair[1], &byte, 1) == 1) {}
            _exit(0);
        }
        close(pair[1]);
        double start = seconds();
        for (long i = 0; i < count; i++) {
            if (write(pair[0], &byte, 1) != 1 || read(pair[0], &byte, 1) != 1) return 1;
        }
        printf("round-trip %.0f\n", (seconds() - start) * 1e9 / (double)count);
        close(pair[0]);
        waitpid(child, NULL, 0);
        return 0;
    }
    fprintf(stderr, "usage: %s open-write-close PATH COUNT | round-trip COUNT\n", argv[0]);
    return 2;
}
