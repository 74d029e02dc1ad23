/* The first check: a streamed 32 MiB global array and a 40 KiB global table read at
 * pseudo-random places (one table read per eight stream elements), two passes. */
#include <stdint.h>
#include <stdio.h>

#define STREAM_BYTES (32u << 20)
#define TABLE_BYTES (40u << 10)
#define STREAM_N (STREAM_BYTES / sizeof(double))
#define TABLE_N (TABLE_BYTES / sizeof(uint64_t))

double stream[STREAM_N];
uint64_t table[TABLE_N];

int main(void) {
    uint64_t x = 12345, sum = 0;
    for (size_t i = 0; i < TABLE_N; i++) table[i] = i;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < STREAM_N; i++) {
            stream[i] += 1.0;
            if ((i & 7) == 0) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                sum += table[(x >> 33) % TABLE_N];
            }
        }
    }
    printf("sum %llu\n", (unsigned long long)sum);
    return 0;
}
