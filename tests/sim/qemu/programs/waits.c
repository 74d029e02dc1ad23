/* Waits on its stdin before it has made the 4,096 accesses of a first batch (no libc: build with
 * -static -nostdlib), so the simulation has no record of it until it reads a byte and exits. */
void _start(void) {
    char c;
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(0L), "D"(0L), "S"(&c), "d"(1L) : "rcx", "r11", "memory");
    __asm__ volatile("syscall" : : "a"(60L), "D"(0L) : "rcx", "r11", "memory");
    for (;;) {
    }
}
