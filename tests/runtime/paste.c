/* paste.c - writes the embedded runtime (runtime/libruntime_embed.a) to
 * stdout the way the emitter pastes it into a generated file: the
 * EINC_RT_STATIC definition, then every piece in table order that every
 * output may carry (the oneDNN pieces, C only and pasted only where a C
 * file calls oneDNN, are left out; the numerical suite builds them in
 * generated files).  paste.test compiles the result as C, as C++ and
 * with nvcc.  With --check it first checks the whole table. */
#include <stdio.h>
#include <string.h>
#include "runtime/embed.h"

int main(int argc, char **argv)
{
    static const char *const order[] = { "rt.h", "st.h", "harness.h",
                                         "st.c", "harness.c", "dnnl_types.h",
                                         "dnnl.c" };
    const int npasted = 5;
    int i;
    if (argc > 1 && strcmp(argv[1], "--check") == 0) {
        if (runtime_npieces != 7) {
            fprintf(stderr, "paste: %d pieces, expected 7\n", runtime_npieces);
            return 1;
        }
        for (i = 0; i < runtime_npieces; i++) {
            const char *t = runtime_pieces[i].text;
            if (strcmp(runtime_pieces[i].name, order[i]) != 0 ||
                runtime_piece(order[i]) != t || strlen(t) < 100 ||
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
    for (i = 0; i < npasted; i++)
        printf("\n/* ---- runtime/%s ---- */\n%s", runtime_pieces[i].name,
               runtime_pieces[i].text);
    return fflush(stdout) == 0 ? 0 : 1;
}
