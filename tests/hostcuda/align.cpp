/* align.cpp - device pointers of any alignment may go to align_run
 * (emit/README.md): cuDNN's tensors declare 16-byte alignment, so a
 * convolution whose input or output is not 16-byte aligned runs as its
 * generated kernel, with the same numbers.  On the model of align.ein (one
 * convolution through cuDNN), built by tests/emit/hostcuda.test with the
 * generated file (its launches rewritten) included as MODEL_CU; the mock
 * rejects a misaligned pointer in a variant pack.
 * Prints `align: N checks, M failed`; exit 1 when one failed. */
#include MODEL_CU

#include <cmath>
#include <cstdio>
#include <vector>

static int checks, failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        checks++;                                                          \
        if (!(cond)) {                                                     \
            failed++;                                                      \
            fprintf(stderr, "align.cpp:%d: FAIL: ", __LINE__);             \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

static std::vector<float> seeded(size_t n, unsigned seed)
{
    std::vector<float> v(n);
    uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (float &x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x = (float)((double)(s >> 11) / (double)(1ull << 53) * 2 - 1);
    }
    return v;
}

int main()
{
    const align_tensor_info *tx = align_tensor_at(0), *tw = align_tensor_at(1),
                            *ty = align_tensor_at(2);
    std::vector<float> x = seeded(tx->count, 1), w = seeded(tw->count, 2);
    std::vector<float> ref(ty->count), got(ty->count);
    align_ctx *ctx;
    CHECK(align_create(&ctx) == ALIGN_OK, "create: %s", align_last_error(ctx));
    CHECK(align_set_tensor(ctx, "w", w.data(), tw->nbytes) == ALIGN_OK, "set w");
    char *mem;
    cudaMalloc((void **)&mem, tx->nbytes + ty->nbytes + 64);
    /* offset 0: 16-byte aligned (cuDNN); 4 and 8: only float-aligned */
    for (int off : {0, 4, 8}) {
        float *dx = (float *)(mem + off), *dy = (float *)(mem + 32 + tx->nbytes + off);
        cudaMemcpy(dx, x.data(), tx->nbytes, cudaMemcpyHostToDevice);
        int rc = align_run(ctx, dx, dy, 0);
        CHECK(rc == ALIGN_OK, "a run with pointers %d bytes past 16-byte alignment: %s", off,
              align_last_error(ctx));
        cudaMemcpy(off ? got.data() : ref.data(), dy, ty->nbytes, cudaMemcpyDeviceToHost);
        if (off && rc == ALIGN_OK) {
            double err = 0, mag = 0;
            for (size_t i = 0; i < got.size(); i++) {
                mag = std::max(mag, (double)std::fabs(ref[i]));
                err = std::max(err, (double)std::fabs(got[i] - ref[i]));
            }
            CHECK(err <= 1e-5 * mag, "pointers %d bytes off 16: rel err %g", off, err / mag);
        }
    }
    cudaFree(mem);
    CHECK(align_destroy(ctx) == ALIGN_OK, "destroy");
    printf("align: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
