#!/usr/bin/env python3
"""Which builds the baseline figures of bench/run_cpu_bench.sh come from: the CPU, PyTorch's version,
build configuration and the BLAS library it actually loaded (with OpenBLAS's core type, since
Debian's OpenBLAS falls back to SSE3 kernels on CPUs it does not know), and ONNX Runtime's.

    PY bench/engine_info.py [THREADS]
"""
import ctypes
import os
import platform
import sys


def cpu():
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    flags = set(info.get("flags", "").split())
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8",
                       "amx_bf16") if f in flags]
    return (f"{info.get('model name', platform.processor())} (family {info.get('cpu family')}, model "
            f"{info.get('model')}), {os.cpu_count()} logical CPUs; ISA: {' '.join(isa)}")


def loaded_blas():
    """Shared libraries of the BLAS kind mapped into this process."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            name = os.path.basename(path)
            if any(k in name for k in ("blas", "mkl_", "libmkl", "dnnl", "gomp", "iomp", "lapack")):
                libs.add(os.path.realpath(path))
    return sorted(libs)


def openblas_core(libs):
    for path in libs:
        if "openblas" in os.path.basename(path):
            try:
                lib = ctypes.CDLL(path)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                lib.openblas_get_config.restype = ctypes.c_char_p
                return f"{lib.openblas_get_corename().decode()} ({lib.openblas_get_config().decode()})"
            except (OSError, AttributeError):
                pass
    return None


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    print(f"CPU: {cpu()}")
    print(f"python {platform.python_version()} ({sys.executable})")
    try:
        import torch
        torch.set_num_threads(threads)
        a = torch.randn(256, 256)
        (a @ a).sum().item()  # loads the BLAS
        cfg = torch.__config__.show()
        keep = [l.strip(" -") for l in cfg.splitlines()
                if any(k in l for k in ("Math Kernel Library", "MKL-DNN", "oneDNN", "OpenMP", "CPU capability"))]
        settings = dict(kv.strip().split("=", 1) for l in cfg.splitlines() if "Build settings:" in l
                        for kv in l.split("Build settings:", 1)[1].split(",") if "=" in kv)
        keep += [f"{k}={settings[k]}" for k in ("BLAS_INFO", "USE_MKL", "USE_MKLDNN", "USE_OPENMP") if k in settings]
        print(f"PyTorch {torch.__version__} ({os.path.dirname(torch.__file__)}): {'; '.join(keep)}; "
              f"mkl available {torch.backends.mkl.is_available()}, mkldnn available "
              f"{torch.backends.mkldnn.is_available()}; {torch.get_num_threads()} threads")
        libs = loaded_blas()
        print(f"PyTorch loaded: {', '.join(libs) or 'no separate BLAS library (statically linked)'}")
        core = openblas_core(libs)
        if core:
            env = os.environ.get("OPENBLAS_CORETYPE")
            print(f"OpenBLAS core: {core}{f' (OPENBLAS_CORETYPE={env})' if env else ''}")
    except ImportError as e:
        print(f"PyTorch: not importable ({e})")
    import onnxruntime as ort
    build = ort.get_build_info() if hasattr(ort, "get_build_info") else ""
    print(f"ONNX Runtime {ort.__version__} ({os.path.dirname(ort.__file__)}): providers "
          f"{', '.join(ort.get_available_providers())}; {build}")
    try:
        import onnx
        print(f"onnx {onnx.__version__}")
    except ImportError:
        print("onnx: not importable (quantize_dynamic needs it)")


if __name__ == "__main__":
    main()
