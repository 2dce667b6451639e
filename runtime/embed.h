/* embed.h - the runtime sources, embedded into einc at build time so that
 * each generated program can carry them (see runtime/README.md).
 * runtime_pieces lists first the core, in the order to paste it in: rt.h,
 * st.h, harness.h, st.c, harness.c; then the support pieces (api.c,
 * cudnn.cu, ...), which emit/ pastes where a program needs them.  Their
 * texts are ready to paste: lines marked EMBED-SKIP (the includes between
 * pieces, and of the stand-in model.h) are already removed.  The output
 * must #define EINC_RT_STATIC before the first piece. */
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
