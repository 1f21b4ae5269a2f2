/*
 * What the window and session C tests share: a scratch directory with fresh store paths,
 * both engines, deterministic pseudo-random numbers and a few keys in byte order. Included
 * once per test program, after common.h.
 */
#ifndef KSTATE_TEST_SEGMENTED_COMMON_H
#define KSTATE_TEST_SEGMENTED_COMMON_H

static char g_dir[4096];
static int g_seq;

/* A new store path; the last four stay valid (tests hold a few at once). */
static const char *fresh_path(void) {
    static char paths[4][4200];
    char *path = paths[g_seq % 4];
    snprintf(path, sizeof paths[0], "%s/store-%d", g_dir, g_seq);
    g_seq++;
    return path;
}

static const kstate_engine_t ENGINES[2] = {KSTATE_ENGINE_ROCKSDB, KSTATE_ENGINE_MEMORY};

/* Deterministic pseudo-random numbers, so a failure replays. */
static uint64_t g_rng;
static int64_t rnd(int64_t n) {
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int64_t)((g_rng >> 33) % (uint64_t)n);
}

static const char *KEYS[4] = {"a", "b", "bb", "c"};

/* Byte order of two NUL-terminated keys, as kstate compares key bytes. */
static int key_cmp(const char *x, const char *y) {
    size_t a = strlen(x), b = strlen(y);
    int c = memcmp(x, y, a < b ? a : b);
    if (c != 0) {
        return c;
    }
    return a < b ? -1 : (a > b ? 1 : 0);
}

#endif
