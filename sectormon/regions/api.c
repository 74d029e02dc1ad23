/* The entry points a marked program calls: sectormon's own API, fapp's (C and gfortran) and
 * LIKWID's marker API, plus the two functions sectormon's reader and tests call
 * (sectormon_markers_copy, sectormon_markers_layout). Each tests the library's state first, so
 * outside sectormon a call is one load and a return; the work is in markers.c.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "fj_tool/fapp.h"
#include "likwid-marker.h"
#include "markers_internal.h"
#include "sectormon_markers.h"

/* ---- sectormon's own API ---- */

void sectormon_region_begin(const char *name) {
    if (atomic_load_explicit(&sm_state, memory_order_relaxed) == SM_INACTIVE)
        return;
    sm_begin(name, sm_c_length(name), 0, 0);
}

void sectormon_region_end(const char *name) {
    if (atomic_load_explicit(&sm_state, memory_order_relaxed) == SM_INACTIVE)
        return;
    sm_end(name, sm_c_length(name), 0, 0);
}

void sectormon_region_begin_numbered(const char *name, int number, int level) {
    if (atomic_load_explicit(&sm_state, memory_order_relaxed) == SM_INACTIVE)
        return;
    sm_begin(name, sm_c_length(name), number, level);
}

void sectormon_region_end_numbered(const char *name, int number, int level) {
    if (atomic_load_explicit(&sm_state, memory_order_relaxed) == SM_INACTIVE)
        return;
    sm_end(name, sm_c_length(name), number, level);
}

int sectormon_markers_active(void) {
    return sm_active();
}

/* The layout this library writes, for the tests that check layout.py against it. */
void sectormon_markers_layout(uint32_t out[6]) {
    out[0] = SM_VERSION;
    out[1] = (uint32_t)sizeof(struct sm_header);
    out[2] = (uint32_t)sizeof(struct sm_thread_record);
    out[3] = (uint32_t)sizeof(struct sm_slot);
    out[4] = SM_MAX_GROUPS;
    out[5] = SM_MAX_EVENTS;
}

/* A consistent copy of one table record (thread record or slot) for sectormon's reader: 1 when
 * copied, 0 when never written or kept busy by its writer. Here and not in Python because the
 * copy must sit between acquire-ordered reads of the sequence counter to be right on weakly
 * ordered CPUs (the A64FX is one); the copy itself may race with the writer, and the counter says
 * when it did. */
int sectormon_markers_copy(const void *record, uint32_t size, void *out) {
    const _Atomic uint32_t *seq = record;
    for (int attempt = 0; attempt < 1000; attempt++) {
        uint32_t before = atomic_load_explicit(seq, memory_order_acquire);
        if (before == 0)
            return 0;
        if (before & 1) {
            sched_yield();
            continue;
        }
        memcpy(out, record, size);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(seq, memory_order_relaxed) == before)
            return 1;
    }
    return 0;
}

/* ---- fapp ---- */

void fapp_start(const char *name, int number, int level) {
    sectormon_region_begin_numbered(name, number, level);
}

void fapp_stop(const char *name, int number, int level) {
    sectormon_region_end_numbered(name, number, level);
}

void fapp_start_(const char *name, const int *number, const int *level, size_t name_length) {
    if (atomic_load_explicit(&sm_state, memory_order_relaxed) == SM_INACTIVE)
        return;
    sm_begin(name, name ? sm_fortran_length(name, name_length) : 0, number ? *number : 0, level ? *level : 0);
}

void fapp_stop_(const char *name, const int *number, const int *level, size_t name_length) {
    if (atomic_load_explicit(&sm_state, memory_order_relaxed) == SM_INACTIVE)
        return;
    sm_end(name, name ? sm_fortran_length(name, name_length) : 0, number ? *number : 0, level ? *level : 0);
}

/* ---- LIKWID ---- */

void likwid_markerInit(void) {
    sm_active();
}

void likwid_markerThreadInit(void) {
    if (sm_active())
        sm_thread_state();
}

void likwid_markerNextGroup(void) {
    /* sectormon rotates the groups itself; each region's groups carry their own enabled times */
}

void likwid_markerClose(void) {
    /* sectormon reads the table itself: nothing to write out */
}

int likwid_markerRegisterRegion(const char *regionTag) {
    struct sm_thread *t;
    struct sm_entry *e = sm_entry_for(regionTag, sm_c_length(regionTag), 0, 0, &t);
    if (e)
        sm_slot_of(t, e);
    return 0;
}

int likwid_markerStartRegion(const char *regionTag) {
    sectormon_region_begin(regionTag);
    return 0;
}

int likwid_markerStopRegion(const char *regionTag) {
    sectormon_region_end(regionTag);
    return 0;
}

int likwid_markerResetRegion(const char *regionTag) {
    struct sm_thread *t;
    struct sm_entry *e = sm_entry_for(regionTag, sm_c_length(regionTag), 0, 0, &t);
    if (!e || e->slot == SM_LAZY || e->slot == SM_NONE)
        return e ? 0 : -1;
    struct sm_slot *s = sm_slot_at(e->slot);
    sm_write_begin(&s->seq);
    memset(s->acc, 0, sizeof s->acc);
    s->calls = s->open;
    s->wall_ns = 0;
    s->cpu_ns = 0;
    sm_write_end(&s->seq);
    return 0;
}

void likwid_markerGetRegion(const char *regionTag, int *nr_events, double *events, double *time, int *count) {
    int capacity = nr_events && events ? *nr_events : 0;
    int n = 0;
    if (time)
        *time = 0.0;
    if (count)
        *count = 0;
    struct sm_thread *t;
    struct sm_entry *e = sm_entry_for(regionTag, sm_c_length(regionTag), 0, 0, &t);
    if (e && e->slot != SM_LAZY && e->slot != SM_NONE) {
        struct sm_slot *s = sm_slot_at(e->slot);
        for (unsigned g = 0; g < t->ngroups; g++)
            for (unsigned k = 0; k < t->nevents[g] && n < capacity; k++)
                events[n++] = (double)s->acc[g][k];
        if (time)
            *time = (double)s->wall_ns / 1e9;
        if (count)
            *count = (int)s->calls;
    }
    if (nr_events)
        *nr_events = n;
}
