/* Two worker threads besides main read one shared 2 MiB array (larger than an L1D, smaller than
 * an L2) four times each: on one CMG the second worker finds in the shared L2 what the first
 * brought in; on two CMGs each worker's L2 fetches the array from memory itself. */
#include <pthread.h>
#include <stdio.h>

#define N (1 << 18)
static double shared[N];
static double sums[2];

static void *work(void *arg) {
    long me = (long)arg;
    double s = 0;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < N; i++) s += shared[i];
    sums[me] = s;
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (long i = 0; i < N; i++) shared[i] = (double)i;
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("%g\n", sums[0] + sums[1]);
    return 0;
}
