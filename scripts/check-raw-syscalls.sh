#!/usr/bin/env bash
# Fails when code outside the syscall layer calls the C library itself (docs/ARCHITECTURE.md §8.2, "The rule, and
# CI's check"): every syscall of the package goes through Sources/FCSystem (C shims in Sources/CFCLinux).
# The Swift of Languages/ (libfilecoord's exports, Languages/c/FileCoordinationC) is checked too.
#
#   scripts/check-raw-syscalls.sh            checks Sources and Languages; prints each offending line; exits 1 if
#                                            there is one
#
# Two lists of names:
# - distinctive: names Swift code does not give its own methods, checked unqualified and qualified (`Glibc.rename`);
# - common: names Swift types also use for methods (`close`, `read`, `send`, ...), checked only when qualified with a
#   libc module (`Glibc.close(`), since an unqualified `close(` is as likely a method of ours.
# Reading the C library's `errno` counts too: only FCSystem does. Comments are not checked.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

distinctive='mkdir|mkdirat|rmdir|unlink|unlinkat|rename|renameat|symlink|readlink|chmod|fchmod|chown|fchown|lstat|fstat'
distinctive+='|statfs|fstatfs|flock|fcntl|ioctl|ftruncate|truncate|pread|pwrite|lseek|fsync|fdatasync|dup2|dup3|pipe2'
distinctive+='|socketpair|setsockopt|getsockopt|accept4|recvfrom|recvmsg|sendto|sendmsg|kill|fork|vfork|execve|execv'
distinctive+='|execvp|posix_spawn|posix_spawnp|waitpid|wait4|setsid|pthread_sigmask|sigprocmask|sigaction|signal|raise'
distinctive+='|usleep|nanosleep|opendir|readdir|closedir|getrlimit|setrlimit|prctl|inotify_init1?|inotify_add_watch'
distinctive+='|inotify_rm_watch|strerror|isatty|getpid|getppid|getuid|geteuid'
common='open|openat|creat|close|read|write|readv|writev|stat|socket|bind|listen|accept|connect|send|recv|shutdown|poll'
common+='|select|dup|pipe|sleep|mmap|munmap|access'
libc='(Glibc|Musl|Darwin|Bionic)'

# The C library's errno compared or wrapped (`errno == EINTR`, `Errno(rawValue: errno)`; `strerror(errno)` is caught
# by its name), not a property or label of that name (`self.errno = errno`, `errno: code`) nor the word in a message.
errno_use='(^|[^.[:alnum:]_])errno[[:space:]]*(==|!=)|rawValue:[[:space:]]*errno([^[:alnum:]_]|$)'
pattern="(^|[^.[:alnum:]_])($distinctive)[[:space:]]*\(|$libc\.($distinctive|$common)[[:space:]]*\(|$errno_use"

set +e
matches="$(grep -rnE --include='*.swift' "$pattern" Sources Languages \
    | grep -vE '^Sources/(FCSystem|CFCLinux)/' \
    | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//')"
set -e
if [[ -n "$matches" ]]; then
    echo "$matches"
    echo "error: raw C library calls outside Sources/FCSystem (lines above): add or use an FCSystem call" >&2
    exit 1
fi
echo "syscalls: every call goes through FCSystem"
