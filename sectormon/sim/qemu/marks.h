/* A marker call's region name from its events (ring.h): SMQ_EV_MARK_NAME events carry 40 bytes of
 * it each, the SMQ_EV_MARK_START/STOP that ends it the number and the last 32 bytes (NUL-padded).
 * The capture (counting each thread's regions) and the record reader (yielding the marks) both
 * read names so, with one limit: SMQ_MARK_NAME_MAX bytes kept, the rest cut.
 */
#ifndef SECTORMON_QEMU_MARKS_H
#define SECTORMON_QEMU_MARKS_H

#include <stdint.h>
#include <string.h>

#include "ring.h"

typedef struct {
    char bytes[SMQ_MARK_NAME_MAX];
    size_t length;
} MarkName;

/* Add a marker event (`kind`, its SMQ_EVENT_ARGS words) to the name: 1 when it ends the mark (the
 * name is complete; the caller reads it, then sets length to 0), 0 for a piece of name. */
static inline int mark_name_add(MarkName *m, uint64_t kind, const uint64_t *args) {
    int piece = kind == SMQ_EV_MARK_NAME;
    const char *from = (const char *)(piece ? args : args + 1);
    size_t length = strnlen(from, (size_t)(piece ? SMQ_EVENT_ARGS : SMQ_EVENT_ARGS - 1) * sizeof(uint64_t));
    if (length > SMQ_MARK_NAME_MAX - m->length) length = SMQ_MARK_NAME_MAX - m->length;
    memcpy(m->bytes + m->length, from, length);
    m->length += length;
    return !piece;
}

/* The region number of a SMQ_EV_MARK_START/STOP: fapp's int, sent as its 32 bits. */
static inline int32_t mark_number(const uint64_t *args) { return (int32_t)(uint32_t)args[0]; }

#endif
