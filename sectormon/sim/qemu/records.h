/* The records files of a capture: what the consumer of the QEMU plugin's ring (_capture.c) writes
 * per traced thread and the reader (reader.c) turns into the simulator's records. Each record is a
 * Stored (16 bytes); the program's heap and stack events are a file of Events.
 */
#ifndef SECTORMON_QEMU_RECORDS_H
#define SECTORMON_QEMU_RECORDS_H

#include <stdint.h>

#define LINE_SHIFT 8
#define KIND_READ 0
#define KIND_WRITE 1
#define KIND_INSNS 2
#define KIND_SYNC 3  /* a: the program's events up to here (a count) */
#define KIND_EVENT 4 /* a: the event's kind, n: its argument records, which follow */
#define KIND_ARG 5   /* a: one argument word */
#define KIND_END 6   /* the thread ended here (SMQ_EV_END): what follows is a later thread's, given its index */
#define FL_IFETCH 64

/* One event of the program's list: kind | vcpu << 8, then its first three words. */
typedef struct {
    uint64_t kind_vcpu, a, b, c;
} Event;

typedef struct {
    int64_t a; /* the address of the record's first access, or a KIND_INSNS record's instructions */
    int32_t n;
    int32_t kind;
} Stored;

#endif
