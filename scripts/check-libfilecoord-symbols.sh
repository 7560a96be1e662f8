#!/usr/bin/env bash
# Checks that a built libfilecoord exports exactly the C API its header declares (issue 43): every function
# filecoord.h declares, under the version node FILECOORD_1 (Languages/c/exports.map), and no other defined global or
# weak dynamic symbol (no Swift runtime, Foundation, SwiftProtobuf or library-internal symbol a program could bind
# to). Also checks that the library names no RUNPATH or RPATH (it depends only on the loader's own path).
#
#   scripts/check-libfilecoord-symbols.sh LIBRARY        e.g. /usr/lib/x86_64-linux-gnu/libfilecoord.so.1
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ $# -ne 1 ]]; then
    echo "usage: $0 LIBRARY" >&2
    exit 64
fi
library="$1"
header=Languages/c/CFileCoord/include/filecoord.h

declared="$(grep -oE '\bfilecoord_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u)"
# Defined (not UND), not local: what another object can bind to. The version node itself is listed as an ABS symbol.
exported="$(readelf --dyn-syms -W "$library" \
    | awk 'NR > 3 && $5 != "LOCAL" && $7 != "UND" && $7 != "ABS" { print $8 }' | sort -u)"
expected="$(sed 's/$/@@FILECOORD_1/' <<< "$declared")"
if [[ "$exported" != "$expected" ]]; then
    echo "error: $library exports other symbols than filecoord.h declares (< exported, > declared):" >&2
    diff <(echo "$exported") <(echo "$expected") | head -40 >&2
    exit 1
fi
if readelf -d "$library" | grep -qE '\((RUNPATH|RPATH)\)'; then
    echo "error: $library names a library path: $(readelf -d "$library" | grep -E '\((RUNPATH|RPATH)\)')" >&2
    exit 1
fi
echo "$library: exports the $(wc -l <<< "$declared") functions of filecoord.h (FILECOORD_1) and nothing else;" \
    "no RUNPATH"
