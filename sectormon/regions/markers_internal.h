/* The marker library's shared definitions: the region table's layout (mirrored by
 * sectormon/regions/layout.py), the handshake's messages, the per-thread state, and the functions
 * markers.c gives the entry points in api.c. Internal: not installed for programs, not exported
 * from the library (SM_HIDDEN).
 */
#ifndef SECTORMON_MARKERS_INTERNAL_H
#define SECTORMON_MARKERS_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SM_HIDDEN __attribute__((visibility("hidden")))

#define SM_MAGIC 0x31524b52414d4d53ULL /* "SMMARKR1" */
#define SM_VERSION 1u
#define SM_MAX_GROUPS 8
#define SM_MAX_EVENTS 16
#define SM_ROW (SM_MAX_EVENTS + 2) /* values, time_enabled, time_running */
#define SM_NAME_BYTES 128
#define SM_HEADER_BYTES 256
#define SM_NONE 0xffffffffu /* no slot: the table was full */
#define SM_LAZY 0xfffffffeu /* known region, slot taken at its first start */
#define SM_HANDSHAKE_SECONDS 10

/* overflow bits in the header, one per bound */
#define SM_FULL_SLOTS 1u
#define SM_FULL_THREADS 2u
#define SM_BAD_GROUPS 4u
#define SM_LONG_NAME 8u
#define SM_NO_COUNTERS 16u

/* thread record states */
#define SM_THREAD_COUNTING 1u
#define SM_THREAD_EXITED 2u
#define SM_THREAD_UNCOUNTED 3u

struct sm_header {
    uint64_t magic;
    uint32_t version, header_size, thread_size, slot_size;
    uint32_t max_threads, max_slots, max_groups, max_events;
    _Atomic uint32_t nthreads, nslots, overflow;
    uint32_t reserved0;
    _Atomic uint64_t unpaired, dropped;
};

struct sm_thread_record {
    _Atomic uint32_t seq;
    int32_t tid, pid, rank;
    uint32_t ngroups, state;
    uint32_t nevents[SM_MAX_GROUPS];
    uint64_t reserved;
};

struct sm_slot {
    _Atomic uint32_t seq;
    uint32_t thread;
    int32_t number, cpu, tid, pid;
    uint32_t open, flags;
    uint64_t calls, wall_ns, start_wall_ns, cpu_ns, start_cpu_ns;
    char name[SM_NAME_BYTES];
    uint64_t acc[SM_MAX_GROUPS][SM_ROW];
    uint64_t start[SM_MAX_GROUPS][SM_ROW];
};

_Static_assert(sizeof(struct sm_header) <= SM_HEADER_BYTES, "header grew past its reserved bytes");
_Static_assert(sizeof(struct sm_thread_record) == 64, "thread record layout changed");
_Static_assert(sizeof(struct sm_slot) == 2504, "slot layout changed");

struct sm_request {
    uint64_t magic;
    int32_t tid, pid;
};

/* reply flags */
#define SM_ROTATED 1u /* sectormon enables and disables the groups itself: time the thread too */

struct sm_reply {
    uint64_t magic;
    uint32_t status, ngroups, flags, reserved;
    uint32_t nevents[SM_MAX_GROUPS];
    uint64_t ids[SM_MAX_GROUPS][SM_MAX_EVENTS];
};

struct sm_entry {
    char *name; /* NULL: an empty hash cell */
    size_t length;
    uint64_t hash;
    int number;
    uint32_t slot;
    int warned;
};

struct sm_thread {
    pid_t pid, tid;
    uint32_t record;
    unsigned ngroups;
    int timed; /* read the thread's CPU clock at each marker (groups rotated by sectormon) */
    int fds[SM_MAX_GROUPS];
    unsigned nevents[SM_MAX_GROUPS];
    uint64_t ids[SM_MAX_GROUPS][SM_MAX_EVENTS]; /* sectormon's event order */
    unsigned order[SM_MAX_GROUPS][SM_MAX_EVENTS]; /* kernel position -> sectormon's index */
    size_t capacity, used;
    struct sm_entry *entries;
};

enum { SM_UNKNOWN = 0, SM_INACTIVE = 1, SM_ACTIVE = 2 };

SM_HIDDEN extern _Atomic int sm_state;

SM_HIDDEN int sm_active(void);
SM_HIDDEN struct sm_thread *sm_thread_state(void);
SM_HIDDEN struct sm_entry *sm_entry_for(const char *name, size_t length, int number, int level, struct sm_thread **out);
SM_HIDDEN struct sm_slot *sm_slot_of(struct sm_thread *t, struct sm_entry *e);
SM_HIDDEN struct sm_slot *sm_slot_at(uint32_t index);
SM_HIDDEN void sm_write_begin(_Atomic uint32_t *seq);
SM_HIDDEN void sm_write_end(_Atomic uint32_t *seq);
SM_HIDDEN void sm_begin(const char *name, size_t length, int number, int level);
SM_HIDDEN void sm_end(const char *name, size_t length, int number, int level);
SM_HIDDEN size_t sm_c_length(const char *name);
SM_HIDDEN size_t sm_fortran_length(const char *name, size_t length);

#endif
