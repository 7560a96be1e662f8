/* The libc functions that act on names, each turned into a coordinated operation (Languages/preload/README.md):
 *
 *   rename, renameat, renameat2: a write claim on both names (forMoving on the old name, a plain write on the
 *       new one); ItemMoved for a move to a free name; none over an existing name (a save by rename) or to the old
 *       name's backup name (an editor's save that renames the document away and writes a new one).
 *   unlink, unlinkat, rmdir, remove: a deleting write claim (forDeleting), for the call.
 *   link, linkat: a write claim on the new name, for the call.
 *   truncate, truncate64: a write claim for the call.
 *
 * The opening and descriptor calls are in interpose.c. Every wrapper passes straight through when the library is
 * disabled or the thread is already inside it, and returns the wrapped call's result with its errno. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int active(void) { return !__atomic_load_n(&fcp_settings.disabled, __ATOMIC_RELAXED); }

static int real_rename(int from_dir, const char *from, int to_dir, const char *to, unsigned int flags, int kind) {
    return kind == 0   ? fcp_real.rename(from, to)
           : kind == 1 ? fcp_real.renameat(from_dir, from, to_dir, to)
                       : fcp_real.renameat2(from_dir, from, to_dir, to, flags);
}

/* The rename inside the library (its frame holds two paths: never inlined into the wrapper, which first checks that
 * a signal handler's stack has room for it). */
static __attribute__((noinline)) int claimed_rename(int from_dir, const char *from, int to_dir, const char *to,
                                                     unsigned int flags, int kind) {
    int saved = errno;
    char from_path[PATH_MAX], to_path[PATH_MAX];
    int have_from = fcp_canonical(from_dir, from, 0, from_path);
    int have_to = fcp_canonical(to_dir, to, 0, to_path);
    int exchange = (flags & RENAME_EXCHANGE) != 0;
    /* A rename over an existing name saves new contents under it (editors, `sed -i`, `mv new doc`): its presenters
     * hear did change, and no ItemMoved is sent (the core tells presenters of a move's destination nothing after
     * it). A rename to a free name moves the item: ItemMoved, and its presenters follow it. */
    int replaces = have_to && fcp_exists(to_dir, to, 0);
    /* RENAME_NOREPLACE over an existing name fails with EEXIST and changes nothing (`mv` tries it first): asking
     * presenters would only tell them of a change that never happened. */
    if (replaces && (flags & RENAME_NOREPLACE)) have_from = have_to = 0;
    /* A rename to the document's backup name is the first half of a save (Emacs by default, Vim with
     * `backupcopy=no`): the document is written, not moved, and its presenters must not follow it to the backup
     * (they would present the backup from then on, and accommodate its deletion when the editor removes it). */
    int backup = have_from && have_to && !exchange && !replaces && fcp_is_backup_name(from_path, to_path);
    struct fcp_item items[2];
    size_t count = 0;
    if (have_from) items[count++] = (struct fcp_item){.path = from_path, .write = 1, .options = backup ? 0 : FCP_FOR_MOVING};
    if (have_to && !(have_from && strcmp(from_path, to_path) == 0)) {
        /* The destination is written, not replaced: a rename over an existing file is how editors, `sed -i` and
         * `mv` save, and its presenters should hear that its contents changed (did change), not that it went
         * away (accommodate deletion, which forReplacing would ask). */
        items[count++] = (struct fcp_item){.path = to_path, .write = 1, .options = exchange ? FCP_FOR_MOVING : 0};
    }
    uint64_t claim = count > 0 ? fcp_claim(items, count, 0) : 0;
    errno = saved;
    fcp_leave();
    int result = real_rename(from_dir, from, to_dir, to, flags, kind);
    int result_errno = errno;
    fcp_resume();
    if (claim) {
        int moved = have_from && have_to && !exchange && !replaces && !backup && strcmp(from_path, to_path) != 0;
        if (result == 0 && moved) {
            fcp_moved(claim, from_path, to_path);
        }
        fcp_finish(claim);
    }
    fcp_leave();
    errno = result_errno;
    return result;
}

static int coordinated_rename(int from_dir, const char *from, int to_dir, const char *to, unsigned int flags,
                              int kind) {
    if (!fcp_real.rename) fcp_resolve_real();
    if (!active() || !fcp_enter()) return real_rename(from_dir, from, to_dir, to, flags, kind);
    if (!fcp_stack_has_room()) {
        fcp_leave();
        return real_rename(from_dir, from, to_dir, to, flags, kind);
    }
    return claimed_rename(from_dir, from, to_dir, to, flags, kind);
}

int rename(const char *from, const char *to) { return coordinated_rename(AT_FDCWD, from, AT_FDCWD, to, 0, 0); }

int renameat(int from_dir, const char *from, int to_dir, const char *to) {
    return coordinated_rename(from_dir, from, to_dir, to, 0, 1);
}

int renameat2(int from_dir, const char *from, int to_dir, const char *to, unsigned int flags) {
    return coordinated_rename(from_dir, from, to_dir, to, flags, 2);
}

/* One call on one name under one write claim (`follow`: the call follows a final symbolic link). */
static __attribute__((noinline)) uint64_t claim_name(int dirfd, const char *path, int follow, uint64_t options) {
    char canonical[PATH_MAX];
    if (!fcp_canonical(dirfd, path, follow, canonical)) return 0;
    struct fcp_item item = {.path = canonical, .write = 1, .options = options};
    return fcp_claim(&item, 1, 0);
}

#define NAME_CALL(setup, call)                                                                                         \
    do {                                                                                                               \
        if (!fcp_real.unlink) fcp_resolve_real();                                                                      \
        if (!active() || !fcp_enter()) return call;                                                                    \
        if (!fcp_stack_has_room()) {                                                                                   \
            fcp_leave();                                                                                               \
            return call;                                                                                               \
        }                                                                                                              \
        int saved = errno;                                                                                             \
        uint64_t claim = setup;                                                                                        \
        errno = saved;                                                                                                 \
        fcp_leave();                                                                                                   \
        int result = call;                                                                                             \
        int result_errno = errno;                                                                                      \
        fcp_resume();                                                                                                  \
        fcp_finish(claim);                                                                                             \
        fcp_leave();                                                                                                   \
        errno = result_errno;                                                                                          \
        return result;                                                                                                 \
    } while (0)

int unlink(const char *path) {
    NAME_CALL(claim_name(AT_FDCWD, path, 0, FCP_FOR_DELETING), fcp_real.unlink(path));
}

int unlinkat(int dirfd, const char *path, int flags) {
    NAME_CALL(claim_name(dirfd, path, 0, FCP_FOR_DELETING), fcp_real.unlinkat(dirfd, path, flags));
}

int rmdir(const char *path) {
    NAME_CALL(claim_name(AT_FDCWD, path, 0, FCP_FOR_DELETING), fcp_real.rmdir(path));
}

/* glibc's remove reaches unlink and rmdir through internal calls the library does not see. */
int remove(const char *path) {
    NAME_CALL(claim_name(AT_FDCWD, path, 0, FCP_FOR_DELETING), fcp_real.remove(path));
}

/* A new name for an existing file: a write claim on the new name (its folder's presenters hear of it). */
int link(const char *from, const char *to) {
    NAME_CALL(claim_name(AT_FDCWD, to, 0, 0), fcp_real.link(from, to));
}

int linkat(int from_dir, const char *from, int to_dir, const char *to, int flags) {
    NAME_CALL(claim_name(to_dir, to, 0, 0), fcp_real.linkat(from_dir, from, to_dir, to, flags));
}

int truncate(const char *path, off_t length) {
    NAME_CALL(claim_name(AT_FDCWD, path, 1, 0), fcp_real.truncate(path, length));
}

int truncate64(const char *path, off_t length) {
    NAME_CALL(claim_name(AT_FDCWD, path, 1, 0),
              (fcp_real.truncate64 ? fcp_real.truncate64 : fcp_real.truncate)(path, length));
}
