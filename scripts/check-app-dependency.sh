#!/usr/bin/env bash
# Does what an app does: depends on this package by URL and version, builds, and coordinates a read.
#
#   scripts/check-app-dependency.sh
#
# A bare clone of this checkout's HEAD, tagged 1.0.0, stands for the published package; a tiny app package in a
# temporary folder depends on it with `.package(url: "file://…", from: "1.0.0")`, as an app would on the real URL.
# SwiftPM refuses, in such a dependency, what it accepts in a root package (`unsafeFlags` in a product's targets,
# for one), so this is the check that the shipped manifest stays usable. The app is built without our strict flags
# (as an app is), run against the filecoordd of this checkout's debug build on a private socket, and must print the
# file it read. Run by .ci/run; needs a commit (it clones HEAD, not the working tree).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo_root="$PWD"

if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="$PATH:/opt/swift/usr/bin"
fi

work="$(mktemp -d /tmp/fc-app-XXXXXX)"
daemon_lock="$work/run/socket.lock"
cleanup() {
    if [[ -f "$daemon_lock" ]]; then
        pid="$(tr -dc '0-9' < "$daemon_lock")"
        [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "==> A bare clone of $(git rev-parse --short HEAD), tagged 1.0.0"
git clone -q --bare "$repo_root" "$work/swift-file-coordination.git"
git -C "$work/swift-file-coordination.git" tag 1.0.0 HEAD

echo "==> An app that depends on it by URL and version"
mkdir -p "$work/app/Sources/App"
cat > "$work/app/Package.swift" <<MANIFEST
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "app",
    dependencies: [
        .package(url: "file://$work/swift-file-coordination.git", from: "1.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "App",
            dependencies: [.product(name: "FileCoordination", package: "swift-file-coordination")]
        ),
    ]
)
MANIFEST
cat > "$work/app/Sources/App/main.swift" <<'SOURCE'
import FileCoordination
import Foundation

let url = URL(fileURLWithPath: CommandLine.arguments[1])
var error: NSError?
var text = ""
NSFileCoordinator(filePresenter: nil).coordinate(readingItemAt: url, options: [], error: &error) { readURL in
    text = (try? String(contentsOf: readURL, encoding: .utf8)) ?? "(unreadable)"
}
if let error {
    print("coordinated read failed: \(error.localizedDescription)")
    exit(1)
}
print("coordinated read: \(text)")
SOURCE

swift build --package-path "$work/app"

echo "==> Running it against this checkout's filecoordd"
bin="$(swift build --show-bin-path)"
if [[ ! -x "$bin/filecoordd" ]]; then
    . scripts/build-flags.sh
    swift build "${fc_build_flags[@]}" --product filecoordd
fi
echo "hello from a tagged dependency" > "$work/document.txt"
output="$(FILECOORDD_SOCKET="$work/run/socket" FILECOORDD_PATH="$bin/filecoordd" \
    "$(swift build --package-path "$work/app" --show-bin-path)/App" "$work/document.txt")"
echo "$output"
if [[ "$output" != "coordinated read: hello from a tagged dependency" ]]; then
    echo "error: the app did not print what it read" >&2
    exit 1
fi
if [[ ! -f "$daemon_lock" ]]; then
    echo "error: the app coordinated without starting filecoordd" >&2
    exit 1
fi
# The library lives in the app's process: it writes nothing to the app's standard error, even when it has to
# coordinate in process for want of a daemon (it logs only through a Logger the app sets).
echo "==> Running it with no daemon to be had: the same answer, and nothing on its standard error"
errors="$work/app.stderr"
output="$(FILECOORDD_SOCKET="$work/none/socket" FILECOORDD_PATH="$work/no-such-filecoordd" \
    "$(swift build --package-path "$work/app" --show-bin-path)/App" "$work/document.txt" 2>"$errors")"
echo "$output"
if [[ "$output" != "coordinated read: hello from a tagged dependency" ]]; then
    echo "error: the app did not print what it read in process" >&2
    exit 1
fi
if [[ -s "$errors" ]]; then
    echo "error: the library wrote to the app's standard error:" >&2
    cat "$errors" >&2
    exit 1
fi
echo "app dependency: OK"
