/* paste_main.c - appended by paste.test to the pasted runtime: uses the
 * API as a generated program does, with nothing but what was pasted.
 * (Not a unit test of its own: it has no #include of the runtime.) */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    RtArgs a;
    float w[6], back[6];
    int64_t shape[2] = { 2, 3 };
    RtTensor t[1];
    char err[ST_ERRLEN];
    double ms[3];
    int i;

    rt_main_args(argc, argv, &a);
    t[0].name = "w";
    t[0].dtype = ST_F32;
    t[0].rank = 2;
    t[0].shape = shape;
    t[0].data = w;
    if (rt_load_or_fill(a.prog, "--weights", a.weights, t, 1, a.seed, err,
                        sizeof err) != ST_OK ||
        rt_write_tensors("paste.st", t, 1, err, sizeof err) != ST_OK) {
        fprintf(stderr, "%s: %s\n", a.prog, err);
        return 1;
    }
    t[0].data = back;
    if (rt_load_or_fill(a.prog, "--weights", "paste.st", t, 1, 0, err,
                        sizeof err) != ST_OK) {
        fprintf(stderr, "%s: %s\n", a.prog, err);
        return 1;
    }
    for (i = 0; i < 3; i++)
        ms[i] = rt_now_ms();
    if (memcmp(w, back, sizeof w) != 0 || rt_median(ms, 3) < 0) {
        fprintf(stderr, "%s: values changed\n", a.prog);
        return 1;
    }
    printf("%.9g %.9g\n", (double)w[0], (double)st_f16_to_f32(
               st_f32_to_f16(w[5])));
    return 0;
}
