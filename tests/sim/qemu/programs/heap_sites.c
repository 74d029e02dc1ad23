/* Heap blocks by allocation site: `grid` and `table` from two sites, `table` freed and its memory
 * taken again by `reuse` at a third site (the program says whether it got the same address).
 * Every access to the blocks goes through a volatile pointer: one 8-byte load or store each, so
 * the counts are exact at any optimisation level. Consecutive blocks share a 256-byte line, and a
 * run of accesses to one line is counted to the object of its first access (docs/sim.md): the
 * program reads `fence`, a global of its own, between phases, so no run crosses from one block
 * into the next. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 8192 /* doubles: 64 KiB, under glibc's mmap threshold, so a freed block is reused */

volatile int fence;

int main(void) {
    volatile double *grid = malloc(N * sizeof(double)); /* site: grid */
    volatile double *table = calloc(N, sizeof(double)); /* site: table */
    if (grid == NULL || table == NULL) return 1;
    for (int i = 0; i < N; i++) grid[i] = 0.0;                  /* N stores */
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < N; i++) grid[i] += 1.0;             /* 3 N loads, 3 N stores */
    (void)fence;
    for (int i = 0; i < N; i++) table[i] = i;                   /* N stores */
    (void)fence;
    uintptr_t old = (uintptr_t)table;
    free((void *)table);
    volatile double *reuse = malloc(N * sizeof(double)); /* site: reuse */
    if (reuse == NULL) return 1;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N; i++) reuse[i] = grid[i];         /* 2 N loads of grid, 2 N stores */
    (void)fence;
    printf("reused %d\n", (uintptr_t)reuse == old);
    double sum = reuse[0]; /* one load */
    free((void *)reuse);
    free((void *)grid);
    printf("sum %g\n", sum);
    return 0;
}
