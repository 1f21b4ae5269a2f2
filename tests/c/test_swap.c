/*
 * kstate_kv_upgrade_swap and kstate_kv_is_upgrading: a plain store opened timestamped
 * (upgrade mode) is upgraded by prepare and swap and checked against a model, entry by
 * entry, in both isolation levels, with its progress calls, its offsets and metadata, and
 * after reopening in regular mode. Also: calls into the same store from the progress
 * callback (a write, a nested swap, a close), the refusals, and a NULL callback.
 */
#include "common.h"

static char g_dir[4096];
static int g_seq;

/* Entries in the plain store (fewer under valgrind). */
static int g_n;

static const char *fresh_path(void) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/store-%d", g_dir, g_seq++);
    return path;
}

static void key_of(int i, char *buf, size_t len) {
    snprintf(buf, len, "key-%06d", i);
}

/* The model: what each key holds, as a timestamped store shows it. */
typedef struct {
    char **values; /* NULL: absent */
    int64_t *timestamps;
} model_t;

static void model_init(model_t *m) {
    m->values = calloc((size_t)g_n, sizeof *m->values);
    m->timestamps = calloc((size_t)g_n, sizeof *m->timestamps);
    if (m->values == NULL || m->timestamps == NULL) {
        exit(2);
    }
}

static void model_set(model_t *m, int i, const char *value, int64_t ts) {
    free(m->values[i]);
    m->values[i] = NULL;
    if (value != NULL) {
        m->values[i] = strdup(value);
        if (m->values[i] == NULL) {
            exit(2);
        }
    }
    m->timestamps[i] = ts;
}

static void model_free(model_t *m) {
    for (int i = 0; i < g_n; i++) {
        free(m->values[i]);
    }
    free(m->values);
    free(m->timestamps);
}

/* The plain value of entry i: 200..1223 bytes, varied (so that the copy takes several
 * 4 MiB batches, each reported). */
static void plain_value(int i, char *buf, size_t len) {
    size_t n = 200 + (size_t)(i * 37 % 1024);
    if (n >= len) {
        n = len - 1;
    }
    for (size_t j = 0; j < n; j++) {
        buf[j] = (char)('a' + (i + (int)j) % 26);
    }
    buf[n] = '\0';
}

static kstate_kv_t *open_format(const char *path, kstate_value_format_t format) {
    kstate_kv_options_t o;
    CHECK_OK(kstate_kv_options_init(&o, sizeof o));
    o.value_format = format;
    kstate_kv_t *s = NULL;
    CHECK_OK(kstate_kv_open(path, &o, &s));
    return s;
}

/* A plain store of g_n entries committed at offset 42 with metadata "meta"; the model
 * shows it as a timestamped store does (timestamp -1). */
static void make_plain_store(const char *path, model_t *m) {
    kstate_kv_t *s = open_format(path, KSTATE_FORMAT_PLAIN);
    char k[32], v[1300];
    for (int i = 0; i < g_n; i++) {
        key_of(i, k, sizeof k);
        plain_value(i, v, sizeof v);
        CHECK_OK(kstate_kv_put_raw(s, KEY(k), KEY(v)));
        model_set(m, i, v, -1);
    }
    kstate_offset_t off = {"swap-changelog", 0, 42, true};
    CHECK_OK(kstate_kv_commit(s, &off, 1, (const uint8_t *)"meta", 4));
    CHECK_OK(kstate_kv_close(s));
}

static bool upgrading(kstate_kv_t *s) {
    bool u = true;
    CHECK_OK(kstate_kv_is_upgrading(s, &u));
    return u;
}

/* Every entry of the store in `isolation` equals the model (plus at most `extra_key`,
 * which must then hold `extra_value` with timestamp `extra_ts`). */
static void expect_model(kstate_kv_t *s, kstate_isolation_t isolation, const model_t *m,
                         const char *extra_key, const char *extra_value, int64_t extra_ts) {
    kstate_kv_iter_t *it = NULL;
    CHECK_OK(kstate_kv_scan(s, isolation, NULL, 0, NULL, 0, false, &it));
    int next = 0; /* the next model index not yet matched */
    int seen = 0, expected = 0, extra_seen = 0;
    for (int i = 0; i < g_n; i++) {
        expected += m->values[i] != NULL;
    }
    char k[32];
    for (;;) {
        kstate_kv_batch_t b;
        CHECK_OK(kstate_kv_iter_next_batch(it, 512, 0, &b));
        if (b.len == 0) {
            break;
        }
        for (size_t j = 0; j < b.len; j++) {
            const kstate_kv_entry_t *e = &b.entries[j];
            if (extra_key != NULL && e->key_len == strlen(extra_key) &&
                memcmp(e->key, extra_key, e->key_len) == 0) {
                CHECK(e->value_len == strlen(extra_value) &&
                      memcmp(e->value, extra_value, e->value_len) == 0);
                CHECK(e->timestamp == extra_ts);
                extra_seen++;
                continue;
            }
            while (next < g_n && m->values[next] == NULL) {
                next++;
            }
            if (next >= g_n) {
                fprintf(stderr, "unexpected key %.*s\n", (int)e->key_len, (const char *)e->key);
                CHECK(0);
                continue;
            }
            key_of(next, k, sizeof k);
            if (e->key_len != strlen(k) || memcmp(e->key, k, e->key_len) != 0) {
                fprintf(stderr, "key %.*s where the model has %s\n", (int)e->key_len,
                        (const char *)e->key, k);
                CHECK(0);
            } else {
                const char *v = m->values[next];
                CHECK(e->value_len == strlen(v) && memcmp(e->value, v, e->value_len) == 0);
                CHECK(e->timestamp == m->timestamps[next]);
                CHECK(e->raw_value_len == e->value_len + 8);
            }
            next++;
            seen++;
        }
        kstate_kv_batch_free(&b);
    }
    CHECK_OK(kstate_kv_iter_close(it));
    CHECK(seen == expected);
    CHECK(extra_seen == (extra_key != NULL));
}

static void expect_offset(kstate_kv_t *s, int64_t expected) {
    int64_t o = 0;
    bool found = false;
    CHECK_OK(kstate_kv_committed_offset(s, "swap-changelog", 0, &o, &found));
    CHECK(found && o == expected);
}

/* What the progress callback saw and does. */
typedef struct {
    kstate_kv_t *store;
    int calls;
    uint64_t last_done, last_total;
    bool monotonic;
    bool reenter;         /* first call: a write and a nested swap into the same store */
    int32_t nested_code;  /* the nested swap's error code */
    bool close_on_first;  /* first call: close the store */
} progress_t;

static void on_progress(uint64_t done, uint64_t total, void *user_data) {
    progress_t *p = user_data;
    if (done > total || (p->calls > 0 && done <= p->last_done)) {
        p->monotonic = false;
    }
    p->calls++;
    p->last_done = done;
    p->last_total = total;
    if (p->calls == 1 && p->reenter) {
        CHECK_OK(kstate_kv_put(p->store, KEY("zz-from-callback"), KEY("cb"), 77));
        kstate_error_t *e = kstate_kv_upgrade_swap(p->store, on_progress, p);
        p->nested_code = kstate_error_code(e);
        kstate_error_free(e);
    }
    if (p->calls == 1 && p->close_on_first) {
        CHECK_OK(kstate_kv_close(p->store));
    }
}

static void test_upgrade_swap_against_model(void) {
    const char *p0 = fresh_path();
    char path[4200];
    snprintf(path, sizeof path, "%s", p0);
    model_t m;
    model_init(&m);
    make_plain_store(path, &m);

    kstate_kv_t *s = open_format(path, KSTATE_FORMAT_TIMESTAMPED);
    CHECK(upgrading(s));
    expect_model(s, KSTATE_READ_COMMITTED, &m, NULL, NULL, 0);
    /* Some keys migrate lazily before the swap: a put and a delete, committed. */
    char k[32];
    key_of(1, k, sizeof k);
    CHECK_OK(kstate_kv_put(s, KEY(k), KEY("early"), 11));
    model_set(&m, 1, "early", 11);
    key_of(2, k, sizeof k);
    kstate_bytes_t old;
    bool had = false;
    CHECK_OK(kstate_kv_delete_raw(s, KEY(k), &old, &had));
    CHECK(had);
    kstate_bytes_free(&old);
    model_set(&m, 2, NULL, 0);
    /* Refused while writes are uncommitted: nothing happens, progress is not called. */
    progress_t refused = {s, 0, 0, 0, true, false, 0, false};
    CHECK_ERR(kstate_kv_upgrade_swap(s, on_progress, &refused), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(refused.calls == 0);
    CHECK(upgrading(s));
    kstate_offset_t off = {"swap-changelog", 0, 43, true};
    CHECK_OK(kstate_kv_commit(s, &off, 1, NULL, 0));

    progress_t p = {s, 0, 0, 0, true, true, 0, false};
    CHECK_OK(kstate_kv_upgrade_swap(s, on_progress, &p));
    CHECK(p.calls > 1);
    CHECK(p.monotonic);
    CHECK(p.last_done == p.last_total);
    CHECK(p.last_done == (uint64_t)(g_n - 1)); /* every committed entry of the snapshot */
    CHECK(p.nested_code == KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(!upgrading(s));
    /* The write made from the callback is carried over, still uncommitted. */
    expect_model(s, KSTATE_READ_COMMITTED, &m, NULL, NULL, 0);
    expect_model(s, KSTATE_READ_UNCOMMITTED, &m, "zz-from-callback", "cb", 77);
    expect_offset(s, 43);
    kstate_bytes_t meta;
    bool has_meta = false;
    CHECK_OK(kstate_kv_committed_metadata(s, &meta, &has_meta));
    CHECK(has_meta && bytes_eq(meta, "meta"));
    kstate_bytes_free(&meta);
    /* A second swap has nothing to do. */
    progress_t again = {s, 0, 0, 0, true, false, 0, false};
    CHECK_OK(kstate_kv_upgrade_swap(s, on_progress, &again));
    CHECK(again.calls == 0);
    off.offset = 44;
    CHECK_OK(kstate_kv_commit(s, &off, 1, NULL, 0));
    CHECK_OK(kstate_kv_close(s));

    /* Reopened: regular mode, the same contents; it is no longer a plain store. */
    char side[4300];
    snprintf(side, sizeof side, "%s/.store-%d.kstate-swap", g_dir, g_seq - 1);
    CHECK(access(side, F_OK) != 0);
    s = open_format(path, KSTATE_FORMAT_TIMESTAMPED);
    CHECK(!upgrading(s));
    expect_model(s, KSTATE_READ_COMMITTED, &m, "zz-from-callback", "cb", 77);
    expect_offset(s, 44);
    CHECK_OK(kstate_kv_close(s));
    kstate_kv_t *plain = NULL;
    kstate_kv_options_t o;
    CHECK_OK(kstate_kv_options_init(&o, sizeof o));
    o.value_format = KSTATE_FORMAT_PLAIN;
    CHECK_ERR(kstate_kv_open(path, &o, &plain), KSTATE_ERR_FORMAT_MISMATCH);
    CHECK(plain == NULL);
    model_free(&m);
}

static void test_close_from_the_callback(void) {
    const char *p0 = fresh_path();
    char path[4200];
    snprintf(path, sizeof path, "%s", p0);
    model_t m;
    model_init(&m);
    make_plain_store(path, &m);
    kstate_kv_t *s = open_format(path, KSTATE_FORMAT_TIMESTAMPED);
    progress_t p = {s, 0, 0, 0, true, false, 0, true};
    CHECK_ERR(kstate_kv_upgrade_swap(s, on_progress, &p), KSTATE_ERR_STORE_CLOSED);
    CHECK(p.calls >= 1);
    CHECK_ERR(kstate_kv_close(s), KSTATE_ERR_STORE_CLOSED);
    /* The old store is live and whole; the next open removed the side directory. */
    s = open_format(path, KSTATE_FORMAT_TIMESTAMPED);
    CHECK(upgrading(s));
    expect_model(s, KSTATE_READ_COMMITTED, &m, NULL, NULL, 0);
    expect_offset(s, 42);
    /* NULL progress. */
    CHECK_OK(kstate_kv_upgrade_swap(s, NULL, NULL));
    CHECK(!upgrading(s));
    expect_model(s, KSTATE_READ_COMMITTED, &m, NULL, NULL, 0);
    CHECK_OK(kstate_kv_close(s));
    model_free(&m);
}

static void test_refusals(void) {
    /* Memory engine. */
    kstate_kv_options_t o;
    CHECK_OK(kstate_kv_options_init(&o, sizeof o));
    o.engine = KSTATE_ENGINE_MEMORY;
    kstate_kv_t *mem = NULL;
    CHECK_OK(kstate_kv_open(NULL, &o, &mem));
    CHECK_ERR(kstate_kv_upgrade_swap(mem, NULL, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_OK(kstate_kv_close(mem));
    /* Bad and closed handles. */
    CHECK_ERR(kstate_kv_upgrade_swap(NULL, NULL, NULL), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_kv_upgrade_swap(mem, NULL, NULL), KSTATE_ERR_STORE_CLOSED);
    bool u = true;
    CHECK_ERR(kstate_kv_is_upgrading(mem, &u), KSTATE_ERR_STORE_CLOSED);
    CHECK(!u);
    CHECK_ERR(kstate_kv_is_upgrading((kstate_kv_t *)(uintptr_t)0x5eed, &u),
              KSTATE_ERR_INVALID_HANDLE);
    /* A store in regular mode: nothing to do, progress not called. */
    kstate_kv_t *s = open_format(fresh_path(), KSTATE_FORMAT_TIMESTAMPED);
    CHECK_ERR(kstate_kv_is_upgrading(s, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(!upgrading(s));
    progress_t p = {s, 0, 0, 0, true, false, 0, false};
    CHECK_OK(kstate_kv_upgrade_swap(s, on_progress, &p));
    CHECK(p.calls == 0);
    CHECK_OK(kstate_kv_close(s));
}

int main(void) {
    make_scratch(g_dir, sizeof g_dir);
    g_n = getenv("KSTATE_TEST_SMALL") != NULL ? 9000 : 20000;
    RUN(test_upgrade_swap_against_model);
    RUN(test_close_from_the_callback);
    RUN(test_refusals);
    remove_tree(g_dir);
    return finish();
}
