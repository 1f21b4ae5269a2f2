/*
 * The versioned key-value store functions of include/kstate.h (Kafka's
 * VersionedKeyValueStore), written from the header alone, on both engines: random puts,
 * tombstones, deletes, commits and rollbacks checked against a small model of Kafka's
 * semantics written here (every put's return code, every delete's result, get, get as of,
 * the multi-version query both ways, at both isolations, the stream time); Kafka's
 * documented cases; commit, restore and reopen; every misuse of the boundary; and a SIGKILL
 * loop (a child writes and commits versions, the parent kills it at random moments, reopens
 * the store and compares it with the model of the last commit).
 *
 * Usage: test_versioned            (KSTATE_CRASH_SEED=n reproduces the crash loop)
 *        test_versioned --child P  (internal: the crash loop's writer)
 */
#include "common.h"

static char g_dir[4096];
static int g_seq;

/* A new store path (valid until the next call). */
static const char *fresh_path(void) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/store-%d", g_dir, g_seq++);
    return path;
}

/* Deterministic pseudo-random numbers, so a failure replays. */
static uint64_t g_rng;
static int64_t rnd(int64_t n) {
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int64_t)((g_rng >> 33) % (uint64_t)n);
}

static kstate_versioned_options_t vopts(kstate_engine_t engine, int64_t retention,
                                        int64_t interval) {
    kstate_versioned_options_t o;
    CHECK_OK(kstate_versioned_options_init(&o, sizeof o));
    o.engine = engine;
    o.history_retention_ms = retention;
    o.segment_interval_ms = interval;
    return o;
}

/* ----- the model of Kafka's semantics ------------------------------------------------------
 * A key's versions are its writes in timestamp order (a tombstone is a version without a
 * value; a write at an existing timestamp replaces that version). A version is valid until
 * the next one's timestamp; the newest version with a value is the latest value. With
 * stream time T and history retention R, a write older than T - R is refused, a read as of
 * a time older than T - R sees only the latest value, and the multi-version query keeps the
 * history versions that end at or after the start of the segment holding T - R (Kafka drops
 * history segment by segment). Versions that end before that segment can never be read
 * again and are pruned. Kafka forgets a tombstone written at exactly the latest value's timestamp
 * (test_kafka_cases); the random runs never write one, so the model need not. */

#define MAXEV 256
#define VLEN 24

typedef struct {
    int64_t ts;
    bool has_value;
    char value[VLEN];
} ev_t;

typedef struct {
    int n;
    ev_t ev[MAXEV];
} mkey_t;

typedef struct {
    int64_t stream_time;
    int64_t retention, interval;
    int nkeys;
    mkey_t *keys;
} model_t;

/* One version as the store returns it. */
typedef struct {
    char value[VLEN];
    int64_t ts, valid_to;
    bool has_valid_to;
} ver_t;

static int64_t cutoff(const model_t *m) {
    return m->stream_time - m->retention;
}

static int64_t live_from(const model_t *m) {
    return cutoff(m) / m->interval * m->interval;
}

/* The index of the newest version at or before t, or -1. */
static int at_or_before(const mkey_t *k, int64_t t) {
    int i = k->n - 1;
    while (i >= 0 && k->ev[i].ts > t) {
        i--;
    }
    return i;
}

static bool version_at(const mkey_t *k, int i, ver_t *out) {
    if (i < 0 || !k->ev[i].has_value) {
        return false;
    }
    snprintf(out->value, sizeof out->value, "%s", k->ev[i].value);
    out->ts = k->ev[i].ts;
    out->has_valid_to = i + 1 < k->n;
    out->valid_to = out->has_valid_to ? k->ev[i + 1].ts : 0;
    return true;
}

/* Kafka's get(key): the latest value. */
static bool model_get(const model_t *m, int key, ver_t *out) {
    const mkey_t *k = &m->keys[key];
    return version_at(k, k->n - 1, out);
}

/* Kafka's get(key, asOf). */
static bool model_as_of(const model_t *m, int key, int64_t as_of, ver_t *out) {
    const mkey_t *k = &m->keys[key];
    if (as_of < cutoff(m)) {
        return model_get(m, key, out) && out->ts <= as_of;
    }
    return version_at(k, at_or_before(k, as_of), out);
}

/* Kafka's put(key, value, timestamp) (value NULL: a tombstone); returns its code. */
static int64_t model_put(model_t *m, int key, const char *value, int64_t ts) {
    if (ts < cutoff(m)) {
        return KSTATE_VERSIONED_NOT_PUT;
    }
    if (ts > m->stream_time) {
        m->stream_time = ts;
    }
    mkey_t *k = &m->keys[key];
    int i = at_or_before(k, ts);
    if (i < 0 || k->ev[i].ts != ts) {
        i++;
        if (k->n == MAXEV) {
            fprintf(stderr, "model: too many versions\n");
            exit(2);
        }
        memmove(&k->ev[i + 1], &k->ev[i], (size_t)(k->n - i) * sizeof k->ev[0]);
        k->n++;
        k->ev[i].ts = ts;
    }
    k->ev[i].has_value = value != NULL;
    snprintf(k->ev[i].value, VLEN, "%s", value != NULL ? value : "");
    int64_t code = i + 1 < k->n ? k->ev[i + 1].ts : KSTATE_VERSIONED_VALID_TO_UNDEFINED;
    /* Versions ending before the live segments are never read again. */
    while (k->n >= 2 && k->ev[1].ts < live_from(m)) {
        memmove(&k->ev[0], &k->ev[1], (size_t)(k->n - 1) * sizeof k->ev[0]);
        k->n--;
    }
    return code;
}

/* Kafka's delete(key, timestamp): the version valid at timestamp before the tombstone. */
static bool model_delete(model_t *m, int key, int64_t ts, ver_t *out) {
    if (ts < cutoff(m)) {
        return false;
    }
    bool found = model_as_of(m, key, ts, out);
    model_put(m, key, NULL, ts);
    return found;
}

/* The multi-version query, ascending; returns the count. */
static int model_versions(const model_t *m, int key, int64_t from, int64_t to, ver_t *out) {
    const mkey_t *k = &m->keys[key];
    int n = 0;
    for (int i = 0; i < k->n; i++) {
        ver_t v;
        if (!version_at(k, i, &v) || v.ts > to) {
            continue;
        }
        if (v.has_valid_to && (to < cutoff(m) || v.valid_to <= from || v.valid_to < live_from(m))) {
            continue;
        }
        out[n++] = v;
    }
    return n;
}

/* Whether a tombstone at ts would hit Kafka's forgotten-tombstone case. */
static bool forgotten_tombstone(const model_t *m, int key, int64_t ts) {
    const mkey_t *k = &m->keys[key];
    return k->n > 0 && k->ev[k->n - 1].ts == ts && k->ev[k->n - 1].has_value;
}

/* ----- checks of the store against the model ------------------------------------------- */

static const char *KEYS[4] = {"a", "b", "bb", "c"};

static void check_record(kstate_versioned_record_t *r, bool found, bool want_found,
                         const ver_t *want) {
    if (found != want_found ||
        (found && (!bytes_eq(r->value, want->value) || r->timestamp != want->ts ||
                   r->has_valid_to != want->has_valid_to || r->valid_to != want->valid_to))) {
        fprintf(stderr, "  got %s %.*s@%" PRId64 " to %" PRId64 "(%d), want %s %s@%" PRId64
                        " to %" PRId64 "(%d)\n",
                found ? "found" : "none", (int)(found ? r->value.len : 0),
                found ? (const char *)r->value.ptr : "", r->timestamp, r->valid_to,
                r->has_valid_to, want_found ? "found" : "none", want_found ? want->value : "",
                want_found ? want->ts : 0, want_found ? want->valid_to : 0,
                want_found && want->has_valid_to);
    }
    CHECK(found == want_found);
    if (found && want_found) {
        CHECK(bytes_eq(r->value, want->value));
        CHECK(r->timestamp == want->ts);
        CHECK(r->has_valid_to == want->has_valid_to);
        CHECK(r->valid_to == want->valid_to);
    } else if (!found) {
        CHECK(r->value.ptr == NULL && r->timestamp == 0 && !r->has_valid_to);
    }
    kstate_bytes_free(&r->value);
}

static void check_get(kstate_versioned_t *s, kstate_isolation_t iso, const model_t *m, int key) {
    kstate_versioned_record_t r;
    bool found;
    ver_t want;
    bool want_found = model_get(m, key, &want);
    CHECK_OK(kstate_versioned_get(s, iso, KEY(KEYS[key]), &r, &found));
    check_record(&r, found, want_found, &want);
}

static void check_as_of(kstate_versioned_t *s, kstate_isolation_t iso, const model_t *m, int key,
                        int64_t t) {
    kstate_versioned_record_t r;
    bool found;
    ver_t want;
    bool want_found = model_as_of(m, key, t, &want);
    CHECK_OK(kstate_versioned_get_as_of(s, iso, KEY(KEYS[key]), t, &r, &found));
    check_record(&r, found, want_found, &want);
}

/* Drains a versions iterator against the model's answer; returns the count. */
static int check_versions(kstate_versioned_t *s, kstate_isolation_t iso, const model_t *m,
                          int key, int64_t from, int64_t to, bool ascending) {
    static ver_t want[MAXEV];
    int n = model_versions(m, key, from, to, want);
    kstate_versioned_iter_t *it = NULL;
    CHECK_OK(kstate_versioned_versions(s, iso, KEY(KEYS[key]), from, to,
                                       ascending ? KSTATE_VERSIONS_ASCENDING
                                                 : KSTATE_VERSIONS_DESCENDING,
                                       &it));
    int got = 0;
    for (;;) {
        kstate_versioned_record_t r;
        bool found;
        CHECK_OK(kstate_versioned_iter_next(it, &r, &found));
        if (!found) {
            CHECK(r.value.ptr == NULL);
            break;
        }
        if (got < n) {
            check_record(&r, true, true, &want[ascending ? got : n - 1 - got]);
        } else {
            kstate_bytes_free(&r.value);
        }
        got++;
    }
    CHECK(got == n);
    CHECK_OK(kstate_versioned_iter_close(it));
    return n;
}

/* Every read of every key against the model, at one isolation. */
static void check_all(kstate_versioned_t *s, kstate_isolation_t iso, const model_t *m) {
    int64_t st = 0;
    CHECK_OK(kstate_versioned_stream_time(s, iso, &st));
    CHECK(st == m->stream_time);
    for (int key = 0; key < m->nkeys; key++) {
        check_get(s, iso, m, key);
        for (int64_t t = m->stream_time - m->retention - 60; t <= m->stream_time + 10; t += 13) {
            check_as_of(s, iso, m, key, t);
        }
        for (int asc = 0; asc < 2; asc++) {
            check_versions(s, iso, m, key, INT64_MIN, INT64_MAX, asc);
            check_versions(s, iso, m, key, m->stream_time - 150, m->stream_time - 40, asc);
            check_versions(s, iso, m, key, m->stream_time - m->retention - 80,
                           m->stream_time - m->retention - 20, asc);
        }
    }
}

/* ----- random runs against the model --------------------------------------------------- */

static mkey_t g_wkeys[4], g_ckeys[4];

static void model_run(kstate_engine_t engine, uint64_t seed, uint64_t max_uncommitted) {
    const int64_t retention = 300, interval = 100;
    g_rng = seed;
    memset(g_wkeys, 0, sizeof g_wkeys);
    memset(g_ckeys, 0, sizeof g_ckeys);
    model_t m = {-1, retention, interval, 4, g_wkeys};
    model_t c = {-1, retention, interval, 4, g_ckeys};
    kstate_versioned_options_t o = vopts(engine, retention, interval);
    if (max_uncommitted != 0) {
        o.max_uncommitted_bytes = max_uncommitted;
    }
    kstate_versioned_t *s = NULL;
    CHECK_OK(kstate_versioned_open(fresh_path(), &o, &s));
    if (s == NULL) {
        return;
    }
    int rounds = getenv("KSTATE_TEST_SMALL") != NULL ? 250 : 700;
    int not_put = 0, out_of_order = 0, deletes_found = 0, deletes_dropped = 0, commits = 0,
        rollbacks = 0;
    for (int i = 0; i < rounds; i++) {
        int key = (int)rnd(4);
        int64_t ts = i * 3 + rnd(90);
        if (rnd(6) == 0) { /* a late write, often older than the history retention */
            ts = m.stream_time - retention + 40 - rnd(120);
            ts = ts < 0 ? 0 : ts;
        }
        int op = (int)rnd(10);
        char value[VLEN];
        snprintf(value, sizeof value, "v%d", i);
        if (op <= 1 && forgotten_tombstone(&m, key, ts)) {
            ts++; /* see the model's comment */
        }
        if (op == 0) { /* a tombstone put */
            int64_t code = 0;
            CHECK_OK(kstate_versioned_put(s, KEY(KEYS[key]), NULL, 0, ts, &code));
            CHECK(code == model_put(&m, key, NULL, ts));
        } else if (op == 1) {
            kstate_versioned_record_t r;
            bool found;
            ver_t want;
            bool dropped = ts < cutoff(&m);
            bool want_found = model_delete(&m, key, ts, &want);
            CHECK_OK(kstate_versioned_delete(s, KEY(KEYS[key]), ts, &r, &found));
            /* A dropped delete says so, as a put's KSTATE_VERSIONED_NOT_PUT; no other does. */
            CHECK(found || r.valid_to == (dropped ? KSTATE_VERSIONED_NOT_PUT : 0));
            r.valid_to = found ? r.valid_to : 0;
            check_record(&r, found, want_found, &want);
            deletes_found += want_found;
            deletes_dropped += dropped;
        } else {
            /* An empty value now and then: a value, not a tombstone. */
            const char *v = rnd(15) == 0 ? "" : value;
            int64_t code = 0;
            CHECK_OK(kstate_versioned_put(s, KEY(KEYS[key]), (const uint8_t *)v, strlen(v), ts,
                                          &code));
            int64_t want = model_put(&m, key, v, ts);
            CHECK(code == want);
            not_put += want == KSTATE_VERSIONED_NOT_PUT;
            out_of_order += want >= 0;
        }
        /* One random read in the writer's view, one committed. */
        int rk = (int)rnd(4);
        int64_t t = m.stream_time - (int64_t)rnd(retention + 100);
        check_as_of(s, KSTATE_READ_UNCOMMITTED, &m, rk, t);
        check_as_of(s, KSTATE_READ_COMMITTED, &c, rk, t);
        if (rnd(40) == 0) {
            check_versions(s, KSTATE_READ_UNCOMMITTED, &m, rk, t - 50, t + 50, rnd(2) == 0);
            check_versions(s, KSTATE_READ_COMMITTED, &c, rk, t - 50, t + 50, rnd(2) == 0);
        }
        int tx = (int)rnd(30);
        if (tx == 0) {
            CHECK_OK(kstate_versioned_rollback(s));
            memcpy(g_wkeys, g_ckeys, sizeof g_wkeys);
            m.stream_time = c.stream_time;
            rollbacks++;
        } else if (tx <= 3) {
            CHECK_OK(kstate_versioned_commit(s, NULL, 0, NULL, 0));
            memcpy(g_ckeys, g_wkeys, sizeof g_wkeys);
            c.stream_time = m.stream_time;
            commits++;
            if (commits % 4 == 0) {
                check_all(s, KSTATE_READ_UNCOMMITTED, &m);
                check_all(s, KSTATE_READ_COMMITTED, &c);
            }
        }
    }
    check_all(s, KSTATE_READ_UNCOMMITTED, &m);
    check_all(s, KSTATE_READ_COMMITTED, &c);
    /* The run covers what it is meant to. */
    CHECK(not_put > 0 && out_of_order > 0 && deletes_found > 0 && deletes_dropped > 0 &&
          commits > 0 && rollbacks > 0);
    CHECK_OK(kstate_versioned_commit(s, NULL, 0, NULL, 0));
    if (engine == KSTATE_ENGINE_ROCKSDB) {
        /* Reopened: the last commit, stream time included. */
        char path[4200];
        snprintf(path, sizeof path, "%s/store-%d", g_dir, g_seq - 1);
        CHECK_OK(kstate_versioned_close(s));
        s = NULL;
        CHECK_OK(kstate_versioned_open(path, &o, &s));
        if (s == NULL) {
            return;
        }
        check_all(s, KSTATE_READ_COMMITTED, &m);
    }
    CHECK_OK(kstate_versioned_close(s));
}

static void test_model(void) {
    model_run(KSTATE_ENGINE_MEMORY, 11, 0);
    model_run(KSTATE_ENGINE_ROCKSDB, 12, 0);
    /* Transactions that spill to disk. */
    model_run(KSTATE_ENGINE_ROCKSDB, 13, 512);
}

/* ----- Kafka's cases ------------------------------------------------------------------- */

static void expect(kstate_versioned_t *s, const char *key, int64_t as_of, const char *value,
                   int64_t ts, bool has_valid_to, int64_t valid_to) {
    kstate_versioned_record_t r;
    bool found;
    if (as_of == INT64_MAX) {
        CHECK_OK(kstate_versioned_get(s, KSTATE_READ_UNCOMMITTED, KEY(key), &r, &found));
    } else {
        CHECK_OK(kstate_versioned_get_as_of(s, KSTATE_READ_UNCOMMITTED, KEY(key), as_of, &r,
                                            &found));
    }
    if (value == NULL) {
        CHECK(!found && r.value.ptr == NULL);
    } else {
        ver_t want = {"", ts, valid_to, has_valid_to};
        snprintf(want.value, sizeof want.value, "%s", value);
        check_record(&r, found, true, &want);
    }
    kstate_bytes_free(&r.value);
}

static int64_t put(kstate_versioned_t *s, const char *key, const char *value, int64_t ts) {
    int64_t code = 0;
    CHECK_OK(kstate_versioned_put(s, KEY(key), (const uint8_t *)value,
                                  value != NULL ? strlen(value) : 0, ts, &code));
    return code;
}

static void test_kafka_cases(void) {
    for (int e = 0; e < 2; e++) {
        kstate_engine_t engine = e == 0 ? KSTATE_ENGINE_MEMORY : KSTATE_ENGINE_ROCKSDB;
        kstate_versioned_options_t o = vopts(engine, 1000, 0);
        kstate_versioned_t *s = NULL;
        CHECK_OK(kstate_versioned_open(fresh_path(), &o, &s));
        int64_t st = 0;
        CHECK_OK(kstate_versioned_stream_time(s, KSTATE_READ_UNCOMMITTED, &st));
        CHECK(st == -1);
        /* In order, then out of order: put returns the validTo of what it wrote. */
        CHECK(put(s, "k", "v1", 15) == KSTATE_VERSIONED_VALID_TO_UNDEFINED);
        CHECK(put(s, "k", "v2", 1010) == KSTATE_VERSIONED_VALID_TO_UNDEFINED);
        CHECK(put(s, "k", "v0", 12) == 15);
        CHECK(put(s, "k", "v1b", 15) == 1010); /* replaces the version at 15 */
        expect(s, "k", INT64_MAX, "v2", 1010, false, 0);
        expect(s, "k", 14, "v0", 12, true, 15);
        expect(s, "k", 20, "v1b", 15, true, 1010);
        expect(s, "k", 11, NULL, 0, false, 0);
        /* Grace = history retention: older than stream time - 1000 is refused. */
        CHECK(put(s, "k", "late", 9) == KSTATE_VERSIONED_NOT_PUT);
        CHECK(put(s, "k", "edge", 10) == 12); /* exactly stream time - retention */
        /* Reads older than the retention see only the latest value. */
        CHECK(put(s, "k", "v3", 2000) == KSTATE_VERSIONED_VALID_TO_UNDEFINED);
        expect(s, "k", 999, NULL, 0, false, 0);
        expect(s, "k", 1500, "v2", 1010, true, 2000);
        expect(s, "k", 2500, "v3", 2000, false, 0);
        /* delete returns the version valid at its time, then a second one nothing. */
        kstate_versioned_record_t r;
        bool found;
        CHECK_OK(kstate_versioned_delete(s, KEY("k"), 1500, &r, &found));
        ver_t want = {"v2", 1010, 2000, true};
        check_record(&r, found, true, &want);
        CHECK_OK(kstate_versioned_delete(s, KEY("k"), 1500, &r, &found));
        CHECK(!found && r.value.ptr == NULL && r.valid_to == 0);
        expect(s, "k", 1600, NULL, 0, false, 0);
        CHECK_OK(kstate_versioned_delete(s, KEY("k"), 500, &r, &found)); /* too late */
        CHECK(!found && r.value.ptr == NULL && r.valid_to == KSTATE_VERSIONED_NOT_PUT);
        /* A tombstone as the newest version: get finds nothing, history stays readable. */
        CHECK(put(s, "k", NULL, 2100) == KSTATE_VERSIONED_VALID_TO_UNDEFINED);
        expect(s, "k", INT64_MAX, NULL, 0, false, 0);
        expect(s, "k", 2050, "v3", 2000, true, 2100);
        /* Kafka forgets a tombstone at exactly the latest value's time: an older write
         * then becomes the latest value. */
        CHECK(put(s, "q", "q1", 2100) == KSTATE_VERSIONED_VALID_TO_UNDEFINED);
        CHECK(put(s, "q", NULL, 2100) == KSTATE_VERSIONED_VALID_TO_UNDEFINED);
        CHECK(put(s, "q", "q0", 2050) == KSTATE_VERSIONED_VALID_TO_UNDEFINED);
        expect(s, "q", INT64_MAX, "q0", 2050, false, 0);
        /* The multi-version query: newest first by default, bounds inclusive. */
        CHECK(put(s, "m", "m1", 2200) == -1);
        CHECK(put(s, "m", "m2", 2300) == -1);
        CHECK(put(s, "m", "m3", 2400) == -1);
        const char *desc[] = {"m3", "m2", "m1"};
        kstate_versioned_iter_t *it = NULL;
        CHECK_OK(kstate_versioned_versions(s, KSTATE_READ_UNCOMMITTED, KEY("m"), INT64_MIN,
                                           INT64_MAX, KSTATE_VERSIONS_DESCENDING, &it));
        for (int i = 0; i < 4; i++) {
            CHECK_OK(kstate_versioned_iter_next(it, &r, &found));
            CHECK(found == (i < 3));
            if (found && i < 3) {
                CHECK(bytes_eq(r.value, desc[i]) && r.has_valid_to == (i != 0));
            }
            kstate_bytes_free(&r.value);
        }
        CHECK_OK(kstate_versioned_iter_close(it));
        CHECK_OK(kstate_versioned_versions(s, KSTATE_READ_UNCOMMITTED, KEY("m"), 2300, 2300,
                                           KSTATE_VERSIONS_ASCENDING, &it));
        CHECK_OK(kstate_versioned_iter_next(it, &r, &found));
        want = (ver_t){"m2", 2300, 2400, true};
        check_record(&r, found, true, &want);
        CHECK_OK(kstate_versioned_iter_next(it, &r, &found));
        CHECK(!found);
        CHECK_OK(kstate_versioned_iter_close(it));
        /* from > to is Kafka's IllegalArgumentException. */
        it = NULL;
        CHECK_ERR(kstate_versioned_versions(s, KSTATE_READ_UNCOMMITTED, KEY("m"), 10, 9,
                                            KSTATE_VERSIONS_ASCENDING, &it),
                  KSTATE_ERR_INVALID_ARGUMENT);
        CHECK(it == NULL);
        /* The empty value is a value; the empty key a key. */
        CHECK(put(s, "", "", 2400) == -1);
        expect(s, "", INT64_MAX, "", 2400, false, 0);
        /* Nothing of this is committed yet. */
        CHECK_OK(kstate_versioned_stream_time(s, KSTATE_READ_COMMITTED, &st));
        CHECK(st == -1);
        CHECK_OK(kstate_versioned_get(s, KSTATE_READ_COMMITTED, KEY("k"), &r, &found));
        CHECK(!found);
        CHECK_OK(kstate_versioned_close(s));
    }
}

/* ----- options, transactions, restore, reopen ------------------------------------------ */

static void test_options(void) {
    kstate_versioned_options_t o;
    CHECK(sizeof o == KSTATE_VERSIONED_OPTIONS_SIZE_V1);
    CHECK_OK(kstate_versioned_options_init(&o, sizeof o));
    CHECK(o.struct_size == sizeof o && o.engine == KSTATE_ENGINE_ROCKSDB);
    CHECK(o.history_retention_ms == 86400000 && o.segment_interval_ms == 0);
    CHECK(o.max_uncommitted_bytes > 0 && o.rocksdb_bloom_filter);
    size_t bad[] = {0, 8, sizeof o - 8, sizeof o + 8};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ERR(kstate_versioned_options_init(&o, bad[i]), KSTATE_ERR_INVALID_ARGUMENT);
    }
    CHECK_ERR(kstate_versioned_options_init(NULL, sizeof o), KSTATE_ERR_INVALID_ARGUMENT);
    kstate_versioned_t *s = NULL;
    kstate_versioned_options_t forged = vopts(KSTATE_ENGINE_MEMORY, 100, 0);
    forged.struct_size = 0;
    CHECK_ERR(kstate_versioned_open(NULL, &forged, &s), KSTATE_ERR_INVALID_ARGUMENT);
    kstate_versioned_options_t neg = vopts(KSTATE_ENGINE_MEMORY, -1, 0);
    CHECK_ERR(kstate_versioned_open(NULL, &neg, &s), KSTATE_ERR_INVALID_ARGUMENT);
    neg = vopts(KSTATE_ENGINE_MEMORY, 100, -5);
    CHECK_ERR(kstate_versioned_open(NULL, &neg, &s), KSTATE_ERR_INVALID_ARGUMENT);
    neg = vopts(KSTATE_ENGINE_MEMORY, 100, 0);
    neg.engine = 7;
    CHECK_ERR(kstate_versioned_open(NULL, &neg, &s), KSTATE_ERR_INVALID_ARGUMENT);
    /* NULL options are RocksDB's defaults, which need a path. */
    CHECK_ERR(kstate_versioned_open(NULL, NULL, &s), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_open("", NULL, &s), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    /* A store of another kind is no versioned store, and back. */
    const char *vpath = fresh_path();
    CHECK_OK(kstate_versioned_open(vpath, NULL, &s));
    kstate_kv_t *kv = NULL;
    CHECK_ERR(kstate_kv_open(vpath, NULL, &kv), KSTATE_ERR_LOCKED);
    CHECK_OK(kstate_versioned_close(s));
    CHECK_ERR(kstate_kv_open(vpath, NULL, &kv), KSTATE_ERR_FORMAT_MISMATCH);
    kstate_window_t *w = NULL;
    CHECK_ERR(kstate_window_open(vpath, NULL, &w), KSTATE_ERR_FORMAT_MISMATCH);
    const char *kpath = fresh_path();
    CHECK_OK(kstate_kv_open(kpath, NULL, &kv));
    CHECK_OK(kstate_kv_close(kv));
    s = NULL;
    CHECK_ERR(kstate_versioned_open(kpath, NULL, &s), KSTATE_ERR_FORMAT_MISMATCH);
    CHECK(s == NULL);
}

static void test_commit_restore_reopen(void) {
    const char *p = fresh_path();
    char path[4200];
    snprintf(path, sizeof path, "%s", p);
    kstate_versioned_options_t o = vopts(KSTATE_ENGINE_ROCKSDB, 500, 0);
    kstate_versioned_t *s = NULL;
    CHECK_OK(kstate_versioned_open(path, &o, &s));
    CHECK(put(s, "k", "a", 1000) == -1);
    kstate_offset_t off = {"topic", 3, 41, true};
    CHECK_OK(kstate_versioned_commit(s, &off, 1, (const uint8_t *)"m1", 2));
    CHECK(put(s, "k", "b", 2000) == -1);
    uint64_t pending = 0;
    CHECK_OK(kstate_versioned_approximate_num_uncommitted_bytes(s, &pending));
    CHECK(pending > 0);
    /* Restore refuses a transaction with writes; nothing is written. */
    kstate_kv_write_t recs[3] = {
        {(const uint8_t *)"r", 1, (const uint8_t *)"r1", 2, 1500},
        {(const uint8_t *)"r", 1, NULL, 0, 1600},
        {(const uint8_t *)"k", 1, (const uint8_t *)"c", 1, 1700},
    };
    off.offset = 50;
    CHECK_ERR(kstate_versioned_restore_batch(s, recs, 3, &off, 1, NULL, 0),
              KSTATE_ERR_INVALID_ARGUMENT);
    /* Rollback: the stream time returns to the committed one. */
    CHECK_OK(kstate_versioned_rollback(s));
    int64_t st = 0;
    CHECK_OK(kstate_versioned_stream_time(s, KSTATE_READ_UNCOMMITTED, &st));
    CHECK(st == 1000);
    expect(s, "k", INT64_MAX, "a", 1000, false, 0);
    CHECK_OK(kstate_versioned_restore_batch(s, recs, 3, &off, 1, (const uint8_t *)"m2", 2));
    CHECK_ERR(kstate_versioned_restore_batch(s, NULL, 1, &off, 1, NULL, 0),
              KSTATE_ERR_INVALID_ARGUMENT);
    /* A late write (stream time 1700, retention 500) is dropped, also after a reopen. */
    CHECK(put(s, "late", "x", 1100) == KSTATE_VERSIONED_NOT_PUT);
    CHECK_OK(kstate_versioned_close(s));
    s = NULL;
    CHECK_OK(kstate_versioned_open(path, &o, &s));
    if (s == NULL) {
        return;
    }
    int64_t offset = 0;
    bool found = false;
    CHECK_OK(kstate_versioned_committed_offset(s, "topic", 3, &offset, &found));
    CHECK(found && offset == 50);
    kstate_bytes_t meta;
    CHECK_OK(kstate_versioned_committed_metadata(s, &meta, &found));
    CHECK(found && bytes_eq(meta, "m2"));
    kstate_bytes_free(&meta);
    for (int iso = 0; iso < 2; iso++) {
        CHECK_OK(kstate_versioned_stream_time(s, (kstate_isolation_t)iso, &st));
        CHECK(st == 1700);
    }
    expect(s, "k", INT64_MAX, "c", 1700, false, 0);
    expect(s, "k", 1650, "a", 1000, true, 1700);
    expect(s, "r", 1550, "r1", 1500, true, 1600);
    expect(s, "r", 1650, NULL, 0, false, 0);
    CHECK(put(s, "late", "x", 1100) == KSTATE_VERSIONED_NOT_PUT);
    CHECK(put(s, "k", "d", 1650) == 1700);
    CHECK_OK(kstate_versioned_commit(s, NULL, 0, NULL, 0));
    CHECK_OK(kstate_versioned_committed_offset(s, "topic", 3, &offset, &found));
    CHECK(!found); /* an empty offset array removes every offset, as Kafka's empty map */
    CHECK_OK(kstate_versioned_close(s));
}

/* ----- misuse of the boundary ---------------------------------------------------------- */

static void test_bad_handles(void) {
    kstate_versioned_options_t o = vopts(KSTATE_ENGINE_MEMORY, 1000, 0);
    kstate_versioned_t *s = NULL;
    CHECK_OK(kstate_versioned_open(NULL, &o, &s));
    kstate_kv_options_t ko = default_options();
    ko.engine = KSTATE_ENGINE_MEMORY;
    kstate_kv_t *kv = NULL;
    CHECK_OK(kstate_kv_open(NULL, &ko, &kv));
    kstate_kv_iter_t *ki = NULL;
    CHECK_OK(kstate_kv_all(kv, &ki));
    CHECK(put(s, "k", "v", 5) == -1);
    kstate_versioned_iter_t *it = NULL;
    CHECK_OK(kstate_versioned_versions(s, KSTATE_READ_UNCOMMITTED, KEY("k"), INT64_MIN,
                                       INT64_MAX, KSTATE_VERSIONS_ASCENDING, &it));
    kstate_versioned_record_t r;
    bool found;
    int64_t code;
    /* Wrong kinds: every pairing is INVALID_HANDLE, and nothing is closed by it. */
    CHECK_ERR(kstate_versioned_put((kstate_versioned_t *)kv, KEY("k"), KEY("v"), 1, &code),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_get((kstate_versioned_t *)it, 0, KEY("k"), &r, &found),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_close((kstate_versioned_t *)it), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_rollback((kstate_versioned_t *)kv), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_iter_next((kstate_versioned_iter_t *)ki, &r, &found),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_iter_next((kstate_versioned_iter_t *)s, &r, &found),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_iter_close((kstate_versioned_iter_t *)ki), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_kv_close((kstate_kv_t *)s), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_kv_iter_close((kstate_kv_iter_t *)it), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_window_rollback((kstate_window_t *)s), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_session_close((kstate_session_t *)s), KSTATE_ERR_INVALID_HANDLE);
    /* NULL and forged handles. */
    CHECK_ERR(kstate_versioned_close(NULL), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_iter_close(NULL), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_put((kstate_versioned_t *)(uintptr_t)0x1234, KEY("k"), KEY("v"),
                                   1, &code),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_versioned_stream_time((kstate_versioned_t *)((uintptr_t)s + 1000), 0, &code),
              KSTATE_ERR_INVALID_HANDLE);
    /* Still live and working after all that. */
    CHECK_OK(kstate_kv_iter_close(ki));
    CHECK_OK(kstate_kv_close(kv));
    expect(s, "k", INT64_MAX, "v", 5, false, 0);
    /* A versioned iterator holds its results: it outlives its store's close. */
    CHECK_OK(kstate_versioned_close(s));
    CHECK_OK(kstate_versioned_iter_next(it, &r, &found));
    CHECK(found && bytes_eq(r.value, "v") && r.timestamp == 5 && !r.has_valid_to);
    kstate_bytes_free(&r.value);
    CHECK_OK(kstate_versioned_iter_next(it, &r, &found));
    CHECK(!found);
    CHECK_OK(kstate_versioned_iter_close(it));
    CHECK_ERR(kstate_versioned_iter_next(it, &r, &found), KSTATE_ERR_ITERATOR_CLOSED);
    CHECK_ERR(kstate_versioned_iter_close(it), KSTATE_ERR_ITERATOR_CLOSED);
    /* Closed store: every call is STORE_CLOSED, double close included. */
    CHECK_ERR(kstate_versioned_close(s), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_versioned_put(s, KEY("k"), KEY("v"), 6, &code), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_versioned_delete(s, KEY("k"), 6, &r, &found), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_versioned_get(s, 0, KEY("k"), &r, &found), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_versioned_get_as_of(s, 1, KEY("k"), 5, &r, &found), KSTATE_ERR_STORE_CLOSED);
    it = NULL;
    CHECK_ERR(kstate_versioned_versions(s, 0, KEY("k"), 0, 9, 0, &it), KSTATE_ERR_STORE_CLOSED);
    CHECK(it == NULL);
    CHECK_ERR(kstate_versioned_restore_batch(s, NULL, 0, NULL, 0, NULL, 0),
              KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_versioned_stream_time(s, 0, &code), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_versioned_commit(s, NULL, 0, NULL, 0), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_versioned_rollback(s), KSTATE_ERR_STORE_CLOSED);
    /* A store opened later never gets the closed number. */
    kstate_versioned_t *s2 = NULL;
    CHECK_OK(kstate_versioned_open(NULL, &o, &s2));
    CHECK(s2 != s);
    CHECK_ERR(kstate_versioned_rollback(s), KSTATE_ERR_STORE_CLOSED);
    CHECK_OK(kstate_versioned_close(s2));
}

static void test_null_arguments(void) {
    kstate_versioned_options_t o = vopts(KSTATE_ENGINE_MEMORY, 1000, 0);
    kstate_versioned_t *s = NULL;
    CHECK_ERR(kstate_versioned_open(NULL, &o, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_OK(kstate_versioned_open(NULL, &o, &s));
    kstate_versioned_record_t r;
    bool found;
    int64_t code = 7;
    /* NULL data with a length. */
    CHECK_ERR(kstate_versioned_put(s, NULL, 1, KEY("v"), 1, &code), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(code == 0); /* out-parameters are set on entry */
    CHECK_ERR(kstate_versioned_put(s, KEY("k"), NULL, 2, 1, &code), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_get(s, 0, NULL, 3, &r, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_delete(s, NULL, 3, 1, &r, &found), KSTATE_ERR_INVALID_ARGUMENT);
    kstate_kv_write_t bad = {(const uint8_t *)"k", 1, NULL, 4, 1};
    CHECK_ERR(kstate_versioned_restore_batch(s, &bad, 1, NULL, 0, NULL, 0),
              KSTATE_ERR_INVALID_ARGUMENT);
    kstate_offset_t bad_topic = {NULL, 0, 1, true};
    CHECK_ERR(kstate_versioned_restore_batch(s, NULL, 0, &bad_topic, 1, NULL, 0),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_commit(s, &bad_topic, 1, NULL, 0), KSTATE_ERR_INVALID_ARGUMENT);
    /* NULL out-parameters: refused before anything is written. */
    CHECK_ERR(kstate_versioned_put(s, KEY("k"), KEY("v"), 1, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_delete(s, KEY("k"), 1, NULL, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_get(s, 0, KEY("k"), &r, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_get_as_of(s, 0, KEY("k"), 1, NULL, &found),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_versions(s, 0, KEY("k"), 0, 1, 0, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_stream_time(s, 0, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_committed_offset(s, NULL, 0, &code, &found),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_approximate_num_uncommitted_bytes(s, NULL),
              KSTATE_ERR_INVALID_ARGUMENT);
    int64_t st = 0;
    CHECK_OK(kstate_versioned_stream_time(s, 0, &st));
    CHECK(st == -1); /* none of the refused writes happened */
    /* Unknown isolation and order. */
    kstate_versioned_iter_t *it = NULL;
    CHECK_ERR(kstate_versioned_get(s, 9, KEY("k"), &r, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_versions(s, 9, KEY("k"), 0, 1, 0, &it), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_versioned_versions(s, 0, KEY("k"), 0, 1, 2, &it), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(it == NULL);
    /* A key too large. */
    size_t big = KSTATE_MAX_KEY_BYTES;
    uint8_t *k = calloc(1, big);
    CHECK_ERR(kstate_versioned_put(s, k, big, KEY("v"), 1, &code), KSTATE_ERR_KEY_TOO_LARGE);
    CHECK_ERR(kstate_versioned_get(s, 0, k, big, &r, &found), KSTATE_ERR_KEY_TOO_LARGE);
    free(k);
    /* The failed call took nothing from the iterator. */
    CHECK(put(s, "k", "v", 3) == -1);
    CHECK_OK(kstate_versioned_versions(s, 0, KEY("k"), 0, 10, 0, &it));
    CHECK_ERR(kstate_versioned_iter_next(it, &r, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(r.value.ptr == NULL);
    CHECK_OK(kstate_versioned_iter_next(it, &r, &found));
    CHECK(found && bytes_eq(r.value, "v"));
    kstate_bytes_free(&r.value);
    CHECK_OK(kstate_versioned_iter_close(it));
    CHECK_OK(kstate_versioned_close(s));
}

/* ----- SIGKILL crash loop ---------------------------------------------------------------
 * Generation g (offset g) puts slot a(g) at 10g, an out-of-order version of slot b(g) at
 * 10g - 25 and deletes slot d(g) at 10g - 5; every 20th generation also puts BULK padding
 * keys with 300-byte values, which make the transaction spill; then it commits with offset
 * g and metadata "g". */

#define SLOTS 16
#define BULK 40
#define PAD 300
#define CRASH_RETENTION 100
#define CRASH_INTERVAL 50
#define TOPIC "versioned-changelog"

static int slot_a(long g) { return (int)((g * 7) % SLOTS); }
static int slot_b(long g) { return (int)((g * 11 + 3) % SLOTS); }
static int slot_d(long g) { return (int)((g * 5 + 1) % SLOTS); }

static mkey_t g_slots[SLOTS];

static void slot_name(int slot, char *buf, size_t len) {
    snprintf(buf, len, "k%02d", slot);
}

/* The padding value of bulk key i in generation g: PAD - 1 bytes set by (g, i). */
static void pad_value(long g, int i, char *buf) {
    int n = snprintf(buf, PAD, "%ld:%d:", g, i);
    memset(buf + n, 'a' + (int)((g + i) % 26), (size_t)(PAD - 1 - n));
    buf[PAD - 1] = '\0';
}

static kstate_error_t *fail_on(kstate_error_t *e, const char *what) {
    if (e != NULL) {
        fprintf(stderr, "child: %s: [%s] %s\n", what,
                kstate_error_code_name(kstate_error_code(e)), kstate_error_message(e));
    }
    return e;
}

/* Generation g on the model, and on the store when s is not NULL (the child keeps the
 * model too, to skip the same forgotten tombstones); false when a store call failed. */
static bool generation(model_t *m, kstate_versioned_t *s, long g) {
    char v[VLEN], name[16];
    const int keys[3] = {slot_a(g), slot_b(g), slot_d(g)};
    const int64_t times[3] = {10 * g, 10 * g - 25, 10 * g - 5};
    for (int i = 0; i < 3; i++) {
        bool tombstone = i == 2;
        if (tombstone && forgotten_tombstone(m, keys[i], times[i])) {
            continue;
        }
        snprintf(v, sizeof v, "g%ld-%d", g, i);
        model_put(m, keys[i], tombstone ? NULL : v, times[i]);
        if (s == NULL) {
            continue;
        }
        slot_name(keys[i], name, sizeof name);
        kstate_error_t *e;
        if (tombstone) {
            kstate_versioned_record_t r;
            bool found;
            e = kstate_versioned_delete(s, KEY(name), times[i], &r, &found);
            kstate_bytes_free(&r.value);
        } else {
            int64_t code;
            e = kstate_versioned_put(s, KEY(name), (const uint8_t *)v, strlen(v), times[i],
                                     &code);
        }
        if (fail_on(e, "write") != NULL) {
            kstate_error_free(e);
            return false;
        }
    }
    if (s == NULL || g % 20 != 0) {
        return true;
    }
    char pad[PAD];
    for (int i = 0; i < BULK; i++) {
        snprintf(name, sizeof name, "pad%02d", i);
        pad_value(g, i, pad);
        int64_t code;
        kstate_error_t *e = kstate_versioned_put(s, KEY(name), (const uint8_t *)pad, PAD - 1,
                                                 10 * g, &code);
        if (fail_on(e, "bulk put") != NULL) {
            kstate_error_free(e);
            return false;
        }
    }
    return true;
}

static int child_main(const char *path) {
    kstate_versioned_options_t o = vopts(KSTATE_ENGINE_ROCKSDB, CRASH_RETENTION, CRASH_INTERVAL);
    o.max_uncommitted_bytes = 4096; /* bulk generations spill */
    kstate_versioned_t *s = NULL;
    if (fail_on(kstate_versioned_open(path, &o, &s), "open") != NULL) {
        return 3;
    }
    int64_t off = 0;
    bool found = false;
    if (fail_on(kstate_versioned_committed_offset(s, TOPIC, 0, &off, &found), "offset") != NULL) {
        return 3;
    }
    model_t m = {-1, CRASH_RETENTION, CRASH_INTERVAL, SLOTS, g_slots};
    long start = found ? (long)off + 1 : 1;
    for (long g = 1; g < start; g++) {
        generation(&m, NULL, g);
    }
    for (long g = start; g < start + 10000000; g++) {
        if (getppid() == 1) {
            _exit(4); /* the parent is gone */
        }
        if (!generation(&m, s, g)) {
            return 3;
        }
        kstate_offset_t offset = {TOPIC, 0, g, true};
        char meta[24];
        snprintf(meta, sizeof meta, "%ld", g);
        if (fail_on(kstate_versioned_commit(s, &offset, 1, (const uint8_t *)meta, strlen(meta)),
                    "commit") != NULL) {
            return 3;
        }
    }
    return 0;
}

static char g_path[4200];
static crash_loop_t g_loop;
static long g_committed;

/* Checks the reopened store against the model after generation c. */
static void crash_verify(kstate_versioned_t *s, long c) {
    memset(g_slots, 0, sizeof g_slots);
    model_t m = {-1, CRASH_RETENTION, CRASH_INTERVAL, SLOTS, g_slots};
    for (long g = 1; g <= c; g++) {
        generation(&m, NULL, g);
    }
    int before = g_case_failures;
    int64_t st = 0;
    CHECK_OK(kstate_versioned_stream_time(s, KSTATE_READ_COMMITTED, &st));
    CHECK(st == m.stream_time);
    char name[16];
    kstate_versioned_record_t r;
    bool found;
    ver_t want;
    for (int key = 0; key < SLOTS; key++) {
        slot_name(key, name, sizeof name);
        bool want_found = model_get(&m, key, &want);
        CHECK_OK(kstate_versioned_get(s, KSTATE_READ_COMMITTED, KEY(name), &r, &found));
        check_record(&r, found, want_found, &want);
        for (int64_t t = m.stream_time - CRASH_RETENTION - 20; t <= m.stream_time; t += 7) {
            want_found = model_as_of(&m, key, t, &want);
            CHECK_OK(kstate_versioned_get_as_of(s, KSTATE_READ_UNCOMMITTED, KEY(name), t, &r,
                                                &found));
            check_record(&r, found, want_found, &want);
        }
        static ver_t vs[MAXEV];
        int n = model_versions(&m, key, INT64_MIN, INT64_MAX, vs);
        kstate_versioned_iter_t *it = NULL;
        CHECK_OK(kstate_versioned_versions(s, KSTATE_READ_COMMITTED, KEY(name), INT64_MIN,
                                           INT64_MAX, KSTATE_VERSIONS_ASCENDING, &it));
        int got = 0;
        for (;;) {
            CHECK_OK(kstate_versioned_iter_next(it, &r, &found));
            if (!found) {
                break;
            }
            if (got < n) {
                check_record(&r, true, true, &vs[got]);
            } else {
                kstate_bytes_free(&r.value);
            }
            got++;
        }
        CHECK(got == n);
        CHECK_OK(kstate_versioned_iter_close(it));
    }
    /* The padding of the last bulk generation, written in a spilled transaction. */
    long bulk = c / 20 * 20;
    char pad[PAD];
    for (int i = 0; i < BULK; i++) {
        snprintf(name, sizeof name, "pad%02d", i);
        CHECK_OK(kstate_versioned_get(s, KSTATE_READ_COMMITTED, KEY(name), &r, &found));
        CHECK(found == (bulk > 0));
        if (found && bulk > 0) {
            pad_value(bulk, i, pad);
            CHECK(bytes_eq(r.value, pad) && r.timestamp == 10 * bulk);
        }
        kstate_bytes_free(&r.value);
    }
    kstate_bytes_t meta;
    CHECK_OK(kstate_versioned_committed_metadata(s, &meta, &found));
    CHECK(found == (c > 0));
    if (c > 0) {
        char want_meta[24];
        snprintf(want_meta, sizeof want_meta, "%ld", c);
        CHECK(bytes_eq(meta, want_meta));
    }
    kstate_bytes_free(&meta);
    if (g_case_failures != before) {
        fprintf(stderr, "  mismatch with the model after generation %ld\n", c);
    }
}

static void one_round(int round, unsigned delay_ms) {
    /* No crash points here: a child that dies before the parent kills it failed (the
     * helper checks it died of SIGKILL). */
    crash_run_child(&g_loop, g_path, delay_ms, NULL);
    kstate_versioned_options_t o = vopts(KSTATE_ENGINE_ROCKSDB, CRASH_RETENTION, CRASH_INTERVAL);
    kstate_versioned_t *s = NULL;
    CHECK_OK(kstate_versioned_open(g_path, &o, &s));
    if (s == NULL) {
        return;
    }
    int64_t off = 0;
    bool found = false;
    CHECK_OK(kstate_versioned_committed_offset(s, TOPIC, 0, &off, &found));
    long c = found ? (long)off : 0;
    CHECK(c >= g_committed); /* nothing committed is ever lost */
    crash_verify(s, c);
    uint64_t pending = 1;
    CHECK_OK(kstate_versioned_approximate_num_uncommitted_bytes(s, &pending));
    CHECK(pending == 0); /* the interrupted transaction is gone */
    CHECK_OK(kstate_versioned_close(s));
    fprintf(stderr, "  round %d: killed after %u ms, committed generation %ld (+%ld)\n", round,
            delay_ms, c, c - g_committed);
    g_committed = c;
}

static void test_sigkill_crash_loop(void) {
    char dir[4096];
    make_scratch(dir, sizeof dir);
    snprintf(g_path, sizeof g_path, "%s/store", dir);
    srand(g_loop.seed);
    for (int r = 0; r < g_loop.rounds; r++) {
        one_round(r, 60 + (unsigned)(rand() % 240));
    }
    CHECK(g_committed >= 40); /* the loop covered real commits, bulk ones included */
    remove_tree(dir);
}

int main(int argc, char **argv) {
    const char *child = crash_child_path(argc, argv);
    if (child != NULL) {
        return child_main(child);
    }
    g_loop = crash_loop_setup(argv[0], 24, 6, "crash loop");
    make_scratch(g_dir, sizeof g_dir);
    RUN(test_options);
    RUN(test_kafka_cases);
    RUN(test_model);
    RUN(test_commit_restore_reopen);
    RUN(test_bad_handles);
    RUN(test_null_arguments);
    RUN(test_sigkill_crash_loop);
    remove_tree(g_dir);
    return finish();
}
