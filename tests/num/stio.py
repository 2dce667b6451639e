"""stio.py - a small safetensors reader and writer for the numerical tests.

Debian's python3-torch (1.13) has no safetensors module, so this writes and
reads the format directly: an 8-byte little-endian header length, a JSON
header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
{...}}, then the raw little-endian data.  Tensors are written in name order,
header padded with spaces to a multiple of 8 bytes, as the reference
implementation does.  The reader checks what a broken file could get wrong
(offsets in range, sizes matching shapes) and raises ValueError.
"""

import json
import struct

import numpy as np

try:
    import torch
except ImportError:             # prepare.sh may run without torch
    torch = None

# safetensors dtype name -> numpy dtype (BF16 has no numpy type: see below)
_NP = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_SIZE = {k: v.itemsize for k, v in _NP.items()}
_SIZE["BF16"] = 2


def _to_numpy(t):
    """Return (dtype name, contiguous little-endian bytes, shape)."""
    if torch is not None and isinstance(t, torch.Tensor):
        t = t.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            return "BF16", t.view(torch.int16).numpy().astype("<i2").tobytes(), list(t.shape)
        t = t.numpy()
    a = np.array(t, copy=False, order="C")   # (ascontiguousarray makes rank 0 rank 1)
    for name, dt in _NP.items():
        if a.dtype == dt or a.dtype == dt.newbyteorder("="):
            return name, a.astype(dt).tobytes(), list(a.shape)
    raise ValueError("unsupported dtype %s" % a.dtype)


def save(tensors, path, metadata=None):
    """Write a dict name -> tensor (torch or numpy) to PATH."""
    header = {}
    blobs = []
    off = 0
    for name in sorted(tensors):
        dtype, data, shape = _to_numpy(tensors[name])
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_numpy(path, dtypes=None):
    """Read PATH into a dict name -> numpy array (BF16 widened to f32);
    with a dict DTYPES, also fill it with name -> safetensors dtype."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError("%s: header length %d past end of file" % (path, n))
    header = json.loads(raw[8:8 + n].decode())
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = info["dtype"], [int(d) for d in info["shape"]]
        b, e = info["data_offsets"]
        count = 1
        for d in shape:
            count *= d
        if dtype not in _SIZE:
            raise ValueError("%s: tensor %s: unsupported dtype %s" % (path, name, dtype))
        if not (0 <= b <= e <= len(data)) or e - b != count * _SIZE[dtype]:
            raise ValueError("%s: tensor %s: bad data_offsets %r for %s%r"
                             % (path, name, [b, e], dtype, shape))
        if dtype == "BF16":
            bits = np.frombuffer(data[b:e], dtype="<u2").astype(np.uint32) << 16
            a = bits.view(np.float32)
        else:
            a = np.frombuffer(data[b:e], dtype=_NP[dtype])
        out[name] = a.reshape(shape).copy()
        if dtypes is not None:
            dtypes[name] = dtype
    return out


def load(path):
    """Read PATH into a dict name -> torch tensor (BF16 as torch.bfloat16:
    widened to f32 and back, which is exact)."""
    dtypes = {}
    out = {k: torch.from_numpy(v) for k, v in load_numpy(path, dtypes).items()}
    for k, d in dtypes.items():
        if d == "BF16":
            out[k] = out[k].to(torch.bfloat16)
    return out
