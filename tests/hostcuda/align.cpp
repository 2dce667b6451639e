/* align.cpp - device pointers of any alignment may go to align_run
 * (emit/README.md): cuDNN's tensors declare 16-byte alignment, so a
 * convolution whose input or output is not 16-byte aligned runs as its
 * generated kernel, cuBLASLt's algorithms are chosen for 16-byte
 * operands, so a product with its epilogue whose operands are not runs as
 * cublasGemmEx and the epilogue's pass, and a map, a fused row group or a
 * sum of four elements or terms a thread (a _v4 kernel, float4 loads)
 * runs as its other kernel; the same numbers (the same bits for the map,
 * the row group and the sum, whose two kernels take their terms alike).
 * On the model of align.ein (a convolution through cuDNN, a product with
 * a bias, a residual and ReLU through cuBLASLt, a map, a softmax, a sum),
 * built by tests/emit/hostcuda.test
 * with the generated file (its launches rewritten) included as MODEL_CU;
 * the mocks reject a misaligned pointer in a variant pack and one below
 * the alignment a cuBLASLt algorithm was chosen for.
 * Prints `align: N checks, M failed`; exit 1 when one failed. */
#include MODEL_CU

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <vector>
#include "driver.h"

/* The tensors of the run, in align_run's order: inputs x, a, q, g, m,
 * outputs y, z, u, sm, ms; by name, so that a change of the model shows
 * here. */
static const char *const run_names[] = {"x", "a", "q", "g", "m", "y", "z", "u", "sm", "ms"};
enum { NRUN = 10, NIN = 5 };

static const align_tensor_info *info(const char *name)
{
    for (int i = 0; i < align_tensor_count(); i++)
        if (strcmp(align_tensor_at(i)->name, name) == 0)
            return align_tensor_at(i);
    fprintf(stderr, "align.ein has no tensor '%s'\n", name);
    exit(1);
}

int main()
{
    const align_tensor_info *t[NRUN];
    size_t total = 0;
    for (int i = 0; i < NRUN; i++) {
        t[i] = info(run_names[i]);
        total += t[i]->nbytes + 32;
    }
    std::vector<std::vector<float>> host(NRUN), ref(NRUN);
    for (int i = 0; i < NRUN; i++)
        host[i] = seeded_values(t[i]->count, (unsigned)i + 1);
    align_ctx *ctx;
    CHECK(align_create(&ctx) == ALIGN_OK, "create: %s", align_last_error(ctx));
    const char *weights[] = {"w", "wl", "bl"};
    for (int i = 0; i < 3; i++) {
        std::vector<float> v = seeded_values(info(weights[i])->count, 10u + (unsigned)i);
        CHECK(align_set_tensor(ctx, weights[i], v.data(), info(weights[i])->nbytes) == ALIGN_OK,
              "set %s", weights[i]);
    }
    char *mem;
    cudaMalloc((void **)&mem, total + 64);
    /* offset 0: 16-byte aligned (cuDNN, cuBLASLt); 4 and 8: only float-aligned */
    for (int off : {0, 4, 8}) {
        float *d[NRUN];
        size_t at = 0;
        for (int i = 0; i < NRUN; i++) {
            d[i] = (float *)(mem + at + off);
            at += (t[i]->nbytes + 31) / 32 * 32 + 32;
            if (i < NIN)
                cudaMemcpy(d[i], host[i].data(), t[i]->nbytes, cudaMemcpyHostToDevice);
        }
        long lt0 = hc_count("cublasLt matmul fp32"), v40 = hc_count("_v4 kernel launches");
        int rc = align_run(ctx, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], 0);
        CHECK(rc == ALIGN_OK, "a run with pointers %d bytes past 16-byte alignment: %s", off,
              align_last_error(ctx));
        cudaDeviceSynchronize();
        long lt = hc_count("cublasLt matmul fp32") - lt0;
        CHECK(lt == (off ? 0 : 1), "pointers %d bytes past 16-byte alignment: %ld cuBLASLt "
              "calls", off, lt);
        long v4 = hc_count("_v4 kernel launches") - v40;
        CHECK(v4 == (off ? 0 : 3), "pointers %d bytes past 16-byte alignment: %ld _v4 kernels",
              off, v4);
        for (int i = NIN; i < NRUN; i++) {
            std::vector<float> got(t[i]->count);
            cudaMemcpy(got.data(), d[i], t[i]->nbytes, cudaMemcpyDeviceToHost);
            if (!off) {
                ref[i] = got;
                continue;
            }
            double err = 0, mag = 0;
            for (size_t k = 0; k < got.size(); k++) {
                mag = std::max(mag, (double)std::fabs(ref[i][k]));
                err = std::max(err, (double)std::fabs(got[k] - ref[i][k]));
            }
            CHECK(rc == ALIGN_OK && err <= 1e-5 * mag, "%s, pointers %d bytes off 16: rel err %g",
                  run_names[i], off, err / mag);
            /* a map's, a row group's or a reduction's two kernels take the
             * same terms in the same order: the same bits */
            bool same_order = strcmp(run_names[i], "u") == 0 || strcmp(run_names[i], "sm") == 0 ||
                              strcmp(run_names[i], "ms") == 0;
            CHECK(!same_order || memcmp(got.data(), ref[i].data(), t[i]->nbytes) == 0,
                  "%s, pointers %d bytes off 16: not the same bits as aligned", run_names[i], off);
        }
    }
    cudaFree(mem);
    CHECK(align_destroy(ctx) == ALIGN_OK, "destroy");
    printf("align: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
