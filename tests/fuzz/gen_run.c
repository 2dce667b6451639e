/* gen_run.c - the driver of fuzz_compile.c's run mode: generated programs
 * compiled by einc, built and run, against the interpreter.  Each seed in
 * [FIRST, LAST] becomes an input of its own (bytes of a SplitMix64 stream,
 * 16 to 511 of them), checked in a child process, so that one failure
 * (the child aborts with the program and the folder that keeps its files)
 * does not stop the others.
 *
 *   EINC=./einc tests/fuzz/gen_run FIRST LAST
 *
 * Prints a line per failing seed and "N seeds, M failed"; exits 1 if any
 * failed.  POSIX (fork), like the test machines. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
    if (argc != 3) {
        fprintf(stderr, "usage: EINC=einc %s FIRST LAST\n", argv[0]);
        return 99;
    }
    char *end1, *end2;
    unsigned long long a = strtoull(argv[1], &end1, 10), b = strtoull(argv[2], &end2, 10);
    if (*end1 || *end2 || a > b) {
        fprintf(stderr, "%s: bad seed range '%s' '%s'\n", argv[0], argv[1], argv[2]);
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
