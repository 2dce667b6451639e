/* cudnn_types.h - the types of the cuDNN convolutions of a generated
 * program (cudnn.cu): pasted before struct model_ctx, which holds one
 * ein_conv per convolution, when the program calls cuDNN. */
#ifndef EINC_CUDNN_TYPES_H
#define EINC_CUDNN_TYPES_H
#include <stdint.h>
#include <cudnn.h>

/* The most pointwise nodes after one convolution (derive/pricing/cost.h:
   LIB_PW_MAX). */
#define EIN_CUDNN_MAXPW 16

/* One pointwise node of a convolution's graph (emit/lib.c writes them
   from the plan's epilogue: derive/pricing/libs.c, cost_pointwise):
   y = mode(x) or y = mode(x, b) in f32, x the output of the node before
   (the convolution's for the first), the last node's y the convolution's
   output tensor.  b is a tensor of the program, its pointer passed to
   ein_conv_run, read through dims (1 where it is broadcast) and strides
   in elements, or a scalar passed by value. */
typedef enum { EIN_PW_UNARY, EIN_PW_TENSOR, EIN_PW_SCALAR } ein_pw_kind;

typedef struct ein_pw_spec {
    cudnnPointwiseMode_t mode;
    ein_pw_kind kind;
    float value;                /* EIN_PW_SCALAR: b */
    int64_t dims[4], strides[4];    /* EIN_PW_TENSOR: b's view */
    int64_t align;              /* EIN_PW_TENSOR: b's pointer is aligned to
                                   these many bytes */
} ein_pw_spec;

/* One convolution as the generated file describes it (ein_convs[]): a
   forward convolution of x with w into y, or for a transposed one the
   backward-data operation with dy = x and dx = y.  Sizes are NCHW and
   [K, C/groups, R, S]; pad[] is the same before and after.  pw[0..npw):
   the pointwise nodes of its epilogue (a forward convolution's), which
   its graph computes after it where an engine takes the graph. */
typedef struct ein_conv_spec {
    const char *name;           /* the tensor it computes */
    int transposed;
    cudnnDataType_t dt;
    int tensor_cores;           /* engines that round f32 to TF32 are fine */
    int64_t x[4], w[4], y[4];
    int64_t pad[2], stride[2], dil[2];
    int64_t engine;             /* the engine to try first (the tuning
                                   database's choice), or -1 */
    const ein_pw_spec *pw;
    int npw;
} ein_conv_spec;

/* One cuDNN convolution: its execution plan, the descriptors it was made
   from (kept until the context goes), and the variant pack of the
   pointers it last ran on (rebuilt when they change).  fused: the plan
   computes the pointwise nodes too (else the generated file's pass of
   the epilogue follows it). */
typedef struct ein_conv {
    ein_conv_spec sp;
    cudnnBackendDescriptor_t *d;
    int nd, capd;
    cudnnBackendDescriptor_t plan, pack;
    int fused;
    void *ptr[4 + EIN_CUDNN_MAXPW];     /* x, w, y, workspace, the nodes' b of
                                           `pack` */
    int64_t ws_bytes;
    int64_t engine;             /* the plan's engine, by its global index */
} ein_conv;

#endif
