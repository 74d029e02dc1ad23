/* The marked program of tests/regions: fapp, LIKWID and sectormon markers around page touching.
 *
 * Each region touches a known number of fresh pages (one minor fault each, huge pages refused),
 * so its page-fault count is known in advance. Unmarked work runs before and after. Built with
 * -DUNMARKED the markers compile away, which is the "program without the library" to compare with.
 * Prints one line per phase; exit 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef UNMARKED
#define fapp_start(name, number, level) ((void)0)
#define fapp_stop(name, number, level) ((void)0)
#else
#include <fj_tool/fapp.h>
#endif
#include <likwid-marker.h>

#define FAPP_PAGES 6000
#define FAPP_ENTRIES 4
#define LIKWID_PAGES 1500
#define WORKER_PAGES 800
#define WORKERS 3
#define BEFORE_PAGES 3000
#define AFTER_PAGES 2000

static long page_size;

/* Touch PAGES fresh pages; returns a checksum so the work is not optimised away. */
static unsigned long touch(long pages) {
    size_t bytes = (size_t)pages * (size_t)page_size;
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise(p, bytes, MADV_NOHUGEPAGE);
    unsigned long sum = 0;
    for (long i = 0; i < pages; i++) {
        p[i * page_size] = (char)(i & 0x7f);
        sum += (unsigned char)p[i * page_size];
    }
    munmap(p, bytes);
    return sum;
}

static void *worker(void *arg) {
    unsigned long *out = arg;
    LIKWID_MARKER_THREADINIT;
    LIKWID_MARKER_START("worker");
    *out = touch(WORKER_PAGES);
    LIKWID_MARKER_STOP("worker");
    return NULL;
}

int main(int argc, char **argv) {
    page_size = sysconf(_SC_PAGESIZE);
    LIKWID_MARKER_INIT;
    printf("before %lu\n", touch(BEFORE_PAGES));
    unsigned long sum = 0;
    for (int i = 0; i < FAPP_ENTRIES; i++) {
        fapp_start("fapp_pages", 1, 0);
        sum += touch(FAPP_PAGES);
        fapp_stop("fapp_pages", 1, 0);
    }
    printf("fapp %lu\n", sum);
    fapp_start("too_deep", 1, 1); /* level 1: ignored at the default level 0 */
    fapp_stop("too_deep", 1, 1);
    LIKWID_MARKER_START("likwid_pages");
    printf("likwid %lu\n", touch(LIKWID_PAGES));
    LIKWID_MARKER_STOP("likwid_pages");
    pthread_t threads[WORKERS];
    unsigned long sums[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&threads[i], NULL, worker, &sums[i]);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(threads[i], NULL);
    printf("workers %lu %lu %lu\n", sums[0], sums[1], sums[2]);
    printf("after %lu\n", touch(AFTER_PAGES));
    LIKWID_MARKER_CLOSE;
    if (argc > 1) /* marked SECONDS: idle that long after the regions, unmarked (a longer run) */
        usleep((useconds_t)(atof(argv[1]) * 1e6));
    return 0;
}
