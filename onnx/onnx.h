/* onnx.h - the ONNX importer (einc --from=onnx): an ONNX model in, an
 * ein program and its weights out.  The program has one statement (or a
 * few) per node, the shapes as numbers and the inputs' first dimension as
 * `const B`; its inputs and weights carry their ONNX names as external
 * names, and the initializers go into a safetensors image under those
 * names.  Errors are printed as "FILE: error: node N 'NAME' (OP): ..." and
 * nothing is returned.  Prefix: onnx_. */
#ifndef EINC_ONNX_H
#define EINC_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct OnnxOptions {
    const char *path;               /* the .onnx file ("-": standard input) */
    const char *weights_name;       /* the weights file, named in a comment */
    const char *command;            /* the command line, for a comment */
    const char *bind;               /* a safetensors file of values for graph
                                       inputs (by ONNX name), or NULL */
    const void *bytes;              /* the model itself, when not NULL (path
                                       then only names it in messages) */
    size_t len;                     /* its size */
    FILE *err;                      /* where errors go (NULL: stderr) */
} OnnxOptions;

typedef struct OnnxResult {
    char *ein;                      /* the program (malloc'd) */
    size_t ein_len;
    unsigned char *weights;         /* a safetensors image (malloc'd) */
    size_t weights_len;
    int nweights;                   /* tensors in it */
} OnnxResult;

/* Import a model; false after reporting errors. */
bool onnx_import(const OnnxOptions *opt, OnnxResult *res);

/* Read serialized TensorProto files (the ONNX backend tests' input_N.pb,
 * output_N.pb) into one safetensors image, each tensor under names[i]
 * (NULL: the name the file holds).  Every type stays as it is (I64, I32,
 * U8, BOOL ...; doubles F64).  False after reporting the error. */
bool onnx_tensors_to_safetensors(const char *const *paths, const char *const *names,
                                 int n, unsigned char **out, size_t *len);

#endif
