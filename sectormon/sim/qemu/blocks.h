/* The live heap blocks and stacks of a traced program, as the record reader (_capture.c) replays
 * the program's events: which data object an address is in.
 *
 * A treap keyed by start address (blocks never overlap: a new block replaces any stale one it
 * overlaps, one whose free the program made where no event said so), its priorities a hash of
 * the start, so insertion, free and lookup are O(log n) expected whatever the order the program
 * allocates and frees in: a sorted array would move half of itself on each insert or free, and a
 * program freeing a million small blocks in order would take hours. The nodes live in one array
 * (indexes, a free list). Lookups remember the last RECENT blocks they found and the last gap
 * between blocks they fell in: a thread's records mostly alternate between a few blocks (its
 * stack, two or three arrays) and [other]. A block removed is forgotten there, and the gap when
 * a new block falls in it; other changes keep them (a program allocating all the time would
 * otherwise walk the tree for most of its accesses).
 */
#ifndef SECTORMON_QEMU_BLOCKS_H
#define SECTORMON_QEMU_BLOCKS_H

#include <stdint.h>
#include <stdlib.h>

#define NIL UINT32_MAX

typedef struct {
    uint64_t start, end; /* [start, end) */
    int64_t id;          /* the data object */
    uint32_t left, right, priority;
} BlockNode;

#define RECENT 4

typedef struct {
    BlockNode *nodes;
    uint32_t root, free_list, used, capacity;
    uint32_t recent[RECENT]; /* blocks lookups found lately, NIL none */
    unsigned next_recent;
    uint64_t gap_start, gap_end; /* [start, end): no block there (empty: start == end) */
} Blocks;

static inline void blocks_forget(Blocks *b, uint32_t t) {
    for (int i = 0; i < RECENT; i++)
        if (b->recent[i] == t) b->recent[i] = NIL;
}

static inline uint32_t block_priority(uint64_t start) {
    uint64_t x = start * UINT64_C(0x9e3779b97f4a7c15);
    return (uint32_t)(x >> 32) ^ (uint32_t)x;
}

/* Split `t` into the blocks starting before `key` (*lo) and the others (*hi). */
static void blocks_split(BlockNode *n, uint32_t t, uint64_t key, uint32_t *lo, uint32_t *hi) {
    if (t == NIL) {
        *lo = *hi = NIL;
    } else if (n[t].start < key) {
        blocks_split(n, n[t].right, key, &n[t].right, hi);
        *lo = t;
    } else {
        blocks_split(n, n[t].left, key, lo, &n[t].left);
        *hi = t;
    }
}

/* Every block of `a` starts before every block of `b`. */
static uint32_t blocks_merge(BlockNode *n, uint32_t a, uint32_t b) {
    if (a == NIL) return b;
    if (b == NIL) return a;
    if (n[a].priority > n[b].priority) {
        n[a].right = blocks_merge(n, n[a].right, b);
        return a;
    }
    n[b].left = blocks_merge(n, a, n[b].left);
    return b;
}

static void blocks_release(Blocks *b, uint32_t t) { /* a whole subtree back to the free list */
    if (t == NIL) return;
    blocks_release(b, b->nodes[t].left);
    blocks_release(b, b->nodes[t].right);
    blocks_forget(b, t);
    b->nodes[t].left = b->free_list;
    b->free_list = t;
}

/* Remove the block of `t` with the highest start when it ends past `start`: the one block that
 * starts before `start` and can overlap it. */
static uint32_t blocks_drop_last_overlapping(Blocks *b, uint32_t t, uint64_t start) {
    if (t == NIL) return NIL;
    BlockNode *n = b->nodes;
    if (n[t].right != NIL) {
        n[t].right = blocks_drop_last_overlapping(b, n[t].right, start);
        return t;
    }
    if (n[t].end <= start) return t;
    uint32_t rest = n[t].left;
    blocks_forget(b, t);
    n[t].left = b->free_list;
    b->free_list = t;
    return rest;
}

/* Add block [start, end) of object `id`, replacing those it overlaps. -1: out of memory. */
static int blocks_add(Blocks *b, uint64_t start, uint64_t end, int64_t id) {
    if (end <= start) return 0;
    if (b->free_list == NIL && b->used == b->capacity) {
        uint32_t capacity = b->capacity ? 2 * b->capacity : 256;
        if (capacity <= b->capacity || capacity == NIL) return -1;
        BlockNode *grown = realloc(b->nodes, (size_t)capacity * sizeof(BlockNode));
        if (grown == NULL) return -1;
        b->nodes = grown;
        b->capacity = capacity;
    }
    uint32_t t;
    if (b->free_list != NIL) {
        t = b->free_list;
        b->free_list = b->nodes[t].left;
    } else {
        t = b->used++;
    }
    BlockNode *n = b->nodes;
    n[t] = (BlockNode){start, end, id, NIL, NIL, block_priority(start)};
    uint32_t before, rest, inside, after;
    blocks_split(n, b->root, start, &before, &rest);
    blocks_split(n, rest, end, &inside, &after);
    blocks_release(b, inside);
    before = blocks_drop_last_overlapping(b, before, start);
    b->root = blocks_merge(n, blocks_merge(n, before, t), after);
    if (start < b->gap_end && b->gap_start < end) b->gap_start = b->gap_end = 0;
    return 0;
}

/* Forget the block starting at `start`; a start no block has changes nothing. */
static void blocks_free(Blocks *b, uint64_t start) {
    if (b->root == NIL || start == UINT64_MAX) return;
    uint32_t before, rest, found, after;
    blocks_split(b->nodes, b->root, start, &before, &rest);
    blocks_split(b->nodes, rest, start + 1, &found, &after);
    blocks_release(b, found);
    b->root = blocks_merge(b->nodes, before, after); /* the gap cached is still one */
}

/* The object of the block holding `address`, or 0 ([other]). */
static inline int64_t blocks_lookup(Blocks *b, uint64_t address) {
    const BlockNode *n = b->nodes;
    if (address - b->gap_start < b->gap_end - b->gap_start) return 0;
    for (int i = 0; i < RECENT; i++) {
        uint32_t r = b->recent[i];
        if (r != NIL && n[r].start <= address && address < n[r].end) return n[r].id;
    }
    uint32_t t = b->root, floor = NIL, above = NIL; /* the last block starting at or before address, the first after */
    while (t != NIL) {
        if (n[t].start <= address) {
            floor = t;
            t = n[t].right;
        } else {
            above = t;
            t = n[t].left;
        }
    }
    if (floor == NIL || address >= n[floor].end) {
        b->gap_start = floor == NIL ? 0 : n[floor].end;
        b->gap_end = above == NIL ? UINT64_MAX : n[above].start;
        return 0;
    }
    b->recent[b->next_recent++ % RECENT] = floor;
    return n[floor].id;
}

static inline void blocks_init(Blocks *b) {
    b->nodes = NULL;
    b->root = b->free_list = NIL;
    b->used = b->capacity = 0;
    b->next_recent = 0;
    for (int i = 0; i < RECENT; i++) b->recent[i] = NIL;
    b->gap_start = b->gap_end = 0;
}

static inline void blocks_destroy(Blocks *b) {
    free(b->nodes);
    blocks_init(b);
}

#endif
