// C++ blocks are named by the code that called new: `cells` from new[] in main, `nodes` from a
// helper; a new that throws bad_alloc leaves the shim's wrappers as they were (the next block
// is still named); two std::vectors of one function, whose new is inlined from the library's
// headers, are two objects named by their own lines (a vector's method the compiler keeps out of
// line, such as reserve(), would name them all by its own). Accesses through volatile pointers:
// one load or store each.
#include <cstdio>
#include <new>
#include <vector>

// extern "C": its symbol is its name (other C++ functions are named by their mangled symbol).
// Not `return new ...`: a tail call would make main the caller.
extern "C" __attribute__((noinline)) volatile double *make_nodes(unsigned n) {
    volatile double *nodes = new double[n]; // site: nodes
    nodes[0] = 0; // one store
    return nodes;
}

int main() {
    const unsigned n = 4096;
    volatile double *cells = new double[n]; // site: cells
    for (unsigned i = 0; i < n; i++) cells[i] = i; // n stores
    int threw = 0;
    try {
        volatile unsigned long huge = ~0ul >> 8; // 2^56 doubles: more than any machine gives
        double *never = new double[huge];
        std::printf("%p\n", static_cast<void *>(never));
    } catch (const std::bad_alloc &) {
        threw = 1;
    }
    volatile double *nodes = make_nodes(n);
    for (unsigned r = 0; r < 2; r++)
        for (unsigned i = 0; i < n; i++) nodes[i] = cells[i]; // 2 n loads of cells, 2 n stores
    std::vector<double> left(n);  // site: left (each zero-filled by libc's memset)
    std::vector<double> right(n); // site: right
    volatile double *l = left.data(), *r = right.data();
    for (unsigned i = 0; i < n; i++) l[i] = i;    // n stores
    for (unsigned i = 0; i < n; i++) r[i] = l[i]; // n loads of left, n stores
    std::printf("threw %d\n", threw);
    delete[] nodes;
    delete[] cells;
    return 0;
}
