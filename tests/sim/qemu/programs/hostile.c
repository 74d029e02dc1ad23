/* Ends badly on request: `segv` faults after writing to stdout, `exit3` writes to stderr and
 * returns 3. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "segv") == 0) {
        printf("before the fault\n");
        fflush(stdout);
        volatile int *p = (int *)16;
        return *p;
    }
    fprintf(stderr, "to stderr\n");
    return 3;
}
