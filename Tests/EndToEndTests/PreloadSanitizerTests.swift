import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

// Issue 42: the preload library built and run once with AddressSanitizer (and UndefinedBehaviorSanitizer) and once
// under valgrind's memcheck, each in a program whose threads open, duplicate, close, rename and remove files at once
// while the daemon coordinates them (a reader holds the first file, so the program waits for a real claim first),
// and which forks and vforks on the way. A report from either tool fails the test.

@Suite struct PreloadSanitizerTests {
    /// The program: thread 0 first writes `held` (waiting for the reader), then four threads each run a loop of write
    /// opens (truncating and appending), dup/dup2/fcntl(F_DUPFD_CLOEXEC) copies, closes in either order, fopen and
    /// fclose, a rename over a name and to a free one, an unlink, a fork whose child closes a claimed descriptor, and a
    /// vfork child that execs `true`. Prints "ok" and the number of files it wrote.
    static let source = """
        #define _GNU_SOURCE
        #include <fcntl.h>
        #include <pthread.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/wait.h>
        #include <unistd.h>

        static const char *folder;
        static int rounds;

        static void fail(const char *what) { perror(what); exit(2); }

        static void write_file(const char *path, int flags, const char *text) {
            int fd = open(path, O_WRONLY | flags, 0644);
            if (fd < 0) fail("open");
            if (write(fd, text, strlen(text)) < 0) fail("write");
            if (close(fd) != 0) fail("close");
        }

        static void *worker(void *argument) {
            int number = (int)(long)argument;
            char path[4096], other[4096], moved[4096];
            for (int round = 0; round < rounds; round++) {
                snprintf(path, sizeof path, "%s/w%d-%d.txt", folder, number, round % 5);
                snprintf(other, sizeof other, "%s/w%d-other.txt", folder, number);
                snprintf(moved, sizeof moved, "%s/w%d-moved-%d.txt", folder, number, round);
                write_file(path, O_CREAT | O_TRUNC, "first\\n");
                write_file(path, O_APPEND, "more\\n");
                int fd = open(path, O_RDWR);
                if (fd < 0) fail("open rdwr");
                int copy = dup(fd);
                int high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
                if (copy < 0 || high < 0) fail("dup");
                if (round % 2) { close(fd); close(copy); } else { close(copy); close(fd); }
                int again = open(path, O_WRONLY);
                if (again < 0 || dup2(again, high) < 0) fail("dup2");
                close(again);
                close(high);
                FILE *stream = fopen(path, "a");
                if (!stream) fail("fopen");
                fputs("stream\\n", stream);
                if (fclose(stream) != 0) fail("fclose");
                write_file(other, O_CREAT | O_TRUNC, "other\\n");
                if (rename(other, path) != 0) fail("rename over");
                if (rename(path, moved) != 0) fail("rename free");
                if (unlink(moved) != 0) fail("unlink");
                if (round % 10 == 0) {
                    int held = open(folder, O_RDONLY | O_DIRECTORY);
                    int claimed = open(moved, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                    pid_t child = fork();
                    if (child == 0) { close(claimed); _exit(0); }
                    if (child < 0 || waitpid(child, NULL, 0) != child) fail("fork");
                    pid_t light = vfork();
                    if (light == 0) { execl("/bin/true", "true", (char *)NULL); _exit(127); }
                    if (light < 0 || waitpid(light, NULL, 0) != light) fail("vfork");
                    close(claimed);
                    close(held);
                    unlink(moved);
                }
            }
            return NULL;
        }

        int main(int argc, char **argv) {
            folder = argv[1];
            rounds = atoi(argv[3]);
            write_file(argv[2], O_APPEND, "after the reader\\n");
            pthread_t threads[4];
            for (long index = 0; index < 4; index++) pthread_create(&threads[index], NULL, worker, (void *)index);
            for (int index = 0; index < 4; index++) pthread_join(threads[index], NULL);
            printf("ok %d\\n", 4 * rounds);
            return 0;
        }
        """

    /// Runs the program under `wrapper` with `library` preloaded while a reader holds the first file; returns what it
    /// wrote to standard error (each tool's report) after checking that it waited for the reader and ended well.
    static func runStress(
        in env: TestEnvironment,
        library: String,
        wrapper: [String],
        environment: [String: String],
        rounds: Int
    ) async throws -> String {
        _ = try await env.startDaemon()
        let held = try env.file("held.txt", "")
        let folder = env.path("files")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let program = try await env.compileC(source, named: "stress", flags: ["-g"])
        let reader = try await env.host("R")
        try reader.send("read \(held) hold")
        _ = try await reader.waitFor("holding read \(held)")
        var variables = environment
        variables["LD_PRELOAD"] = library
        let running = try env.startProgram(
            wrapper + [program, folder, held, String(rounds)],
            preloaded: false,
            environment: variables
        )
        // Its first write waits for the reader: fcdump shows the program with a claim.
        let listing = try await env.clientsListing(
            until: { $0.contains("1 claims (through libfilecoord-preload)") },
            while: running,
            timeout: .seconds(60)
        )
        #expect(listing.contains("1 claims (through libfilecoord-preload)"), "\(listing) \(running.error)")
        #expect(env.contents(held) == "", "the write went through while the reader held the file")
        try reader.send("release")
        _ = try await reader.waitFor("done read \(held)")
        let status = try await running.waitForExit(timeout: .seconds(300))
        #expect(status == 0, "status \(status): \(running.error)")
        #expect(running.output.hasPrefix("ok \(4 * rounds)"), "\(running.output) \(running.error)")
        #expect(env.contents(held) == "after the reader\n")
        return running.error
    }

    @Test("The preload under AddressSanitizer and UBSan: threads, dups, renames, fork and vfork, with no report")
    func addressSanitizer() async throws {
        try await TestEnvironment.run { env in
            let build = env.path("asan-build")
            try await env.setUp([
                "make", "-s", "-C", PreloadLibrary.repositoryRoot + "/Languages/preload", "BUILD=\(build)",
                "CFLAGS=-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined",
            ])
            let runtime = try await env.runProgram(["gcc", "-print-file-name=libasan.so"], preloaded: false)
            let libasan = runtime.output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(libasan.hasPrefix("/"), "gcc found no libasan.so: \(runtime.output)")
            let report = try await Self.runStress(
                in: env,
                library: "\(libasan):\(build)/libfilecoord-preload.so",
                wrapper: [],
                environment: [
                    "ASAN_OPTIONS": "halt_on_error=1:detect_leaks=0:abort_on_error=0:exitcode=90",
                    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=91",
                ],
                rounds: 200
            )
            #expect(!report.contains("AddressSanitizer") && !report.contains("runtime error"), "\(report)")
        }
    }

    @Test("The preload under valgrind's memcheck: the same program, no error")
    func valgrindMemcheck() async throws {
        try await TestEnvironment.run { env in
            let report = try await Self.runStress(
                in: env,
                library: try PreloadLibrary.path(),
                wrapper: ["valgrind", "--error-exitcode=92", "--trace-children=no", "--track-fds=no", "-q"],
                environment: [:],
                rounds: 40
            )
            #expect(!report.contains("=="), "valgrind reported: \(report)")
        }
    }
}
