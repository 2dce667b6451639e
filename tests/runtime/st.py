"""st.py - the Python side of the runtime tests: a small safetensors writer
and reader (struct and json only; Debian's python3-torch 1.13 has no
safetensors module), a second implementation of the harness's seeded
values, and the checks python.test runs against the C runtime.

    st.py write-sample FILE     tensors made by PyTorch, saved here
    st.py write-edges FILE      F32 values where rounding to F16/BF16 is hard
    st.py dump FILE             as `st_tool dump` prints it
    st.py fill SEED NAME N      as `st_tool fill` prints it
    st.py check-narrow IN OUT   OUT's t.f16 / t.bf16 against PyTorch's
                                conversions of IN's F32 tensor t

The writer follows the reference implementation: keys sorted, data in key
order, header padded with spaces to a multiple of 8 bytes.
"""

import json
import random
import struct
import sys

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4,
         "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}

# ---- writing and reading ---------------------------------------------------


def torch_bytes(t):
    """(dtype name, shape, little-endian bytes) of a torch tensor, without
    numpy."""
    import torch
    t = t.detach().contiguous()
    shape = list(t.shape)
    flat = t.reshape(-1)
    n = flat.numel()
    if t.dtype == torch.float32:
        return "F32", shape, struct.pack("<%df" % n, *flat.tolist())
    if t.dtype == torch.float16:
        return "F16", shape, struct.pack("<%dh" % n,
                                         *flat.view(torch.int16).tolist())
    if t.dtype == torch.bfloat16:
        return "BF16", shape, struct.pack("<%dh" % n,
                                          *flat.view(torch.int16).tolist())
    if t.dtype == torch.int64:
        return "I64", shape, struct.pack("<%dq" % n, *flat.tolist())
    raise ValueError("unsupported dtype %s" % t.dtype)


def write(path, tensors, metadata=None):
    """tensors: dict name -> (dtype, shape, bytes) or torch tensor."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        t = tensors[name]
        dtype, shape, data = t if isinstance(t, tuple) else torch_bytes(t)
        count = 1
        for d in shape:
            count *= d
        assert len(data) == count * SIZES[dtype], name
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read(path):
    """(metadata dict, list of (name, dtype, shape, bytes)) in header
    order."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError("%s: header length %d past the end" % (path, n))
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    out = []
    for name, info in header.items():
        b, e = info["data_offsets"]
        count = 1
        for d in info["shape"]:
            count *= d
        if not 0 <= b <= e <= len(data) or \
                e - b != count * SIZES[info["dtype"]]:
            raise ValueError("%s: tensor %s: bad data_offsets" % (path, name))
        out.append((name, info["dtype"], info["shape"], data[b:e]))
    return meta, out


def values(dtype, data):
    """Python floats of F32, F16 or BF16 bytes (struct's 'e' is IEEE half,
    independent of the C code)."""
    if dtype == "F32":
        return list(struct.unpack("<%df" % (len(data) // 4), data))
    if dtype == "F16":
        return list(struct.unpack("<%de" % (len(data) // 2), data))
    if dtype == "BF16":
        bits = struct.unpack("<%dH" % (len(data) // 2), data)
        return [struct.unpack("<f", struct.pack("<I", b << 16))[0]
                for b in bits]
    return None

# ---- the harness's seeded values ------------------------------------------

M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def stream(seed, name):
    h = 0xCBF29CE484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & M64
    return mix64(seed ^ mix64(h))


def uniform(s, i):
    z = mix64((s + (i + 1) * 0x9E3779B97F4A7C15) & M64)
    return ((z >> 40) - (1 << 23)) / 8388608.0

# ---- commands ---------------------------------------------------------------


def cmd_write_sample(path):
    try:
        import torch
    except ImportError:
        sys.stderr.write("st.py: no torch in this python\n")
        sys.exit(77)            # python.test: skip
    g = torch.Generator().manual_seed(1234)
    a = torch.randn(3, 4, generator=g)
    write(path, {
        "a": a,
        "a.half": a.half(),
        "a.bf16": a.bfloat16(),
        "conv.w\u00e9ight": torch.randn(8, 3, 3, 3, generator=g) * 1e-3,
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "bn.num_batches_tracked": torch.tensor(7),
    }, {"format": "pt", "note": "\u00fcn\u00efcode \"q\"\n"})


def cmd_write_edges(path):
    rnd = random.Random(99)
    bits = [rnd.getrandbits(32) for _ in range(20000)]
    # near the F16 range, where subnormals and rounding ties live
    bits += [(rnd.getrandbits(32) & 0x8FFFFFFF) | 0x30000000
             for _ in range(20000)]
    # exact ties and their neighbours, for F16 and for BF16
    for e in range(100, 144):
        for m in (0x1000, 0x3000, 0x0FFF, 0x1001, 0x8000, 0x18000, 0x7FFF):
            bits.append((e << 23) | m)
    bits += [0x477FEFFF, 0x477FF000, 0x33000000, 0x33000001, 0x7F7FFFFF,
             0x7F800000, 0xFF800000, 0x80000000, 0, 1, 0x007FFFFF]
    data = b"".join(struct.pack("<I", b) for b in bits)
    write(path, {"edge": ("F32", [len(bits)], data)})


def fmt(v):
    return "%.9g" % v


def cmd_dump(path):
    meta, tensors = read(path)
    for k, v in meta.items():
        print("meta %s=%s" % (k, v))
    for name, dtype, shape, data in tensors:
        print("%s %s [%s]" % (name, dtype, ", ".join(str(d) for d in shape)))
        vals = values(dtype, data)
        for v in vals or []:
            print("  " + fmt(v))


def cmd_fill(seed, name, n):
    s = stream(int(seed), name)
    for i in range(int(n)):
        print(fmt(uniform(s, i)))


def cmd_check_narrow(inp, out):
    import torch
    _, tin = read(inp)
    _, tout = read(out)
    got = {name: data for name, _, _, data in tout}
    bad = 0
    for name, dtype, shape, data in tin:
        if dtype != "F32":
            continue
        n = len(data) // 4
        bits = struct.unpack("<%dI" % n, data)
        x = torch.tensor(values("F32", data), dtype=torch.float32)
        for suffix, tdt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
            want = x.to(tdt).view(torch.int16).tolist()
            have = struct.unpack("<%dh" % n, got[name + "." + suffix])
            for i in range(n):
                w, h = want[i] & 0xFFFF, have[i] & 0xFFFF
                if suffix == "f16":
                    nan_w = (w & 0x7C00) == 0x7C00 and (w & 0x3FF)
                    nan_h = (h & 0x7C00) == 0x7C00 and (h & 0x3FF)
                else:
                    nan_w = (w & 0x7F80) == 0x7F80 and (w & 0x7F)
                    nan_h = (h & 0x7F80) == 0x7F80 and (h & 0x7F)
                if (nan_w and nan_h) or w == h:
                    continue
                if bad < 10:
                    print("%s.%s[%d]: f32 0x%08x -> 0x%04x, torch 0x%04x"
                          % (name, suffix, i, bits[i], h, w))
                bad += 1
        print("%s: %d values narrowed to F16 and BF16" % (name, n))
    if bad:
        print("%d mismatches" % bad)
        sys.exit(1)


def main(argv):
    cmds = {"write-sample": (cmd_write_sample, 1),
            "write-edges": (cmd_write_edges, 1),
            "dump": (cmd_dump, 1), "fill": (cmd_fill, 3),
            "check-narrow": (cmd_check_narrow, 2)}
    if len(argv) < 2 or argv[1] not in cmds or \
            len(argv) - 2 != cmds[argv[1]][1]:
        sys.stderr.write(__doc__)
        return 2
    cmds[argv[1]][0](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
