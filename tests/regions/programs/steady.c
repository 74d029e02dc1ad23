/* One long region that touches fresh pages at an even pace in CPU time: what a rotated group's
 * share of a region is scaled by (tests/e2e/test_regions.py). Usage: steady PAGES SPIN
 * (SPIN: busy iterations between two pages). */
#include <fj_tool/fapp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: steady PAGES SPIN\n");
        return 2;
    }
    long pages = atol(argv[1]), spin = atol(argv[2]);
    long size = sysconf(_SC_PAGESIZE);
    volatile char *memory = mmap(NULL, (size_t)(pages * size), PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    volatile long sink = 0;
    fapp_start("steady", 0, 0);
    for (long p = 0; p < pages; p++) {
        memory[p * size] = 1;
        for (long i = 0; i < spin; i++)
            sink += i;
    }
    fapp_stop("steady", 0, 0);
    return 0;
}
