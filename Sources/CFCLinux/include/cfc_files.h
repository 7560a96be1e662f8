// File shims: reflinking a file's contents (the version store, `.forUploading` snapshots).
#ifndef CFCLINUX_FILES_H
#define CFCLINUX_FILES_H

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// FICLONE is `_IOW(0x94, 9, int)` in <linux/fs.h>, a macro Swift cannot import; spelled here to keep <linux/fs.h>
// (and its clashes with glibc's headers) out of the module.
#ifndef FICLONE
#define FICLONE _IOW(0x94, 9, int)
#endif

/// Makes `destination` share `source`'s extents (a reflink: btrfs, XFS, bcachefs, OCFS2): 0, or -1 with `errno`
/// (`EOPNOTSUPP`, `EXDEV`, `EINVAL` where the file system cannot).
static inline int cfc_ficlone(int destination, int source) {
    return ioctl(destination, FICLONE, source);
}

/// `renameat2(AT_FDCWD, source, AT_FDCWD, destination, RENAME_NOREPLACE)` through `syscall` (glibc declares
/// `renameat2` only under `_GNU_SOURCE`): 0, or -1 with `errno` (`EEXIST` when `destination` exists; `EINVAL` where
/// the file system cannot; `EXDEV` across file systems).
static inline int cfc_rename_noreplace(const char *source, const char *destination) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, source, AT_FDCWD, destination, 1 /* RENAME_NOREPLACE */);
}

#endif
