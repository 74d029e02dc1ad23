/* Marker calls of all three APIs on two threads: main enters fapp's ("solve", 1) twice and
 * sectormon's "setup" once; the worker LIKWID's "worker" three times. */
#include <fj_tool/fapp.h>
#include <likwid-marker.h>
#include <pthread.h>
#include <sectormon_markers.h>
#include <stdio.h>

static volatile double sink;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 3; i++) {
        likwid_markerStartRegion("worker");
        sink += i;
        likwid_markerStopRegion("worker");
    }
    return NULL;
}

int main(void) {
    likwid_markerInit();
    sectormon_region_begin("setup");
    sink = 1.0;
    sectormon_region_end("setup");
    for (int i = 0; i < 2; i++) {
        fapp_start("solve", 1, 0);
        sink *= 2;
        fapp_stop("solve", 1, 0);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    pthread_join(t, NULL);
    likwid_markerClose();
    printf("%g\n", sink);
    return 0;
}
