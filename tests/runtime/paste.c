/* paste.c - writes the embedded runtime (runtime/libruntime_embed.a) to
 * stdout the way the emitter pastes it into a generated file: the
 * EINC_RT_STATIC definition, then the core pieces in table order (the
 * support pieces need a generated program around them: support.test
 * compiles them against runtime/model.h).  paste.test
 * compiles the result as C, as C++ and with nvcc.  With --check it first
 * checks the table itself. */
#include <stdio.h>
#include <string.h>
#include "runtime/embed.h"

int main(int argc, char **argv)
{
    static const char *const order[] = { "rt.h", "st.h", "harness.h",
                                         "st.c", "harness.c" };
    int i;
    if (argc > 1 && strcmp(argv[1], "--check") == 0) {
        /* the core pieces first, in paste order; then the support pieces */
        if (runtime_npieces < 5) {
            fprintf(stderr, "paste: %d pieces, expected at least 5\n", runtime_npieces);
            return 1;
        }
        for (i = 0; i < runtime_npieces; i++) {
            const char *t = runtime_pieces[i].text;
            if ((i < 5 && strcmp(runtime_pieces[i].name, order[i]) != 0) ||
                runtime_piece(runtime_pieces[i].name) != t || strlen(t) < 100 ||
                strstr(t, "EMBED-SKIP") || strstr(t, "#include \"")) {
                fprintf(stderr, "paste: piece %d (%s) is wrong\n", i,
                        runtime_pieces[i].name);
                return 1;
            }
        }
        if (runtime_piece("nope.c") != NULL) {
            fprintf(stderr, "paste: found a piece that is not there\n");
            return 1;
        }
    }
    fputs("#define EINC_RT_STATIC 1\n", stdout);
    for (i = 0; i < 5; i++)
        printf("\n/* ---- runtime/%s ---- */\n%s", order[i], runtime_piece(order[i]));
    return fflush(stdout) == 0 ? 0 : 1;
}
