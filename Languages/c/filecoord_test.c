/*
 * The C test of libfilecoord (scripts/test-languages.sh): compiled with the system's cc, -Wall -Werror, against the
 * installed header and library (pkg-config), and run under valgrind's memcheck. It talks to the daemon named by
 * FILECOORDD_SOCKET (the test script's private one) and works in the folder given as its argument.
 *
 * Every check prints one line; the first failure ends the program with status 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <filecoord.h>

#include <errno.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int failures = 0;

#define FILECOORD_PURPOSE_PREFIX "FILECOORD_PURPOSE="

#define CHECK(condition, ...)                                                                                         \
    do {                                                                                                              \
        if (condition) {                                                                                              \
            printf("ok: " __VA_ARGS__);                                                                               \
            printf("\n");                                                                                             \
        } else {                                                                                                      \
            printf("FAILED (%s:%d): ", __FILE__, __LINE__);                                                           \
            printf(__VA_ARGS__);                                                                                      \
            printf("\n");                                                                                             \
            failures++;                                                                                               \
            exit(1);                                                                                                  \
        }                                                                                                             \
    } while (0)

static char directory[512];

/* Runs `fccoord write --timeout 2 PATH -- true` (FCCOORD names it) with `purpose` as FILECOORD_PURPOSE (NULL: none,
 * removed from the environment); returns its exit status, -1 when it could not run. */
static int fccoord_write(const char *path, const char *purpose) {
    const char *fccoord = getenv("FCCOORD");
    if (!fccoord) return -1;
    static char variable[1024];
    char *environment[256];
    size_t count = 0;
    for (char **entry = environ; *entry && count < 254; entry++) {
        if (strncmp(*entry, FILECOORD_PURPOSE_PREFIX, strlen(FILECOORD_PURPOSE_PREFIX)) != 0) environment[count++] = *entry;
    }
    if (purpose) {
        snprintf(variable, sizeof variable, "%s%s", FILECOORD_PURPOSE_PREFIX, purpose);
        environment[count++] = variable;
    }
    environment[count] = NULL;
    char *const arguments[] = {(char *)fccoord, "write", "--timeout", "2", (char *)path, "--", "true", NULL};
    pid_t child;
    if (posix_spawn(&child, fccoord, NULL, NULL, arguments, environment) != 0) return -1;
    int status;
    if (waitpid(child, &status, 0) != child) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void path_in(char *buffer, size_t size, const char *name) { snprintf(buffer, size, "%s/%s", directory, name); }

static void write_file(const char *path, const char *text) {
    FILE *file = fopen(path, "w");
    if (file == NULL) {
        perror(path);
        exit(1);
    }
    fputs(text, file);
    fclose(file);
}

/* --- A presenter that counts its callbacks. ------------------------------------------------------------------- */

struct counts {
    atomic_int relinquish_to_writer;
    atomic_int reacquire;
    atomic_int save;
    atomic_int deletion;
    atomic_int moved;
    int refuse_save;
    char moved_to[512];
};

static void on_relinquish_to_writer(void *context) { atomic_fetch_add(&((struct counts *)context)->relinquish_to_writer, 1); }
static void on_reacquire(void *context, int after_writer) {
    (void)after_writer;
    atomic_fetch_add(&((struct counts *)context)->reacquire, 1);
}
static int on_save(void *context) {
    struct counts *counts = context;
    atomic_fetch_add(&counts->save, 1);
    return counts->refuse_save;
}
static int on_deletion(void *context) {
    atomic_fetch_add(&((struct counts *)context)->deletion, 1);
    return 0;
}
static void on_move(void *context, const char *new_path) {
    struct counts *counts = context;
    snprintf(counts->moved_to, sizeof counts->moved_to, "%s", new_path);
    atomic_fetch_add(&counts->moved, 1);
}

static filecoord_presenter_callbacks presenter_callbacks(void) {
    filecoord_presenter_callbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.size = sizeof callbacks;
    callbacks.relinquish_to_writer = on_relinquish_to_writer;
    callbacks.reacquire = on_reacquire;
    callbacks.save_presented_item_changes = on_save;
    callbacks.accommodate_presented_item_deletion = on_deletion;
    callbacks.presented_item_did_move = on_move;
    return callbacks;
}

/* Waits (at most 10 s) until *value reaches at least `want`. */
static int wait_for(atomic_int *value, int want) {
    for (int i = 0; i < 2000; i++) {
        if (atomic_load(value) >= want) return 1;
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return 0;
}

/* --- Accessors. ----------------------------------------------------------------------------------------------- */

static void write_hello(void *context, const char *const *paths, size_t count) {
    *(int *)context = (int)count;
    write_file(paths[0], "hello from C\n");
}

static void read_first_line(void *context, const char *const *paths, size_t count) {
    (void)count;
    FILE *file = fopen(paths[0], "r");
    if (file == NULL) return;
    if (fgets((char *)context, 64, file) == NULL) ((char *)context)[0] = 0;
    fclose(file);
}

static void count_paths(void *context, const char *const *paths, size_t count) {
    (void)paths;
    *(size_t *)context = count;
}

static void never_runs(void *context, const char *const *paths, size_t count) {
    (void)paths;
    (void)count;
    *(int *)context = 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
        return 2;
    }
    snprintf(directory, sizeof directory, "%s", argv[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);

    CHECK(filecoord_abi_version() == FILECOORD_ABI_VERSION, "ABI version %d", filecoord_abi_version());
    CHECK(strlen(filecoord_version()) > 0, "library version %s", filecoord_version());

    char document[512], copy[512], moved[512];
    path_in(document, sizeof document, "document.txt");
    path_in(copy, sizeof copy, "copy.txt");
    path_in(moved, sizeof moved, "moved.txt");
    write_file(document, "first\n");

    /* A coordinated write and read; the accessor gets the path to use. */
    filecoord_error *error = NULL;
    int count = 0;
    int status = filecoord_write(NULL, document, 0, write_hello, &count, &error);
    CHECK(status == FILECOORD_OK && error == NULL && count == 1, "coordinated write");
    char line[64] = {0};
    status = filecoord_read(NULL, document, FILECOORD_READ_WITHOUT_CHANGES, read_first_line, line, &error);
    CHECK(status == FILECOORD_OK && strcmp(line, "hello from C\n") == 0, "coordinated read sees the write");

    /* Several items at once. */
    write_file(copy, "copy\n");
    filecoord_item items[2] = {{document, 0, 0}, {copy, 1, FILECOORD_WRITE_FOR_REPLACING}};
    size_t paths = 0;
    status = filecoord_coordinate(NULL, items, 2, count_paths, &paths, &error);
    CHECK(status == FILECOORD_OK && paths == 2, "read one item and write another at once");

    /* Bad arguments fail with a code and a message, never a crash. */
    status = filecoord_read(NULL, NULL, 0, count_paths, &paths, &error);
    CHECK(status == FILECOORD_ERR_INVALID_ARGUMENT && error != NULL &&
              filecoord_error_code(error) == FILECOORD_ERR_INVALID_ARGUMENT &&
              strlen(filecoord_error_message(error)) > 0,
          "a NULL path: FILECOORD_ERR_INVALID_ARGUMENT (%s)", error ? filecoord_error_message(error) : "no error");
    filecoord_error_free(error);
    error = NULL;

    /* A presenter in this process: relinquishes and saves for a write, refuses a save when told to. */
    struct counts counts;
    memset(&counts, 0, sizeof counts);
    filecoord_presenter_callbacks callbacks = presenter_callbacks();
    filecoord_presenter *presenter = filecoord_presenter_add(document, &callbacks, &counts, 0, &error);
    CHECK(presenter != NULL && error == NULL, "presenter registered");
    status = filecoord_write(NULL, document, FILECOORD_WRITE_FOR_MERGING, write_hello, &count, &error);
    CHECK(status == FILECOORD_OK, "write .forMerging with a presenter");
    CHECK(atomic_load(&counts.relinquish_to_writer) == 1 && atomic_load(&counts.save) == 1,
          "the presenter saved and relinquished before the write (relinquish %d, save %d)",
          atomic_load(&counts.relinquish_to_writer), atomic_load(&counts.save));
    CHECK(wait_for(&counts.reacquire, 1), "the presenter reacquired after the write");

    counts.refuse_save = 7;
    int ran = 0;
    status = filecoord_write(NULL, document, FILECOORD_WRITE_FOR_MERGING, never_runs, &ran, &error);
    CHECK(status == FILECOORD_ERR_REFUSED && ran == 0 && filecoord_error_code(error) == FILECOORD_ERR_REFUSED,
          "a refused save fails the write with FILECOORD_ERR_REFUSED (%s)",
          error ? filecoord_error_message(error) : "no error");
    filecoord_error_free(error);
    error = NULL;
    counts.refuse_save = 0;

    /* A claim held between calls; a coordinator with a timeout gives up on it. */
    filecoord_item held_item = {document, 1, 0};
    filecoord_coordinator *holder = filecoord_coordinator_new();
    filecoord_claim *claim = filecoord_claim_begin(holder, &held_item, 1, &error);
    CHECK(claim != NULL && filecoord_claim_count(claim) == 1 && strcmp(filecoord_claim_path(claim, 0), document) == 0,
          "claim held between calls");
    /* A command run inside the claim with its purpose (issue 42): fccoord's write is inside it; without the purpose
     * it waits for it and gives up (status 124). */
    char *purpose = filecoord_coordinator_copy_purpose(holder);
    CHECK(purpose != NULL && purpose[0] != '\0', "the holder's purpose: %s", purpose ? purpose : "NULL");
    int inside = fccoord_write(document, purpose);
    CHECK(inside == 0, "fccoord run with FILECOORD_PURPOSE writes inside the held claim (status %d)", inside);
    int outside = fccoord_write(document, NULL);
    CHECK(outside == 124, "fccoord run without it waits for the claim and gives up (status %d)", outside);
    filecoord_free(purpose);
    CHECK(filecoord_coordinator_copy_purpose(NULL) == NULL, "no purpose for a NULL coordinator");
    /* A nonblocking coordinator fails at once behind the held claim, as flock's LOCK_NB would. */
    filecoord_coordinator *nonblocking = filecoord_coordinator_new();
    filecoord_coordinator_set_nonblocking(nonblocking, 1);
    filecoord_coordinator_set_timeout(nonblocking, 10); /* without the setting: FILECOORD_ERR_TIMED_OUT, not a hang */
    ran = 0;
    status = filecoord_read(nonblocking, document, 0, never_runs, &ran, &error);
    CHECK(status == FILECOORD_ERR_WOULD_WAIT && ran == 0, "a nonblocking read behind the held claim fails at once (%s)",
          error ? filecoord_error_message(error) : "no error");
    filecoord_error_free(error);
    error = NULL;
    filecoord_coordinator_free(nonblocking);
    filecoord_coordinator *coordinator = filecoord_coordinator_new();
    filecoord_coordinator_set_timeout(coordinator, 0.3);
    ran = 0;
    status = filecoord_read(coordinator, document, 0, never_runs, &ran, &error);
    CHECK(status == FILECOORD_ERR_TIMED_OUT && ran == 0, "a read behind the held claim times out (%s)",
          error ? filecoord_error_message(error) : "no error");
    filecoord_error_free(error);
    error = NULL;
    /* Registering a presenter waits behind the write claim, at most its timeout (issue 43; before, without end). */
    struct counts late_counts;
    memset(&late_counts, 0, sizeof late_counts);
    filecoord_presenter *late = filecoord_presenter_add(document, &callbacks, &late_counts, 0.3, &error);
    CHECK(late == NULL && filecoord_error_code(error) == FILECOORD_ERR_TIMED_OUT,
          "a presenter added behind the held write claim gives up after its timeout (%s)",
          error ? filecoord_error_message(error) : "no error");
    filecoord_error_free(error);
    error = NULL;
    filecoord_claim_end(claim);
    filecoord_coordinator_free(holder);
    status = filecoord_read(coordinator, document, 0, read_first_line, line, &error);
    CHECK(status == FILECOORD_OK, "the read is granted once the claim ended");
    CHECK(filecoord_coordinator_set_purpose(coordinator, "c-test", &error) == FILECOORD_OK, "purpose set");
    CHECK(filecoord_coordinator_set_purpose(coordinator, "again", &error) == FILECOORD_ERR_INVALID_ARGUMENT,
          "a second purpose is refused");
    filecoord_error_free(error);
    error = NULL;
    filecoord_coordinator_free(coordinator);

    /* Move: the presenter hears where its item went. */
    status = filecoord_move(NULL, document, moved, &error);
    CHECK(status == FILECOORD_OK && access(moved, F_OK) == 0 && access(document, F_OK) != 0, "coordinated move");
    CHECK(wait_for(&counts.moved, 1) && strcmp(counts.moved_to, moved) == 0, "the presenter heard the move to %s",
          counts.moved_to);
    char *presented = filecoord_presenter_copy_path(presenter);
    CHECK(presented != NULL && strcmp(presented, moved) == 0, "the presenter follows its item");
    filecoord_free(presented);

    /* Delete: the presenter accommodates first. */
    status = filecoord_delete(NULL, moved, &error);
    CHECK(status == FILECOORD_OK && access(moved, F_OK) != 0 && atomic_load(&counts.deletion) == 1,
          "coordinated delete, accommodated by the presenter");
    status = filecoord_delete(NULL, moved, &error);
    CHECK(status == FILECOORD_ERR_IO && filecoord_error_errno(error) == ENOENT,
          "deleting what is gone: FILECOORD_ERR_IO with ENOENT (%s)", error ? filecoord_error_message(error) : "-");
    filecoord_error_free(error);
    error = NULL;

    filecoord_presenter_remove(presenter);

    /* A conflict version, as a sync tool records one. */
    write_file(document, "local\n");
    write_file(copy, "remote\n");
    status = filecoord_add_conflict_version(NULL, document, copy, "laptop", &error);
    CHECK(status == FILECOORD_OK, "conflict version added (%s)", error ? filecoord_error_message(error) : "-");
    filecoord_error_free(error);
    error = NULL;

    /* Move, delete and conflict-version calls run on the caller's coordinator (issue 43): its purpose puts them
     * inside a claim of the same purpose (before, each ran on a coordinator of its own and waited for the claim
     * until its timeout), and its cancellation fails them (before, they went ahead). */
    char guarded[512], guarded_moved[512];
    path_in(guarded, sizeof guarded, "guarded.txt");
    path_in(guarded_moved, sizeof guarded_moved, "guarded-moved.txt");
    write_file(guarded, "guarded\n");
    filecoord_item guarded_item = {guarded, 1, 0};
    filecoord_coordinator *owner = filecoord_coordinator_new();
    filecoord_claim *guard = filecoord_claim_begin(owner, &guarded_item, 1, &error);
    CHECK(guard != NULL, "a write claim held on %s", guarded);
    char *owner_purpose = filecoord_coordinator_copy_purpose(owner);
    filecoord_coordinator *inside_claim = filecoord_coordinator_new();
    filecoord_coordinator_set_timeout(inside_claim, 2);
    CHECK(filecoord_coordinator_set_purpose(inside_claim, owner_purpose, &error) == FILECOORD_OK, "purpose shared");
    filecoord_free(owner_purpose);
    status = filecoord_add_conflict_version(inside_claim, guarded, copy, "laptop", &error);
    CHECK(status == FILECOORD_OK, "a conflict version added inside the claim of its purpose (%s)",
          error ? filecoord_error_message(error) : "-");
    status = filecoord_move(inside_claim, guarded, guarded_moved, &error);
    CHECK(status == FILECOORD_OK && access(guarded_moved, F_OK) == 0, "a move inside the claim of its purpose (%s)",
          error ? filecoord_error_message(error) : "-");
    status = filecoord_delete(inside_claim, guarded_moved, &error);
    CHECK(status == FILECOORD_OK && access(guarded_moved, F_OK) != 0, "a delete inside the claim of its purpose (%s)",
          error ? filecoord_error_message(error) : "-");
    filecoord_claim_end(guard);
    filecoord_coordinator_free(owner);
    filecoord_coordinator_free(inside_claim);

    filecoord_coordinator *cancelled = filecoord_coordinator_new();
    filecoord_coordinator_cancel(cancelled);
    write_file(guarded, "guarded\n");
    status = filecoord_move(cancelled, guarded, guarded_moved, &error);
    CHECK(status == FILECOORD_ERR_CANCELLED && access(guarded, F_OK) == 0, "a cancelled coordinator's move fails");
    filecoord_error_free(error);
    error = NULL;
    status = filecoord_delete(cancelled, guarded, &error);
    CHECK(status == FILECOORD_ERR_CANCELLED && access(guarded, F_OK) == 0, "a cancelled coordinator's delete fails");
    filecoord_error_free(error);
    error = NULL;
    status = filecoord_add_conflict_version(cancelled, guarded, copy, "laptop", &error);
    CHECK(status == FILECOORD_ERR_CANCELLED, "a cancelled coordinator's conflict version fails");
    filecoord_error_free(error);
    error = NULL;
    filecoord_coordinator_free(cancelled);

    printf("all C checks passed\n");
    return failures == 0 ? 0 : 1;
}
