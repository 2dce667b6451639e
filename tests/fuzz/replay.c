/* replay.c - runs a fuzz entry (LLVMFuzzerTestOneInput) once over each
 * file named on the command line, without libFuzzer: `make check` replays
 * the seed corpus and every crasher found so far this way.  With
 * EINC_FUZZ_TIMES set it prints each input's CPU time (to find the slow
 * ones). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *fp = fopen(argv[i], "rb");
        if (!fp) {
            perror(argv[i]);
            return 99;
        }
        size_t cap = 1 << 16, n = 0, got;
        unsigned char *buf = malloc(cap);
        while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
            n += got;
            if (n == cap)
                buf = realloc(buf, cap *= 2);
        }
        fclose(fp);
        if (!buf) {
            fputs("replay: out of memory\n", stderr);
            return 99;
        }
        clock_t t0 = clock();
        LLVMFuzzerTestOneInput(buf, n);
        if (getenv("EINC_FUZZ_TIMES"))
            printf("%.3f ms %s\n", (double)(clock() - t0) * 1e3 / CLOCKS_PER_SEC, argv[i]);
        free(buf);
    }
    printf("replayed %d inputs\n", argc - 1);
    return 0;
}
