/* Stack traffic per thread: main and one worker each write a local (volatile) array of 1,024 ints
 * 64 times - 65,536 stores to their own stack - besides a few hundred accesses of their calls.
 * The worker also writes a heap block main allocated just before creating it, 4 x 4,096 stores:
 * the block must be named in the worker's accesses too. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORDS 1024
#define PASSES 64
#define SHARED 4096

static int fill(void) {
    volatile int local[WORDS];
    for (int p = 0; p < PASSES; p++)
        for (int i = 0; i < WORDS; i++) local[i] = p + i;
    return local[WORDS - 1];
}

static void *worker(void *arg) {
    volatile int *shared = arg;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < SHARED; i++) shared[i] = r + i;
    return (void *)(long)fill();
}

int main(void) {
    pthread_t t;
    int *shared = malloc(SHARED * sizeof(int)); /* site: shared */
    if (shared == NULL || pthread_create(&t, NULL, worker, shared) != 0) return 1;
    void *got;
    pthread_join(t, &got); /* the worker's stack first: its accesses end before main's begin */
    printf("%d %ld\n", fill(), (long)got);
    free(shared);
    return 0;
}
