#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test swift-file-coordination, and checks the toolchain.
#
# Idempotent: packages already installed are not touched, and `apt-get update` runs only when something must be
# installed. Runs apt-get directly as root, through sudo otherwise.
#
# Run it (`scripts/install-deps.sh`) or source it (`. scripts/install-deps.sh`); sourcing also keeps the PATH fix
# for /opt/swift in the calling shell, which is what scripts/test.sh, scripts/run.sh and .ci/run do.
# Sourcing sets no shell options in the caller.
#
# Environment:
#   FC_SKIP_INSTALL_DEPS=1   check only, install nothing (a missing package is then an error).

# Debian packages the project needs. libinotifytools0-dev is Debian 12's name; newer releases call it
# libinotifytools-dev (docs/ARCHITECTURE.md §1, CInotifyTools), which is accepted as an alternative.
# libsqlite3-dev: the version store's index (GRDB, issue 15).
FC_APT_PACKAGES=("libinotifytools0-dev" "libsqlite3-dev")
# sqlite3: the version store's durability tests read the index as another process would (issue 28).
FC_APT_PACKAGES+=("sqlite3")
# Issue 14: a real case-insensitive file system for the canonicalisation tests (an exFAT image, mounted through FUSE).
FC_APT_PACKAGES+=("exfatprogs" "exfat-fuse")
# Issue 24: libfilecoord's install (patchelf sets its soname and runpath) and its C test (pkg-config, valgrind).
FC_APT_PACKAGES+=("patchelf" "pkg-config" "valgrind")
# The Python binding's tests install into a virtual environment of their own (scripts/test-languages.sh).
FC_APT_PACKAGES+=("python3-venv")
# Issue 25: the preload library (Languages/preload: cc, make, libprotobuf-c-dev) and the real programs its tests run
# under it (ed as the editor in batch mode, git).
FC_APT_PACKAGES+=("libprotobuf-c-dev" "gcc" "make" "ed" "git")
# Issue 27: the `notes` example is driven through tmux by its end-to-end tests and by scripts/run.sh.
FC_APT_PACKAGES+=("tmux")
# Issue 26: the document portal's end-to-end tests start a real xdg-document-portal (a FUSE file system) on a session
# bus of their own (dbus-run-session, from dbus-daemon) and export files through it with gdbus (libglib2.0-bin).
FC_APT_PACKAGES+=("xdg-desktop-portal" "dbus-daemon" "libglib2.0-bin")
# Issue 38: scripts/check-generated.sh regenerates the preload's protobuf-c code (protoc-c) to compare it with the
# committed files; scripts/check-docs.py and check-cffi-declarations.py need python3 (installed with python3-venv).
FC_APT_PACKAGES+=("protobuf-c-compiler")
# scripts/check-generated-swift.sh regenerates the Swift protobuf code (protoc, with a protoc-gen-swift it builds) to
# compare it with the committed file.
FC_APT_PACKAGES+=("protobuf-compiler")
# Issue 40: cluster mode's tests start a real three-member etcd cluster on 127.0.0.1 (etcd-server) and read its keys
# with etcdctl (etcd-client), a client the daemons share no code with.
FC_APT_PACKAGES+=("etcd-server" "etcd-client")
# Issue 43: the Debian packages are built with dpkg-deb, their dependencies found by dpkg-shlibdeps (dpkg-dev), and
# scripts/test-package.sh reads their manual pages with man (man-db).
FC_APT_PACKAGES+=("dpkg-dev" "man-db")
FC_SWIFT_FALLBACK_DIR="/opt/swift/usr/bin"

fc_deps_log() { printf '[install-deps] %s\n' "$*" >&2; }

# True when Debian package $1 is installed (not merely known, or removed with its config files left).
fc_deps_dpkg_installed() {
    local status
    status="$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" || return 1
    [[ "$status" == "install ok installed" ]]
}

# True when $1, or its newer Debian name, is installed.
fc_deps_have() {
    fc_deps_dpkg_installed "$1" && return 0
    case "$1" in
        libinotifytools0-dev) fc_deps_dpkg_installed libinotifytools-dev ;;
        *) return 1 ;;
    esac
}

fc_deps_install_apt() {
    local missing=() pkg
    if ! command -v dpkg-query >/dev/null 2>&1; then
        fc_deps_log "error: dpkg-query not found; this script supports Debian and its derivatives only."
        fc_deps_log "       Install by hand: ${FC_APT_PACKAGES[*]}"
        return 1
    fi
    for pkg in "${FC_APT_PACKAGES[@]}"; do
        if fc_deps_have "$pkg"; then
            fc_deps_log "ok: $pkg is installed"
        else
            missing+=("$pkg")
        fi
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0

    if [[ "${FC_SKIP_INSTALL_DEPS:-0}" == "1" ]]; then
        fc_deps_log "error: missing Debian packages: ${missing[*]} (FC_SKIP_INSTALL_DEPS=1, so not installing)"
        return 1
    fi

    local -a as_root=()
    if [[ "$(id -u)" -ne 0 ]]; then
        if ! command -v sudo >/dev/null 2>&1; then
            fc_deps_log "error: missing Debian packages: ${missing[*]}"
            fc_deps_log "       not root and no sudo; install them as root: apt-get install -y ${missing[*]}"
            return 1
        fi
        as_root=(sudo)
        # Without a terminal sudo cannot ask for a password: fail at once rather than hang.
        [[ -t 0 ]] || as_root+=(-n)
    fi

    fc_deps_log "installing: ${missing[*]}"
    local -a apt=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)
    if ! "${apt[@]}" update -qq; then
        fc_deps_log "error: apt-get update failed"
        return 1
    fi
    # Try Debian 12's name first; if the archive does not know it (newer releases), try the newer name.
    local -a want=()
    for pkg in "${missing[@]}"; do
        if [[ "$pkg" == libinotifytools0-dev ]] && ! apt-cache show "$pkg" >/dev/null 2>&1; then
            want+=(libinotifytools-dev)
        else
            want+=("$pkg")
        fi
    done
    if ! "${apt[@]}" install -y -qq --no-install-recommends "${want[@]}" >&2; then
        fc_deps_log "error: apt-get install ${want[*]} failed"
        return 1
    fi
    for pkg in "${missing[@]}"; do
        if ! fc_deps_have "$pkg"; then
            fc_deps_log "error: $pkg is still not installed after apt-get install"
            return 1
        fi
    done
    fc_deps_log "installed: ${want[*]}"
}

fc_deps_check_swift() {
    if ! command -v swift >/dev/null 2>&1 && [[ -x "$FC_SWIFT_FALLBACK_DIR/swift" ]]; then
        export PATH="$PATH:$FC_SWIFT_FALLBACK_DIR"
        fc_deps_log "added $FC_SWIFT_FALLBACK_DIR to PATH"
    fi
    if ! command -v swift >/dev/null 2>&1; then
        fc_deps_log "error: 'swift' is not on PATH and $FC_SWIFT_FALLBACK_DIR/swift does not exist."
        fc_deps_log "       This project needs Swift 6.1 or newer (developed with 6.3.1); install a toolchain from"
        fc_deps_log "       swift.org and put its usr/bin on PATH."
        return 1
    fi
    local version
    if ! version="$(swift --version 2>/dev/null | head -n 1)"; then
        fc_deps_log "error: '$(command -v swift) --version' failed"
        return 1
    fi
    fc_deps_log "ok: $(command -v swift): $version"
}

fc_install_deps() {
    fc_deps_install_apt && fc_deps_check_swift
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    fc_install_deps
else
    fc_install_deps || return 1
fi
