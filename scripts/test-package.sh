#!/usr/bin/env bash
# The Debian packages as a user gets them (issue 43): built (scripts/package-deb.sh), installed with
# `apt-get install ./…deb`, then used with the Swift toolchain and this repository (its build trees included) out of
# reach, in a private mount namespace with empty tmpfs mounted over both:
#
#   - libfilecoord.so.1 resolves every library it needs from Debian's, and exports only filecoord_*;
#   - the C test (Languages/c/filecoord_test.c) builds with `pkg-config filecoord` against the installed header and
#     library and passes, with the daemon started on demand from PATH (/usr/bin/filecoordd);
#   - an fccoord script coordinates with a Swift app (fc-testhost, built with Swift's runtime linked in), and the man
#     pages are in the packages (and render, where man-db is installed);
#   - `python3 -m venv v && v/bin/pip install ./Languages/python` imports filecoord (the installed libfilecoord
#     found, no toolchain) and its pytest suite passes;
# then `apt-get purge` removes every file the packages installed and the user units' enablement; last, the README's
# Python quick start without the packages: the wheel builds libfilecoord into itself and loads it, toolchain hidden.
#
# Needs root (apt-get, mount namespaces). CI runs it (.ci/run, phase "Debian package").
#
#   scripts/test-package.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
[[ "$(id -u)" -eq 0 ]] || { echo "error: $0 installs packages and mounts: run it as root" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*"; }

. scripts/install-deps.sh
toolchain="$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")"

work="$(mktemp -d /tmp/fc-package-test-XXXXXX)"
packages=(filecoord libfilecoord1 libfilecoord-dev)
cleanup() {
    if [[ -f "$work/run/socket.lock" ]]; then
        pid="$(tr -dc '0-9' < "$work/run/socket.lock")"
        [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
    fi
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${packages[@]}" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

step "Building the packages (scripts/build-static.sh, scripts/package-deb.sh)"
scripts/build-static.sh "$work/staged" all fc-testhost
FC_PACKAGE_STAGED="$work/staged" scripts/package-deb.sh "$work/debs"
for deb in "$work"/debs/*.deb; do
    echo "$(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
done

step "apt-get install ./…deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 "$work"/debs/*.deb
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
installed_files() {
    dpkg -L "${packages[@]}" | while IFS= read -r path; do [[ -f "$path" || -L "$path" ]] && echo "$path"; done
}
installed_files > "$work/installed-files"
wc -l < "$work/installed-files"
for deb in "$work"/debs/*.deb; do dpkg-deb -c "$deb"; done > "$work/contents"
for page in man1/fccoord.1.gz man1/filecoordd.1.gz man1/fcdump.1.gz man3/filecoord.3.gz; do
    grep -q "usr/share/man/$page" "$work/contents" \
        || { echo "error: no $page in the packages" >&2; exit 1; }
done
scripts/check-libfilecoord-symbols.sh "/usr/lib/$multiarch/libfilecoord.so.1"

# What the tests use, copied out of the repository before it is hidden.
mkdir -p "$work/products" "$work/c"
cp Languages/c/filecoord_test.c "$work/"
# The Python package and the examples its tests run, where they are in the repository (the tests find the examples
# beside the package's folder).
mkdir -p "$work/copy/Languages"
cp -r Languages/python "$work/copy/Languages/python"
cp -r Examples "$work/copy/Examples"
rm -rf "$work/copy/Languages/python/build" "$work/copy/Languages/python"/src/*.egg-info
install -m 0755 "$work/staged/bin/fc-testhost" "$work/products/fc-testhost"
for tool in filecoordd fccoord fcdump; do ln -s "/usr/bin/$tool" "$work/products/$tool"; done
# pip's own packages from PyPI, fetched before the namespace (which keeps the network; only files are hidden).
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check cffi pytest setuptools wheel mypy

# Runs the script $1 (with the arguments after it) in a private mount namespace, with the toolchain and this clone
# hidden under empty tmpfs and the work folder as its working directory.
hidden() {
    unshare --mount --propagation private bash -c \
        'set -e; mount -t tmpfs -o size=1m fc-hidden "$1"; mount -t tmpfs -o size=1m fc-hidden "$2"; cd "$3"
         shift 3; exec bash "$@"' hidden "$toolchain" "$repo" "$work" "$@"
}

step "In a private mount namespace, with $toolchain and $repo hidden under empty tmpfs"
cat > "$work/inside.sh" <<'EOF'
set -euo pipefail
work="$1"; multiarch="$2"; toolchain="$3"; repo="$4"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset FILECOORDD_PATH LD_LIBRARY_PATH FILECOORD_ARBITER FILECOORD_LIBRARY
export FILECOORDD_SOCKET="$work/run/socket" FILECOORD_VERSIONS_DIR="$work/versions"
if command -v swift >/dev/null || [[ -n "$(ls -A "$repo")" ]]; then echo "error: not hidden" >&2; exit 1; fi
echo "swift: none on PATH; $toolchain and $repo are empty"

printf '\n--> the library needs only what the system has\n'
if ldd "/usr/lib/$multiarch/libfilecoord.so.1" | grep -E 'not found|swift'; then exit 1; fi
ldd "/usr/lib/$multiarch/libfilecoord.so.1" | sed 's/ (0x.*//'

printf '\n--> the C test, built with pkg-config filecoord (%s), the daemon started on demand from PATH\n' \
    "$(pkg-config --modversion filecoord)"
cc -std=c11 -Wall -Wextra -Werror -o "$work/filecoord_test" "$work/filecoord_test.c" \
    $(pkg-config --cflags --libs filecoord)
FCCOORD=/usr/bin/fccoord "$work/filecoord_test" "$work/c" | tail -1
[[ "$(readlink -f "/proc/$(tr -dc '0-9' < "$work/run/socket.lock")/exe")" == /usr/bin/filecoordd ]]
echo "the daemon that answered is /usr/bin/filecoordd"

printf '\n--> an fccoord script beside a Swift app (fc-testhost), and the man pages\n'
printf 'draft\n' > "$work/document.txt"
coproc HOST { "$work/products/fc-testhost"; }
echo "present P $work/document.txt" >&"${HOST[1]}"
until read -r -t 10 line <&"${HOST[0]}" && [[ "$line" == "presenting P "* ]]; do :; done
fccoord write --merging "$work/document.txt" -- sh -c 'printf "from a script\n" >> "$FCCOORD_PATH_1"'
grep -qx 'from a script' "$work/document.txt"
until read -r -t 10 line <&"${HOST[0]}" && [[ "$line" == "presenter P relinquishToWriter" ]]; do :; done
echo "the Swift app's presenter was asked before the script wrote: $line"
echo "exit" >&"${HOST[1]}"
wait "$HOST_PID" || true
if command -v man >/dev/null && [[ -e /usr/share/man/man1/fccoord.1.gz ]]; then
    man -P cat fccoord | grep -q 'EXIT STATUS' && man -P cat 3 filecoord | grep -q 'filecoord_presenter_add'
    echo "man fccoord and man 3 filecoord render"
fi

printf '\n--> Python: pip install ./Languages/python into a virtual environment, no toolchain; pytest\n'
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation "$work/copy/Languages/python"
"$work/venv/bin/python" -c 'import filecoord, sys; print("import filecoord: libfilecoord", filecoord.library_path())'
FC_PRODUCTS="$work/products" FILECOORDD_PATH=/usr/bin/filecoordd \
    "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$work/copy/Languages/python/tests"

# The installed daemon stops before its package is purged (as a user's session would end it).
# (The Python tests' own fixture may have stopped it already.)
pid="$(tr -dc '0-9' < "$work/run/socket.lock")"
kill "$pid" 2>/dev/null || true
timeout 10 tail --pid="$pid" -f /dev/null
EOF
hidden "$work/inside.sh" "$work" "$multiarch" "$toolchain" "$repo"

step "apt-get purge: nothing the packages installed is left"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq -o Dpkg::Use-Pty=0 "${packages[@]}"
left=()
while IFS= read -r path; do [[ -e "$path" || -L "$path" ]] && left+=("$path"); done < "$work/installed-files"
left+=($(find /etc/systemd/user /var/lib/systemd/deb-systemd-user-helper-enabled -name 'filecoordd*' 2>/dev/null \
    || true))
if [[ ${#left[@]} -gt 0 ]]; then
    echo "error: left after purge: ${left[*]}" >&2
    exit 1
fi
echo "purged: the $(wc -l < "$work/installed-files") installed files and the user units' enablement are gone"

step "The README's Python quick start without the packages: python3 -m venv v && v/bin/pip install ./Languages/python"
# With the toolchain at hand, the wheel builds libfilecoord into itself (Languages/python/setup.py); then, with the
# toolchain and the repository hidden again and no libfilecoord installed, the package loads its own copy.
python3 -m venv "$work/quickstart"
"$work/quickstart/bin/pip" install --quiet --disable-pip-version-check ./Languages/python
cat > "$work/quickstart.sh" <<'INNER'
set -euo pipefail
work="$1"
printf 'draft\n' > "$work/quickstart.txt"
FILECOORDD_SOCKET="$work/run/socket" FILECOORDD_PATH="$work/staged/bin/filecoordd" \
    "$work/quickstart/bin/python" - "$work/quickstart.txt" <<'PYTHON'
import sys
import filecoord
assert "/filecoord/_lib/" in filecoord.library_path(), filecoord.library_path()
with filecoord.writing(sys.argv[1]) as path:
    with open(path, "a") as f:
        f.write("from the quick start\n")
print("import filecoord: the wheel's own", filecoord.library_path(), "- a coordinated write went through")
PYTHON
grep -qx 'from the quick start' "$work/quickstart.txt"
INNER
hidden "$work/quickstart.sh" "$work"
