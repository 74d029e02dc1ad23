/* LIKWID's marker API, answered by sectormon's marker library.
 *
 * The macros are active only when the program is compiled with -DLIKWID_PERFMON and expand to
 * nothing otherwise, as LIKWID's own header does, so LIKWID-instrumented codes move over by
 * compiling against $(sectormon markers --cflags) and linking $(sectormon markers --libs).
 * A region is its tag (number 0, level 0); counts are per thread, read at each call in that thread.
 */
#ifndef SECTORMON_LIKWID_MARKER_H
#define SECTORMON_LIKWID_MARKER_H

#ifdef __cplusplus
extern "C" {
#endif

void likwid_markerInit(void);
void likwid_markerThreadInit(void);
void likwid_markerNextGroup(void);
void likwid_markerClose(void);
int likwid_markerRegisterRegion(const char *regionTag);
int likwid_markerStartRegion(const char *regionTag);
int likwid_markerStopRegion(const char *regionTag);
int likwid_markerResetRegion(const char *regionTag);
/* The calling thread's counts of REGIONTAG so far: up to *nr_events values (every group's events in
 * order, unscaled), the time inside it in seconds, and its calls. */
void likwid_markerGetRegion(const char *regionTag, int *nr_events, double *events, double *time, int *count);

#ifdef __cplusplus
}
#endif

#ifdef LIKWID_PERFMON
#define LIKWID_MARKER_INIT likwid_markerInit()
#define LIKWID_MARKER_THREADINIT likwid_markerThreadInit()
#define LIKWID_MARKER_SWITCH likwid_markerNextGroup()
#define LIKWID_MARKER_REGISTER(regionTag) likwid_markerRegisterRegion(regionTag)
#define LIKWID_MARKER_START(regionTag) likwid_markerStartRegion(regionTag)
#define LIKWID_MARKER_STOP(regionTag) likwid_markerStopRegion(regionTag)
#define LIKWID_MARKER_CLOSE likwid_markerClose()
#define LIKWID_MARKER_RESET(regionTag) likwid_markerResetRegion(regionTag)
#define LIKWID_MARKER_GET(regionTag, nevents, events, time, count) \
    likwid_markerGetRegion(regionTag, nevents, events, time, count)
#else
#define LIKWID_MARKER_INIT
#define LIKWID_MARKER_THREADINIT
#define LIKWID_MARKER_SWITCH
#define LIKWID_MARKER_REGISTER(regionTag)
#define LIKWID_MARKER_START(regionTag)
#define LIKWID_MARKER_STOP(regionTag)
#define LIKWID_MARKER_CLOSE
#define LIKWID_MARKER_RESET(regionTag)
#define LIKWID_MARKER_GET(regionTag, nevents, events, time, count)
#endif

#endif
