# Sourced by scripts/test.sh, scripts/run.sh and .ci/run: the compiler flags of every build of ours, in one place.
#
# The package manifest may hold nothing that SwiftPM refuses in a dependency fetched by URL (no `unsafeFlags`), so
# the strictness that has no manifest setting is passed here instead: apps that depend on the package by version
# build it without these flags, and every build of ours (the tests, CI, the demo) with them. One set of flags for
# all of them, so that `swift test` after `swift build` compiles nothing again.
# shellcheck disable=SC2034  # used by the scripts that source this file
fc_build_flags=(-Xswiftc -warnings-as-errors -Xswiftc -require-explicit-sendable)
