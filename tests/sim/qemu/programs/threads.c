/* Two worker threads besides main, each streaming its own 1 MiB array: per-thread accesses. */
#include <pthread.h>
#include <stdio.h>

#define N (1 << 17)
static double data[2][N];

static void *work(void *arg) {
    double *a = arg, s = 0;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < N; i++) s += a[i] += 1.0;
    return (void *)(long)(s > 0);
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, data[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("joined\n");
    return 0;
}
