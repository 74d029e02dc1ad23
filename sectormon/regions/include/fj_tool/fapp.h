/* fapp's region calls, answered by sectormon's marker library.
 *
 * A program written for Fujitsu's fapp compiles and links unchanged against
 * $(sectormon markers --cflags) / $(sectormon markers --libs): a region is its NAME and NUMBER, and a
 * call whose LEVEL is above sectormon's --region-level (default 0) is ignored, as `fapp -L` does.
 * Fortran (gfortran) calls fapp_start_/fapp_stop_, declared below with the hidden string length.
 */
#ifndef SECTORMON_FJ_TOOL_FAPP_H
#define SECTORMON_FJ_TOOL_FAPP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void fapp_start(const char *name, int number, int level);
void fapp_stop(const char *name, int number, int level);

/* gfortran's names for `call fapp_start("kernel", 1, 0)`: every argument by reference, then the
 * length of the character argument (not NUL-terminated; trailing blanks are not part of the name). */
void fapp_start_(const char *name, const int *number, const int *level, size_t name_length);
void fapp_stop_(const char *name, const int *number, const int *level, size_t name_length);

#ifdef __cplusplus
}
#endif

#endif
