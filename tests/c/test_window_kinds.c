/*
 * The window and session store kinds of options layout 2, written from the header alone,
 * on both engines: headers-format window and session stores (typed and raw calls against
 * Kafka's documented KIP-1271 layouts), time-ordered window stores with and without the
 * key index (the same windows as a regular store fed the same writes, in Kafka's time
 * order where it differs), a time-ordered session store's by-end query against a model,
 * layout-1 option structs (still accepted, the later fields at their defaults, nothing
 * written past them), and the values refused.
 */
#include "common.h"
#include "segmented_common.h"

static kstate_window_options_t wopts(kstate_engine_t engine, kstate_value_format_t format,
                                     bool time_ordered, bool key_index) {
    kstate_window_options_t o;
    CHECK_OK(kstate_window_options_init(&o, sizeof o));
    o.engine = engine;
    o.value_format = format;
    o.retention_ms = 100000; /* nothing in these tests expires */
    o.window_size_ms = 10;
    o.time_ordered = time_ordered;
    o.key_index = key_index;
    return o;
}

static kstate_session_options_t sopts(kstate_engine_t engine, kstate_value_format_t format,
                                      bool time_ordered) {
    kstate_session_options_t o;
    CHECK_OK(kstate_session_options_init(&o, sizeof o));
    o.engine = engine;
    o.value_format = format;
    o.retention_ms = 100000;
    o.time_ordered = time_ordered;
    return o;
}

static bool bytes_is(kstate_bytes_t b, const uint8_t *want, size_t len) {
    return b.len == len && (len == 0 || memcmp(b.ptr, want, len) == 0);
}

/* Kafka's ValueTimestampHeaders layout: [varint headersSize][headers][BE i64 ts][value]. */
static size_t vth(uint8_t *out, const uint8_t *headers, size_t headers_len, int64_t ts,
                  const char *value) {
    size_t n = 0;
    out[n++] = (uint8_t)(headers_len * 2); /* zig-zag varint; headers_len < 64 here */
    if (headers_len > 0) {
        memcpy(out + n, headers, headers_len);
    }
    n += headers_len;
    for (int i = 7; i >= 0; i--) {
        out[n++] = (uint8_t)((uint64_t)ts >> (8 * i));
    }
    memcpy(out + n, value, strlen(value));
    return n + strlen(value);
}

/* One header "h" = "x": [varint count 1][varint keyLen 1]["h"][varint valueLen 1]["x"]. */
static const uint8_t ONE_HEADER[5] = {0x02, 0x02, 'h', 0x02, 'x'};

static void test_headers_window(void) {
    for (int e = 0; e < 2; e++) {
        const char *path = fresh_path();
        kstate_window_options_t o = wopts(ENGINES[e], KSTATE_FORMAT_HEADERS, false, false);
        kstate_window_t *w = NULL;
        CHECK_OK(kstate_window_open(path, &o, &w));
        /* Typed put: no headers, as on a headers key-value store. */
        CHECK_OK(kstate_window_put(w, KEY("k"), (const uint8_t *)"v1", 2, 100, 0));
        /* Raw put with one header. */
        uint8_t raw[64];
        size_t raw_len = vth(raw, ONE_HEADER, sizeof ONE_HEADER, 200, "v2");
        CHECK_OK(kstate_window_put_raw(w, KEY("k"), raw, raw_len, 10));
        /* A malformed value (headers size 5, one byte left) is refused. */
        const uint8_t bad[2] = {0x0A, 0x01};
        CHECK_ERR(kstate_window_put_raw(w, KEY("k"), bad, sizeof bad, 20),
                  KSTATE_ERR_INVALID_VALUE);
        for (int iso = 0; iso < 2; iso++) {
            kstate_isolation_t isolation = iso ? KSTATE_READ_COMMITTED : KSTATE_READ_UNCOMMITTED;
            if (iso) {
                CHECK_OK(kstate_window_commit(w, NULL, 0, NULL, 0));
            }
            kstate_bytes_t v;
            int64_t ts;
            bool found;
            CHECK_OK(kstate_window_fetch(w, isolation, KEY("k"), 0, &v, &ts, &found));
            CHECK(found && bytes_eq(v, "v1") && ts == 100);
            kstate_bytes_free(&v);
            CHECK_OK(kstate_window_fetch(w, isolation, KEY("k"), 10, &v, &ts, &found));
            CHECK(found && bytes_eq(v, "v2") && ts == 200);
            kstate_bytes_free(&v);
            CHECK_OK(kstate_window_fetch(w, isolation, KEY("k"), 20, &v, &ts, &found));
            CHECK(!found);
            /* Raw reads return the whole layout. */
            uint8_t want[64];
            size_t want_len = vth(want, NULL, 0, 100, "v1");
            CHECK_OK(kstate_window_fetch_raw(w, isolation, KEY("k"), 0, &v, &found));
            CHECK(found && bytes_is(v, want, want_len));
            kstate_bytes_free(&v);
            CHECK_OK(kstate_window_fetch_raw(w, isolation, KEY("k"), 10, &v, &found));
            CHECK(found && bytes_is(v, raw, raw_len));
            kstate_bytes_free(&v);
            CHECK_OK(kstate_window_fetch_raw(w, isolation, KEY("k"), 30, &v, &found));
            CHECK(!found && v.ptr == NULL);
            /* Iterators return value and timestamp, the headers dropped. */
            kstate_window_iter_t *it = NULL;
            CHECK_OK(kstate_window_fetch_range(w, isolation, KEY("k"), 0, 100, &it));
            const char *values[2] = {"v1", "v2"};
            const int64_t stamps[2] = {100, 200};
            int n = 0;
            for (;;) {
                kstate_bytes_t k;
                int64_t start, end;
                CHECK_OK(kstate_window_iter_next(it, &k, &v, &ts, &start, &end, &found));
                if (!found) {
                    break;
                }
                if (n < 2) {
                    CHECK(bytes_eq(k, "k") && bytes_eq(v, values[n]) && ts == stamps[n]);
                    CHECK(start == n * 10 && end == start + 10);
                }
                n++;
                kstate_bytes_free(&k);
                kstate_bytes_free(&v);
            }
            CHECK(n == 2);
            CHECK_OK(kstate_window_iter_close(it));
        }
        CHECK_OK(kstate_window_close(w));
        if (ENGINES[e] == KSTATE_ENGINE_ROCKSDB) {
            /* Reopened in another layout: refused; in its own: the data is there. */
            kstate_window_options_t other =
                wopts(ENGINES[e], KSTATE_FORMAT_TIMESTAMPED, false, false);
            CHECK_ERR(kstate_window_open(path, &other, &w), KSTATE_ERR_FORMAT_MISMATCH);
            CHECK(w == NULL);
            CHECK_OK(kstate_window_open(path, &o, &w));
            kstate_bytes_t v;
            bool found;
            CHECK_OK(kstate_window_fetch_raw(w, KSTATE_READ_COMMITTED, KEY("k"), 10, &v, &found));
            CHECK(found && bytes_is(v, raw, raw_len));
            kstate_bytes_free(&v);
            CHECK_OK(kstate_window_close(w));
        }
    }
}

static void test_headers_session(void) {
    for (int e = 0; e < 2; e++) {
        const char *path = fresh_path();
        kstate_session_options_t o = sopts(ENGINES[e], KSTATE_FORMAT_HEADERS, false);
        kstate_session_t *s = NULL;
        CHECK_OK(kstate_session_open(path, &o, &s));
        /* AggregationWithHeaders: [varint headersSize][headers][aggregation]. */
        const uint8_t none[4] = {0x00, 'a', 'g', 'g'};
        uint8_t one[16];
        one[0] = 0x0A;
        memcpy(one + 1, ONE_HEADER, sizeof ONE_HEADER);
        memcpy(one + 6, "agg2", 4);
        CHECK_OK(kstate_session_put(s, KEY("k"), 0, 5, none, sizeof none));
        CHECK_OK(kstate_session_put(s, KEY("k"), 10, 15, one, 10));
        const uint8_t bad[2] = {0x0A, 0x01};
        CHECK_ERR(kstate_session_put(s, KEY("k"), 20, 25, bad, sizeof bad),
                  KSTATE_ERR_INVALID_VALUE);
        CHECK_OK(kstate_session_commit(s, NULL, 0, NULL, 0));
        kstate_bytes_t agg;
        bool found;
        CHECK_OK(kstate_session_fetch_session(s, KSTATE_READ_COMMITTED, KEY("k"), 10, 15, &agg,
                                              &found));
        CHECK(found && bytes_is(agg, one, 10));
        kstate_bytes_free(&agg);
        kstate_session_iter_t *it = NULL;
        CHECK_OK(kstate_session_fetch(s, KSTATE_READ_UNCOMMITTED, KEY("k"), &it));
        int n = 0;
        for (;;) {
            kstate_bytes_t k;
            int64_t start, end;
            CHECK_OK(kstate_session_iter_next(it, &k, &agg, &start, &end, &found));
            if (!found) {
                break;
            }
            CHECK(bytes_eq(k, "k") && start == n * 10 && end == start + 5);
            CHECK(n == 0 ? bytes_is(agg, none, sizeof none) : bytes_is(agg, one, 10));
            n++;
            kstate_bytes_free(&k);
            kstate_bytes_free(&agg);
        }
        CHECK(n == 2);
        CHECK_OK(kstate_session_iter_close(it));
        CHECK_OK(kstate_session_close(s));
        if (ENGINES[e] == KSTATE_ENGINE_ROCKSDB) {
            kstate_session_options_t plain = sopts(ENGINES[e], KSTATE_FORMAT_PLAIN, false);
            CHECK_ERR(kstate_session_open(path, &plain, &s), KSTATE_ERR_FORMAT_MISMATCH);
            CHECK(s == NULL);
            /* And a plain store does not open as headers. */
            const char *p2 = fresh_path();
            CHECK_OK(kstate_session_open(p2, &plain, &s));
            CHECK_OK(kstate_session_close(s));
            CHECK_ERR(kstate_session_open(p2, &o, &s), KSTATE_ERR_FORMAT_MISMATCH);
        }
    }
}

/* ----- time-ordered window stores ------------------------------------------------------ */

typedef struct {
    char key[4];
    int64_t start;
    char value[16];
    int64_t ts;
} wrow_t;

#define MAX_ROWS 512

static int drain_windows(kstate_window_iter_t *it, wrow_t *rows) {
    int n = 0;
    for (;;) {
        kstate_bytes_t k, v;
        int64_t ts, start, end;
        bool found;
        CHECK_OK(kstate_window_iter_next(it, &k, &v, &ts, &start, &end, &found));
        if (!found) {
            break;
        }
        if (n < MAX_ROWS && k.len < sizeof rows[n].key && v.len < sizeof rows[n].value) {
            memset(&rows[n], 0, sizeof rows[n]);
            memcpy(rows[n].key, k.ptr, k.len);
            memcpy(rows[n].value, v.ptr, v.len);
            rows[n].start = start;
            rows[n].ts = ts;
            CHECK(end == start + 10);
            n++;
        } else {
            CHECK(false);
        }
        kstate_bytes_free(&k);
        kstate_bytes_free(&v);
    }
    CHECK_OK(kstate_window_iter_close(it));
    return n;
}

/* Kafka's time order: start, then key bytes (no duplicates here). */
static int by_time(const void *pa, const void *pb) {
    const wrow_t *a = pa, *b = pb;
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    return key_cmp(a->key, b->key);
}

/* Kafka's key-first order within one segment: key bytes, then start. */
static int by_key(const void *pa, const void *pb) {
    const wrow_t *a = pa, *b = pb;
    int c = key_cmp(a->key, b->key);
    if (c != 0) {
        return c;
    }
    return a->start < b->start ? -1 : (a->start > b->start ? 1 : 0);
}

static bool same_rows(const wrow_t *a, int na, const wrow_t *b, int nb) {
    if (na != nb) {
        return false;
    }
    for (int i = 0; i < na; i++) {
        if (strcmp(a[i].key, b[i].key) != 0 || a[i].start != b[i].start ||
            strcmp(a[i].value, b[i].value) != 0 || a[i].ts != b[i].ts) {
            return false;
        }
    }
    return true;
}

static wrow_t g_a[MAX_ROWS], g_b[MAX_ROWS];

static void time_ordered_window_run(kstate_engine_t engine, bool key_index, uint64_t seed) {
    g_rng = seed;
    kstate_window_options_t ro = wopts(engine, KSTATE_FORMAT_TIMESTAMPED, false, false);
    kstate_window_options_t to = wopts(engine, KSTATE_FORMAT_TIMESTAMPED, true, key_index);
    const char *tpath = fresh_path();
    kstate_window_t *reg = NULL, *tim = NULL;
    CHECK_OK(kstate_window_open(fresh_path(), &ro, &reg));
    CHECK_OK(kstate_window_open(tpath, &to, &tim));
    int rounds = getenv("KSTATE_TEST_SMALL") != NULL ? 120 : 300;
    for (int i = 0; i < rounds; i++) {
        const char *key = KEYS[rnd(4)];
        int64_t start = rnd(40) * 10; /* one segment: Kafka's default interval is 60 s */
        char value[16];
        snprintf(value, sizeof value, "v%d", i);
        bool del = rnd(6) == 0;
        for (int s = 0; s < 2; s++) {
            kstate_window_t *w = s ? tim : reg;
            if (del) {
                CHECK_OK(kstate_window_put_raw(w, KEY(key), NULL, 0, start));
            } else {
                CHECK_OK(kstate_window_put(w, KEY(key), (const uint8_t *)value, strlen(value),
                                           1000 + i, start));
            }
        }
        if (i == rounds / 2) {
            CHECK_OK(kstate_window_commit(reg, NULL, 0, NULL, 0));
            CHECK_OK(kstate_window_commit(tim, NULL, 0, NULL, 0));
        }
    }
    for (int iso = 0; iso < 2; iso++) {
        kstate_isolation_t isolation = iso ? KSTATE_READ_COMMITTED : KSTATE_READ_UNCOMMITTED;
        kstate_window_iter_t *it;
        int na, nb;
        /* One key: by start in both. */
        for (int k = 0; k < 4; k++) {
            CHECK_OK(kstate_window_fetch_range(reg, isolation, KEY(KEYS[k]), 0, 1000, &it));
            na = drain_windows(it, g_a);
            CHECK_OK(kstate_window_fetch_range(tim, isolation, KEY(KEYS[k]), 0, 1000, &it));
            nb = drain_windows(it, g_b);
            CHECK(na > 0 && same_rows(g_a, na, g_b, nb));
            for (int64_t start = 0; start < 400; start += 10) {
                kstate_bytes_t va, vb;
                int64_t ta, tb;
                bool fa, fb;
                CHECK_OK(kstate_window_fetch(reg, isolation, KEY(KEYS[k]), start, &va, &ta, &fa));
                CHECK_OK(kstate_window_fetch(tim, isolation, KEY(KEYS[k]), start, &vb, &tb, &fb));
                CHECK(fa == fb && ta == tb && va.len == vb.len &&
                      (va.len == 0 || memcmp(va.ptr, vb.ptr, va.len) == 0));
                kstate_bytes_free(&va);
                kstate_bytes_free(&vb);
            }
        }
        /* Key range: key-first with the key index, else by time. */
        CHECK_OK(kstate_window_fetch_key_range(reg, isolation, KEY("b"), KEY("c"), 50, 300, &it));
        na = drain_windows(it, g_a);
        CHECK_OK(kstate_window_fetch_key_range(tim, isolation, KEY("b"), KEY("c"), 50, 300, &it));
        nb = drain_windows(it, g_b);
        /* (the regular store answers by start on the memory engine, by key on RocksDB) */
        qsort(g_a, (size_t)na, sizeof g_a[0], key_index ? by_key : by_time);
        CHECK(na > 0 && same_rows(g_a, na, g_b, nb));
        /* fetch_all and all: by time. */
        CHECK_OK(kstate_window_fetch_all(reg, isolation, 100, 250, &it));
        na = drain_windows(it, g_a);
        CHECK_OK(kstate_window_fetch_all(tim, isolation, 100, 250, &it));
        nb = drain_windows(it, g_b);
        qsort(g_a, (size_t)na, sizeof g_a[0], by_time);
        CHECK(na > 0 && same_rows(g_a, na, g_b, nb));
        CHECK_OK(kstate_window_all(reg, isolation, &it));
        na = drain_windows(it, g_a);
        CHECK_OK(kstate_window_backward_all(tim, isolation, &it));
        nb = drain_windows(it, g_b);
        qsort(g_a, (size_t)na, sizeof g_a[0], by_time);
        for (int i = 0; i < nb / 2; i++) { /* backward: the reverse of time order */
            wrow_t t = g_b[i];
            g_b[i] = g_b[nb - 1 - i];
            g_b[nb - 1 - i] = t;
        }
        CHECK(na > 0 && same_rows(g_a, na, g_b, nb));
    }
    CHECK_OK(kstate_window_close(reg));
    CHECK_OK(kstate_window_close(tim));
    if (engine == KSTATE_ENGINE_ROCKSDB) {
        /* Time order is fixed at creation, both ways. */
        CHECK_ERR(kstate_window_open(tpath, &ro, &tim), KSTATE_ERR_FORMAT_MISMATCH);
        CHECK(tim == NULL);
        const char *rpath = fresh_path();
        CHECK_OK(kstate_window_open(rpath, &ro, &reg));
        CHECK_OK(kstate_window_close(reg));
        CHECK_ERR(kstate_window_open(rpath, &to, &reg), KSTATE_ERR_FORMAT_MISMATCH);
    }
}

static void test_time_ordered_window(void) {
    for (int e = 0; e < 2; e++) {
        time_ordered_window_run(ENGINES[e], false, 11 + (uint64_t)e);
        time_ordered_window_run(ENGINES[e], true, 21 + (uint64_t)e);
    }
}

/* ----- time-ordered session stores ------------------------------------------------------ */

typedef struct {
    int key;
    int64_t start, end;
    char agg[16];
    bool live;
} srow_t;

static srow_t g_sess[MAX_ROWS];
static int g_nsess;

/* Kafka's by-end order: end, then start, then key bytes. */
static int by_end(const void *pa, const void *pb) {
    const srow_t *a = pa, *b = pb;
    if (a->end != b->end) {
        return a->end < b->end ? -1 : 1;
    }
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    return key_cmp(KEYS[a->key], KEYS[b->key]);
}

/* Drains a by-end iterator against the model's live (or committed) sessions. */
static void expect_by_end(kstate_session_iter_t *it, const srow_t *model, int nmodel,
                          int64_t lo, int64_t hi) {
    int got = 0;
    int idx = 0;
    for (;;) {
        kstate_bytes_t k, agg;
        int64_t start, end;
        bool found;
        CHECK_OK(kstate_session_iter_next(it, &k, &agg, &start, &end, &found));
        if (!found) {
            break;
        }
        while (idx < nmodel && !(model[idx].live && model[idx].end >= lo && model[idx].end <= hi)) {
            idx++;
        }
        if (idx < nmodel) {
            const srow_t *m = &model[idx++];
            CHECK(bytes_eq(k, KEYS[m->key]) && start == m->start && end == m->end &&
                  bytes_eq(agg, m->agg));
        } else {
            CHECK(false); /* more sessions than the model */
        }
        got++;
        kstate_bytes_free(&k);
        kstate_bytes_free(&agg);
    }
    while (idx < nmodel && !(model[idx].live && model[idx].end >= lo && model[idx].end <= hi)) {
        idx++;
    }
    CHECK(idx == nmodel); /* none missing */
    (void)got;
    CHECK_OK(kstate_session_iter_close(it));
}

static srow_t g_committed[MAX_ROWS];
static int g_ncommitted;

static void time_ordered_session_run(kstate_engine_t engine, kstate_value_format_t format,
                                     uint64_t seed) {
    g_rng = seed;
    g_nsess = 0;
    g_ncommitted = 0;
    kstate_session_options_t o = sopts(engine, format, true);
    const char *path = fresh_path();
    kstate_session_t *s = NULL;
    CHECK_OK(kstate_session_open(path, &o, &s));
    int rounds = getenv("KSTATE_TEST_SMALL") != NULL ? 120 : 300;
    for (int i = 0; i < rounds && g_nsess < MAX_ROWS; i++) {
        int key = (int)rnd(4);
        int64_t start = rnd(50) * 10;
        int64_t end = start + rnd(4) * 5;
        srow_t *slot = NULL;
        for (int j = 0; j < g_nsess; j++) {
            if (g_sess[j].key == key && g_sess[j].start == start && g_sess[j].end == end) {
                slot = &g_sess[j];
            }
        }
        if (slot == NULL) {
            slot = &g_sess[g_nsess++];
            slot->key = key;
            slot->start = start;
            slot->end = end;
        }
        if (rnd(5) == 0) {
            CHECK_OK(kstate_session_remove(s, KEY(KEYS[key]), start, end));
            slot->live = false;
        } else {
            /* In the headers format: no headers, a 0x00 prefix (AggregationWithHeaders). */
            char agg[16];
            int at = format == KSTATE_FORMAT_HEADERS ? 1 : 0;
            agg[0] = 0;
            int n = at + snprintf(agg + at, sizeof agg - 1, "a%d", i);
            CHECK_OK(kstate_session_put(s, KEY(KEYS[key]), start, end, (const uint8_t *)agg,
                                        (size_t)n));
            /* The model keeps the aggregate as a C string: skip the 0x00 prefix there. */
            snprintf(slot->agg, sizeof slot->agg, "a%d", i);
            slot->live = true;
        }
        if (i == rounds / 2) {
            CHECK_OK(kstate_session_commit(s, NULL, 0, NULL, 0));
            memcpy(g_committed, g_sess, sizeof g_sess[0] * (size_t)g_nsess);
            g_ncommitted = g_nsess;
        }
    }
    qsort(g_sess, (size_t)g_nsess, sizeof g_sess[0], by_end);
    qsort(g_committed, (size_t)g_ncommitted, sizeof g_committed[0], by_end);
    if (format == KSTATE_FORMAT_HEADERS) {
        /* Compare the aggregations: the model's strings are what follows the 0x00. */
        CHECK_OK(kstate_session_commit(s, NULL, 0, NULL, 0));
        kstate_session_iter_t *it;
        CHECK_OK(kstate_session_find_sessions_by_end(s, KSTATE_READ_COMMITTED, 0, INT64_MAX, &it));
        int n = 0;
        for (;;) {
            kstate_bytes_t k, agg;
            int64_t start, end;
            bool found;
            CHECK_OK(kstate_session_iter_next(it, &k, &agg, &start, &end, &found));
            if (!found) {
                break;
            }
            while (n < g_nsess && !g_sess[n].live) {
                n++;
            }
            CHECK(n < g_nsess && agg.len >= 1 && agg.ptr[0] == 0 &&
                  agg.len - 1 == strlen(g_sess[n].agg) &&
                  memcmp(agg.ptr + 1, g_sess[n].agg, agg.len - 1) == 0 &&
                  bytes_eq(k, KEYS[g_sess[n].key]) && start == g_sess[n].start &&
                  end == g_sess[n].end);
            n++;
            kstate_bytes_free(&k);
            kstate_bytes_free(&agg);
        }
        CHECK_OK(kstate_session_iter_close(it));
    } else {
        const int64_t ranges[5][2] = {{0, INT64_MAX}, {100, 200}, {205, 205}, {300, 250},
                                      {-50, 40}};
        for (int r = 0; r < 5; r++) {
            kstate_session_iter_t *it = (kstate_session_iter_t *)1;
            CHECK_OK(kstate_session_find_sessions_by_end(s, KSTATE_READ_UNCOMMITTED, ranges[r][0],
                                                         ranges[r][1], &it));
            expect_by_end(it, g_sess, g_nsess, ranges[r][0], ranges[r][1]);
            CHECK_OK(kstate_session_find_sessions_by_end(s, KSTATE_READ_COMMITTED, ranges[r][0],
                                                         ranges[r][1], &it));
            expect_by_end(it, g_committed, g_ncommitted, ranges[r][0], ranges[r][1]);
        }
    }
    kstate_session_iter_t *it = (kstate_session_iter_t *)1;
    CHECK_ERR(kstate_session_find_sessions_by_end(s, 9, 0, 10, &it), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(it == NULL);
    CHECK_ERR(kstate_session_find_sessions_by_end(s, KSTATE_READ_COMMITTED, 0, 10, NULL),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_OK(kstate_session_close(s));
    if (engine == KSTATE_ENGINE_ROCKSDB) {
        kstate_session_options_t regular = sopts(engine, format, false);
        CHECK_ERR(kstate_session_open(path, &regular, &s), KSTATE_ERR_FORMAT_MISMATCH);
        CHECK(s == NULL);
    }
}

static void test_time_ordered_session(void) {
    for (int e = 0; e < 2; e++) {
        time_ordered_session_run(ENGINES[e], KSTATE_FORMAT_PLAIN, 31 + (uint64_t)e);
        time_ordered_session_run(ENGINES[e], KSTATE_FORMAT_HEADERS, 41 + (uint64_t)e);
    }
    /* A regular session store does not answer the by-end query (as Kafka's). */
    kstate_session_options_t o = sopts(KSTATE_ENGINE_MEMORY, KSTATE_FORMAT_PLAIN, false);
    kstate_session_t *s = NULL;
    CHECK_OK(kstate_session_open(NULL, &o, &s));
    kstate_session_iter_t *it = (kstate_session_iter_t *)1;
    CHECK_ERR(kstate_session_find_sessions_by_end(s, KSTATE_READ_COMMITTED, 0, 10, &it),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(it == NULL);
    CHECK_OK(kstate_session_close(s));
    CHECK_ERR(kstate_session_find_sessions_by_end(NULL, KSTATE_READ_COMMITTED, 0, 10, &it),
              KSTATE_ERR_INVALID_HANDLE);
}

/* ----- layout-1 callers and refused values ----------------------------------------------- */

static bool untouched_from(const void *p, size_t from, size_t to, unsigned char byte) {
    const unsigned char *b = p;
    for (size_t i = from; i < to; i++) {
        if (b[i] != byte) {
            return false;
        }
    }
    return true;
}

static void test_layout_1_options(void) {
    CHECK(sizeof(kstate_window_options_t) == KSTATE_WINDOW_OPTIONS_SIZE_V2);
    CHECK(sizeof(kstate_session_options_t) == KSTATE_SESSION_OPTIONS_SIZE_V2);
    /* A layout-1 caller: init writes its bytes only. */
    kstate_window_options_t w1;
    memset(&w1, 0xAB, sizeof w1);
    CHECK_OK(kstate_window_options_init(&w1, KSTATE_WINDOW_OPTIONS_SIZE_V1));
    CHECK(w1.struct_size == KSTATE_WINDOW_OPTIONS_SIZE_V1);
    CHECK(w1.value_format == KSTATE_FORMAT_TIMESTAMPED && w1.retention_ms == 86400000);
    CHECK(untouched_from(&w1, KSTATE_WINDOW_OPTIONS_SIZE_V1, sizeof w1, 0xAB));
    kstate_session_options_t s1;
    memset(&s1, 0xAB, sizeof s1);
    CHECK_OK(kstate_session_options_init(&s1, KSTATE_SESSION_OPTIONS_SIZE_V1));
    CHECK(s1.struct_size == KSTATE_SESSION_OPTIONS_SIZE_V1 && s1.retention_ms == 86400000);
    CHECK(untouched_from(&s1, KSTATE_SESSION_OPTIONS_SIZE_V1, sizeof s1, 0xAB));
    /* ... and the library does not read past them: values there that would be refused
       (key_index without time order, a timestamped session store) are not seen. */
    w1.time_ordered = false;
    w1.key_index = true;
    s1.value_format = KSTATE_FORMAT_TIMESTAMPED;
    s1.time_ordered = true;
    const char *wpath = fresh_path(), *spath = fresh_path();
    kstate_window_t *w = NULL;
    CHECK_OK(kstate_window_open(wpath, &w1, &w));
    CHECK_OK(kstate_window_put(w, KEY("k"), (const uint8_t *)"v", 1, 5, 0)); /* timestamped */
    CHECK_OK(kstate_window_commit(w, NULL, 0, NULL, 0));
    CHECK_OK(kstate_window_close(w));
    kstate_session_t *s = NULL;
    CHECK_OK(kstate_session_open(spath, &s1, &s));
    CHECK_OK(kstate_session_put(s, KEY("k"), 0, 5, (const uint8_t *)"agg", 3)); /* plain */
    kstate_session_iter_t *it = NULL;
    CHECK_ERR(kstate_session_find_sessions_by_end(s, KSTATE_READ_UNCOMMITTED, 0, 10, &it),
              KSTATE_ERR_INVALID_ARGUMENT); /* not time-ordered */
    CHECK_OK(kstate_session_commit(s, NULL, 0, NULL, 0));
    CHECK_OK(kstate_session_close(s));
    /* They were created regular: a time-ordered open is refused, a regular one works. */
    kstate_window_options_t w2 =
        wopts(KSTATE_ENGINE_ROCKSDB, KSTATE_FORMAT_TIMESTAMPED, true, false);
    CHECK_ERR(kstate_window_open(wpath, &w2, &w), KSTATE_ERR_FORMAT_MISMATCH);
    w2.time_ordered = false;
    CHECK_OK(kstate_window_open(wpath, &w2, &w));
    CHECK_OK(kstate_window_close(w));
    kstate_session_options_t s2 = sopts(KSTATE_ENGINE_ROCKSDB, KSTATE_FORMAT_PLAIN, true);
    CHECK_ERR(kstate_session_open(spath, &s2, &s), KSTATE_ERR_FORMAT_MISMATCH);
    s2.time_ordered = false;
    CHECK_OK(kstate_session_open(spath, &s2, &s));
    CHECK_OK(kstate_session_close(s));
}

static void test_refused_values(void) {
    kstate_window_t *w = (kstate_window_t *)1;
    kstate_window_options_t o = wopts(KSTATE_ENGINE_MEMORY, KSTATE_FORMAT_TIMESTAMPED, false, true);
    CHECK_ERR(kstate_window_open(NULL, &o, &w), KSTATE_ERR_INVALID_ARGUMENT); /* index, no order */
    CHECK(w == NULL);
    o = wopts(KSTATE_ENGINE_MEMORY, 3, false, false);
    CHECK_ERR(kstate_window_open(NULL, &o, &w), KSTATE_ERR_INVALID_ARGUMENT);
    o = wopts(KSTATE_ENGINE_MEMORY, KSTATE_FORMAT_TIMESTAMPED, false, false);
    o.struct_size = KSTATE_WINDOW_OPTIONS_SIZE_V1 + 4;
    CHECK_ERR(kstate_window_open(NULL, &o, &w), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_options_init(&o, KSTATE_WINDOW_OPTIONS_SIZE_V2 + 8),
              KSTATE_ERR_INVALID_ARGUMENT);
    kstate_session_t *s = (kstate_session_t *)1;
    kstate_session_options_t so = sopts(KSTATE_ENGINE_MEMORY, KSTATE_FORMAT_TIMESTAMPED, false);
    CHECK_ERR(kstate_session_open(NULL, &so, &s), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    so = sopts(KSTATE_ENGINE_MEMORY, 3, true);
    CHECK_ERR(kstate_session_open(NULL, &so, &s), KSTATE_ERR_INVALID_ARGUMENT);
    so = sopts(KSTATE_ENGINE_MEMORY, KSTATE_FORMAT_PLAIN, false);
    so.struct_size = KSTATE_SESSION_OPTIONS_SIZE_V1 + 4;
    CHECK_ERR(kstate_session_open(NULL, &so, &s), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_session_options_init(&so, KSTATE_SESSION_OPTIONS_SIZE_V2 + 8),
              KSTATE_ERR_INVALID_ARGUMENT);
    /* The typed put of a plain window store is still refused (use the raw one). */
    o = wopts(KSTATE_ENGINE_MEMORY, KSTATE_FORMAT_PLAIN, false, false);
    CHECK_OK(kstate_window_open(NULL, &o, &w));
    CHECK_ERR(kstate_window_put(w, KEY("k"), (const uint8_t *)"v", 1, 5, 0),
              KSTATE_ERR_FORMAT_MISMATCH);
    kstate_bytes_t v;
    bool found = true;
    CHECK_ERR(kstate_window_fetch_raw(w, 9, KEY("k"), 0, &v, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(!found && v.ptr == NULL);
    CHECK_ERR(kstate_window_fetch_raw(w, KSTATE_READ_COMMITTED, KEY("k"), 0, NULL, &found),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_OK(kstate_window_close(w));
    CHECK_ERR(kstate_window_fetch_raw(w, KSTATE_READ_COMMITTED, KEY("k"), 0, &v, &found),
              KSTATE_ERR_STORE_CLOSED);
}

int main(void) {
    make_scratch(g_dir, sizeof g_dir);
    RUN(test_headers_window);
    RUN(test_headers_session);
    RUN(test_time_ordered_window);
    RUN(test_time_ordered_session);
    RUN(test_layout_1_options);
    RUN(test_refused_values);
    remove_tree(g_dir);
    return finish();
}
