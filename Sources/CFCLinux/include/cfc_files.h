// File shims: reflinking a file's contents (the version store, `.forUploading` snapshots).
#ifndef CFCLINUX_FILES_H
#define CFCLINUX_FILES_H

#include <sys/ioctl.h>

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

#endif
