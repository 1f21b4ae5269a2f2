/*
 * kstate_*_checkpoint on every store kind, written from the header: a checkpoint holds the
 * last commit (its data, offsets and metadata), never the uncommitted writes, opens as a
 * store of the same kind, and leaves the source usable; an existing destination, a NULL
 * path, a closed handle and a memory store are refused and leave nothing behind.
 */
#include "common.h"

#include <sys/stat.h>

static char g_dir[4096];

static const char *path_of(const char *name) {
    static char paths[4][4200];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", g_dir, name);
    return p;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static const kstate_offset_t OFFSET_7 = {"changelog", 0, 7, true};

static void check_offset(kstate_error_t *(*committed)(void *, const char *, int32_t, int64_t *, bool *),
                         void *store, int64_t expected) {
    int64_t offset = 0;
    bool found = false;
    CHECK_OK(committed(store, "changelog", 0, &offset, &found));
    CHECK(found && offset == expected);
}

static kstate_error_t *kv_offset(void *s, const char *t, int32_t p, int64_t *o, bool *f) {
    return kstate_kv_committed_offset(s, t, p, o, f);
}
static kstate_error_t *window_offset(void *s, const char *t, int32_t p, int64_t *o, bool *f) {
    return kstate_window_committed_offset(s, t, p, o, f);
}
static kstate_error_t *session_offset(void *s, const char *t, int32_t p, int64_t *o, bool *f) {
    return kstate_session_committed_offset(s, t, p, o, f);
}
static kstate_error_t *versioned_offset(void *s, const char *t, int32_t p, int64_t *o, bool *f) {
    return kstate_versioned_committed_offset(s, t, p, o, f);
}

static void kv_checkpoint_holds_the_last_commit(void) {
    kstate_kv_options_t o = default_options();
    kstate_kv_t *s = NULL;
    CHECK_OK(kstate_kv_open(path_of("kv"), &o, &s));
    CHECK_OK(kstate_kv_put(s, KEY("a"), KEY("1"), 10));
    CHECK_OK(kstate_kv_commit(s, &OFFSET_7, 1, KEY("position")));
    CHECK_OK(kstate_kv_put(s, KEY("b"), KEY("uncommitted"), 11));

    uint64_t seq = 99, files = 0, bytes = 0;
    CHECK_OK(kstate_kv_checkpoint(s, path_of("kv-copy"), &seq, &files, &bytes));
    CHECK(seq == 1);
    CHECK(files > 0 && bytes > 0);
    /* The destination exists now: a second checkpoint there is refused. */
    CHECK_ERR(kstate_kv_checkpoint(s, path_of("kv-copy"), &seq, &files, &bytes),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(seq == 0 && files == 0 && bytes == 0); /* out-parameters reset on failure */
    CHECK_ERR(kstate_kv_checkpoint(s, NULL, &seq, &files, &bytes), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_kv_checkpoint(s, "", &seq, &files, &bytes), KSTATE_ERR_INVALID_ARGUMENT);
    /* The source goes on. */
    CHECK_OK(kstate_kv_commit(s, &OFFSET_7, 1, NULL, 0));
    CHECK_OK(kstate_kv_close(s));
    CHECK_ERR(kstate_kv_checkpoint(s, path_of("kv-closed"), &seq, &files, &bytes),
              KSTATE_ERR_STORE_CLOSED);
    CHECK(!exists(path_of("kv-closed")));

    kstate_kv_t *copy = NULL;
    CHECK_OK(kstate_kv_open(path_of("kv-copy"), &o, &copy));
    check_offset(kv_offset, copy, 7);
    kstate_bytes_t value = {NULL, 0};
    int64_t ts = 0;
    bool found = false;
    CHECK_OK(kstate_kv_get(copy, KEY("a"), &value, &ts, &found));
    CHECK(found && bytes_eq(value, "1") && ts == 10);
    kstate_bytes_free(&value);
    CHECK_OK(kstate_kv_get(copy, KEY("b"), &value, &ts, &found));
    CHECK(!found);
    CHECK_OK(kstate_kv_committed_metadata(copy, &value, &found));
    CHECK(found && bytes_eq(value, "position"));
    kstate_bytes_free(&value);
    CHECK_OK(kstate_kv_close(copy));
}

static void a_memory_store_is_unsupported(void) {
    kstate_kv_options_t o = default_options();
    o.engine = KSTATE_ENGINE_MEMORY;
    kstate_kv_t *s = NULL;
    CHECK_OK(kstate_kv_open(NULL, &o, &s));
    uint64_t seq, files, bytes;
    CHECK_ERR(kstate_kv_checkpoint(s, path_of("memory-copy"), &seq, &files, &bytes),
              KSTATE_ERR_UNSUPPORTED);
    CHECK(!exists(path_of("memory-copy")));
    CHECK(strcmp(kstate_error_code_name(KSTATE_ERR_UNSUPPORTED), "UNSUPPORTED") == 0);
    CHECK_OK(kstate_kv_close(s));
}

static void window_checkpoint_holds_the_last_commit(void) {
    kstate_window_options_t o;
    CHECK_OK(kstate_window_options_init(&o, sizeof o));
    kstate_window_t *s = NULL;
    CHECK_OK(kstate_window_open(path_of("window"), &o, &s));
    CHECK_OK(kstate_window_put(s, KEY("k"), KEY("v"), 5, 1000));
    CHECK_OK(kstate_window_commit(s, &OFFSET_7, 1, NULL, 0));
    CHECK_OK(kstate_window_put(s, KEY("k"), KEY("later"), 6, 2000));
    uint64_t seq = 0, files = 0, bytes = 0;
    CHECK_OK(kstate_window_checkpoint(s, path_of("window-copy"), &seq, &files, &bytes));
    CHECK(seq == 1 && files > 0 && bytes > 0);
    CHECK_OK(kstate_window_close(s));

    kstate_window_t *copy = NULL;
    CHECK_OK(kstate_window_open(path_of("window-copy"), &o, &copy));
    check_offset(window_offset, copy, 7);
    kstate_bytes_t value = {NULL, 0};
    int64_t ts = 0;
    bool found = false;
    CHECK_OK(kstate_window_fetch(copy, KSTATE_READ_COMMITTED, KEY("k"), 1000, &value, &ts, &found));
    CHECK(found && bytes_eq(value, "v") && ts == 5);
    kstate_bytes_free(&value);
    CHECK_OK(kstate_window_fetch(copy, KSTATE_READ_COMMITTED, KEY("k"), 2000, &value, &ts, &found));
    CHECK(!found);
    CHECK_OK(kstate_window_close(copy));
}

static void session_checkpoint_holds_the_last_commit(void) {
    kstate_session_options_t o;
    CHECK_OK(kstate_session_options_init(&o, sizeof o));
    kstate_session_t *s = NULL;
    CHECK_OK(kstate_session_open(path_of("session"), &o, &s));
    CHECK_OK(kstate_session_put(s, KEY("k"), 100, 200, KEY("agg")));
    CHECK_OK(kstate_session_commit(s, &OFFSET_7, 1, NULL, 0));
    CHECK_OK(kstate_session_put(s, KEY("k"), 100, 200, KEY("uncommitted")));
    uint64_t seq = 0, files = 0, bytes = 0;
    CHECK_OK(kstate_session_checkpoint(s, path_of("session-copy"), &seq, &files, &bytes));
    CHECK(seq == 1 && files > 0);
    CHECK_OK(kstate_session_close(s));

    kstate_session_t *copy = NULL;
    CHECK_OK(kstate_session_open(path_of("session-copy"), &o, &copy));
    check_offset(session_offset, copy, 7);
    kstate_bytes_t agg = {NULL, 0};
    bool found = false;
    CHECK_OK(kstate_session_fetch_session(copy, KSTATE_READ_COMMITTED, KEY("k"), 100, 200, &agg, &found));
    CHECK(found && bytes_eq(agg, "agg"));
    kstate_bytes_free(&agg);
    CHECK_OK(kstate_session_close(copy));
}

static void versioned_checkpoint_holds_the_last_commit(void) {
    kstate_versioned_options_t o;
    CHECK_OK(kstate_versioned_options_init(&o, sizeof o));
    kstate_versioned_t *s = NULL;
    CHECK_OK(kstate_versioned_open(path_of("versioned"), &o, &s));
    int64_t valid_to = 0;
    CHECK_OK(kstate_versioned_put(s, KEY("k"), KEY("v1"), 10, &valid_to));
    CHECK_OK(kstate_versioned_commit(s, &OFFSET_7, 1, NULL, 0));
    CHECK_OK(kstate_versioned_put(s, KEY("k"), KEY("v2"), 20, &valid_to));
    uint64_t seq = 0, files = 0, bytes = 0;
    CHECK_OK(kstate_versioned_checkpoint(s, path_of("versioned-copy"), &seq, &files, &bytes));
    CHECK(seq == 1 && files > 0);
    CHECK_OK(kstate_versioned_close(s));

    kstate_versioned_t *copy = NULL;
    CHECK_OK(kstate_versioned_open(path_of("versioned-copy"), &o, &copy));
    check_offset(versioned_offset, copy, 7);
    kstate_versioned_record_t record;
    bool found = false;
    CHECK_OK(kstate_versioned_get(copy, KSTATE_READ_COMMITTED, KEY("k"), &record, &found));
    CHECK(found && bytes_eq(record.value, "v1") && record.timestamp == 10);
    if (found) {
        kstate_bytes_free(&record.value);
    }
    CHECK_OK(kstate_versioned_close(copy));
}

int main(void) {
    make_scratch(g_dir, sizeof g_dir);
    RUN(kv_checkpoint_holds_the_last_commit);
    RUN(a_memory_store_is_unsupported);
    RUN(window_checkpoint_holds_the_last_commit);
    RUN(session_checkpoint_holds_the_last_commit);
    RUN(versioned_checkpoint_holds_the_last_commit);
    remove_tree(g_dir);
    return finish();
}
