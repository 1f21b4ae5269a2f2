/*
 * Tiny test harness shared by the kstate C tests: checks that count failures, one line per
 * test case ("ok - name" / "not ok - name", read by run.sh), and scratch directories.
 */
#ifndef KSTATE_TEST_COMMON_H
#define KSTATE_TEST_COMMON_H

#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, kill, usleep-free nanosleep */

#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every test includes this header first, so the feature-test macro above applies. */

#include "kstate.h"

static int g_failures;
static int g_case_failures;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
            g_case_failures++;                                                          \
        }                                                                               \
    } while (0)

/* The call must succeed (return NULL). */
#define CHECK_OK(call)                                                                  \
    do {                                                                                \
        kstate_error_t *err_ = (call);                                                  \
        if (err_ != NULL) {                                                             \
            fprintf(stderr, "%s:%d: %s failed: [%s] %s\n", __FILE__, __LINE__, #call,   \
                    kstate_error_code_name(kstate_error_code(err_)),                    \
                    kstate_error_message(err_));                                        \
            kstate_error_free(err_);                                                    \
            g_case_failures++;                                                          \
        }                                                                               \
    } while (0)

/* The call must fail with `code` and a non-empty message. */
#define CHECK_ERR(call, code)                                                           \
    do {                                                                                \
        kstate_error_t *err_ = (call);                                                  \
        int32_t got_ = kstate_error_code(err_);                                         \
        if (got_ != (code)) {                                                           \
            fprintf(stderr, "%s:%d: %s: expected %s, got %s (%s)\n", __FILE__, __LINE__, \
                    #call, kstate_error_code_name(code), kstate_error_code_name(got_),  \
                    kstate_error_message(err_));                                        \
            g_case_failures++;                                                          \
        } else if (strlen(kstate_error_message(err_)) == 0) {                           \
            fprintf(stderr, "%s:%d: %s: empty message\n", __FILE__, __LINE__, #call);    \
            g_case_failures++;                                                          \
        }                                                                               \
        kstate_error_free(err_);                                                        \
    } while (0)

/* kstate's default options in this header's layout (struct_size = sizeof the struct). */
static inline kstate_kv_options_t default_options(void) {
    kstate_kv_options_t o;
    memset(&o, 0, sizeof o);
    CHECK_OK(kstate_kv_options_init(&o, sizeof o));
    return o;
}

static inline void run_case(const char *name, void (*fn)(void)) {
    g_case_failures = 0;
    fn();
    printf("%s - %s\n", g_case_failures == 0 ? "ok" : "not ok", name);
    fflush(stdout);
    if (g_case_failures != 0) {
        g_failures++;
    }
}

#define RUN(fn) run_case(#fn, fn)

/* Exit status of a test program. */
static inline int finish(void) {
    return g_failures == 0 ? 0 : 1;
}

static inline int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes a directory tree (like rm -rf). */
static inline void remove_tree(const char *path) {
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh scratch directory under $TMPDIR (or /tmp); `buf` receives its path. */
static inline void make_scratch(char *buf, size_t len) {
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, len, "%s/kstate-c-XXXXXX", tmp != NULL ? tmp : "/tmp");
    if (mkdtemp(buf) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Compares a returned buffer with a C string's bytes. */
static inline int bytes_eq(kstate_bytes_t b, const char *s) {
    size_t n = strlen(s);
    return b.len == n && (n == 0 || memcmp(b.ptr, s, n) == 0);
}

#define KEY(s) (const uint8_t *)(s), strlen(s)

#endif /* KSTATE_TEST_COMMON_H */
