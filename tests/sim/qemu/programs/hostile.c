/* Ends badly on request: `segv` faults after writing to stdout, `spin` makes 10^9 accesses (a
 * program that outlasts any frame budget), `exec` replaces itself by /bin/true after its own
 * accesses, `fork` has a child that makes accesses of its own and exits 5 (the parent waits for it
 * and returns 0), `threads N` runs N threads at once, each writing its own 512 bytes; with no
 * argument it writes to stderr and returns 3. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOT 64 /* doubles: 512 bytes, two 256-byte lines, per thread */
static double scratch[1 << 16];
static pthread_barrier_t together;

static void touch(double *a, long n) {
    for (long i = 0; i < n; i++) ((volatile double *)a)[i] += 1.0;
}

static void *one_thread(void *arg) {
    touch(scratch + (long)arg * SLOT, SLOT);
    pthread_barrier_wait(&together); /* every thread is alive at once: none reuses another's vCPU */
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "segv") == 0) {
        printf("before the fault\n");
        fflush(stdout);
        volatile int *p = (int *)16;
        return *p;
    }
    if (strcmp(mode, "spin") == 0) {
        for (long pass = 0; pass < 1000000000L / 4096; pass++) touch(scratch, 4096);
        return 0;
    }
    if (strcmp(mode, "exec") == 0) {
        touch(scratch, 4096);
        printf("exec /bin/true\n");
        fflush(stdout);
        execl("/bin/true", "true", (char *)NULL);
        return 1;
    }
    if (strcmp(mode, "fork") == 0) {
        touch(scratch, 4096);
        pid_t child = fork();
        if (child == 0) {
            touch(scratch, 1 << 16);
            _exit(5);
        }
        int status = 0;
        waitpid(child, &status, 0);
        printf("child exited %d\n", WEXITSTATUS(status));
        return 0;
    }
    if (strcmp(mode, "threads") == 0 && argc > 2) {
        long n = atol(argv[2]);
        if (n < 1 || n * SLOT > (long)(sizeof scratch / sizeof *scratch)) return 2;
        pthread_t *t = calloc((size_t)n, sizeof *t);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 << 10);
        pthread_barrier_init(&together, NULL, (unsigned)n);
        for (long i = 0; i < n; i++) {
            if (pthread_create(&t[i], &attr, one_thread, (void *)i) != 0) {
                printf("pthread_create failed at %ld\n", i);
                return 4;
            }
        }
        for (long i = 0; i < n; i++) pthread_join(t[i], NULL);
        printf("%ld threads joined\n", n);
        return 0;
    }
    fprintf(stderr, "to stderr\n");
    return 3;
}
