/* Hostile and unusual marker use for tests/regions; argv[1] picks the case, argv[2] a size.
 *
 *   unpaired      stop without start, start twice, stop twice
 *   names N       N distinct region names, each entered once
 *   thread-exit   a thread touches 500 pages inside a region and exits without its stop
 *   open-at-exit  the main thread touches 700 pages inside a region and returns from main
 *   nested        outer (300 pages) around inner (200 pages), entered 3 times
 *   threads N     8 threads each enter "loop" N times, 10 pages each time
 *   long N        one region touching N pages in chunks of 500 (rotation tests)
 *   fork          the parent inside "parent" forks; the child marks "child" (300 pages) and exits
 *   likwid-get    LIKWID's GET after 2 x 100 pages, RESET, then GET after 50 more (prints them)
 *   spawn         inside "spawner" (100 pages of its own) a thread touches 400 unmarked pages
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef LIKWID_PERFMON
#define LIKWID_PERFMON
#endif
#include <fj_tool/fapp.h>
#include <likwid-marker.h>
#include <sectormon_markers.h>

static long page_size;

static void touch(long pages) {
    size_t bytes = (size_t)pages * (size_t)page_size;
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise(p, bytes, MADV_NOHUGEPAGE);
    for (long i = 0; i < pages; i++)
        ((volatile char *)p)[i * page_size] = 1;
    munmap(p, bytes);
}

static void *exits_inside(void *arg) {
    (void)arg;
    sectormon_region_begin("inside");
    touch(500);
    return NULL; /* no end: the thread leaves with the region open */
}

static void *unmarked(void *arg) {
    touch((long)(size_t)arg);
    return NULL;
}

static long loops;

static void *looping(void *arg) {
    (void)arg;
    for (long i = 0; i < loops; i++) {
        sectormon_region_begin("loop");
        touch(10);
        sectormon_region_end("loop");
    }
    return NULL;
}

int main(int argc, char **argv) {
    page_size = sysconf(_SC_PAGESIZE);
    const char *mode = argc > 1 ? argv[1] : "";
    long n = argc > 2 ? atol(argv[2]) : 0;
    if (!strcmp(mode, "unpaired")) {
        sectormon_region_end("never_started");
        sectormon_region_end("never_started");
        fapp_stop("fapp_never", 2, 0);
        sectormon_region_begin("twice");
        sectormon_region_begin("twice");
        touch(100);
        sectormon_region_end("twice");
        sectormon_region_end("twice");
        sectormon_region_begin(NULL);
        sectormon_region_end(NULL);
    } else if (!strcmp(mode, "names")) {
        char name[64];
        for (long i = 0; i < n; i++) {
            snprintf(name, sizeof name, "region_%ld", i);
            sectormon_region_begin(name);
            sectormon_region_end(name);
        }
        char longname[300];
        memset(longname, 'x', sizeof longname - 1);
        longname[sizeof longname - 1] = '\0';
        sectormon_region_begin(longname);
        sectormon_region_end(longname);
    } else if (!strcmp(mode, "thread-exit")) {
        pthread_t t;
        pthread_create(&t, NULL, exits_inside, NULL);
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "open-at-exit")) {
        sectormon_region_begin("open_at_exit");
        touch(700);
    } else if (!strcmp(mode, "nested")) {
        for (int i = 0; i < 3; i++) {
            fapp_start("outer", 1, 0);
            touch(300);
            fapp_start("inner", 1, 0);
            touch(200);
            fapp_stop("inner", 1, 0);
            fapp_stop("outer", 1, 0);
        }
    } else if (!strcmp(mode, "threads")) {
        pthread_t t[8];
        loops = n;
        for (int i = 0; i < 8; i++)
            pthread_create(&t[i], NULL, looping, NULL);
        for (int i = 0; i < 8; i++)
            pthread_join(t[i], NULL);
    } else if (!strcmp(mode, "long")) {
        sectormon_region_begin("long");
        for (long done = 0; done < n; done += 500)
            touch(500);
        sectormon_region_end("long");
    } else if (!strcmp(mode, "fork")) {
        sectormon_region_begin("parent");
        touch(100);
        pid_t child = fork();
        if (child == 0) {
            sectormon_region_begin("child");
            touch(300);
            sectormon_region_end("child");
            _exit(0);
        }
        int status = 0;
        waitpid(child, &status, 0);
        touch(100);
        sectormon_region_end("parent");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    } else if (!strcmp(mode, "spawn")) {
        pthread_t t;
        sectormon_region_begin("spawner");
        pthread_create(&t, NULL, unmarked, (void *)(size_t)400);
        pthread_join(t, NULL);
        touch(100);
        sectormon_region_end("spawner");
    } else if (!strcmp(mode, "likwid-get")) {
        int nevents = 4, count = -1;
        double events[4] = {0}, time = -1;
        LIKWID_MARKER_INIT;
        LIKWID_MARKER_REGISTER("get");
        for (int i = 0; i < 2; i++) {
            LIKWID_MARKER_START("get");
            touch(100);
            LIKWID_MARKER_STOP("get");
        }
        LIKWID_MARKER_GET("get", &nevents, events, &time, &count);
        printf("get %d %d %.0f %d\n", nevents, count, events[0], time > 0);
        LIKWID_MARKER_RESET("get");
        LIKWID_MARKER_START("get");
        touch(50);
        LIKWID_MARKER_STOP("get");
        nevents = 1;
        LIKWID_MARKER_GET("get", &nevents, events, &time, &count);
        printf("get %d %d %.0f\n", nevents, count, events[0]);
        LIKWID_MARKER_CLOSE;
    } else {
        fprintf(stderr, "usage: hostile unpaired|names N|thread-exit|open-at-exit|nested|threads N|long N|fork|likwid-get|spawn\n");
        return 2;
    }
    printf("done %s\n", mode);
    return 0;
}
