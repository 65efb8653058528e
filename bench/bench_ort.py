#!/usr/bin/env python3
"""ONNX Runtime baselines of the encoder benchmark (bench/run_cpu_bench.sh): the PyTorch reference
(tools/torch_reference/rex_torch.py, encoder + link head) exported with torch.onnx.export, and its
INT8 version made with onnxruntime.quantization.quantize_dynamic, the recipe of the articles this
project starts from (default settings: int8 weights per tensor, uint8 activations quantized at run
time; also per output channel, which is one flag; and ORT's two remedies for CPUs without VNNI).

    PY bench/bench_ort.py prepare  WORK_DIR [THREADS]              # export, check, quantize (cached)
    PY bench/bench_ort.py time     WORK_DIR VARIANT THREADS [MIN_SECONDS]
    PY bench/bench_ort.py accuracy WORK_DIR [THREADS]

WORK_DIR holds model/ and cases.json (bench/bench_cases.py). `prepare` writes onnx/*.onnx once (again
when rex_torch.py, the weights, torch or onnxruntime change), then always checks the fp32 export
against PyTorch on every case (max |diff| of the link logits; exits 1 if off) and saves PyTorch's
logits of each case's first sequence as the fp32 reference (ref/CASE.npy, float32 [L, L]).
`time` prints one JSON line per case, as encoder_bench and bench_torch.py do. `accuracy` compares
each ONNX variant with that reference: max/mean |diff| and the share of link logits whose sign
(the decoder's link / no-link decision) flips; it prints a table and writes accuracy.json.
Needs torch (prepare only), onnx, onnxruntime, numpy: tools/requirements/onnx-baseline.txt.
"""
import hashlib
import inspect
import json
import os
import sys
import time
import warnings

import numpy as np
import onnxruntime as ort

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VARIANTS = {  # name -> (file, description, quantize_dynamic arguments besides weight_type=QInt8)
    "ort_fp32": ("rex_fp32.onnx", "ONNX Runtime fp32", None),
    "ort_int8": ("rex_int8.onnx", "ONNX Runtime INT8 (quantize_dynamic defaults)", {}),
    "ort_int8_pc": ("rex_int8_per_channel.onnx", "ONNX Runtime INT8 (per_channel=True)", {"per_channel": True}),
    # The two usual remedies for U8S8 saturation on CPUs without VNNI (AVX2 / AVX-512 vpmaddubsw
    # sums pairs of u8*s8 products in int16): 7-bit weights, or uint8 weights (U8U8 kernels).
    "ort_int8_rr": ("rex_int8_reduce_range.onnx", "ONNX Runtime INT8 (reduce_range=True)", {"reduce_range": True}),
    "ort_int8_u8": ("rex_int8_u8u8.onnx", "ONNX Runtime INT8 (weight_type=QUInt8)", {"weight_type": "QUInt8"}),
}
OPSET = 17
CHECK_TOL = 1e-4  # export check: max |diff| <= CHECK_TOL * max |Z| (measured: 2e-6)


def load_cases(work):
    with open(os.path.join(work, "cases.json")) as f:
        return json.load(f)


def arrays(case):
    """ids, position ids [B, L] int64 and mask [B, L, L] bool; a batch repeats one sequence."""
    B = case["batch"]
    ids = np.asarray(case["input_ids"], dtype=np.int64)
    pos = np.asarray(case["position_ids"], dtype=np.int64)
    mask = np.array([[ch == "1" for ch in r] for r in case["attention_mask"]], dtype=bool)
    return tuple(np.repeat(a[None], B, axis=0) for a in (ids, pos, mask))


def session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return lambda ids, pos, mask: s.run(None, {"input_ids": ids, "position_ids": pos, "attention_mask": mask})[0]


def onnx_path(work, variant):
    return os.path.join(work, "onnx", VARIANTS[variant][0])


def file_sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def stamp_ok(path, stamp):
    try:
        with open(path) as f:
            return json.load(f) == stamp
    except (OSError, ValueError):
        return False


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def export(work, model, torch):
    """torch.onnx.export of the encoder + link head (output: link logits), batch and sequence dynamic.
    Traced at L = 64, batch 2, so the check at the benchmark shapes also proves the dynamic axes."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from bench_cases import make_case

    class LinkLogits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids, pos, mask):
            return self.m(ids, pos, mask)[1]

    example = tuple(torch.from_numpy(a) for a in arrays(make_case("L64_b2")))
    kwargs = dict(input_names=["input_ids", "position_ids", "attention_mask"], output_names=["link_logits"],
                  dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "position_ids": {0: "batch", 1: "seq"},
                                "attention_mask": {0: "batch", 1: "seq", 2: "seq"},
                                "link_logits": {0: "batch", 1: "seq", 2: "seq"}},
                  opset_version=OPSET, do_constant_folding=True)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter: the one the articles used; no onnxscript needed
    out = onnx_path(work, "ort_fp32")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarning on the constant attention scale
        torch.onnx.export(LinkLogits(model), example, out + ".tmp", **kwargs)
    os.replace(out + ".tmp", out)


def quantize(work):
    import logging
    from onnxruntime.quantization import QuantType, quantize_dynamic
    # Its warnings: "consider pre-processing" (the articles' recipe does not) and the int64 position
    # Transpose it cannot quantize (left in fp32/int64, as it should be).
    logging.getLogger().setLevel(logging.ERROR)
    src = onnx_path(work, "ort_fp32")
    for variant, (_, _, args) in VARIANTS.items():
        if args is None:
            continue
        args = dict({"weight_type": "QInt8"}, **args)
        out = onnx_path(work, variant)
        print(f"quantize_dynamic({', '.join(f'{k}={v}' for k, v in args.items())}) -> {out}", file=sys.stderr)
        args["weight_type"] = getattr(QuantType, args["weight_type"])
        quantize_dynamic(src, out + ".tmp", **args)
        os.replace(out + ".tmp", out)


def prepare(work, threads):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tools", "torch_reference"))
    from rex_torch import RexTorch

    torch.set_num_threads(threads)
    os.makedirs(os.path.join(work, "onnx"), exist_ok=True)
    os.makedirs(os.path.join(work, "ref"), exist_ok=True)
    weights = os.path.join(work, "model", "model.safetensors")
    st = os.stat(weights)
    stamp = {"rex_torch.py": file_sha(os.path.join(ROOT, "tools/torch_reference/rex_torch.py")),
             "weights": [st.st_size, int(st.st_mtime)], "torch": torch.__version__, "opset": OPSET}
    model = RexTorch.from_pretrained(os.path.join(work, "model"))
    export_stamp = os.path.join(work, "onnx", "export.json")
    if not (os.path.isfile(onnx_path(work, "ort_fp32")) and stamp_ok(export_stamp, stamp)):
        t0 = time.perf_counter()
        print(f"exporting with torch {torch.__version__} (opset {OPSET}) ...", file=sys.stderr)
        export(work, model, torch)
        write_json(export_stamp, stamp)
        print(f"  exported in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    qstamp = dict(stamp, onnxruntime=ort.__version__, fp32_sha=file_sha(onnx_path(work, "ort_fp32")),
                  variants={v: a for v, (_, _, a) in VARIANTS.items()})
    quant_stamp = os.path.join(work, "onnx", "quantize.json")
    if not (all(os.path.isfile(onnx_path(work, v)) for v in VARIANTS) and stamp_ok(quant_stamp, qstamp)):
        quantize(work)
        write_json(quant_stamp, qstamp)
    for v in VARIANTS:
        print(f"{v}: {onnx_path(work, v)} ({os.path.getsize(onnx_path(work, v)) / 1e6:.0f} MB)")

    # The check: the fp32 export against PyTorch on every benchmark case, whole batch.
    run = session(onnx_path(work, "ort_fp32"), threads)
    bad = []
    with torch.inference_mode():
        for c in load_cases(work):
            ids, pos, mask = arrays(c)
            _, z = model(torch.from_numpy(ids), torch.from_numpy(pos), torch.from_numpy(mask))
            z = z.numpy()
            o = run(ids, pos, mask)
            d = float(np.abs(o - z).max()) if o.shape == z.shape else float("inf")
            scale = float(np.abs(z).max())
            ok = d <= CHECK_TOL * scale
            print(f"export check {c['name']}: ORT fp32 vs PyTorch fp32, link logits {list(z.shape)}: "
                  f"max |diff| {d:.3g} (max |Z| {scale:.4g}, rel {d / scale:.2g}) {'ok' if ok else 'FAILED'}")
            if not ok:
                bad.append(c["name"])
            np.save(os.path.join(work, "ref", c["name"] + ".npy"), z[0])
    if bad:
        print(f"bench_ort.py: the ONNX export does not match PyTorch on {', '.join(bad)} "
              f"(tolerance {CHECK_TOL} x max |Z|): not timing it", file=sys.stderr)
        sys.exit(1)


def time_variant(work, variant, threads, min_seconds):
    run = session(onnx_path(work, variant), threads)
    print(f"{variant}: onnxruntime {ort.__version__}, {threads} intra-op threads", file=sys.stderr)
    for c in load_cases(work):
        ids, pos, mask = arrays(c)
        z = run(ids, pos, mask)  # warm-up
        ms = []
        start = time.perf_counter()
        while len(ms) < 3 or time.perf_counter() - start < min_seconds:
            t0 = time.perf_counter()
            z = run(ids, pos, mask)
            ms.append((time.perf_counter() - t0) * 1e3)
            if len(ms) >= 200:
                break
        ms.sort()
        print(json.dumps({"engine": variant, "name": c["name"], "batch": c["batch"], "L": len(c["input_ids"]),
                          "ms_median": ms[len(ms) // 2], "ms_min": ms[0], "reps": len(ms),
                          "logits_abs_sum": float(np.abs(z[0]).sum(dtype=np.float64))}), flush=True)


def accuracy(work, threads):
    """Each variant against PyTorch fp32 on the first sequence of each distinct case input."""
    seen, rows = set(), []
    cases = [c for c in load_cases(work) if not (tuple(c["input_ids"]) in seen or seen.add(tuple(c["input_ids"])))]
    for variant in VARIANTS:
        run = session(onnx_path(work, variant), threads)
        for c in cases:
            ids, pos, mask = (a[:1] for a in arrays(c))
            ref = np.load(os.path.join(work, "ref", c["name"] + ".npy"))
            z = run(ids, pos, mask)[0]
            d = np.abs(z.astype(np.float64) - ref)
            flips = int(np.count_nonzero((z > 0) != (ref > 0)))
            rows.append({"variant": variant, "input": c["name"].split("_")[0], "L": ref.shape[0],
                         "max_abs_diff": float(d.max()), "mean_abs_diff": float(d.mean()),
                         "max_abs_ref": float(np.abs(ref).max()), "mean_abs_ref": float(np.abs(ref).mean()),
                         "sign_flips": flips, "entries": int(ref.size), "sign_flip_share": flips / ref.size})
    write_json(os.path.join(work, "accuracy.json"), rows)
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    vnni = [f for f in ("avx512_vnni", "avx_vnni", "amx_int8") if f in flags]
    print(f"\nAccuracy against PyTorch fp32 (same weights), link logits Z [L, L] of one prompt-shaped input "
          f"per length (bench_cases.py: make_inputs(L, 3 types x 4 tokens, seed 1000 + L)); "
          f"flips = entries whose sign (link / no link) differs. INT8 results depend on the CPU's kernels: "
          f"this one has {'VNNI (' + ' '.join(vnni) + ')' if vnni else 'no VNNI (U8S8 may saturate)'}.")
    print(f"{'engine':46} {'L':>4} | {'max|d|':>8} {'mean|d|':>8} | {'max|Z|':>7} {'mean|Z|':>7} | {'flips':>11} {'share':>7}")
    for r in rows:
        print(f"{VARIANTS[r['variant']][1]:46} {r['L']:4d} | {r['max_abs_diff']:8.3g} {r['mean_abs_diff']:8.3g} | "
              f"{r['max_abs_ref']:7.4g} {r['mean_abs_ref']:7.4g} | {r['sign_flips']:5d}/{r['entries']:<6d}"
              f"{100 * r['sign_flip_share']:6.2f}%")


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("prepare", "time", "accuracy"):
        raise SystemExit(__doc__)
    cmd, work = sys.argv[1], sys.argv[2]
    if cmd == "prepare":
        prepare(work, int(sys.argv[3]) if len(sys.argv) > 3 else 2)
    elif cmd == "time":
        if len(sys.argv) < 5 or sys.argv[3] not in VARIANTS:
            raise SystemExit(f"bench_ort.py time WORK_DIR VARIANT THREADS [MIN_SECONDS]; VARIANT one of {', '.join(VARIANTS)}")
        time_variant(work, sys.argv[3], int(sys.argv[4]), float(sys.argv[5]) if len(sys.argv) > 5 else 3.0)
    else:
        accuracy(work, int(sys.argv[3]) if len(sys.argv) > 3 else 2)


if __name__ == "__main__":
    main()
