"""onnxw.py - write small ONNX models without the onnx package (Debian has
none for Python): the protobuf wire format of the few fields of onnx.proto
a one-node test model needs.

    m = model([node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
              inputs=[("x", FLOAT, ["N", 4]), ("i", INT64, ["N", 2, 1])],
              outputs=[("y", FLOAT, ["N", 2])],
              initializers=[("w", np.array(...))], opset=13)
    open("m.onnx", "wb").write(m)

A dimension is a number or a name (a dim_param).
"""

import numpy as np

FLOAT, INT32, INT64, BOOL = 1, 6, 7, 9   # TensorProto.DataType
_NP_TYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.int32): INT32,
             np.dtype(np.int64): INT64, np.dtype(np.bool_): BOOL}


def _varint(v):
    v &= (1 << 64) - 1                  # negative int64s as ten bytes
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(field, v):
    return _varint(field << 3) + _varint(v)


def _bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return _varint(field << 3 | 2) + _varint(len(b)) + b


def node(op, inputs, outputs, name="", **attrs):
    """A NodeProto; attributes are ints, lists of ints or strings."""
    b = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    b += _bytes(3, name) + _bytes(4, op)
    for k, v in attrs.items():
        if isinstance(v, str):
            a = _bytes(1, k) + _bytes(4, v) + _int(20, 3)                      # STRING
        elif isinstance(v, (list, tuple)):
            a = _bytes(1, k) + b"".join(_int(8, x) for x in v) + _int(20, 7)   # INTS
        else:
            a = _bytes(1, k) + _int(3, v) + _int(20, 2)                        # INT
        b += _bytes(5, a)
    return b


def _value_info(name, elem, dims):
    shape = b""
    for d in dims:
        shape += _bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d))
    tensor = _int(1, elem) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor))


def _tensor(name, a):
    a = np.ascontiguousarray(a)
    b = b"".join(_int(1, d) for d in a.shape) + _int(2, _NP_TYPES[a.dtype])
    return b + _bytes(8, name) + _bytes(9, a.astype(a.dtype.newbyteorder("<")).tobytes())


def model(nodes, inputs, outputs, initializers=(), opset=13):
    """A serialized ModelProto of one graph."""
    g = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, "g")
    g += b"".join(_bytes(5, _tensor(n, a)) for n, a in initializers)
    g += b"".join(_bytes(11, _value_info(*v)) for v in inputs)
    g += b"".join(_bytes(12, _value_info(*v)) for v in outputs)
    return _int(1, 8) + _bytes(8, _int(2, opset)) + _bytes(7, g)

