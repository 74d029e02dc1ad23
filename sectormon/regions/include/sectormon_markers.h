/* sectormon's own region markers: mark a region of code, sectormon counts it exactly.
 *
 * Compile with $(sectormon markers --cflags) and link with $(sectormon markers --libs).
 * Under sectormon each begin/end pair reads the calling thread's counter groups, so a region's
 * counts are what that thread counted between the two calls; outside sectormon both calls return
 * at once and the program behaves as without them. Regions nest, may be entered many times and
 * may be marked in any number of threads (docs/regions.md).
 */
#ifndef SECTORMON_MARKERS_H
#define SECTORMON_MARKERS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Enter / leave the region NAME in the calling thread. */
void sectormon_region_begin(const char *name);
void sectormon_region_end(const char *name);

/* The same with fapp's identity: NAME and NUMBER, LEVEL compared with sectormon's --region-level. */
void sectormon_region_begin_numbered(const char *name, int number, int level);
void sectormon_region_end_numbered(const char *name, int number, int level);

/* 1 when this process runs under sectormon (calls count), 0 otherwise. */
int sectormon_markers_active(void);

#ifdef __cplusplus
}
#endif

#endif
