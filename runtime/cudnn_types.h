/* cudnn_types.h - the types of the cuDNN convolutions of a generated
 * program (cudnn.cu): pasted before struct model_ctx, which holds one
 * ein_conv per convolution, when the program calls cuDNN. */
#ifndef EINC_CUDNN_TYPES_H
#define EINC_CUDNN_TYPES_H
#include <stdint.h>
#include <cudnn.h>

/* One convolution as the generated file describes it (ein_convs[]): a
   forward convolution of x with w into y, or for a transposed one the
   backward-data operation with dy = x and dx = y.  Sizes are NCHW and
   [K, C/groups, R, S]; pad[] is the same before and after. */
typedef struct ein_conv_spec {
    const char *name;           /* the tensor it computes */
    int transposed;
    cudnnDataType_t dt;
    int tensor_cores;           /* engines that round f32 to TF32 are fine */
    int64_t x[4], w[4], y[4];
    int64_t pad[2], stride[2], dil[2];
    int64_t engine;             /* the engine to try first (the tuning
                                   database's choice), or -1 */
} ein_conv_spec;

/* One cuDNN convolution: its execution plan, the descriptors it was made
   from (kept until the context goes), and the variant pack of the
   pointers it last ran on (rebuilt when they change). */
typedef struct ein_conv {
    cudnnBackendDescriptor_t *d;
    int nd, capd;
    cudnnBackendDescriptor_t plan, pack;
    void *ptr[4];               /* x, w, y, workspace of `pack` */
    int64_t ws_bytes;
    int64_t engine;             /* the plan's engine, by its global index */
} ein_conv;

#endif
