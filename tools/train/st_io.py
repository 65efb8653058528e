"""Minimal safetensors reader/writer (the format is a JSON header + raw little-endian data).

Used instead of the `safetensors` package, which the CPU machine does not have."""
import json
import struct

import numpy as np
import torch

_DT = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}
_NAME = {np.dtype(v): k for k, v in _DT.items()}


def load(path):
    with open(path, "rb") as f:
        buf = f.read()
    n = struct.unpack("<Q", buf[:8])[0]
    header = json.loads(buf[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        s, t = e["data_offsets"]
        if e["dtype"] == "BF16":  # numpy has no bfloat16: widen the upper 16 bits of a float32
            u = np.frombuffer(buf[base + s:base + t], dtype=np.uint16).astype(np.uint32) << 16
            out[name] = torch.from_numpy(u.view(np.float32).reshape(e["shape"]).copy())
            continue
        arr = np.frombuffer(buf[base + s:base + t], dtype=_DT[e["dtype"]]).reshape(e["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def save(tensors, path, metadata=None):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = tensors[name].detach().cpu().contiguous().numpy()
        b = a.tobytes()
        header[name] = {"dtype": _NAME[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
