# spec.awk - the stgen spec (tests/gpu/stgen.c) of the inputs and weights
# of a C file einc wrote, read from its tensor table: inputs uniform(-1, 1),
# weights of rank >= 2 uniform(-a, a) with a = sqrt(3 / fan-in), fan-in the
# product of the dims after the first, as tests/gpu/bundle.py does without
# a PyTorch model (deep networks stay finite); other weights (-1, 1);
# integer tensors 0 .. 7, bool tensors half true.
# -v ranges='NAME=LO:HI ...' gives those tensors their own range (the
# positive inputs of log, sqrt, pow, division in tests/num).
BEGIN {
    nr = split(ranges, r, " ")
    for (i = 1; i <= nr; i++) {
        eq = index(r[i], "=")
        colon = index(r[i], ":")
        want_lo[substr(r[i], 1, eq - 1)] = substr(r[i], eq + 1, colon - eq - 1)
        want_hi[substr(r[i], 1, eq - 1)] = substr(r[i], colon + 1)
    }
}
/^static const int64_t ein_shape_[0-9]+\[/ {
    name = $4
    sub(/\[.*/, "", name)
    s = $0
    sub(/.*= *\{/, "", s)
    sub(/\}.*/, "", s)
    gsub(/,/, " ", s)
    shape[name] = s
}
/^    \{"/ && /_INPUT, |_WEIGHT, / {
    n = $0
    sub(/^    \{"/, "", n)
    sub(/".*/, "", n)
    kind = $0 ~ /_INPUT, / ? "input" : "weight"
    dt = $0
    sub(/.*_/, "", dt)              # "F32, 802816},"
    sub(/,.*/, "", dt)
    sh = $0
    dims = ""
    if (sh ~ /ein_shape_/) {
        sub(/.*ein_shape_/, "ein_shape_", sh)
        sub(/,.*/, "", sh)
        dims = shape[sh]
    }
    nd = split(dims, d, " ")
    lo = -1
    hi = 1
    if (dt != "F32" && dt != "F16" && dt != "BF16") {
        lo = 0                      # integers 0 .. 7, bools half true
        hi = dt == "BOOL" ? 1 : 8
    } else if (kind == "weight" && nd >= 2) {
        fan = 1
        for (i = 2; i <= nd; i++)
            fan *= d[i]
        hi = sqrt(3 / fan)
        lo = -hi
    }
    if (n in want_lo) {
        lo = want_lo[n]
        hi = want_hi[n]
    }
    printf "%s %s %s %.9g %.9g %s\n", kind, n, dt, lo, hi, dims
}
