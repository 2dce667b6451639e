"""Read and write safetensors files with numpy alone.

A safetensors file is an 8-byte little-endian header length N, N bytes of
JSON ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
..., "__metadata__": {"key": "value"}}) and the data, each tensor
row-major and little-endian.

    from einc import safetensors
    safetensors.save({"w": np.ones((2, 3), np.float32)}, "w.safetensors")
    tensors = safetensors.load("w.safetensors")        # {"w": array}

numpy has no bfloat16: a BF16 tensor loads as float32 (exactly), or as its
uint16 bit patterns with ``bf16="bits"``; to save one, pass
``bf16(array)``, which rounds float32 values to nearest even.  Torch
tensors may be saved directly (they are converted to numpy on the CPU).
"""

import json
import struct

import numpy as np

__all__ = ["SafetensorsError", "load", "loads", "save", "dumps", "bf16", "read_metadata"]

_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"), "U64": np.dtype("<u8"), "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
    "BF16": np.dtype("<u2"),
}
_NAMES = {np.dtype(v).newbyteorder("="): k for k, v in _DTYPES.items() if k != "BF16"}


class SafetensorsError(ValueError):
    """A file that is not a well-formed safetensors file, or a tensor that
    cannot be written."""


class bf16:
    """A float array to be saved as BF16 (rounded to nearest even)."""

    def __init__(self, array):
        self.array = np.asarray(array, dtype=np.float32)


def _to_bf16_bits(a):
    f = np.asarray(a, dtype=np.float32, order="C")
    u = f.reshape(-1).view(np.uint32).astype(np.uint64)     # 1-d: numpy's array rules
    nan = np.isnan(f.reshape(-1))
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r.reshape(f.shape)


def _from_bf16_bits(b):
    return (b.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(b.shape)


def loads(data, bf16="float32"):
    """The tensors of a safetensors image (bytes) as a dict of arrays."""
    data = memoryview(data).cast("B")
    if len(data) < 8:
        raise SafetensorsError("not a safetensors file: shorter than its 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise SafetensorsError(f"the header length {n} exceeds the file ({len(data)} bytes)")
    try:
        header = json.loads(bytes(data[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError(f"the header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("the header is not a JSON object")
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _DTYPES[info["dtype"]]
            shape, offs = list(info["shape"]), list(info["data_offsets"])
            if not all(type(x) is int for x in shape + offs) or len(offs) != 2:
                raise TypeError
            begin, end = offs
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(f"tensor '{name}': bad dtype, shape or data_offsets") from None
        count = 1
        for d in shape:
            if d < 0:
                raise SafetensorsError(f"tensor '{name}': a negative dimension")
            count *= d
        if not (0 <= begin <= end <= len(body)) or end - begin != count * dtype.itemsize:
            raise SafetensorsError(f"tensor '{name}': data_offsets [{begin}, {end}] do not "
                                   f"fit its shape {shape} and the file")
        try:
            a = np.frombuffer(body[begin:end], dtype=dtype).reshape(shape)
        except ValueError as e:
            raise SafetensorsError(f"tensor '{name}': shape {shape}: {e}") from None
        if info["dtype"] == "BF16" and bf16 != "bits":
            a = _from_bf16_bits(a)
        else:
            a = a.astype(dtype.newbyteorder("="), copy=True)
        out[name] = a
    return out


def load(path, bf16="float32"):
    """The tensors of a safetensors file as a dict of numpy arrays."""
    with open(path, "rb") as f:
        return loads(f.read(), bf16=bf16)


def read_metadata(path):
    """The __metadata__ of a safetensors file (a dict of strings)."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise SafetensorsError("not a safetensors file: shorter than its 8-byte header "
                                   "length")
        (n,) = struct.unpack("<Q", head)
        text = f.read(min(n, 1 << 30))
    if len(text) != n:
        raise SafetensorsError(f"the header length {n} exceeds the file")
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError(f"the header is not valid JSON: {e}") from None
    if not isinstance(header, dict) or not isinstance(header.get("__metadata__", {}), dict):
        raise SafetensorsError("the header is not a JSON object with an object __metadata__")
    return header.get("__metadata__", {})


def _as_array(name, v):
    if isinstance(v, bf16):
        return "BF16", _to_bf16_bits(v.array)
    if hasattr(v, "detach") and hasattr(v, "cpu"):    # a torch tensor
        import torch
        if v.dtype == torch.bfloat16:
            return "BF16", v.detach().cpu().contiguous().view(torch.int16).numpy().view(np.uint16)
        v = v.detach().cpu().numpy()
    a = np.asarray(v)
    key = _NAMES.get(a.dtype.newbyteorder("="))
    if key is None:
        raise SafetensorsError(f"tensor '{name}': numpy dtype {a.dtype} has no safetensors type")
    return key, a


def dumps(tensors, metadata=None):
    """A safetensors image (bytes) of a dict of arrays (numpy, torch or bf16())."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    off = 0
    for name in sorted(tensors):
        if name == "__metadata__":
            raise SafetensorsError("a tensor may not be named __metadata__ (the header's "
                                   "metadata)")
        key, a = _as_array(name, tensors[name])
        raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": key, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def save(tensors, path, metadata=None):
    """Write a dict of arrays (numpy, torch or bf16()) as a safetensors file."""
    data = dumps(tensors, metadata)
    with open(path, "wb") as f:
        f.write(data)
