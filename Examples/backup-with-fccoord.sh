#!/bin/sh
# Backs up a folder as a tar archive while a coordinated read of the whole folder is held: document apps that
# present files in it save their changes first, and nobody who coordinates writes inside it until tar is done.
#
#   Examples/backup-with-fccoord.sh FOLDER ARCHIVE.tar.gz
#
# fccoord exits with tar's status, or 124 if the folder could not be claimed within 60 s (someone holds a write for
# that long), 120 if an app refused to save, 121 if filecoordd cannot be reached (see `fccoord --help`).
set -eu
folder="$1"
archive="$2"
fccoord read --timeout 60 "$folder" -- \
    tar -czf "$archive" -C "$(dirname "$folder")" "$(basename "$folder")"
