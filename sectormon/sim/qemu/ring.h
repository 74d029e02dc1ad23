/* The shared-memory ring between the QEMU plugin (producer, plugin.c) and sectormon (consumer,
 * _capture.c): one header, then a power-of-two data area of 8-byte words.
 *
 * The plugin appends *batches*, one traced thread (QEMU vCPU) each: a two-word header
 * (vcpu << 32 | accesses, instructions retired since the thread's previous batch) and one word
 * per load or store: the guest virtual address in bits 0-55, log2 of the access size in bits
 * 56-59, bit 63 set for a store. Batches, not single accesses, cross the ring: the plugin copies a
 * thread's buffer in one go under its lock, and the consumer reads thousands of accesses per wake.
 *
 * head (words written) is advanced by the producer after the batch's words are in place
 * (release), tail (words consumed) by the consumer after it has read them; both only grow.
 */
#ifndef SECTORMON_QEMU_RING_H
#define SECTORMON_QEMU_RING_H

#include <stdint.h>

#define SMQ_MAGIC 0x534d5152u /* "SMQR" */
#define SMQ_VERSION 1u
#define SMQ_ADDR_MASK ((UINT64_C(1) << 56) - 1)
#define SMQ_SIZE_SHIFT 56
#define SMQ_STORE (UINT64_C(1) << 63)
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
