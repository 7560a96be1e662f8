// File system shims for path canonicalisation (issue 14): the inode-flags ioctl, whose request number is a macro
// with casts (`_IOR`), and the file system magic numbers that older kernel headers lack.
#ifndef CFCLINUX_FS_H
#define CFCLINUX_FS_H

#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

/// `FS_IOC_GETFLAGS`: reads a file's inode flags (`chattr`'s), an `int` behind the pointer.
static inline int cfc_ioctl_getflags(int fd, int *flags) { return ioctl(fd, FS_IOC_GETFLAGS, flags); }

/// `statfs`'s `f_type` of the file system holding `path` (Glibc's Swift module does not export `statfs`).
static inline int cfc_statfs_type(const char *path, unsigned long *type) {
    struct statfs buffer;
    int result = statfs(path, &buffer);
    if (result == 0) *type = (unsigned long)buffer.f_type;
    return result;
}

/// What `statx` says about a path, as FCSystem's `FileStatus` needs it (issue 26: the mount id besides `stat`'s).
struct cfc_status {
    unsigned long long device;  // st_dev's encoding (gnu_dev_makedev)
    unsigned long long inode;
    unsigned long long rdev;
    unsigned long long link_count;
    unsigned long long mount_id;
    unsigned int mode;
    unsigned int uid;
    int has_mount_id;
};

/// `statx(AT_FDCWD, path, follow ? 0 : AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_MNT_ID)` into `out`; 0, or -1
/// with `errno` set (`ENOSYS` where the kernel has no `statx`). In CFCLinux.c (glibc declares `statx` only with
/// `_GNU_SOURCE`).
int cfc_statx(const char *path, int follow, struct cfc_status *out);

#ifndef FS_CASEFOLD_FL
#define FS_CASEFOLD_FL 0x40000000
#endif
/// The inode flag of a case-insensitive (casefold) directory on ext4, f2fs and tmpfs.
static const unsigned int cfc_fs_casefold_fl = FS_CASEFOLD_FL;

// `statfs`'s `f_type` of the file systems the canonicaliser knows (linux/magic.h; some only in newer headers).
#ifndef EXFAT_SUPER_MAGIC
#define EXFAT_SUPER_MAGIC 0x2011BAB0
#endif
#ifndef CIFS_SUPER_MAGIC
#define CIFS_SUPER_MAGIC 0xFF534D42
#endif
#ifndef SMB2_SUPER_MAGIC
#define SMB2_SUPER_MAGIC 0xFE534D42
#endif
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif
static const unsigned long cfc_magic_ext4 = EXT4_SUPER_MAGIC;
static const unsigned long cfc_magic_f2fs = F2FS_SUPER_MAGIC;
static const unsigned long cfc_magic_tmpfs = TMPFS_MAGIC;
static const unsigned long cfc_magic_btrfs = BTRFS_SUPER_MAGIC;
static const unsigned long cfc_magic_xfs = XFS_SUPER_MAGIC;
static const unsigned long cfc_magic_msdos = MSDOS_SUPER_MAGIC;
static const unsigned long cfc_magic_exfat = EXFAT_SUPER_MAGIC;
static const unsigned long cfc_magic_cifs = CIFS_SUPER_MAGIC;
static const unsigned long cfc_magic_smb2 = SMB2_SUPER_MAGIC;
static const unsigned long cfc_magic_smb = SMB_SUPER_MAGIC;
static const unsigned long cfc_magic_fuse = FUSE_SUPER_MAGIC;

#endif
