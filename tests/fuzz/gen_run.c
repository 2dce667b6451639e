/* gen_run.c - the driver of fuzz_compile.c's run mode: generated programs
 * compiled by einc, built and run, against the interpreter.  Each seed in
 * [FIRST, LAST] becomes an input of its own (bytes of a SplitMix64 stream,
 * 16 to 511 of them), checked in a child process, so that one failure
 * (the child aborts with the program and the folder that keeps its files)
 * does not stop the others.
 *
 *   EINC=./einc tests/fuzz/gen_run FIRST LAST
 *   tests/fuzz/gen_run --write DIR FIRST LAST
 *
 * Prints a line per failing seed and "N seeds, M failed"; exits 1 if any
 * failed.  With --write, each program that einc's front end accepts goes
 * to DIR/gSEED.ein instead, for another harness (the host CUDA build:
 * HOSTCUDA_EXTRA in tests/emit/hostcuda.test).  POSIX (fork, setenv), like
 * the test machines. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int run_seed(uint64_t seed)
{
    uint64_t s = seed;
    size_t n = 16 + splitmix(&s) % 496;
    unsigned char buf[512];
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)splitmix(&s);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("gen_run: fork");
        exit(99);
    }
    if (pid == 0) {
        char name[32];
        snprintf(name, sizeof name, "%llu", (unsigned long long)seed);
        setenv("EINC_FUZZ_SEED", name, 1);
        LLVMFuzzerTestOneInput(buf, n);
        _exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return 1;
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv)
{
    const char *prog = argv[0];
    if (argc == 5 && strcmp(argv[1], "--write") == 0) {
        setenv("EINC_FUZZ_WRITE", argv[2], 1);
        argv += 2;
        argc -= 2;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: EINC=einc %s FIRST LAST\n"
                "       %s --write DIR FIRST LAST\n", prog, prog);
        return 99;
    }
    char *end1, *end2;
    unsigned long long a = strtoull(argv[1], &end1, 10), b = strtoull(argv[2], &end2, 10);
    if (*end1 || *end2 || a > b) {
        fprintf(stderr, "%s: bad seed range '%s' '%s'\n", prog, argv[1], argv[2]);
        return 99;
    }
    unsigned long long failed = 0;
    for (unsigned long long seed = a; seed <= b; seed++)
        if (run_seed(seed)) {
            printf("seed %llu failed\n", seed);
            failed++;
        }
    printf("%llu seeds, %llu failed\n", b - a + 1, failed);
    return failed != 0;
}
