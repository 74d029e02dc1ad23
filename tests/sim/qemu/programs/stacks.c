/* Stack traffic per thread: main and one worker each write a local (volatile) array of 1,024 ints
 * 64 times - 65,536 stores to their own stack - besides a few hundred accesses of their calls. */
#include <pthread.h>
#include <stdio.h>

#define WORDS 1024
#define PASSES 64

static int fill(void) {
    volatile int local[WORDS];
    for (int p = 0; p < PASSES; p++)
        for (int i = 0; i < WORDS; i++) local[i] = p + i;
    return local[WORDS - 1];
}

static void *worker(void *arg) {
    (void)arg;
    return (void *)(long)fill();
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    void *got;
    pthread_join(t, &got); /* the worker's stack first: its accesses end before main's begin */
    printf("%d %ld\n", fill(), (long)got);
    return 0;
}
