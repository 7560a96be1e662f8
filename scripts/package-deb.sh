#!/usr/bin/env bash
# Builds the Debian packages of swift-file-coordination (issue 43), with dpkg-deb and dpkg-shlibdeps:
#
#   filecoord          filecoordd, fccoord, fcdump; the preload library; the systemd user units (socket activation,
#                      enabled for every user); the man pages of the three programs
#   libfilecoord1      libfilecoord.so.1, the C API (Swift's runtime linked in: it needs no toolchain)
#   libfilecoord-dev   filecoord.h, the libfilecoord.so link, filecoord.pc, man 3 filecoord
#
#   scripts/package-deb.sh [OUT]     OUT defaults to .build-deb/; prints the paths of the three .deb files
#
# Install them with `apt-get install ./filecoord_*.deb ./libfilecoord1_*.deb ./libfilecoord-dev_*.deb`; they depend
# only on Debian packages (computed by dpkg-shlibdeps from what the programs and the library link). The programs
# and the library are built with Swift's runtime linked statically (scripts/build-static.sh).
#
# Environment:
#   FC_PACKAGE_STAGED=DIR   package what scripts/build-static.sh already put in DIR, without building.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
out="${1:-$repo/.build-deb}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

version="$(scripts/library-version.sh)"
abi="${version%%.*}"
architecture="$(dpkg --print-architecture)"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
maintainer="swift-file-coordination authors <filecoord@localhost>"

staged="${FC_PACKAGE_STAGED:-}"
if [[ -z "$staged" ]]; then
    staged="$out/staged"
    scripts/build-static.sh "$staged"
fi

work="$(mktemp -d /tmp/fc-package-XXXXXX)"
trap 'rm -rf "$work"' EXIT

# A package's tree: its files, then DEBIAN/control from the arguments, with the dependencies dpkg-shlibdeps finds
# for its ELF files (dpkg-shlibdeps reads a source package's debian/control: a minimal one in the work folder).
tree() { mkdir -p "$work/$1" && echo "$work/$1"; }

control() {
    local name="$1" root="$2" description="$3" extra="${4:-}"
    local elves=()
    while IFS= read -r file; do
        if cmp -s -n 4 "$file" <(printf '\177ELF'); then elves+=("$file"); fi
    done < <(find "$root" -type f ! -path '*/DEBIAN/*')
    local depends=""
    if [[ ${#elves[@]} -gt 0 ]]; then
        mkdir -p "$work/source/debian"
        printf 'Source: swift-file-coordination\n\nPackage: %s\nArchitecture: any\n' "$name" \
            > "$work/source/debian/control"
        depends="$(cd "$work/source" && dpkg-shlibdeps -O "${elves[@]}" 2>/dev/null \
            | sed -n 's/^shlibs:Depends=//p')"
    fi
    if [[ -n "$extra" ]]; then depends="${depends:+$depends, }$extra"; fi
    mkdir -p "$root/DEBIAN"
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: $architecture"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
        [[ -n "$depends" ]] && echo "Depends: $depends"
        case "$name" in
            *-dev) echo "Section: libdevel" ;;
            lib*) echo "Section: libs" ;;
            *) echo "Section: utils" ;;
        esac
        echo "Priority: optional"
        echo "Homepage: https://github.com/swift-file-coordination/swift-file-coordination"
        echo "Description: $description"
    } > "$root/DEBIAN/control"
}

# The copyright file every package carries.
copyright() {
    local root="$1" name="$2"
    mkdir -p "$root/usr/share/doc/$name"
    cat > "$root/usr/share/doc/$name/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: swift-file-coordination
Source: https://github.com/swift-file-coordination/swift-file-coordination

Files: *
Copyright: the swift-file-coordination authors
License: none-granted
 The project has not chosen a license yet; see its README. The Swift runtime linked into the programs and the
 library is Apple's, under the Apache License 2.0 with Runtime Library Exception.
EOF
}

manual() {
    local root="$1" section="$2"
    shift 2
    mkdir -p "$root/usr/share/man/man$section"
    for page in "$@"; do
        gzip -9n < "$page" > "$root/usr/share/man/man$section/$(basename "$page").gz"
    done
}

# filecoord: the daemon, the tools, the preload library and the user units.
root="$(tree filecoord)"
install -D -m 0755 -t "$root/usr/bin" "$staged/bin/filecoordd" "$staged/bin/fccoord" "$staged/bin/fcdump"
install -D -m 0644 "$staged/lib/libfilecoord-preload.so" "$root/usr/lib/$multiarch/libfilecoord-preload.so"
install -D -m 0644 contrib/systemd/filecoordd.socket "$root/usr/lib/systemd/user/filecoordd.socket"
sed 's|^ExecStart=%h/.local/bin/filecoordd|ExecStart=/usr/bin/filecoordd|' contrib/systemd/filecoordd.service \
    > "$root/usr/lib/systemd/user/filecoordd.service"
grep -q '^ExecStart=/usr/bin/filecoordd ' "$root/usr/lib/systemd/user/filecoordd.service"
manual "$root" 1 docs/man/filecoordd.1 docs/man/fccoord.1 docs/man/fcdump.1
copyright "$root" filecoord
install -m 0644 README.md "$root/usr/share/doc/filecoord/README.md"
control filecoord "$root" "file coordination daemon and tools (NSFileCoordinator for Linux)
 filecoordd arbitrates file access between processes as Apple's filecoordinationd does: coordinated reads and
 writes exclude each other, and the presenters of a file (editors showing it) are asked to save and to let go
 before another process writes it. fccoord coordinates shell scripts, fcdump shows the daemon's state, and the
 preload library (libfilecoord-preload.so) coordinates programs that know nothing of it. The daemon starts on
 demand or by its systemd user socket."
# The user units, enabled for every user (as dh_installsystemduser does), and disabled again on removal.
cat > "$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = "configure" ] && command -v deb-systemd-helper >/dev/null 2>&1; then
    deb-systemd-helper --user enable filecoordd.socket >/dev/null || true
fi
EOF
cat > "$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if command -v deb-systemd-helper >/dev/null 2>&1; then
    if [ "$1" = "remove" ]; then
        deb-systemd-helper --user mask filecoordd.socket >/dev/null || true
    fi
    if [ "$1" = "purge" ]; then
        deb-systemd-helper --user purge filecoordd.socket >/dev/null || true
        deb-systemd-helper --user unmask filecoordd.socket >/dev/null || true
    fi
fi
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/postrm"

# libfilecoord1: the library, with its shlibs entry and the loader cache's trigger.
root="$(tree libfilecoord1)"
install -D -m 0644 "$staged/lib/libfilecoord.so.$version" "$root/usr/lib/$multiarch/libfilecoord.so.$version"
ln -s "libfilecoord.so.$version" "$root/usr/lib/$multiarch/libfilecoord.so.$abi"
copyright "$root" "libfilecoord$abi"
control "libfilecoord$abi" "$root" "file coordination for C (NSFileCoordinator for Linux): the library
 libfilecoord gives C programs, and every language with a C FFI, coordinated reads and writes and file presenters
 that work with Swift apps using NSFileCoordinator, through filecoordd. Swift's runtime is linked in." \
    "filecoord (= $version)"
echo "libfilecoord $abi libfilecoord$abi (>= $version)" > "$root/DEBIAN/shlibs"
echo "activate-noawait ldconfig" > "$root/DEBIAN/triggers"

# libfilecoord-dev: header, link, pkg-config file, man 3.
root="$(tree libfilecoord-dev)"
install -D -m 0644 Languages/c/CFileCoord/include/filecoord.h "$root/usr/include/filecoord.h"
mkdir -p "$root/usr/lib/$multiarch/pkgconfig"
ln -s "libfilecoord.so.$abi" "$root/usr/lib/$multiarch/libfilecoord.so"
sed -e "s|@PREFIX@|/usr|" -e "s|@VERSION@|$version|" -e "s|^libdir=.*|libdir=\${prefix}/lib/$multiarch|" \
    -e 's| -Wl,-rpath,${libdir}||' Languages/c/filecoord.pc.in > "$root/usr/lib/$multiarch/pkgconfig/filecoord.pc"
manual "$root" 3 docs/man/filecoord.3
copyright "$root" libfilecoord-dev
control libfilecoord-dev "$root" "file coordination for C (NSFileCoordinator for Linux): development files
 The header filecoord.h, the link libfilecoord.so, filecoord.pc for pkg-config and the manual page filecoord(3)." \
    "libfilecoord$abi (= $version)"

for name in filecoord "libfilecoord$abi" libfilecoord-dev; do
    deb="$out/${name}_${version}_$architecture.deb"
    dpkg-deb --root-owner-group -Zxz --build "$work/$name" "$deb" >/dev/null
    echo "$deb"
done
