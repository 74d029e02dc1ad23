/* The shared-memory ring between the QEMU plugin (producer, plugin.c) and sectormon (consumer,
 * _capture.c): one header, then a power-of-two data area of 8-byte words.
 *
 * The plugin appends *batches*, one traced thread (QEMU vCPU) each: a two-word header
 * (vcpu << 32 | accesses, instructions retired since the thread's previous batch) and one word
 * per load or store: the guest virtual address in bits 0-55, log2 of the access size in bits
 * 56-59, bit 63 set for a store. Batches, not single accesses, cross the ring: the plugin copies a
 * thread's buffer in one go under its lock, and the consumer reads thousands of accesses per wake.
 *
 * An *event* (a heap block allocated or freed, a thread's stack, a marker call: shim.c reports them
 * with the system call SMQ_SYSCALL; a thread's end: the plugin's own) takes SMQ_EVENT_WORDS words of the batch, in order with the
 * thread's accesses: a word with bit 62 set (no access word has it: addresses use bits 0-55) and
 * the event's kind in bits 0-7, then its SMQ_EVENT_ARGS argument words. With more than one
 * thread a batch ends after an event (plugin.c), so the threads' events reach the consumer in the
 * order the program made them, each one before any access another thread made after it.
 *
 * head (words written) is advanced by the producer after the batch's words are in place
 * (release), tail (words consumed) by the consumer after it has read them; both only grow.
 */
#ifndef SECTORMON_QEMU_RING_H
#define SECTORMON_QEMU_RING_H

#include <stdint.h>

#define SMQ_MAGIC 0x534d5152u /* "SMQR" */
#define SMQ_VERSION 2u
#define SMQ_ADDR_MASK ((UINT64_C(1) << 56) - 1)
#define SMQ_SIZE_SHIFT 56
#define SMQ_STORE (UINT64_C(1) << 63)
#define SMQ_EVENT (UINT64_C(1) << 62)
#define SMQ_EVENT_ARGS 5
#define SMQ_EVENT_WORDS (1 + SMQ_EVENT_ARGS)
/* The system call number of shim.c's events: no kernel has it (x86_64 and aarch64 end near 470;
 * bit 30 is x32's flag), so outside QEMU, or under QEMU without the plugin, it fails with ENOSYS and
 * QEMU says nothing (it logs unknown system calls only with -d unimp). */
#define SMQ_SYSCALL 0x5ec70
/* Event kinds (the first argument of the system call; the rest are the event's words). */
#define SMQ_EV_ALLOC 1      /* address, size in bytes, call site (the return address of the allocation) */
#define SMQ_EV_FREE 2       /* address */
#define SMQ_EV_STACK 3      /* lowest address, end (exclusive) of the calling thread's stack */
#define SMQ_EV_MARK_NAME 4  /* 40 more bytes of the next mark's name (a name longer than 32 bytes) */
#define SMQ_EV_MARK_START 5 /* region number, then the name's last (or only) 32 bytes, NUL-padded */
#define SMQ_EV_MARK_STOP 6  /* as SMQ_EV_MARK_START */
#define SMQ_EV_HELLO 7      /* none: the shim is loaded (sent once, from its constructor) */
#define SMQ_EV_END 8        /* none: the thread has ended (the plugin's, at QEMU's vCPU exit; not the shim's).
                             * Its index may then be given to a thread created later. */
#define SMQ_MARK_NAME_MAX 256 /* bytes of a region's name kept; the rest is cut (docs/sim.md) */
#define SMQ_BATCH 4096     /* accesses a thread buffers before it hands them over */
#define SMQ_MAX_VCPUS 4096 /* threads (vCPU indexes) traced; the plugin counts others' accesses as dropped */

struct smq_header {
    uint32_t magic;
    uint32_t version;
    uint64_t words;         /* data area size in 8-byte words, a power of two */
    uint64_t head;          /* words written (producer) */
    uint64_t tail;          /* words consumed (consumer) */
    uint32_t closed;        /* the producer has flushed everything and ends */
    uint32_t consumer_gone; /* the consumer stopped reading: the producer drops instead of waiting */
    uint64_t dropped;       /* accesses the producer could not hand over (vCPU index past its table) */
    uint64_t start_code;    /* where the program's executable segment was loaded (load bias + its ELF address), 0 unknown */
    uint64_t sve_insns;     /* SVE load/store/prefetch instructions executed (aarch64) */
    uint64_t sve_accesses;  /* accesses QEMU reported for them: QEMU 7.2 reports none for contiguous ones */
};

static inline uint64_t *smq_data(struct smq_header *h) { return (uint64_t *)(h + 1); }

#endif
