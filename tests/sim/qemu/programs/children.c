/* What a traced program's children see: prints the LD_PRELOAD it was given (the shim takes itself
 * out of it), then runs a shell (system) and prints its status. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const char *preload = getenv("LD_PRELOAD");
    printf("LD_PRELOAD=%s\n", preload != NULL ? preload : "(unset)");
    fflush(stdout);
    int status = system("true");
    printf("status %d\n", status);
    return 0;
}
