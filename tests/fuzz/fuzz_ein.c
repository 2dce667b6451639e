/* fuzz_ein.c - libFuzzer entry for the front end: parse a buffer as a
 * .ein file and, when it parses (and sema is linked in), check it.  The
 * only outcome that matters is that nothing crashes, leaks into UB or runs
 * away; diagnostics go to /dev/null.  Built by `make fuzz` with clang's
 * -fsanitize=fuzzer, and replayed over the corpus by replay.c in `make
 * check`. */
#include "config.h"
#include "lang/lang.h"
#include "parser/parser.h"
#ifdef FUZZ_EIN_WITH_SEMA
#include "sema/sema.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static FILE *devnull;
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        diag_set_stream(devnull);
    }
    /* Each input is a compilation of its own. */
    src_reset();
    diag_reset();
    Arena *arena = arena_new();
    /* Imports resolve against a folder that does not exist, and no
     * absolute path gets through (a file like /proc/kmsg would block). */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    for (size_t i = 0; i + 1 < size; i++)
        if ((text[i] == '"' || text[i] == '<') && text[i + 1] == '/')
            text[i + 1] = '_';
    static const char *const dirs[] = {"/nonexistent-einc-fuzz"};
    ParseOptions opt = {.include_dirs = dirs, .ninclude = 1};
    Ast *ast = parse_buffer("/nonexistent-einc-fuzz/fuzz.ein", text, size,
                            &opt, arena);
    free(text);
#ifdef FUZZ_EIN_WITH_SEMA
    if (ast) {
        SemaOptions so = {NULL, 0, "fuzz"};
        sema_check(ast, &so, arena);
    }
#else
    (void)ast;
#endif
    arena_free(arena);
    return 0;
}
