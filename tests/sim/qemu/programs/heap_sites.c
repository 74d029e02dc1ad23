/* Heap blocks by allocation site: `grid` and `table` from two sites, `table` freed and its memory
 * taken again by `reuse` at a third site (the program says whether it got the same address).
 * Every access to the blocks goes through a volatile pointer: one 8-byte load or store each, so
 * the counts are exact at any optimisation level. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 8192 /* doubles: 64 KiB, under glibc's mmap threshold, so a freed block is reused */

int main(void) {
    volatile double *grid = malloc(N * sizeof(double)); /* site: grid */
    volatile double *table = calloc(N, sizeof(double)); /* site: table */
    if (grid == NULL || table == NULL) return 1;
    for (int i = 0; i < N; i++) grid[i] = 0.0;                  /* N stores */
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < N; i++) grid[i] += 1.0;             /* 3 N loads, 3 N stores */
    for (int i = 0; i < N; i++) table[i] = i;                   /* N stores */
    uintptr_t old = (uintptr_t)table;
    free((void *)table);
    volatile double *reuse = malloc(N * sizeof(double)); /* site: reuse */
    if (reuse == NULL) return 1;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N; i++) reuse[i] = grid[i];         /* 2 N loads of grid, 2 N stores */
    printf("reused %d\n", (uintptr_t)reuse == old);
    double sum = reuse[0]; /* one load */
    free((void *)reuse);
    free((void *)grid);
    printf("sum %g\n", sum);
    return 0;
}
