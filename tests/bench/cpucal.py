#!/usr/bin/python3
"""cpucal.py - measures what the cost model's CPU figures (derive/pricing/cost.c,
device `cpu`) stand for on this machine, one thread, and prints the fitted
figures (run by tests/bench/cpucal.sh; not part of `make check`).

Three groups of measurements, each the median of many runs:
  1. cblas_sgemm, row-major as the C target calls it, ~90 shapes
     (cpucal_gemm.c): fitted to
       t = launch + 2MNK / (peak * M/(M+m0) * K/(K+k0))
                  + 4MK / pack_a * (transposed A: x ta) + 4KN / pack_b(B > L2)
                  + 4MN / store_c
     and, where M*N*K <= small_mnk (OpenBLAS's small-matrix kernels, which
     pack nothing), t = launch + 2MNK / (peak * s/(s+s0)) + 4MN / store_c,
     s = min(M, N);
  2. generated loop nests (einc -O0 --main, every statement one kernel,
     timed operator by operator by cpuprof.py): ns per term of a
     reduction, ns per element of an elementwise loop in L2, the stream
     bandwidth of one that does not fit L2, the cost of a read that
     steps a cache line or more per iteration (kept in L2, or thrown out
     by the set conflicts of a power-of-two stride), of tanh and exp;
  3. convolutions through im2col + cblas_sgemm (einc -O0): ns per im2col
     element, what the GEMM model leaves of the measured time.
Then every program of 2 and 3 again with the model's estimate (einc
--device=cpu --emit=plan) next to the measured time.

Usage: cpucal.py [--einc EINC] [--cc CC] [--keep DIR] [--quick]
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpuprof                                # noqa: E402

L2_BYTES = 1 << 20      # the L2 of one core; printed from sysfs below

# ---- 1. GEMMs ---------------------------------------------------------------

def gemm_shapes(quick):
    s = []
    for n in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256):
        s += ["512,%d,512" % n, "%d,512,512" % n]
    for k in (1, 2, 4, 8, 16, 32, 64, 128):
        s.append("512,512,%d" % k)
    for t in ("0,0", "1,0", "0,1", "1,1"):
        s += ["%s,%s" % (x, t) for x in ("2048,16,256", "16,2048,256",
                                         "256,256,256", "1024,64,512",
                                         "64,1024,512")]
    s += ["1024,1024,1024", "128,128,128", "64,64,64", "32,32,32", "16,16,16",
          "8,8,8"]
    for n in (1, 2, 4, 8, 16, 32, 128):
        s += ["1024,%d,512" % n]
    for m in (1, 2, 4, 8, 16, 32):
        s += ["%d,1024,512" % m]
    s += ["4096,4,448,1,0", "4096,4,448", "4,4096,448,0,1", "4096,16,512,1,0",
          "2048,64,256,1,0", "1024,256,128,1,0", "48,1024,64,1,0",
          "1,8192,100", "1024,56,25", "12,1024,56", "1024,36,36,1,1",
          "81,1024,56,1,0", "49,4608,512", "4608,49,512", "196,2304,256",
          "784,1152,128", "3136,64,576", "64,3136,576"]
    if quick:
        s = s[::3]
    return s


GEMM_NAMES = ["peak", "m0", "k0", "pack_a", "ta", "pack_b", "store_c",
              "launch", "s0"]
SMALL_MNK = 1e6     # OpenBLAS 0.3.21 on AVX-512: sgemm_small_kernel_permit


def gemm_model(p, m, n, k, ta, tb):
    """Microseconds; p: peak GFLOP/s, m0, k0, pack_a GB/s, ta factor, pack_b
    GB/s (B bigger than L2), store_c GB/s, launch us, s0."""
    peak, m0, k0, pa, fa, pb, sc, launch, s0 = p
    c = 4.0 * m * n / (sc * 1e3)
    if m * n * k <= SMALL_MNK:
        s = min(m, n)
        return launch + 2.0 * m * n * k / (peak * 1e3 * s / (s + s0)) + c
    t = 2.0 * m * n * k / (peak * 1e3 * m / (m + m0) * k / (k + k0))
    t += 4.0 * m * k / (pa * 1e3) * (fa if ta else 1.0)
    if 4.0 * k * n > L2_BYTES:
        t += 4.0 * k * n / (pb * 1e3)
    return launch + t + c


def nelder_mead(f, x0, iters=3000, step=0.5):
    n = len(x0)
    pts = [list(x0)] + [[x0[j] + (step if i == j else 0) for j in range(n)]
                        for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        c = [sum(p[j] for p in pts[:-1]) / n for j in range(n)]
        xr = [c[j] + (c[j] - pts[-1][j]) for j in range(n)]
        fr = f(xr)
        if fr < vals[0]:
            xe = [c[j] + 2 * (c[j] - pts[-1][j]) for j in range(n)]
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = [c[j] + 0.5 * (pts[-1][j] - c[j]) for j in range(n)]
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [[pts[0][j] + 0.5 * (p[j] - pts[0][j]) for j in range(n)]
                       for p in pts]
                vals = [f(p) for p in pts]
    i = min(range(n + 1), key=lambda i: vals[i])
    return pts[i], vals[i]


def fit_gemm(rows):
    def err(lp):
        p = [math.exp(max(-9, min(9, x))) for x in lp]
        e = 0.0
        for m, n, k, ta, tb, us in rows:
            r = math.log(gemm_model(p, m, n, k, ta, tb) / us)
            e += r * r
        return e
    lp = [math.log(x) for x in (100, 8, 3, 25, 2, 25, 80, 0.05, 2)]
    best = None
    for _ in range(6):
        lp, e = nelder_mead(err, lp)
        if best is not None and e > best - 1e-9:
            break
        best = e
    p = [math.exp(max(-9, min(9, x))) for x in lp]
    return p, math.sqrt(best / len(rows))


# ---- 2. and 3. einc programs -------------------------------------------------

# name: (.ein text, what it measures, output points, terms); one statement
# each, reading inputs only
PROGRAMS = {
    "red": ("""const M = 128, N = 128, K = 512
input a : f32[M, K]
input b : f32[N, K]
c[i, j] += a[i, k] + b[j, k]
output c
""", "reduction, both reads contiguous in k", 128 * 128, 128 * 128 * 512),
    "red3": ("""const C = 64, H = 56
input x : f32[C, H, H]
y[c, h, w] : [C, H, H] += x[c, h, w + s - 1]  where s < 3
output y
""", "reduction of 3 terms, bounds checks", 64 * 56 * 56, 64 * 56 * 56 * 3),
    "red_hit": ("""const M = 128, N = 120, K = 512
input a : f32[M, K]
input bt : f32[K, N]
d[i, j] += a[i, k] + bt[k, j]
output d
""", "reduction, a strided read that stays in L2", 128 * 120, 128 * 120 * 512),
    "red_miss": ("""const C = 448, F = 4096
input x : f32[C, F]
input v : f32[C]
y[f] += x[c, f] + v[c]
output y
""", "reduction, a 16 KiB stride over 7 MiB", 4096, 4096 * 448),
    "maxpool": ("""const C = 64, H = 56
input x : f32[C, 2*H, 2*H]
y[c, h, w] : [C, H, H] max= x[c, 2*h + i - 1, 2*w + j - 1]  where i < 3, j < 3
output y
""", "max= over 3x3 windows (unpredictable updates)", 64 * 56 * 56,
        64 * 56 * 56 * 9),
    "rowmax": ("""const R = 64, N = 1000
input x : f32[R, N]
m[i] max= x[i, j]
output m
""", "max= over rows of 1000", 64, 64000),
    "ew": ("""const M = 256, N = 256
input x : f32[M, N]
y[i, j] = relu(x[i, j])
output y
""", "elementwise in L2", 65536, 65536),
    "ew_big": ("""const M = 2048, N = 1024
input x : f32[M, N]
y[i, j] = relu(x[i, j])
output y
""", "elementwise, 16 MiB through the caches", 2048 * 1024, 2048 * 1024),
    "ew_pad": ("""const C = 64, H = 56
input x : f32[C, H, H]
z[c, s, h, w] : [C, 3, H, H] = x[c, h, w + s - 1]
output z
""", "elementwise, a read with bounds checks (not vectorized)",
        64 * 3 * 56 * 56, 64 * 3 * 56 * 56),
    "ew_pad_relu": ("""const C = 64, H = 56
input x : f32[C, H, H]
input sc : f32[C]
input sh : f32[C]
y[c, s, h, w] : [C, 3, H, H] = relu(sh[c] + x[c, h, w + s - 1] * sc[c])
output y
""", "the same with a scale, shift and relu", 64 * 3 * 56 * 56,
        64 * 3 * 56 * 56),
    "ew_pad14": ("""const C = 512, H = 14
input x : f32[C, H, H]
z[c, s, h, w] : [C, 3, H, H] = x[c, h, w + 2*s - 2]
output z
""", "elementwise, bounds checks, rows of 14", 512 * 3 * 14 * 14,
        512 * 3 * 14 * 14),
    "ew_pad_relu14": ("""const C = 512, H = 14
input x : f32[C, H, H]
y[c, s, h, w] : [C, 3, H, H] = relu(x[c, h, w + 2*s - 2])
output y
""", "the same with a relu", 512 * 3 * 14 * 14, 512 * 3 * 14 * 14),
    "ew_divmod": ("""const C = 512, H = 14
input x : f32[C, H, H]
y[h, w, c, rs] : [H, H, C, 9] = x[c, h + 2*(rs / 3) - 2, w + 2*(rs % 3) - 2]
output y
""", "an im2col as a loop nest: a floor division and a modulo",
        14 * 14 * 512 * 9, 14 * 14 * 512 * 9),
    "tiny": ("""const N = 16
input x : f32[N]
y[i] = relu(x[i])
output y
""", "16 elements: the call", 16, 16),
    "tr_hit": ("""const N = 1000
input z : f32[N, N]
t[i, j] = z[j, i]
output t
""", "transpose 1000^2 (stride 4000 B)", 10 ** 6, 10 ** 6),
    "tr_miss": ("""const N = 1024
input z : f32[N, N]
t[i, j] = z[j, i]
output t
""", "transpose 1024^2 (stride 4 KiB: set conflicts)", 1 << 20, 1 << 20),
    "tanh": ("""const M = 256, N = 256
input x : f32[M, N]
y[i, j] = tanh(x[i, j])
output y
""", "tanh elementwise", 65536, 65536),
    "exp": ("""const M = 256, N = 256
input x : f32[M, N]
y[i, j] = exp(x[i, j])
output y
""", "exp elementwise", 65536, 65536),
    "col2im": ("""const C = 64, H = 16
input x : f32[C, H, H, 4, 4]
y[c, h, w] : [C, 2*H, 2*H] += x[c, (h + 1 - r) / 2, (w + 1 - s) / 2, r, s] where (h + 1 - r) % 2 == 0, (w + 1 - s) % 2 == 0
output y
""", "reduction with guards and floor divisions (check only)", 64 * 32 * 32,
        64 * 32 * 32 * 16),
}

CONVS = {
    "conv_64x56": "1,64,56,56,64,3,1,1",
    "conv_12x32": "1,12,32,32,12,3,1,1",
    "conv_1x32_5": "1,1,32,32,56,5,1,2",
    "conv_256x14": "1,256,14,14,256,3,1,1",
    "conv_3x224_7s2": "1,3,224,224,64,7,2,3",
    "conv_128x28_s2": "1,128,28,28,256,3,2,1",
}


def conv_program(spec):
    n, c, h, w, f, r, st, pad = map(int, spec.split(","))
    ho = (h + 2 * pad - r) // st + 1
    wo = (w + 2 * pad - r) // st + 1
    txt = ("const N = %d, C = %d, H = %d, W = %d, F = %d, R = %d\n"
           "input x : f32[N, C, H, W]\n"
           "weight k : f32[F, C, R, R]\n"
           "y[n, f, h, w] : [N, F, %d, %d] += x[n, c, %d*h + r - %d, "
           "%d*w + s - %d] * k[f, c, r, s]\n"
           "output y\n" % (n, c, h, w, f, r, ho, wo, st, pad, st, pad))
    col = c * r * r * ho * wo
    return txt, (f, ho * wo, c * r * r), col


def stage_time(einc, wd, name, text, opts, iters):
    path = os.path.join(wd, name + ".ein")
    with open(path, "w") as fh:
        fh.write(text)
    plan, meas, _ = cpuprof.profile(einc, path, opts, iters)
    ops = [o for o in cpuprof.plan_ops(plan) if not o[3]]
    return ops, meas


def l2_bytes():
    try:
        for idx in range(8):
            base = "/sys/devices/system/cpu/cpu0/cache/index%d/" % idx
            if open(base + "level").read().strip() == "2":
                v = open(base + "size").read().strip()
                mult = {"K": 1 << 10, "M": 1 << 20}.get(v[-1], 1)
                return int(v.rstrip("KM")) * mult
    except OSError:
        pass
    return 1 << 20


def main():
    global L2_BYTES
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--einc", default=os.environ.get("EINC", "./einc"))
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--keep")
    ap.add_argument("--quick", action="store_true",
                    help="a third of the GEMM shapes, fewer runs")
    a = ap.parse_args()
    einc = os.path.abspath(a.einc)
    L2_BYTES = l2_bytes()
    wd = os.path.abspath(a.keep or tempfile.mkdtemp(prefix="einc-cpucal."))
    os.makedirs(wd, exist_ok=True)
    iters = 10 if a.quick else 30
    try:
        load0 = open("/proc/loadavg").read().split()[:3]
        cpu = "?"
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        print("# einc CPU calibration, one thread (OMP_NUM_THREADS=1 "
              "OPENBLAS_NUM_THREADS=1)")
        print("- machine: %s, %d cores, L2 %d KiB per core; load average %s"
              % (cpu, os.cpu_count(), L2_BYTES >> 10, " ".join(load0)))

        # 1. GEMMs
        exe = os.path.join(wd, "cpucal_gemm")
        subprocess.run([a.cc, "-O2", os.path.join(HERE, "cpucal_gemm.c"),
                        "-o", exe, "-lopenblas"], check=True)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        out = subprocess.run([exe] + gemm_shapes(a.quick), env=env,
                             stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
        rows = [tuple(float(x) for x in l.split()[:6])
                for l in out.split("\n") if l.strip()]
        p, rms = fit_gemm(rows)
        print("\n## cblas_sgemm: %d shapes, fit rms log error %.3f" %
              (len(rows), rms))
        print()
        print("| M | N | K | ta | tb | measured us | GFLOP/s | model us | model/meas |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for m, n, k, ta, tb, us in rows:
            est = gemm_model(p, m, n, k, ta, tb)
            print("| %d | %d | %d | %d | %d | %.2f | %.1f | %.2f | %.2f |" % (
                m, n, k, ta, tb, us, 2 * m * n * k / us * 1e-3, est, est / us))
        print()
        print("fitted: " + ", ".join("%s %.4g" % kv for kv in
                                     zip(GEMM_NAMES, p)))

        # the same operands coming from memory (informational: the model
        # prices operands as warm, since whether a model's weights stay in
        # the L3 between runs depends on the whole model)
        cold = ["1,8192,100", "1,1792,228", "16,4096,512,1,1",
                "4096,16,512,1,0", "49,4608,512", "1024,1,512"]
        warm = subprocess.run([exe] + cold, env=env, stdout=subprocess.PIPE,
                              universal_newlines=True, check=True).stdout
        cold_out = subprocess.run([exe, "-c"] + cold, env=env,
                                  stdout=subprocess.PIPE,
                                  universal_newlines=True, check=True).stdout
        extra = nbytes = 0.0
        for w, c in zip(warm.split("\n"), cold_out.split("\n")):
            if not w.strip():
                continue
            m, n, k = (float(x) for x in w.split()[:3])
            extra += float(c.split()[5]) - float(w.split()[5])
            nbytes += 4 * (m * k + k * n)
        print("\ncold operands (64 MiB written between calls): %.1f GB/s of "
              "A and B on top of the warm time (not in the model)"
              % (nbytes / extra * 1e-3 if extra > 0 else 0))

        # 2. generated kernels
        print("\n## generated loop nests (einc -O0 --device=cpu --main)\n")
        print("| program | what | points | terms | measured us | ns per term |")
        print("|---|---|---:|---:|---:|---:|")
        ns = {}
        for name, (text, what, pts, terms) in PROGRAMS.items():
            # --no-dnnl: im2col and cblas_sgemm (with oneDNN, the default
            # where configure found it, the convolution is oneDNN's)
            ops, meas = stage_time(einc, wd, name, text, ["-O0", "--no-dnnl"], iters)
            total = sum(meas.values())
            ns[name] = total * 1e3 / terms
            print("| %s | %s | %d | %d | %.2f | %.3f |" % (
                name, what, pts, terms, total, ns[name]))
        ew = ns["ew"]
        red = ns["red"]
        h9 = sum(1.0 / i for i in range(1, 10))
        fig = {
            "red_term_ns": red,
            # red3 = points x (point_ns + 3 red_term)
            "red_point_ns": max(0.0, ns["red3"] * 3 - 3 * red),
            # a max= term: red_term + update_ns x (updates / terms), the
            # updates of a window of n random values H(n) = 1 + 1/2 + ..
            "max_update_ns": max(0.0, (ns["maxpool"] - red) * 9 / h9),
            "ew_elem_ns": ew,
            "ew_scalar_ns": math.sqrt(ns["ew_pad"] * ns["ew_pad14"]),
            # a relu (max, min) in a loop gcc does not vectorize: a branch
            # on the data's sign
            "relu_branch_ns": math.sqrt(
                max(0.01, ns["ew_pad_relu"] - ns["ew_pad"]) *
                max(0.01, ns["ew_pad_relu14"] - ns["ew_pad14"])),
            # per floor division or modulo in a read's subscripts
            "divmod_ns": max(0.0, (ns["ew_divmod"] - ns["ew_pad14"]) / 2),
            "stream_gbs": 2 * 4 / ns["ew_big"],
            "kernel_launch_us": max(0.0, (ns["tiny"] - ew) * 16 * 1e-3),
            "stride_hit_ns": ns["tr_hit"],
            "stride_miss_ns": ns["tr_miss"],
            "tanh_ns": max(0.0, ns["tanh"] - ew),
            "exp_ns": max(0.0, ns["exp"] - ew),
        }
        print()
        print("fitted: " + ", ".join("%s %.3f" % kv for kv in fig.items()))
        print("(ew_scalar_ns: the geometric mean of ew_pad and ew_pad14; "
              "stride_*_ns: a transposed read's whole time per element, "
              "which the model takes instead of the arithmetic where it is "
              "more)")

        # 3. convolutions
        print("\n## convolutions: im2col + cblas_sgemm (einc -O0 --main)\n")
        print("| conv N,C,H,W,F,R,stride,pad | GEMM M,N,K | col elems | "
              "measured us | GEMM model us | ns per col elem |")
        print("|---|---|---:|---:|---:|---:|")
        per = []
        for name, spec in CONVS.items():
            text, (m, n, k), col = conv_program(spec)
            # --no-dnnl: im2col and cblas_sgemm (with oneDNN, the default
            # where configure found it, the convolution is oneDNN's)
            ops, meas = stage_time(einc, wd, name, text, ["-O0", "--no-dnnl"], iters)
            total = sum(meas.values())
            g = gemm_model(p, m, n, k, 0, 0)
            direct = False
            nsc = max(0.0, (total - g) * 1e3 / col) if not direct else 0
            per.append(nsc)
            print("| %s | %d,%d,%d | %d | %.2f | %.2f | %.3f |" % (
                spec, m, n, k, col, total, g, nsc))
        per.sort()
        im2col = per[len(per) // 2]
        print()
        print("fitted: im2col_ns %.3f (the median)" % im2col)

        # the model against the measurements
        print("\n## einc --device=cpu estimates against the measured times\n")
        print("| program | operator | estimated us | measured us | est/meas |")
        print("|---|---|---:|---:|---:|")
        progs = dict((n, v[0]) for n, v in PROGRAMS.items())
        progs.update((n, conv_program(s)[0]) for n, s in CONVS.items())
        for name, text in progs.items():
            ops, meas = stage_time(einc, wd, name, text,
                                   ["-O0", "--device=cpu", "--no-dnnl"], iters)
            for kind, t, est, _, _ in ops:
                if t in meas:
                    print("| %s | %s %s | %.2f | %.2f | %.2f |" % (
                        name, kind, t, est, meas[t], est / meas[t]))
        print()
        print("- load average at the end: %s" %
              " ".join(open("/proc/loadavg").read().split()[:3]))
    finally:
        if not a.keep:
            shutil.rmtree(wd, ignore_errors=True)
    return 0



if __name__ == "__main__":
    sys.exit(main())
