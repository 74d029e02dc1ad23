/* LIKWID's usual OpenMP pattern for tests/regions: every thread of a parallel region marks "omp"
 * around its own share of fresh pages (thread i touches 200 * (i + 1)). */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <likwid-marker.h>

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    LIKWID_MARKER_INIT;
#pragma omp parallel num_threads(4)
    {
        LIKWID_MARKER_THREADINIT;
        long pages = 200L * (omp_get_thread_num() + 1);
        size_t bytes = (size_t)pages * (size_t)page;
        char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        madvise(p, bytes, MADV_NOHUGEPAGE);
#pragma omp barrier
        LIKWID_MARKER_START("omp");
        for (long i = 0; i < pages; i++)
            ((volatile char *)p)[i * page] = 1;
        LIKWID_MARKER_STOP("omp");
        munmap(p, bytes);
    }
    LIKWID_MARKER_CLOSE;
    puts("done");
    return 0;
}
