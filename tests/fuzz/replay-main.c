/* SPDX-License-Identifier: MIT */
/* Replays every file of a fuzz corpus directory (and its crash reproducers)
 * through LLVMFuzzerTestOneInput, so the normal test run keeps every finding
 * fixed. Prints TAP-free plain lines; exit status is the verdict. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fd-util.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_dir(const char *dir, unsigned *count) {
        DIR *d = opendir(dir);
        if (!d) {
                fprintf(stderr, "replay: cannot open %s: %m\n", dir);
                return -1;
        }
        struct dirent *de;
        int rc = 0;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                struct stat st;
                if (stat(path, &st) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        if (replay_dir(path, count) < 0)
                                rc = -1;
                        continue;
                }
                char *buf = NULL;
                size_t len = 0;
                if (read_file_at(AT_FDCWD, path, 16u << 20, &buf, &len) < 0) {
                        fprintf(stderr, "replay: cannot read %s\n", path);
                        rc = -1;
                        continue;
                }
                /* Copy into an exact-size buffer so ASan sees overreads. */
                uint8_t *exact = malloc(len ? len : 1);
                if (!exact) {
                        free(buf);
                        return -1;
                }
                memcpy(exact, buf, len);
                free(buf);
                LLVMFuzzerTestOneInput(exact, len);
                free(exact);
                (*count)++;
        }
        closedir(d);
        return rc;
}

int main(int argc, char **argv) {
        unsigned count = 0;
        for (int i = 1; i < argc; i++)
                if (replay_dir(argv[i], &count) < 0)
                        return 1;
        if (count == 0) {
                fprintf(stderr, "replay: no corpus files found\n");
                return 1;
        }
        printf("replayed %u inputs\n", count);
        return 0;
}
