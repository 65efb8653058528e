#!/usr/bin/env python3
"""Scans the sm_90 SASS of the CUDA kernels for the ptxas 13.0 miscompile found in session 10.

ptxas (CUDA 13.0.88, sm_90) turned the PTX trip count max(-R, ~x, ...) of a strided loop into
`VIMNMX3 Rd, Ra, URx, Rc, !PT` with URx = +R while the same function computes the negation
(`UIADD3 URy, -URx, URZ, URZ`) for that very purpose (docs/parity.md, session 10). This flags every
three-way max that reads a uniform register whose negation the function also computes: each hit
must be read by hand (a legitimate max with +R is possible, but none of our kernels has one).

    tools/cuda_sass/check_vimnmx3.py [NVDISASM] [FILE.cu ...]

NVDISASM defaults to `nvdisasm` on PATH (not in every toolkit install; the PyPI wheel
nvidia-cuda-nvdisasm has it under nvidia/cu13/bin/). FILE.cu default to src/backends/cuda/*.cu.
Exit status 1 when something is flagged.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def scan(sass):
    hits = []
    for f in re.split(r"\n\s*\.text\.", sass)[1:]:
        name = f.split(":")[0]
        negated = {src for _, src in re.findall(r"UIADD3 (UR\d+), -(UR\d+), URZ", f)}
        for m in re.finditer(r"/\*([0-9a-f]{4,6})\*/\s+VIMNMX3 ([^;]*);", f):
            if "!PT" in m.group(2) and any(u in negated for u in re.findall(r"UR\d+", m.group(2))):
                hits.append((name, m.group(1), m.group(2).strip()))
    return hits


def main():
    args = sys.argv[1:]
    nvdisasm = args.pop(0) if args and not args[0].endswith(".cu") else shutil.which("nvdisasm")
    if not nvdisasm:
        sys.exit("check_vimnmx3.py: no nvdisasm (pass its path first)")
    files = args or sorted(glob.glob(os.path.join(ROOT, "src/backends/cuda/*.cu")))
    flagged = 0
    with tempfile.TemporaryDirectory() as tmp:
        for cu in files:
            cubin = os.path.join(tmp, os.path.basename(cu) + ".cubin")
            subprocess.run(["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "--expt-relaxed-constexpr", "-cubin",
                            "-I" + os.path.join(ROOT, "src"), "-I" + os.path.join(ROOT, "include"), "-DNDEBUG",
                            "-o", cubin, cu], check=True)
            sass = subprocess.run([nvdisasm, "-c", cubin], check=True, capture_output=True, text=True).stdout
            hits = scan(sass)
            print(f"{os.path.relpath(cu, ROOT)}: {len(hits)} flagged")
            for name, at, ops in hits[:10]:
                print(f"  {name[:100]} +0x{at}: VIMNMX3 {ops}")
            flagged += len(hits)
    sys.exit(1 if flagged else 0)


if __name__ == "__main__":
    main()
