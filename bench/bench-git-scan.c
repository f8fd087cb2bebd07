/* SPDX-License-Identifier: MIT */
/* What looking for repositories costs (src/shared/git/git-scan.c): git_scan()
 * over a generated tree of N directories (default 20000: 200 top-level
 * directories of 100 each), against `find DIR -type d` over the same tree,
 * warm cache, the median of R runs each. Usage: bench-git-scan [N [R]]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "git-scan.h"

static double now_ms(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
        qsort(v, (size_t)n, sizeof *v, cmp);
        return v[n / 2];
}

int main(int argc, char **argv) {
        int n = argc > 1 ? atoi(argv[1]) : 20000, runs = argc > 2 ? atoi(argv[2]) : 9;
        if (n < 100 || runs < 1 || runs > 100)
                return 2;
        char root[] = "/var/tmp/vs-bench-git-XXXXXX";
        if (!mkdtemp(root))
                return 1;
        char p[256];
        for (int i = 0; i < n / 100; i++) {
                snprintf(p, sizeof p, "%s/d%03d", root, i);
                mkdir(p, 0755);
                for (int k = 0; k < 99; k++) {
                        snprintf(p, sizeof p, "%s/d%03d/s%02d", root, i, k);
                        mkdir(p, 0755);
                        if (k % 10 == 0) {
                                snprintf(p, sizeof p, "%s/d%03d/s%02d/file.c", root, i, k);
                                FILE *f = fopen(p, "we");
                                if (f)
                                        fclose(f);
                        }
                }
        }
        double scan[100], find[100];
        size_t dirs = 0, repos = 0;
        char cmd[512];
        snprintf(cmd, sizeof cmd, "find %s -type d >/dev/null", root);
        if (system(cmd) != 0) /* warm the cache */
                return 1;
        for (int r = 0; r < runs; r++) {
                VsGitRepos g = { 0 };
                double t0 = now_ms();
                if (git_scan(root, &g) < 0)
                        return 1;
                scan[r] = now_ms() - t0;
                dirs = g.dirs;
                repos = g.n;
                git_repos_done(&g);
                t0 = now_ms();
                if (system(cmd) != 0)
                        return 1;
                find[r] = now_ms() - t0;
        }
        printf("git_scan: %zu directories, %zu repositories: median %.1f ms; find -type d: median %.1f ms (%d runs)\n",
               dirs, repos, median(scan, runs), median(find, runs), runs);
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        return system(cmd) == 0 ? 0 : 1;
}
