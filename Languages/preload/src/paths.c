/* Canonical paths as filecoordd compares them (docs/SEMANTICS.md §4): absolute, symbolic links in the folders
 * resolved (realpath of the parent), `.`/`..`/`//` gone, the last component as given unless the call follows it.
 *
 * Names are not case-folded here (that needs Unicode's case tables): the connection's Hello says so
 * (daemon_folds_names), and the daemon folds the names below a mount that is case-insensitive by its type (FAT, exFAT,
 * CIFS, SMB), as a Swift client's key has them. Limit: in a casefold folder of ext4, f2fs or tmpfs, and on a FUSE
 * mount whose file system the daemon cannot tell, names are not folded; there the library's claims and a Swift
 * client's meet by key only for names spelled as the fold gives them (lower case), else only by an existing file's
 * identity (docs/SEMANTICS.md §15). Common Linux folders are case-sensitive and match exactly.
 *
 * No allocation: buffers are on the stack (realpath with a caller's buffer). */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether `path` is `prefix` or below it. */
static int under(const char *path, const char *prefix, size_t length) {
    return length > 0 && strncmp(path, prefix, length) == 0 && (path[length] == '\0' || path[length] == '/');
}

/* Paths the library never coordinates: kernel file systems, devices, and the daemon's own runtime folder. */
static int ignored(const char *canonical) {
    return under(canonical, "/proc", 5) || under(canonical, "/sys", 4) || under(canonical, "/dev", 4) ||
           under(canonical, fcp_settings.runtime_dir, fcp_settings.runtime_dir_len);
}

/* `path` made absolute against `dirfd` (or the working directory) into `out` (2 * PATH_MAX bytes). */
static int absolute(int dirfd, const char *path, char *out, size_t size) {
    size_t length = strlen(path);
    if (length == 0 || length >= PATH_MAX) return 0;
    if (path[0] == '/') {
        memcpy(out, path, length + 1);
        return 1;
    }
    size_t base;
    if (dirfd == AT_FDCWD) {
        if (!getcwd(out, PATH_MAX)) return 0;
        base = strlen(out);
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t count = readlink(link, out, PATH_MAX - 1);
        if (count <= 0 || out[0] != '/') return 0;
        base = (size_t)count;
    }
    if (base + 1 + length + 1 > size) return 0;
    out[base] = '/';
    memcpy(out + base + 1, path, length + 1);
    return 1;
}

int fcp_canonical(int dirfd, const char *path, int follow_final_link, char *out) {
    if (!path) return 0;
    char full[2 * PATH_MAX];
    if (!absolute(dirfd, path, full, sizeof full)) return 0;
    struct stat status;
    if (follow_final_link && stat(full, &status) == 0) {
        if (!realpath(full, out)) return 0;
        return !ignored(out);
    }
    /* The parent resolved, the name kept: a final link, or a name that does not exist (yet). */
    size_t length = strlen(full);
    while (length > 1 && full[length - 1] == '/') full[--length] = '\0';
    char *slash = strrchr(full, '/');
    const char *name = slash + 1;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || *name == '\0') {
        if (!realpath(full, out)) return 0;
        return !ignored(out);
    }
    char parent[PATH_MAX];
    if (slash == full) {
        strcpy(parent, "/");
    } else {
        *slash = '\0';
        if (!realpath(full, parent)) return 0;
    }
    size_t parent_length = strlen(parent);
    size_t name_length = strlen(name);
    int root = parent_length == 1;
    if (parent_length + (root ? 0 : 1) + name_length + 1 > PATH_MAX) return 0;
    memcpy(out, parent, parent_length);
    size_t at = parent_length;
    if (!root) out[at++] = '/';
    memcpy(out + at, name, name_length + 1);
    return !ignored(out);
}

int fcp_exists(int dirfd, const char *path, int follow_final_link) {
    struct stat status;
    return path && fstatat(dirfd, path, &status, follow_final_link ? 0 : AT_SYMLINK_NOFOLLOW) == 0;
}

int fcp_is_regular(int dirfd, const char *path) {
    struct stat status;
    return path && fstatat(dirfd, path, &status, 0) == 0 && S_ISREG(status.st_mode);
}

int fcp_is_backup_name(const char *from_path, const char *to_path) {
    const char *from_slash = strrchr(from_path, '/');
    const char *to_slash = strrchr(to_path, '/');
    if (!from_slash || !to_slash) return 0;
    size_t parent = (size_t)(from_slash - from_path);
    if ((size_t)(to_slash - to_path) != parent || strncmp(from_path, to_path, parent) != 0) return 0;
    const char *name = from_slash + 1;
    const char *backup = to_slash + 1;
    size_t length = strlen(name);
    if (length == 0 || strncmp(name, backup, length) != 0) return 0;
    const char *suffix = backup + length;
    if (strcmp(suffix, "~") == 0 || strcmp(suffix, ".bak") == 0) return 1;
    /* `.~N~`: Emacs's numbered backups. */
    if (strncmp(suffix, ".~", 2) != 0) return 0;
    const char *digit = suffix + 2;
    if (*digit < '0' || *digit > '9') return 0;
    while (*digit >= '0' && *digit <= '9') digit++;
    return strcmp(digit, "~") == 0;
}
