/* st.h - safetensors reading and writing for the programs einc generates.
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes
 * of JSON header {"name": {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}, then
 * the data area; offsets are relative to its start.  The reader takes the
 * file into memory, the header first and then only the data its offsets
 * name (never all of /dev/zero), and checks everything a broken or hostile file
 * could get wrong before it hands out a tensor.  Nothing here prints or
 * exits: each call returns an StStatus and writes a message that names the
 * file (and the tensor) into the caller's buffer.  Plain C99; also compiles
 * as C++ (nvcc).  Prefix: st_. */
#ifndef EINC_ST_H
#define EINC_ST_H

#include <stddef.h>
#include <stdint.h>
#include "rt.h" /* EMBED-SKIP */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum StStatus {
    ST_OK = 0,
    ST_EIO,                     /* cannot open, read or write the file */
    ST_EFORMAT,                 /* not a well-formed safetensors file */
    ST_ENOTFOUND,               /* no tensor of that name */
    ST_EMISMATCH,               /* tensor has another dtype or shape */
    ST_ENOMEM,                  /* out of memory */
    ST_EINVAL                   /* bad arguments to a writer call */
} StStatus;

/* The three types einc computes with come first; the other safetensors
 * types are parsed (a PyTorch state dict holds I64 counters) so that their
 * sizes are checked, and refused only when such a tensor is asked for. */
typedef enum StDtype {
    ST_F32, ST_F16, ST_BF16,
    ST_F64, ST_I64, ST_I32, ST_I16, ST_I8,
    ST_U64, ST_U32, ST_U16, ST_U8, ST_BOOL,
    ST_F8_E4M3, ST_F8_E5M2,
    ST_NDTYPES
} StDtype;

typedef struct StTensor {
    const char *name;           /* UTF-8, NUL-terminated (no NUL inside) */
    StDtype dtype;
    int rank;
    const int64_t *shape;       /* rank dims, each >= 0 */
    uint64_t nelem;             /* product of the dims (1 for rank 0) */
    uint64_t begin, end;        /* data_offsets from the header */
    const unsigned char *data;  /* little-endian bytes; not aligned */
    size_t nbytes;              /* end - begin */
} StTensor;

typedef struct StFile StFile;   /* an opened, checked file */

enum { ST_ERRLEN = 512 };       /* a message buffer size that is plenty */

/* Read and check a file.  On success *out is the file (st_close it);
 * on failure *out is NULL and err holds the message. */
RT_API int st_open(const char *path, StFile **out, char *err, size_t errlen);
/* The same over bytes in memory (copied); `name` stands for the file name
 * in messages. */
RT_API int st_open_memory(const char *name, const void *bytes, size_t size,
                          StFile **out, char *err, size_t errlen);
RT_API void st_close(StFile *f);

RT_API const char *st_name(const StFile *f);
RT_API int st_count(const StFile *f);
RT_API const StTensor *st_tensor(const StFile *f, int i);   /* header order */
RT_API const StTensor *st_find(const StFile *f, const char *name);
RT_API int st_metadata_count(const StFile *f);
RT_API void st_metadata_at(const StFile *f, int i, const char **key,
                           const char **value);
RT_API const char *st_metadata(const StFile *f, const char *key);

/* Look a tensor up and check it has the expected dtype and shape
 * (shape may be NULL when rank is 0). */
RT_API int st_get(const StFile *f, const char *name, StDtype dtype, int rank,
                  const int64_t *shape, const StTensor **out,
                  char *err, size_t errlen);
/* Copy a tensor's bytes to dst (nbytes) in the host's byte order. */
RT_API void st_copy(const StTensor *t, void *dst);
/* st_get, then st_copy into dst, which holds dst_bytes bytes. */
RT_API int st_read(const StFile *f, const char *name, StDtype dtype, int rank,
                   const int64_t *shape, void *dst, size_t dst_bytes,
                   char *err, size_t errlen);

/* A tensor to write: data in the host's byte order, nelem * dtype size
 * bytes. */
typedef struct StOut {
    const char *name;
    StDtype dtype;
    int rank;
    const int64_t *shape;
    const void *data;
} StOut;

enum { ST_WRITE_SORTED = 1 };   /* keys and data in name order, not as given */

/* Write n tensors and nmeta metadata pairs (meta[2i] = key, meta[2i+1] =
 * value; meta may be NULL when nmeta is 0).  The header is padded with
 * spaces to a multiple of 8 bytes. */
RT_API int st_write(const char *path, const StOut *ts, int n,
                    const char *const *meta, int nmeta, int flags,
                    char *err, size_t errlen);
/* The same into a malloc'd image (*out, *size); the caller frees it. */
RT_API int st_write_memory(const StOut *ts, int n, const char *const *meta,
                           int nmeta, int flags, unsigned char **out,
                           size_t *size, char *err, size_t errlen);

RT_API const char *st_dtype_name(StDtype t);    /* "F32"; "?" if unknown */
RT_API size_t st_dtype_size(StDtype t);         /* bytes; 0 if unknown */
RT_API int st_dtype_parse(const char *s, StDtype *out);  /* 0 or -1 */

/* IEEE half and bfloat16 conversions, round to nearest even, bit-exact on
 * every platform (no hardware half types used). */
RT_API uint16_t st_f32_to_f16(float f);
RT_API float st_f16_to_f32(uint16_t h);
RT_API uint16_t st_f32_to_bf16(float f);
RT_API float st_bf16_to_f32(uint16_t h);

/* Check that text[0..len) is one well-formed JSON value (RFC 8259, strings
 * in UTF-8, nesting at most 64 deep; "\u0000" is refused because names are
 * C strings).  Used by the tests and the fuzzer to exercise the parser the
 * header reader is built on. */
RT_API int st_json_check(const char *text, size_t len, char *err,
                         size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
