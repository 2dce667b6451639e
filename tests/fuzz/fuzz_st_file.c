/* fuzz_st_file.c - libFuzzer harness for the safetensors reader of the
 * generated programs as they meet files: st_open on the file system
 * (runtime/st.c), where fuzz_safetensors.c feeds st_open_memory.
 *
 * Each input is a file image, given to st_open three ways, each held
 * against st_open_memory over the same bytes:
 *   - as a regular file: the same status and the same message;
 *   - cut to half its length: the same again (a truncated file);
 *   - through a FIFO that a child process writes (a pipe has no size, so
 *     the reader must do without one): the same status, and for a file
 *     accepted, the same tensors.
 * Fixed cases, run once: a FIFO whose writer never stops after a valid
 * file (the reader takes what the header names and returns: it must not
 * read on until memory runs out), a FIFO that no process writes, /dev/zero
 * and a directory (refused at once, not read), a missing file.
 *
 *   make fuzz-st-file   (clang -fsanitize=fuzzer,address,undefined), then
 *   FUZZ_ST=file tests/runtime/fuzz-st.sh SECONDS
 *
 * Linked with tests/fuzz/replay.c instead, it replays the files it is
 * given: `make check` runs it over tests/fuzz/corpus-st/
 * (tests/runtime/corpus-file.test).
 * POSIX (mkfifo, fork), like the test machines; the reader itself is not. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "runtime/st.h"

#define FAIL(...)                                                           \
    do {                                                                    \
        fprintf(stderr, "fuzz_st_file: ");                                  \
        fprintf(stderr, __VA_ARGS__);                                       \
        fprintf(stderr, " (line %d)\n", __LINE__);                          \
        abort();                                                            \
    } while (0)

static char dir[64];                /* scratch folder of this process */
static char file_path[96], fifo_path[96];

static void setup(void)
{
    if (dir[0])
        return;
    snprintf(dir, sizeof dir, "%s", "/tmp/fuzz_st_file.XXXXXX");
    if (!mkdtemp(dir))
        FAIL("mkdtemp: %s", strerror(errno));
    snprintf(file_path, sizeof file_path, "%s/f.safetensors", dir);
    snprintf(fifo_path, sizeof fifo_path, "%s/pipe", dir);
    /* a writer whose reader has gone gets EPIPE, not a signal */
    signal(SIGPIPE, SIG_IGN);
}

static void cleanup(void)
{
    if (!dir[0])
        return;
    unlink(file_path);
    unlink(fifo_path);
    rmdir(dir);
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0)
        FAIL("cannot write %s", path);
}

/* Two opened files hold the same tensors (names, dtypes, shapes, bytes). */
static void same_tensors(const StFile *a, const StFile *b)
{
    int i;
    if (st_count(a) != st_count(b) || st_metadata_count(a) != st_metadata_count(b))
        FAIL("the counts differ");
    for (i = 0; i < st_count(a); i++) {
        const StTensor *x = st_tensor(a, i), *y = st_tensor(b, i);
        if (strcmp(x->name, y->name) != 0 || x->dtype != y->dtype ||
            x->rank != y->rank || x->nbytes != y->nbytes ||
            (x->rank && memcmp(x->shape, y->shape, (size_t)x->rank * sizeof *x->shape)) ||
            (x->nbytes && memcmp(x->data, y->data, x->nbytes)))
            FAIL("tensor %d differs", i);
    }
}

/* st_open(path) against st_open_memory over the bytes it holds. */
static void check_file(const uint8_t *data, size_t size)
{
    char e1[ST_ERRLEN], e2[ST_ERRLEN];
    StFile *f = NULL, *g = NULL;
    int r1, r2;
    write_file(file_path, data, size);
    e1[0] = e2[0] = 0;
    r1 = st_open(file_path, &f, e1, sizeof e1);
    r2 = st_open_memory(file_path, data, size, &g, e2, sizeof e2);
    if (r1 != r2 || strcmp(e1, e2) != 0)
        FAIL("file and memory disagree: %d '%s' / %d '%s'", r1, e1, r2, e2);
    if (r1 == ST_OK)
        same_tensors(f, g);
    st_close(f);
    st_close(g);
}

/* A child writes `size` bytes (then, with `endless`, zeros until the
 * reader goes) into the FIFO; the parent opens it with st_open once the
 * child has it open (st_open refuses a FIFO that no process writes).  The
 * parent holds a read end meanwhile, so that the child's open returns. */
static int open_fifo(const uint8_t *data, size_t size, int endless, StFile **f,
                     char *err, size_t errlen)
{
    pid_t pid;
    int rc, status, hold, sync[2];
    char ready;
    unlink(fifo_path);
    if (mkfifo(fifo_path, 0600) != 0)
        FAIL("mkfifo: %s", strerror(errno));
    if ((hold = open(fifo_path, O_RDONLY | O_NONBLOCK)) < 0 || pipe(sync) != 0)
        FAIL("open %s: %s", fifo_path, strerror(errno));
    pid = fork();
    if (pid < 0)
        FAIL("fork: %s", strerror(errno));
    if (pid == 0) {
        static const unsigned char zeros[4096];
        int fd = open(fifo_path, O_WRONLY);
        size_t off = 0;
        close(hold);
        close(sync[0]);
        if (fd < 0 || write(sync[1], "r", 1) != 1)
            _exit(1);
        close(sync[1]);
        while (off < size) {
            ssize_t n = write(fd, data + off, size - off);
            if (n <= 0)
                _exit(0);       /* the reader has gone */
            off += (size_t)n;
        }
        while (endless && write(fd, zeros, sizeof zeros) > 0)
            ;
        _exit(0);
    }
    close(sync[1]);
    if (read(sync[0], &ready, 1) != 1)
        FAIL("the writer of %s did not start", fifo_path);
    close(sync[0]);
    rc = st_open(fifo_path, f, err, errlen);
    close(hold);
    /* the reader is done: whatever the writer still does no longer
     * matters (and a writer still waiting for a reader would wait for
     * ever) */
    kill(pid, SIGKILL);
    if (waitpid(pid, &status, 0) != pid)
        FAIL("waitpid: %s", strerror(errno));
    return rc;
}

static void check_fifo(const uint8_t *data, size_t size)
{
    char e1[ST_ERRLEN], e2[ST_ERRLEN];
    StFile *f = NULL, *g = NULL;
    int r1 = open_fifo(data, size, 0, &f, e1, sizeof e1);
    int r2 = st_open_memory(fifo_path, data, size, &g, e2, sizeof e2);
    if (r1 != r2)
        FAIL("pipe and memory disagree: %d '%s' / %d '%s'", r1, e1, r2, e2);
    if (r1 == ST_OK)
        same_tensors(f, g);
    else if (strncmp(e1, fifo_path, strlen(fifo_path)) != 0 || strlen(e1) < strlen(fifo_path) + 4)
        FAIL("refused without a proper message: '%s'", e1);
    st_close(f);
    st_close(g);
}

/* What no input changes: devices, folders, a never-ending pipe. */
static void fixed_cases(void)
{
    static const char valid[] =
        "\x40\0\0\0\0\0\0\0"
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}          "
        "\0\0\x80\x3f\0\0\0\x40";
    char err[ST_ERRLEN];
    StFile *f = NULL;
    int rc;
    if (sizeof valid - 1 != 8 + 64 + 8)
        FAIL("the valid file is %d bytes", (int)sizeof valid - 1);
    rc = st_open("/dev/zero", &f, err, sizeof err);
    if (rc != ST_EIO || f)
        FAIL("/dev/zero: status %d: %s", rc, err);
    unlink(fifo_path);
    if (mkfifo(fifo_path, 0600) != 0)
        FAIL("mkfifo: %s", strerror(errno));
    rc = st_open(fifo_path, &f, err, sizeof err);
    if (rc != ST_EIO || f)
        FAIL("a FIFO that no process writes: status %d: %s", rc, err);
    rc = st_open(dir, &f, err, sizeof err);
    if (rc != ST_EIO || f)
        FAIL("a directory: status %d: %s", rc, err);
    rc = st_open("/nonexistent/x.safetensors", &f, err, sizeof err);
    if (rc != ST_EIO || f)
        FAIL("a missing file: status %d: %s", rc, err);
    /* a valid file through a pipe that never ends after it */
    rc = open_fifo((const uint8_t *)valid, sizeof valid - 1, 1, &f, err, sizeof err);
    if (rc != ST_OK)
        FAIL("a valid file through an endless pipe: status %d: %s", rc, err);
    if (st_count(f) != 1 || st_tensor(f, 0)->nbytes != 8)
        FAIL("a valid file through an endless pipe: wrong tensors");
    st_close(f);
    /* the same, and its header cut short or its data missing */
    check_file((const uint8_t *)valid, sizeof valid - 1);
    check_fifo((const uint8_t *)valid, 40);
    check_fifo((const uint8_t *)valid, sizeof valid - 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    setup();
    if (!once) {
        once = 1;
        fixed_cases();
        atexit(cleanup);
    }
    check_file(data, size);
    check_file(data, size / 2);
    check_fifo(data, size);
    return 0;
}
