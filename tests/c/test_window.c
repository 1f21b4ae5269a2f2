/*
 * The window and session store functions of include/kstate.h, written from the header
 * alone, on both engines: results are checked against a small model computed here
 * (Kafka's order: segment by segment, then key bytes, then window start / session end;
 * a window store without duplicates on the memory engine lists windows by start, then key,
 * as Kafka's in-memory window store; retention by stream time; duplicates; open key
 * bounds), plus commit, rollback and
 * committed offsets across a reopen, and every misuse of the boundary (wrong-kind,
 * closed, NULL and forged handles, NULL out-parameters, NULL data with a length).
 */
#include "common.h"
#include "segmented_common.h"

static kstate_window_options_t window_options(kstate_engine_t engine, int64_t retention,
                                              int64_t size, bool dups, int64_t interval) {
    kstate_window_options_t o;
    CHECK_OK(kstate_window_options_init(&o, sizeof o));
    o.engine = engine;
    o.retention_ms = retention;
    o.window_size_ms = size;
    o.retain_duplicates = dups;
    o.segment_interval_ms = interval;
    return o;
}

static kstate_session_options_t session_options(kstate_engine_t engine, int64_t retention,
                                                int64_t interval) {
    kstate_session_options_t o;
    CHECK_OK(kstate_session_options_init(&o, sizeof o));
    o.engine = engine;
    o.retention_ms = retention;
    o.segment_interval_ms = interval;
    return o;
}

/* ----- the window model -------------------------------------------------------------- */

typedef struct {
    int key;        /* index into KEYS */
    int64_t start;  /* window start */
    int seqnum;     /* Kafka's seqnum (0 without duplicates) */
    char value[16];
    int64_t ts;
    bool live;      /* written and not deleted */
} win_t;

#define MAX_WIN 1024
static win_t g_win[MAX_WIN];
static int g_nwin;
static int64_t g_interval;

/* The store's order: Kafka's in-memory one (start, then key) or its RocksDB one. */
static bool g_by_start;

static int win_order(const void *pa, const void *pb) {
    const win_t *a = pa, *b = pb;
    if (g_by_start && a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    int64_t sa = a->start / g_interval, sb = b->start / g_interval;
    if (sa != sb) {
        return sa < sb ? -1 : 1;
    }
    int c = key_cmp(KEYS[a->key], KEYS[b->key]);
    if (c != 0) {
        return c;
    }
    if (a->start != b->start) {
        return a->start < b->start ? -1 : 1;
    }
    return a->seqnum < b->seqnum ? -1 : (a->seqnum > b->seqnum ? 1 : 0);
}

/* A query: key bounds (NULL = open) and start bounds. */
typedef struct {
    const char *from_key, *to_key;
    int64_t from, to;
} wquery_t;

static bool win_selected(const win_t *w, const wquery_t *q, int64_t earliest_visible) {
    const char *k = KEYS[w->key];
    return w->live && w->start >= earliest_visible && w->start >= q->from && w->start <= q->to &&
           (q->from_key == NULL || key_cmp(k, q->from_key) >= 0) &&
           (q->to_key == NULL || key_cmp(k, q->to_key) <= 0);
}

/* Drains a window iterator and compares it with the model's selection, in order. */
static void expect_windows(kstate_window_iter_t *it, const wquery_t *q, bool reverse,
                           int64_t earliest_visible, int64_t size, int *count) {
    int idx[MAX_WIN], n = 0;
    for (int i = 0; i < g_nwin; i++) {
        if (win_selected(&g_win[i], q, earliest_visible)) {
            idx[n++] = i;
        }
    }
    int got = 0;
    for (;;) {
        kstate_bytes_t k, v;
        int64_t ts, start, end;
        bool found;
        CHECK_OK(kstate_window_iter_next(it, &k, &v, &ts, &start, &end, &found));
        if (!found) {
            CHECK(k.ptr == NULL && v.ptr == NULL);
            break;
        }
        if (got < n) {
            const win_t *w = &g_win[idx[reverse ? n - 1 - got : got]];
            CHECK(bytes_eq(k, KEYS[w->key]));
            CHECK(bytes_eq(v, w->value));
            CHECK(ts == w->ts);
            CHECK(start == w->start);
            CHECK(end == w->start + size);
        }
        got++;
        kstate_bytes_free(&k);
        kstate_bytes_free(&v);
    }
    CHECK(got == n);
    CHECK_OK(kstate_window_iter_close(it));
    *count = n;
}

/* Random puts and deletes on a window store and the model, then every query both ways. */
static void window_model_run(kstate_engine_t engine, bool dups, uint64_t seed) {
    const int64_t retention = 600, size = 50;
    g_interval = 200;
    g_rng = seed;
    g_nwin = 0;
    kstate_window_options_t o = window_options(engine, retention, size, dups, g_interval);
    kstate_window_t *w = NULL;
    CHECK_OK(kstate_window_open(fresh_path(), &o, &w));
    int64_t stream_time = -1;
    int seq = 0, dropped = 0;
    int rounds = getenv("KSTATE_TEST_SMALL") != NULL ? 200 : 500;
    for (int i = 0; i < rounds && g_nwin < MAX_WIN; i++) {
        int key = (int)rnd(4);
        int64_t start = i * 5 + rnd(300);
        if (rnd(8) == 0) { /* a late record, often too late for retention */
            start = stream_time - retention + 100 - rnd(400);
            start = start < 0 ? 0 : start;
        }
        bool del = rnd(6) == 0;
        char value[16];
        snprintf(value, sizeof value, "v%d", i);
        if (del) {
            CHECK_OK(kstate_window_put_raw(w, KEY(KEYS[key]), NULL, 0, start));
        } else {
            CHECK_OK(kstate_window_put(w, KEY(KEYS[key]), (const uint8_t *)value, strlen(value),
                                       1000 + i, start));
        }
        if (del && dups) {
            continue; /* Kafka ignores a delete with duplicates: not even stream time moves */
        }
        if (start > stream_time) {
            stream_time = start;
        }
        if (start / g_interval < (stream_time - retention) / g_interval) {
            dropped++;
            continue; /* its segment has expired: Kafka drops the write */
        }
        win_t *slot = NULL;
        if (!dups) {
            for (int j = 0; j < g_nwin; j++) {
                if (g_win[j].key == key && g_win[j].start == start) {
                    slot = &g_win[j];
                }
            }
        }
        if (slot == NULL) {
            slot = &g_win[g_nwin++];
            slot->key = key;
            slot->start = start;
            slot->seqnum = dups ? ++seq : 0;
        }
        slot->live = !del;
        snprintf(slot->value, sizeof slot->value, "%s", value);
        slot->ts = 1000 + i;
    }
    CHECK(dropped > 0);
    g_by_start = engine == KSTATE_ENGINE_MEMORY && !dups;
    qsort(g_win, (size_t)g_nwin, sizeof g_win[0], win_order);
    int64_t ev = stream_time - retention + 1;
    int expired = 0;
    for (int i = 0; i < g_nwin; i++) {
        expired += g_win[i].live && g_win[i].start < ev;
    }
    CHECK(expired > 0); /* the run covers retention */

    int64_t from = stream_time - 700, to = stream_time - 100;
    const wquery_t queries[] = {
        {NULL, NULL, INT64_MIN, INT64_MAX}, /* all */
        {NULL, NULL, from, to},             /* fetch_all */
        {"b", "b", from, to},               /* fetch(key) */
        {NULL, "bb", from, to},             /* open lower bound */
        {"b", NULL, from, to},              /* open upper bound */
        {"a", "b", from, to},               /* closed bounds */
        {"c", "a", from, to},               /* from > to: empty */
    };
    for (int reverse = 0; reverse < 2; reverse++) {
        for (size_t qi = 0; qi < sizeof queries / sizeof queries[0]; qi++) {
            const wquery_t *q = &queries[qi];
            kstate_window_iter_t *it = NULL;
            if (qi == 0) {
                CHECK_OK(reverse ? kstate_window_backward_all(w, KSTATE_READ_UNCOMMITTED, &it)
                                 : kstate_window_all(w, KSTATE_READ_UNCOMMITTED, &it));
            } else if (qi == 1) {
                CHECK_OK(reverse ? kstate_window_backward_fetch_all(w, KSTATE_READ_UNCOMMITTED,
                                                                    q->from, q->to, &it)
                                 : kstate_window_fetch_all(w, KSTATE_READ_UNCOMMITTED, q->from,
                                                           q->to, &it));
            } else if (qi == 2) {
                CHECK_OK(reverse ? kstate_window_backward_fetch_range(
                                       w, KSTATE_READ_UNCOMMITTED, KEY("b"), q->from, q->to, &it)
                                 : kstate_window_fetch_range(w, KSTATE_READ_UNCOMMITTED, KEY("b"),
                                                             q->from, q->to, &it));
            } else {
                const uint8_t *fk = (const uint8_t *)q->from_key, *tk = (const uint8_t *)q->to_key;
                size_t fl = fk ? strlen(q->from_key) : 0, tl = tk ? strlen(q->to_key) : 0;
                CHECK_OK(reverse ? kstate_window_backward_fetch_key_range(
                                       w, KSTATE_READ_UNCOMMITTED, fk, fl, tk, tl, q->from, q->to,
                                       &it)
                                 : kstate_window_fetch_key_range(w, KSTATE_READ_UNCOMMITTED, fk, fl,
                                                                 tk, tl, q->from, q->to, &it));
            }
            int n = 0;
            expect_windows(it, q, reverse, ev, size, &n);
            if (qi != 6) {
                CHECK(n > 0); /* every query but the empty one selects something */
            } else {
                CHECK(n == 0);
            }
        }
    }
    /* Point reads (without duplicates; with them Kafka's fetch(key, start) reads only the
     * latest seqnum): found exactly when the model has the window live and visible. */
    if (!dups) {
        for (int i = 0; i < g_nwin; i++) {
            kstate_bytes_t v;
            int64_t ts;
            bool found;
            CHECK_OK(kstate_window_fetch(w, KSTATE_READ_UNCOMMITTED, KEY(KEYS[g_win[i].key]),
                                         g_win[i].start, &v, &ts, &found));
            bool expect = g_win[i].live && g_win[i].start >= ev;
            CHECK(found == expect);
            if (found) {
                CHECK(bytes_eq(v, g_win[i].value) && ts == g_win[i].ts);
            }
            kstate_bytes_free(&v);
            /* Nothing is committed: invisible to committed readers. */
            CHECK_OK(kstate_window_fetch(w, KSTATE_READ_COMMITTED, KEY(KEYS[g_win[i].key]),
                                         g_win[i].start, &v, &ts, &found));
            CHECK(!found && v.ptr == NULL);
        }
    }
    CHECK_OK(kstate_window_close(w));
}

static void test_window_model(void) {
    for (int e = 0; e < 2; e++) {
        window_model_run(ENGINES[e], false, 11 + (uint64_t)e);
        window_model_run(ENGINES[e], true, 21 + (uint64_t)e);
    }
}

/* ----- the session model ------------------------------------------------------------- */

typedef struct {
    int key;
    int64_t start, end;
    char agg[16];
    bool live;
} sess_t;

static sess_t g_sess[MAX_WIN];
static int g_nsess;

static int sess_order(const void *pa, const void *pb) {
    const sess_t *a = pa, *b = pb;
    int64_t sa = a->end / g_interval, sb = b->end / g_interval;
    if (sa != sb) {
        return sa < sb ? -1 : 1;
    }
    int c = key_cmp(KEYS[a->key], KEYS[b->key]);
    if (c != 0) {
        return c;
    }
    if (a->end != b->end) {
        return a->end < b->end ? -1 : 1;
    }
    return a->start < b->start ? -1 : (a->start > b->start ? 1 : 0);
}

/* findSessions bounds: sessions ending at or after earliest_end, starting at or before
 * latest_start. */
typedef struct {
    const char *from_key, *to_key;
    int64_t earliest_end, latest_start;
} squery_t;

static void expect_sessions(kstate_session_iter_t *it, const squery_t *q, bool reverse,
                            int64_t earliest_visible, int *count) {
    int idx[MAX_WIN], n = 0;
    for (int i = 0; i < g_nsess; i++) {
        const sess_t *s = &g_sess[i];
        const char *k = KEYS[s->key];
        if (s->live && s->end >= earliest_visible && s->end >= q->earliest_end &&
            s->start <= q->latest_start && (q->from_key == NULL || key_cmp(k, q->from_key) >= 0) &&
            (q->to_key == NULL || key_cmp(k, q->to_key) <= 0)) {
            idx[n++] = i;
        }
    }
    int got = 0;
    for (;;) {
        kstate_bytes_t k, v;
        int64_t start, end;
        bool found;
        CHECK_OK(kstate_session_iter_next(it, &k, &v, &start, &end, &found));
        if (!found) {
            break;
        }
        if (got < n) {
            const sess_t *s = &g_sess[idx[reverse ? n - 1 - got : got]];
            CHECK(bytes_eq(k, KEYS[s->key]));
            CHECK(bytes_eq(v, s->agg));
            CHECK(start == s->start && end == s->end);
        }
        got++;
        kstate_bytes_free(&k);
        kstate_bytes_free(&v);
    }
    CHECK(got == n);
    CHECK_OK(kstate_session_iter_close(it));
    *count = n;
}

static void session_model_run(kstate_engine_t engine, uint64_t seed) {
    const int64_t retention = 2000, gap = 100;
    g_interval = 500;
    g_rng = seed;
    g_nsess = 0;
    kstate_session_options_t o = session_options(engine, retention, g_interval);
    kstate_session_t *st = NULL;
    CHECK_OK(kstate_session_open(fresh_path(), &o, &st));
    int64_t stream_time = -1;
    int merges = 0;
    int rounds = getenv("KSTATE_TEST_SMALL") != NULL ? 200 : 500;
    /* A session-window aggregation as Kafka runs it: find the sessions a record at time t
     * merges with (findSessions(key, t - gap, t + gap)), remove them, put the merged one. */
    for (int i = 0; i < rounds; i++) {
        int key = (int)rnd(3);
        int64_t t = i * 8 + rnd(400);
        kstate_session_iter_t *it = NULL;
        CHECK_OK(kstate_session_find_sessions(st, KSTATE_READ_UNCOMMITTED, KEY(KEYS[key]),
                                              t - gap, t + gap, &it));
        int64_t start = t, end = t;
        for (;;) {
            kstate_bytes_t k, v;
            int64_t s, e;
            bool found;
            CHECK_OK(kstate_session_iter_next(it, &k, &v, &s, &e, &found));
            if (!found) {
                break;
            }
            CHECK(bytes_eq(k, KEYS[key]));
            CHECK(e >= t - gap && s <= t + gap);
            start = s < start ? s : start;
            end = e > end ? e : end;
            CHECK_OK(kstate_session_remove(st, KEY(KEYS[key]), s, e));
            /* The model: the same removal, found by the store; it must be in the model. */
            bool known = false;
            for (int j = 0; j < g_nsess; j++) {
                if (g_sess[j].live && g_sess[j].key == key && g_sess[j].start == s &&
                    g_sess[j].end == e) {
                    g_sess[j].live = false;
                    known = true;
                }
            }
            CHECK(known);
            merges++;
            kstate_bytes_free(&k);
            kstate_bytes_free(&v);
        }
        CHECK_OK(kstate_session_iter_close(it));
        /* Removing advances the stream time too (Kafka 4.4); so does the put. */
        if (end > stream_time) {
            stream_time = end;
        }
        char agg[16];
        snprintf(agg, sizeof agg, "g%d", i);
        CHECK_OK(kstate_session_put(st, KEY(KEYS[key]), start, end, (const uint8_t *)agg,
                                    strlen(agg)));
        if (end / g_interval < (stream_time - retention) / g_interval || g_nsess >= MAX_WIN) {
            continue;
        }
        sess_t *slot = &g_sess[g_nsess++];
        slot->key = key;
        slot->start = start;
        slot->end = end;
        slot->live = true;
        snprintf(slot->agg, sizeof slot->agg, "%s", agg);
    }
    CHECK(merges > 0);
    qsort(g_sess, (size_t)g_nsess, sizeof g_sess[0], sess_order);
    int64_t ev = stream_time - retention + 1;
    int64_t ee = stream_time - 900, ls = stream_time - 400;
    const squery_t queries[] = {
        {"b", "b", ee, ls},              /* findSessions(key) */
        {"b", NULL, ee, ls},             /* range, open upper bound */
        {NULL, "b", ee, ls},             /* range, open lower bound */
        {"a", "a", 0, INT64_MAX},        /* fetch(key) */
        {NULL, "b", 0, INT64_MAX},       /* fetch(from, to), open lower bound */
        {"bb", "a", 0, INT64_MAX},       /* from > to: empty */
    };
    for (int reverse = 0; reverse < 2; reverse++) {
        for (size_t qi = 0; qi < sizeof queries / sizeof queries[0]; qi++) {
            const squery_t *q = &queries[qi];
            const uint8_t *fk = (const uint8_t *)q->from_key, *tk = (const uint8_t *)q->to_key;
            size_t fl = fk ? strlen(q->from_key) : 0, tl = tk ? strlen(q->to_key) : 0;
            kstate_session_iter_t *it = NULL;
            kstate_isolation_t iso = KSTATE_READ_UNCOMMITTED;
            if (qi == 0) {
                CHECK_OK(reverse ? kstate_session_backward_find_sessions(st, iso, fk, fl, ee, ls,
                                                                         &it)
                                 : kstate_session_find_sessions(st, iso, fk, fl, ee, ls, &it));
            } else if (qi <= 2) {
                CHECK_OK(reverse ? kstate_session_backward_find_sessions_range(
                                       st, iso, fk, fl, tk, tl, ee, ls, &it)
                                 : kstate_session_find_sessions_range(st, iso, fk, fl, tk, tl, ee,
                                                                      ls, &it));
            } else if (qi == 3) {
                CHECK_OK(reverse ? kstate_session_backward_fetch(st, iso, fk, fl, &it)
                                 : kstate_session_fetch(st, iso, fk, fl, &it));
            } else {
                CHECK_OK(reverse ? kstate_session_backward_fetch_range(st, iso, fk, fl, tk, tl, &it)
                                 : kstate_session_fetch_range(st, iso, fk, fl, tk, tl, &it));
            }
            int n = 0;
            expect_sessions(it, q, reverse, ev, &n);
            CHECK(qi == 5 ? n == 0 : n > 0);
        }
    }
    for (int i = 0; i < g_nsess; i++) {
        kstate_bytes_t v;
        bool found;
        CHECK_OK(kstate_session_fetch_session(st, KSTATE_READ_UNCOMMITTED,
                                              KEY(KEYS[g_sess[i].key]), g_sess[i].start,
                                              g_sess[i].end, &v, &found));
        bool expect = g_sess[i].live && g_sess[i].end >= ev;
        /* A removed session may have been put again by a later record. */
        for (int j = 0; j < g_nsess && !expect; j++) {
            expect = g_sess[j].live && g_sess[j].key == g_sess[i].key &&
                     g_sess[j].start == g_sess[i].start && g_sess[j].end == g_sess[i].end &&
                     g_sess[j].end >= ev;
        }
        CHECK(found == expect);
        kstate_bytes_free(&v);
    }
    CHECK_OK(kstate_session_close(st));
}

static void test_session_model(void) {
    for (int e = 0; e < 2; e++) {
        session_model_run(ENGINES[e], 31 + (uint64_t)e);
    }
}

/* ----- options, plain values, transactions -------------------------------------------- */

static void test_options(void) {
    kstate_window_options_t o;
    CHECK_OK(kstate_window_options_init(&o, sizeof o));
    CHECK(o.struct_size == sizeof o && sizeof o == KSTATE_WINDOW_OPTIONS_SIZE_V2);
    CHECK(!o.time_ordered && !o.key_index);
    CHECK(o.engine == KSTATE_ENGINE_ROCKSDB && o.value_format == KSTATE_FORMAT_TIMESTAMPED);
    CHECK(o.retention_ms == 86400000 && o.window_size_ms == 0 && o.segment_interval_ms == 0);
    CHECK(!o.retain_duplicates && !o.sync_on_commit && o.max_uncommitted_bytes == 64u << 20);
    kstate_session_options_t so;
    CHECK_OK(kstate_session_options_init(&so, sizeof so));
    CHECK(so.struct_size == KSTATE_SESSION_OPTIONS_SIZE_V2 && so.retention_ms == 86400000);
    CHECK(so.value_format == KSTATE_FORMAT_PLAIN && !so.time_ordered);
    /* Sizes the library does not know, NULL: refused, nothing written. */
    kstate_window_options_t canary;
    memset(&canary, 0xAB, sizeof canary);
    CHECK_ERR(kstate_window_options_init(&canary, 0), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_options_init(&canary, sizeof canary + 8), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_options_init(&canary, 56), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(((const unsigned char *)&canary)[0] == 0xAB);
    CHECK_ERR(kstate_window_options_init(NULL, sizeof o), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_session_options_init(&so, sizeof o), KSTATE_ERR_INVALID_ARGUMENT);
    /* Uninitialised or out-of-range options: refused at open. */
    kstate_window_t *w = (kstate_window_t *)1;
    CHECK_ERR(kstate_window_open(fresh_path(), &canary, &w), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(w == NULL);
    kstate_window_options_t bad = window_options(KSTATE_ENGINE_MEMORY, 100, 101, false, 0);
    CHECK_ERR(kstate_window_open(NULL, &bad, &w), KSTATE_ERR_INVALID_ARGUMENT);
    bad = window_options(KSTATE_ENGINE_MEMORY, 100, 10, false, -1);
    CHECK_ERR(kstate_window_open(NULL, &bad, &w), KSTATE_ERR_INVALID_ARGUMENT);
    bad = window_options(KSTATE_ENGINE_MEMORY, 100, 10, false, 0);
    bad.value_format = 7;
    CHECK_ERR(kstate_window_open(NULL, &bad, &w), KSTATE_ERR_INVALID_ARGUMENT);
    bad = window_options(7, 100, 10, false, 0);
    CHECK_ERR(kstate_window_open(NULL, &bad, &w), KSTATE_ERR_INVALID_ARGUMENT);
    bad = window_options(KSTATE_ENGINE_MEMORY, 100, 10, false, 0);
    bad.max_uncommitted_bytes = 0;
    CHECK_ERR(kstate_window_open(NULL, &bad, &w), KSTATE_ERR_INVALID_ARGUMENT);
    kstate_session_options_t sbad = session_options(KSTATE_ENGINE_MEMORY, -5, 0);
    kstate_session_t *s = NULL;
    CHECK_ERR(kstate_session_open(NULL, &sbad, &s), KSTATE_ERR_INVALID_ARGUMENT);
    /* NULL options are the defaults; RocksDB needs a path, the memory engine does not. */
    CHECK_ERR(kstate_window_open(NULL, NULL, &w), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_open("", NULL, &w), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_OK(kstate_window_open(fresh_path(), NULL, &w));
    CHECK(w != NULL);
    CHECK_OK(kstate_window_close(w));
    CHECK_OK(kstate_session_open(fresh_path(), NULL, &s));
    CHECK_OK(kstate_session_close(s));
}

static void test_plain_and_window_end(void) {
    for (int e = 0; e < 2; e++) {
        kstate_window_options_t o = window_options(ENGINES[e], INT64_MAX, 1000, false, 0);
        o.value_format = KSTATE_FORMAT_PLAIN;
        kstate_window_t *w = NULL;
        CHECK_OK(kstate_window_open(fresh_path(), &o, &w));
        /* The typed put needs timestamped values; the raw one stores the bytes as given. */
        CHECK_ERR(kstate_window_put(w, KEY("k"), KEY("v"), 1, 0), KSTATE_ERR_FORMAT_MISMATCH);
        int64_t big = INT64_MAX - 10;
        CHECK_OK(kstate_window_put_raw(w, KEY("k"), KEY("raw"), big));
        kstate_bytes_t v;
        int64_t ts;
        bool found;
        CHECK_OK(kstate_window_fetch(w, KSTATE_READ_UNCOMMITTED, KEY("k"), big, &v, &ts, &found));
        CHECK(found && bytes_eq(v, "raw") && ts == -1);
        kstate_bytes_free(&v);
        kstate_window_iter_t *it = NULL;
        CHECK_OK(kstate_window_all(w, KSTATE_READ_UNCOMMITTED, &it));
        kstate_bytes_t k;
        int64_t start, end;
        CHECK_OK(kstate_window_iter_next(it, &k, &v, &ts, &start, &end, &found));
        /* start + size overflows: the end is INT64_MAX, as Kafka's timeWindowForSize. */
        CHECK(found && bytes_eq(k, "k") && bytes_eq(v, "raw") && ts == -1 && start == big &&
              end == INT64_MAX);
        kstate_bytes_free(&k);
        kstate_bytes_free(&v);
        CHECK_OK(kstate_window_iter_close(it));
        CHECK_OK(kstate_window_close(w));
        /* A timestamped store refuses a raw value shorter than its timestamp. */
        o = window_options(ENGINES[e], 1000, 10, false, 0);
        CHECK_OK(kstate_window_open(fresh_path(), &o, &w));
        CHECK_ERR(kstate_window_put_raw(w, KEY("k"), KEY("short"), 0), KSTATE_ERR_INVALID_VALUE);
        CHECK_OK(kstate_window_close(w));
    }
}

static void test_commit_rollback_reopen(void) {
    char wpath[4200], spath[4200];
    snprintf(wpath, sizeof wpath, "%s", fresh_path());
    snprintf(spath, sizeof spath, "%s", fresh_path());
    kstate_window_options_t wo = window_options(KSTATE_ENGINE_ROCKSDB, 10000, 100, false, 0);
    kstate_session_options_t so = session_options(KSTATE_ENGINE_ROCKSDB, 10000, 0);
    kstate_window_t *w = NULL;
    kstate_session_t *s = NULL;
    CHECK_OK(kstate_window_open(wpath, &wo, &w));
    CHECK_OK(kstate_session_open(spath, &so, &s));
    kstate_offset_t offs[2] = {{"in", 0, 41, true}, {"in", 1, 7, true}};
    CHECK_OK(kstate_window_put(w, KEY("k"), KEY("one"), 11, 100));
    CHECK_OK(kstate_session_put(s, KEY("k"), 10, 20, KEY("agg")));
    uint64_t bytes = 0;
    CHECK_OK(kstate_window_approximate_num_uncommitted_bytes(w, &bytes));
    CHECK(bytes > 0);
    CHECK_OK(kstate_session_approximate_num_uncommitted_bytes(s, &bytes));
    CHECK(bytes > 0);
    CHECK_OK(kstate_window_commit(w, offs, 2, (const uint8_t *)"meta", 4));
    CHECK_OK(kstate_session_commit(s, offs, 2, NULL, 0));
    CHECK_OK(kstate_window_approximate_num_uncommitted_bytes(w, &bytes));
    CHECK(bytes == 0);
    /* Uncommitted changes: the writer sees them, committed readers do not; rolled back. */
    CHECK_OK(kstate_window_put(w, KEY("k"), KEY("two"), 12, 100));
    CHECK_OK(kstate_session_remove(s, KEY("k"), 10, 20));
    kstate_bytes_t v;
    int64_t ts;
    bool found;
    CHECK_OK(kstate_window_fetch(w, KSTATE_READ_UNCOMMITTED, KEY("k"), 100, &v, &ts, &found));
    CHECK(found && bytes_eq(v, "two") && ts == 12);
    kstate_bytes_free(&v);
    CHECK_OK(kstate_window_fetch(w, KSTATE_READ_COMMITTED, KEY("k"), 100, &v, &ts, &found));
    CHECK(found && bytes_eq(v, "one") && ts == 11);
    kstate_bytes_free(&v);
    CHECK_OK(kstate_session_fetch_session(s, KSTATE_READ_UNCOMMITTED, KEY("k"), 10, 20, &v,
                                          &found));
    CHECK(!found);
    CHECK_OK(kstate_window_rollback(w));
    CHECK_OK(kstate_session_rollback(s));
    CHECK_OK(kstate_window_fetch(w, KSTATE_READ_UNCOMMITTED, KEY("k"), 100, &v, &ts, &found));
    CHECK(found && bytes_eq(v, "one"));
    kstate_bytes_free(&v);
    /* A second commit removes partition 1's offset (Kafka's null) and keeps partition 0. */
    kstate_offset_t drop1 = {"in", 1, 0, false};
    CHECK_OK(kstate_window_put(w, KEY("k2"), KEY("x"), 13, 200));
    CHECK_OK(kstate_window_commit(w, &drop1, 1, NULL, 0));
    /* Uncommitted at close: lost. */
    CHECK_OK(kstate_window_put(w, KEY("k3"), KEY("lost"), 14, 300));
    CHECK_OK(kstate_session_put(s, KEY("k3"), 30, 40, KEY("lost")));
    CHECK_OK(kstate_window_close(w));
    CHECK_OK(kstate_session_close(s));

    CHECK_OK(kstate_window_open(wpath, &wo, &w));
    CHECK_OK(kstate_session_open(spath, &so, &s));
    int64_t off;
    CHECK_OK(kstate_window_committed_offset(w, "in", 0, &off, &found));
    CHECK(found && off == 41);
    CHECK_OK(kstate_window_committed_offset(w, "in", 1, &off, &found));
    CHECK(!found && off == 0);
    CHECK_OK(kstate_session_committed_offset(s, "in", 1, &off, &found));
    CHECK(found && off == 7);
    kstate_bytes_t meta;
    CHECK_OK(kstate_window_committed_metadata(w, &meta, &found));
    CHECK(found && bytes_eq(meta, "meta"));
    kstate_bytes_free(&meta);
    CHECK_OK(kstate_session_committed_metadata(s, &meta, &found));
    CHECK(!found && meta.ptr == NULL);
    kstate_window_iter_t *it = NULL;
    CHECK_OK(kstate_window_all(w, KSTATE_READ_COMMITTED, &it));
    const char *want[2][2] = {{"k", "one"}, {"k2", "x"}};
    int n = 0;
    for (;;) {
        kstate_bytes_t k;
        int64_t start, end;
        CHECK_OK(kstate_window_iter_next(it, &k, &v, &ts, &start, &end, &found));
        if (!found) {
            break;
        }
        if (n < 2) {
            CHECK(bytes_eq(k, want[n][0]) && bytes_eq(v, want[n][1]));
            CHECK(end == start + 100);
        }
        n++;
        kstate_bytes_free(&k);
        kstate_bytes_free(&v);
    }
    CHECK(n == 2);
    CHECK_OK(kstate_window_iter_close(it));
    kstate_session_iter_t *sit = NULL;
    CHECK_OK(kstate_session_fetch_range(s, KSTATE_READ_COMMITTED, NULL, 0, NULL, 0, &sit));
    kstate_bytes_t k;
    int64_t start, end;
    CHECK_OK(kstate_session_iter_next(sit, &k, &v, &start, &end, &found));
    CHECK(found && bytes_eq(k, "k") && bytes_eq(v, "agg") && start == 10 && end == 20);
    kstate_bytes_free(&k);
    kstate_bytes_free(&v);
    CHECK_OK(kstate_session_iter_next(sit, &k, &v, &start, &end, &found));
    CHECK(!found);
    CHECK_OK(kstate_session_iter_close(sit));
    /* One handle per store: a second open is LOCKED; a window store is no session store. */
    kstate_window_t *w2 = NULL;
    CHECK_ERR(kstate_window_open(wpath, &wo, &w2), KSTATE_ERR_LOCKED);
    CHECK_OK(kstate_window_close(w));
    kstate_session_t *s2 = NULL;
    CHECK_ERR(kstate_session_open(wpath, &so, &s2), KSTATE_ERR_FORMAT_MISMATCH);
    CHECK(s2 == NULL);
    CHECK_OK(kstate_session_close(s));
}

/* ----- misuse of the boundary ---------------------------------------------------------- */

static void test_bad_handles(void) {
    kstate_window_options_t wo = window_options(KSTATE_ENGINE_MEMORY, 1000, 10, false, 0);
    kstate_session_options_t so = session_options(KSTATE_ENGINE_MEMORY, 1000, 0);
    kstate_kv_t *kv = NULL;
    kstate_kv_options_t ko;
    CHECK_OK(kstate_kv_options_init(&ko, sizeof ko));
    ko.engine = KSTATE_ENGINE_MEMORY;
    CHECK_OK(kstate_kv_open(NULL, &ko, &kv));
    kstate_window_t *w = NULL;
    kstate_session_t *s = NULL;
    CHECK_OK(kstate_window_open(NULL, &wo, &w));
    CHECK_OK(kstate_session_open(NULL, &so, &s));
    CHECK_OK(kstate_window_put(w, KEY("k"), KEY("v"), 1, 0));
    CHECK_OK(kstate_session_put(s, KEY("k"), 0, 5, KEY("g")));
    kstate_window_iter_t *wi = NULL;
    kstate_session_iter_t *si = NULL;
    CHECK_OK(kstate_window_all(w, KSTATE_READ_UNCOMMITTED, &wi));
    CHECK_OK(kstate_session_fetch(s, KSTATE_READ_UNCOMMITTED, KEY("k"), &si));
    kstate_bytes_t k, v;
    int64_t a, b, c;
    bool found;
    /* Wrong kinds: every pairing is INVALID_HANDLE, and nothing is closed by it. */
    CHECK_ERR(kstate_window_rollback((kstate_window_t *)s), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_window_rollback((kstate_window_t *)kv), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_window_close((kstate_window_t *)wi), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_session_close((kstate_session_t *)w), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_session_put((kstate_session_t *)kv, KEY("k"), 0, 1, KEY("g")),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_kv_close((kstate_kv_t *)w), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_kv_close((kstate_kv_t *)s), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_window_iter_next((kstate_window_iter_t *)si, &k, &v, &a, &b, &c, &found),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_session_iter_next((kstate_session_iter_t *)wi, &k, &v, &a, &b, &found),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_window_iter_close((kstate_window_iter_t *)w), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_session_iter_close((kstate_session_iter_t *)wi), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_window_all((kstate_window_t *)s, 0, &wi), KSTATE_ERR_INVALID_HANDLE);
    CHECK(wi == NULL);
    CHECK_OK(kstate_window_all(w, KSTATE_READ_UNCOMMITTED, &wi));
    /* NULL and forged handles. */
    CHECK_ERR(kstate_window_close(NULL), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_session_iter_close(NULL), KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_window_put((kstate_window_t *)(uintptr_t)0x1234, KEY("k"), KEY("v"), 1, 0),
              KSTATE_ERR_INVALID_HANDLE);
    CHECK_ERR(kstate_window_rollback((kstate_window_t *)((uintptr_t)w + 1000)),
              KSTATE_ERR_INVALID_HANDLE);
    /* Still live and working after all that. */
    CHECK_OK(kstate_window_iter_next(wi, &k, &v, &a, &b, &c, &found));
    CHECK(found && bytes_eq(k, "k") && bytes_eq(v, "v") && a == 1 && b == 0 && c == 10);
    kstate_bytes_free(&k);
    kstate_bytes_free(&v);
    /* Closing a store closes its iterators; every later use is a clear error. */
    CHECK_OK(kstate_window_close(w));
    CHECK_ERR(kstate_window_iter_next(wi, &k, &v, &a, &b, &c, &found), KSTATE_ERR_ITERATOR_CLOSED);
    CHECK_OK(kstate_window_iter_close(wi));
    CHECK_ERR(kstate_window_iter_close(wi), KSTATE_ERR_ITERATOR_CLOSED);
    CHECK_ERR(kstate_window_close(w), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_window_put(w, KEY("k"), KEY("v"), 1, 0), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_window_fetch(w, 0, KEY("k"), 0, &v, &a, &found), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_window_fetch_all(w, 0, 0, 10, &wi), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_window_commit(w, NULL, 0, NULL, 0), KSTATE_ERR_STORE_CLOSED);
    CHECK_OK(kstate_session_iter_close(si));
    CHECK_ERR(kstate_session_iter_next(si, &k, &v, &a, &b, &found), KSTATE_ERR_ITERATOR_CLOSED);
    CHECK_OK(kstate_session_close(s));
    CHECK_ERR(kstate_session_close(s), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_session_remove(s, KEY("k"), 0, 5), KSTATE_ERR_STORE_CLOSED);
    CHECK_ERR(kstate_session_rollback(s), KSTATE_ERR_STORE_CLOSED);
    /* A store opened later never gets the closed number. */
    kstate_window_t *w2 = NULL;
    CHECK_OK(kstate_window_open(NULL, &wo, &w2));
    CHECK(w2 != w);
    CHECK_ERR(kstate_window_rollback(w), KSTATE_ERR_STORE_CLOSED);
    CHECK_OK(kstate_window_close(w2));
    CHECK_OK(kstate_kv_close(kv));
}

static void test_null_arguments(void) {
    kstate_window_options_t wo = window_options(KSTATE_ENGINE_MEMORY, 1000, 10, false, 0);
    kstate_session_options_t so = session_options(KSTATE_ENGINE_MEMORY, 1000, 0);
    kstate_window_t *w = NULL;
    kstate_session_t *s = NULL;
    CHECK_ERR(kstate_window_open(NULL, &wo, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_session_open(NULL, &so, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_OK(kstate_window_open(NULL, &wo, &w));
    CHECK_OK(kstate_session_open(NULL, &so, &s));
    kstate_bytes_t v;
    int64_t a, b, c;
    bool found;
    kstate_window_iter_t *wi = NULL;
    kstate_session_iter_t *si = NULL;
    /* NULL data with a length. */
    CHECK_ERR(kstate_window_put(w, NULL, 1, KEY("v"), 1, 0), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_put(w, KEY("k"), NULL, 2, 1, 0), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_put_raw(w, KEY("k"), NULL, 9, 0), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_fetch_range(w, 0, NULL, 4, 0, 10, &wi), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_fetch_key_range(w, 0, KEY("a"), NULL, 3, 0, 10, &wi),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(wi == NULL);
    CHECK_ERR(kstate_session_put(s, KEY("k"), 0, 1, NULL, 3), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_session_find_sessions_range(s, 0, NULL, 1, NULL, 0, 0, 1, &si),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(si == NULL);
    /* NULL key with length 0 is the empty key, a valid key. */
    CHECK_OK(kstate_window_put(w, NULL, 0, NULL, 0, 5, 3));
    CHECK_OK(kstate_window_fetch(w, KSTATE_READ_UNCOMMITTED, NULL, 0, 3, &v, &a, &found));
    CHECK(found && v.len == 0 && a == 5);
    kstate_bytes_free(&v);
    /* NULL out-parameters. */
    CHECK_ERR(kstate_window_fetch(w, 0, KEY("k"), 0, NULL, &a, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_fetch(w, 0, KEY("k"), 0, &v, &a, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_all(w, 0, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_session_fetch(s, 0, KEY("k"), NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_session_fetch_session(s, 0, KEY("k"), 0, 1, NULL, &found),
              KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_committed_offset(w, "t", 0, NULL, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_committed_offset(w, NULL, 0, &a, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_session_committed_metadata(s, &v, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_approximate_num_uncommitted_bytes(w, NULL), KSTATE_ERR_INVALID_ARGUMENT);
    kstate_offset_t bad_topic = {NULL, 0, 1, true};
    CHECK_ERR(kstate_session_commit(s, &bad_topic, 1, NULL, 0), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_commit(w, NULL, 2, NULL, 0), KSTATE_ERR_INVALID_ARGUMENT);
    /* An unknown isolation. */
    CHECK_ERR(kstate_window_all(w, 9, &wi), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_session_fetch(s, 9, KEY("k"), &si), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_OK(kstate_window_all(w, KSTATE_READ_UNCOMMITTED, &wi));
    kstate_bytes_t k;
    CHECK_ERR(kstate_window_iter_next(wi, NULL, &v, &a, &b, &c, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK_ERR(kstate_window_iter_next(wi, &k, &v, &a, &b, NULL, &found), KSTATE_ERR_INVALID_ARGUMENT);
    CHECK(k.ptr == NULL && v.ptr == NULL);
    /* The failed calls took nothing from the iterator. */
    CHECK_OK(kstate_window_iter_next(wi, &k, &v, &a, &b, &c, &found));
    CHECK(found && k.len == 0 && b == 3);
    kstate_bytes_free(&k);
    kstate_bytes_free(&v);
    CHECK_OK(kstate_window_iter_close(wi));
    CHECK_OK(kstate_window_close(w));
    CHECK_OK(kstate_session_close(s));
}

int main(void) {
    make_scratch(g_dir, sizeof g_dir);
    RUN(test_options);
    RUN(test_window_model);
    RUN(test_session_model);
    RUN(test_plain_and_window_end);
    RUN(test_commit_rollback_reopen);
    RUN(test_bad_handles);
    RUN(test_null_arguments);
    remove_tree(g_dir);
    return finish();
}
