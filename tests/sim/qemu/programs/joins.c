/* Main starts two workers that stream arrays of their own, joins them, streams its own array three
 * times as long, then reads a byte from stdin before it exits: a test holding stdin sees the
 * frames while the program provably still runs, after its workers ended, then releases it.
 * argv[1]: the workers' passes over their arrays (default 40: some 5 million accesses each);
 * argv[2], when given: main first makes the system call of sectormon's events with the kind of the
 * plugin's own thread end (ring.h SMQ_EV_END), which must not end its thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N (1 << 16)
static double data[3][N];
static int passes = 40;

static void *work(void *arg) {
    double *a = arg, s = 0;
    int times = a == data[2] ? 3 * passes : passes;
    for (int r = 0; r < times; r++)
        for (int i = 0; i < N; i++) s += a[i] += 1.0;
    return (void *)(long)(s > 0);
}

int main(int argc, char **argv) {
    if (argc > 1) passes = atoi(argv[1]);
    if (argc > 2) syscall(0x5ec70, 8L, 0L, 0L, 0L, 0L, 0L);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, data[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    work(data[2]);
    char c;
    if (read(0, &c, 1) < 0) return 1;
    printf("released\n");
    return 0;
}
