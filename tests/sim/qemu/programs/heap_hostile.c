/* The shim's wrappers at their edges: realloc to 0 and from NULL, posix_memalign refusing a bad
 * alignment, calloc overflowing, free(NULL), the aligned allocators, a failed huge malloc, marker
 * names longer than the shim keeps; errno as the program set it. Prints "ok" when every call
 * answered as glibc's own does. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Weak: the shim, preloaded, defines them; a run without it skips the marks. */
void fapp_start(const char *name, int number, int level) __attribute__((weak));
void fapp_stop(const char *name, int number, int level) __attribute__((weak));
static volatile size_t huge = SIZE_MAX; /* volatile: gcc would refuse the sizes at compile time */

int main(void) {
    int bad = 0;
    char *p = realloc(NULL, 100);
    bad |= p == NULL;
    p = realloc(p, 5000);
    bad |= p == NULL;
    errno = 1234;
    p = realloc(p, 0); /* frees: glibc returns NULL */
    bad |= p != NULL || errno != 1234;
    void *q = (void *)1;
    bad |= posix_memalign(&q, 3, 64) != EINVAL || q != (void *)1;
    bad |= posix_memalign(&q, 64, 64) != 0 || ((uintptr_t)q & 63) != 0;
    free(q);
    bad |= calloc(huge / 2, 4) != NULL;
    free(NULL);
    void *r = aligned_alloc(256, 512), *s = memalign(4096, 100);
    bad |= r == NULL || s == NULL || ((uintptr_t)r & 255) != 0 || ((uintptr_t)s & 4095) != 0;
    free(r);
    free(s);
    bad |= malloc(huge - 4096) != NULL;
    char name[400];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    if (fapp_start != NULL && fapp_stop != NULL) {
        fapp_start(name, 7, 0);
        fapp_stop(name, 7, 0);
    }
    printf(bad ? "bad\n" : "ok\n");
    return bad;
}
