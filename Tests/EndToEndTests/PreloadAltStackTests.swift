import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

// Stop 68: the preload library's paths take about 26 KB of stack (paths of PATH_MAX bytes, a few at once). A signal
// handler on an alternate signal stack of 8 to 24 KB (a crash handler writing its report, the usual size of such a
// stack) that opened, renamed or removed a file overflowed it under the library, and the program died of a SIGSEGV
// it never had without it. Now such a call goes through uncoordinated at once when the stack has less than 40 KB left.

@Suite struct PreloadAltStackTests {
    @Test("A handler on a small alternate signal stack opens, renames and removes files as it does without the library")
    func aHandlerOnASmallAlternateStackRunsAsWithoutTheLibrary() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let report = try env.file("report.txt", "")
            let old = try env.file("old.txt", "old\n")
            let gone = try env.file("gone.txt", "gone\n")
            // The stack is mapped with an inaccessible page below it, so that an overflow faults at once instead of
            // writing over whatever lies below.
            let source = """
                #define _GNU_SOURCE
                #include <fcntl.h>
                #include <signal.h>
                #include <stdio.h>
                #include <stdlib.h>
                #include <string.h>
                #include <sys/mman.h>
                #include <unistd.h>

                static char **arguments;

                static void on_usr1(int number) {
                    (void)number;
                    int fd = open(arguments[1], O_WRONLY | O_APPEND);
                    if (fd < 0 || write(fd, "handler\\n", 8) != 8) _exit(4);
                    close(fd);
                    if (rename(arguments[2], arguments[3]) != 0) _exit(5);
                    if (unlink(arguments[4]) != 0) _exit(6);
                }

                int main(int argc, char **argv) {
                    if (argc != 6) return 1;
                    if (!getenv("UNBLOCKED")) { /* the test's programs start with signals blocked */
                        sigset_t none;
                        sigemptyset(&none);
                        sigprocmask(SIG_SETMASK, &none, NULL);
                        setenv("UNBLOCKED", "1", 1);
                        execv(argv[0], argv);
                        return 7;
                    }
                    arguments = argv;
                    size_t size = strtoul(argv[5], NULL, 10), page = 4096;
                    char *area = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                    if (area == MAP_FAILED || mprotect(area, page, PROT_NONE) != 0) return 2;
                    stack_t stack = {.ss_sp = area + page, .ss_size = size, .ss_flags = 0};
                    if (sigaltstack(&stack, NULL) != 0) return 3;
                    struct sigaction action;
                    memset(&action, 0, sizeof action);
                    action.sa_handler = on_usr1;
                    action.sa_flags = SA_ONSTACK;
                    sigaction(SIGUSR1, &action, NULL);
                    int fd = open(argv[1], O_WRONLY | O_APPEND); /* outside the handler: the library connects */
                    if (fd < 0) return 8;
                    close(fd);
                    raise(SIGUSR1);
                    printf("done\\n");
                    return 0;
                }
                """
            let program = try await env.compileC(source, named: "altstack")
            for size in [8192, 16384] {
                try writeText("", toFile: report)
                let moved = env.path("moved-\(size).txt")
                let result = try await env.runProgram([program, report, old, moved, gone, "\(size)"])
                #expect(result.status == 0, "a \(size)-byte stack: \(result.error)")
                #expect(result.output == "done\n", "a \(size)-byte stack: \(result.output)")
                #expect(env.contents(report) == "handler\n")
                #expect(FileManager.default.fileExists(atPath: moved) && !FileManager.default.fileExists(atPath: gone))
                try writeText("old\n", toFile: old)
                try writeText("gone\n", toFile: gone)
            }
        }
    }
}
