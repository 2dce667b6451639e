/* embed.h - the runtime sources, embedded into einc at build time so that
 * each generated program can carry them (see runtime/README.md).
 * runtime_pieces lists them in the order to paste them in: rt.h, st.h,
 * harness.h, st.c, harness.c.  Their texts are ready to paste: lines
 * marked EMBED-SKIP (the includes between pieces) are already removed.
 * The output must #define EINC_RT_STATIC before the first piece. */
#ifndef EINC_RUNTIME_EMBED_H
#define EINC_RUNTIME_EMBED_H

typedef struct RuntimePiece {
    const char *name;           /* file name in runtime/, e.g. "st.c" */
    const char *text;           /* its text, NUL-terminated */
} RuntimePiece;

extern const RuntimePiece runtime_pieces[];
extern const int runtime_npieces;

/* The piece of that name, or NULL. */
const char *runtime_piece(const char *name);

#endif
