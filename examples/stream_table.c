/* stream_table: the sector cache's textbook case, as a small real program.
 *
 * Each pass streams through a 32 MiB array (read once, written back: no reuse within a pass)
 * and, once every eight elements, reads a 40 KiB table at a pseudo-random place. The table
 * fits the A64FX's 64 KiB L1D, but the stream pushes it out: every 256-byte line of the stream
 * that comes in evicts something, and with one LRU over all four ways that is often a table line.
 * Give the table a sector of its own with three L1D ways (48 KiB) and the stream the fourth,
 * and the table stays: `sectormon sim --advise -- ./stream_table` finds that configuration.
 *
 * Usage: stream_table [PASSES]   (default 2; prints a checksum so the work cannot be dropped)
 * Build lines: examples/README.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define STREAM_BYTES (32u << 20)
#define TABLE_BYTES (40u << 10)
#define STREAM_N (STREAM_BYTES / sizeof(double))
#define TABLE_N (TABLE_BYTES / sizeof(uint64_t))

/* Globals, so their names are in the ELF symbols: sectormon's data objects `stream` and `table`. */
double stream[STREAM_N];
uint64_t table[TABLE_N];

/* A 64-bit linear congruential generator (Knuth's MMIX constants): cheap and deterministic, so
 * every run reads the same table places and two traces of the program are the same. */
static uint64_t next_random(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

int main(int argc, char **argv) {
    int passes = argc > 1 ? atoi(argv[1]) : 2;
    if (passes < 1) {
        fprintf(stderr, "usage: %s [PASSES]  (PASSES: 1 or more)\n", argv[0]);
        return 2;
    }
    uint64_t state = 12345, sum = 0;
    for (size_t i = 0; i < TABLE_N; i++) table[i] = i;
    for (int pass = 0; pass < passes; pass++) {
        for (size_t i = 0; i < STREAM_N; i++) {
            stream[i] += 1.0;
            if ((i & 7) == 0) sum += table[next_random(&state) % TABLE_N];
        }
    }
    printf("passes %d, checksum %llu\n", passes, (unsigned long long)sum);
    return 0;
}
