import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

// Stop 68: a signal handler that jumps out of a call (siglongjmp: an alarm put around a blocking open, as older
// programs and interpreters with "unsafe" signals do) took the preload library's re-entry guard with it: the thread
// passed straight through, uncoordinated, from then on. Now the guard is never held across the program's real call,
// and the library's own wait for the daemon defers the program's handlers until the claim is decided, so that none
// can jump out of it; a signal without a handler still acts at once.

@Suite struct PreloadSignalJumpTests {
    /// A handler for SIGALRM that jumps back to `back`, set by `main` before the call it interrupts.
    static let jumpingAlarm = """
        #define _GNU_SOURCE
        #include <fcntl.h>
        #include <setjmp.h>
        #include <signal.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/time.h>
        #include <unistd.h>

        static sigjmp_buf back;
        static void on_alarm(int number) { (void)number; siglongjmp(back, 1); }

        static __attribute__((unused)) void alarm_in_100_ms(void) {
            struct sigaction action;
            memset(&action, 0, sizeof action);
            action.sa_handler = on_alarm;
            sigaction(SIGALRM, &action, NULL);
            struct itimerval timer = {{0, 0}, {0, 100000}};
            setitimer(ITIMER_REAL, &timer, NULL);
        }

        /* The test's programs start with signals blocked (the test process's mask): run again with none blocked, so
         * that the alarm is delivered and the library loads with an empty mask. */
        static void unblocked(char **argv) {
            if (getenv("UNBLOCKED")) return;
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
            setenv("UNBLOCKED", "1", 1);
            execv(argv[0], argv);
            _exit(5);
        }

        static int append(const char *file, const char *text) {
            int fd = open(file, O_WRONLY | O_APPEND);
            if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) return 3;
            close(fd);
            return 0;
        }

        """

    /// Whether SIGALRM is pending for `pid`, blocked (the library defers it while it waits for the daemon).
    static func alarmPending(_ pid: Int32) -> Bool {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let sigalrm: UInt64 = 1 << (UInt64(SIGALRM) - 1)
        return status.split(separator: "\n").contains { line in
            guard line.hasPrefix("ShdPnd:") || line.hasPrefix("SigPnd:") else { return false }
            let value = UInt64(line.split(separator: "\t").last ?? "", radix: 16) ?? 0
            return value & sigalrm != 0
        }
    }

    @Test("A jump out of a blocking open leaves the thread's later writes coordinated")
    func aJumpOutOfTheRealCallLeavesTheThreadCoordinated() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let fifo = env.path("nobody-reads")
            #expect(mkfifo(fifo, 0o600) == 0)
            let held = try env.file("held.txt", "")
            let reader = try await env.host("R")
            try reader.send("read \(held) hold")
            _ = try await reader.waitFor("holding read \(held)")
            // The open of a FIFO nobody reads blocks in the kernel, after its claim was granted, until the alarm's
            // handler jumps out of it. Before the fix the library's guard stayed set, and the write of `held` went
            // through at once, beside the reader's claim.
            let source =
                Self.jumpingAlarm + """
                    int main(int argc, char **argv) {
                        if (argc != 3) return 1;
                        unblocked(argv);
                        if (sigsetjmp(back, 1) == 0) {
                            alarm_in_100_ms();
                            open(argv[1], O_WRONLY);
                            return 2;
                        }
                        return append(argv[2], "after\\n");
                    }
                    """
            let program = try await env.compileC(source, named: "fifo-jump")
            let running = try env.startProgram([program, fifo, held])
            let pid = running.process.processIdentifier
            let listing = try await env.clientsListing(
                until: { $0.contains("preload:fifo-jump pid \(pid)") && $0.contains("(1 not granted)") },
                while: running
            )
            #expect(listing.contains("(1 not granted)"), "the write after the jump never asked: \(listing)")
            #expect(env.contents(held) == "", "the write went through while the reader held the file")
            try reader.send("release")
            _ = try await reader.waitFor("done read \(held)")
            #expect(try await running.waitForExit() == 0, "\(running.error)")
            #expect(env.contents(held) == "after\n")
        }
    }

    @Test("An alarm while an open waits for its claim runs when the claim is decided, and a jump from it loses nothing")
    func aHandlerWaitsForTheClaimAndItsJumpLeavesTheThreadCoordinated() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let first = try env.file("first.txt", "")
            let second = try env.file("second.txt", "")
            let one = try await env.host("R1")
            try one.send("read \(first) hold")
            _ = try await one.waitFor("holding read \(first)")
            let two = try await env.host("R2")
            try two.send("read \(second) hold")
            _ = try await two.waitFor("holding read \(second)")
            // The open of `first` waits for R1; the alarm comes meanwhile. Before the fix its handler ran inside the
            // library's wait and jumped out of it: the guard stayed set (and the wait's reader role and slot taken),
            // and the write of `second` went through at once beside R2's claim.
            let source =
                Self.jumpingAlarm + """
                    int main(int argc, char **argv) {
                        if (argc != 3) return 1;
                        unblocked(argv);
                        if (sigsetjmp(back, 1) == 0) {
                            alarm_in_100_ms();
                            append(argv[1], "first\\n");
                            return 2;
                        }
                        return append(argv[2], "second\\n");
                    }
                    """
            let program = try await env.compileC(source, named: "wait-jump")
            let running = try env.startProgram([program, first, second])
            let pid = running.process.processIdentifier
            try await eventually("SIGALRM pending in \(pid), or the program's end") {
                Self.alarmPending(pid) || !running.process.stillRuns
            }
            #expect(running.process.stillRuns, "the program ended: \(running.output)\(running.error)")
            #expect(env.contents(second) == "", "the write of second went through while R2 held it")
            // R1 lets go: the claim is granted, the handler runs before the real open and jumps; the write of
            // `second` then waits for R2.
            try one.send("release")
            _ = try await one.waitFor("done read \(first)")
            let listing = try await env.clientsListing(
                until: { $0.contains("preload:wait-jump pid \(pid)") && $0.contains("(1 not granted)") },
                while: running
            )
            #expect(listing.contains("(1 not granted)"), "the write of second never asked: \(listing)")
            #expect(env.contents(second) == "", "the write of second went through while R2 held it")
            try two.send("release")
            _ = try await two.waitFor("done read \(second)")
            #expect(try await running.waitForExit() == 0, "\(running.error)")
            #expect(env.contents(first) == "", "the jump came before the real open")
            #expect(env.contents(second) == "second\n")
        }
    }

    @Test("A signal without a handler ends a program whose open waits for its claim at once")
    func aSignalWithoutAHandlerActsDuringTheWait() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let held = try env.file("held.txt", "")
            let reader = try await env.host("R")
            try reader.send("read \(held) hold")
            _ = try await reader.waitFor("holding read \(held)")
            let source =
                Self.jumpingAlarm + """
                    int main(int argc, char **argv) {
                        if (argc != 2) return 1;
                        unblocked(argv);
                        return append(argv[1], "late\\n");
                    }
                    """
            let program = try await env.compileC(source, named: "terminated")
            let running = try env.startProgram([program, held])
            let pid = running.process.processIdentifier
            let listing = try await env.clientsListing(
                until: { $0.contains("preload:terminated pid \(pid)") && $0.contains("(1 not granted)") },
                while: running
            )
            #expect(listing.contains("(1 not granted)"), "\(listing)")
            kill(pid, SIGTERM)
            // Well within the claim's wait (30 s): the reader still holds the file.
            try await eventually(timeout: .seconds(5), "the program to end on SIGTERM") { !running.process.stillRuns }
            #expect(running.process.endedBySignal)
            #expect(env.contents(held) == "")
            try reader.send("release")
            _ = try await reader.waitFor("done read \(held)")
        }
    }
}
