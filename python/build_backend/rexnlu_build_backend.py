"""PEP 517 build backend of the rexnlu Python package (pyproject.toml), standard library only.

build_wheel configures the CMake project with the Python module on (tests and benchmarks off),
builds the target _rexnlu, and packs the package CMake assembled in <build>/python/rexnlu plus the
bundled demo model into a wheel for the running interpreter. The build directory is build-pip/ in
the source tree (incremental; $REXNLU_PIP_BUILD_DIR moves it); $REXNLU_CMAKE_ARGS adds CMake
arguments, e.g. "-DREXNLU_CUDA=OFF" or "-DREXNLU_NATIVE=OFF" (docs/python.md).
"""

import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "rexnlu"
MODEL = "rexnlu-demo-zh-small"


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(rexnlu VERSION ([0-9.]+)", f.read())
    if not match:
        raise RuntimeError("CMakeLists.txt: no 'project(rexnlu VERSION x.y.z)'")
    return match.group(1)


def _tag():
    """The wheel tag of the running interpreter, e.g. cp311-cp311-linux_x86_64."""
    version = f"{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"cp{version}-cp{version}{sys.abiflags}-{platform}"


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _metadata_files():
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {_version()}\n"
        "Summary: Schema-guided Chinese universal NLU (RexUniNLU) on a C++ engine, "
        "with the ModelScope pipeline call\n"
        "Requires-Python: >=3.8\n"
    )
    wheel = f"Wheel-Version: 1.0\nGenerator: rexnlu_build_backend\nRoot-Is-Purelib: false\nTag: {_tag()}\n"
    return {"METADATA": metadata, "WHEEL": wheel, "top_level.txt": NAME + "\n"}


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    path = os.path.join(metadata_directory, _dist_info())
    os.makedirs(path, exist_ok=True)
    for name, text in _metadata_files().items():
        with open(os.path.join(path, name), "w", encoding="utf-8") as f:
            f.write(text)
    return _dist_info()


def _build_package():
    """Runs CMake; returns the folder holding the importable package."""
    build = os.environ.get("REXNLU_PIP_BUILD_DIR") or os.path.join(ROOT, "build-pip")
    configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DREXNLU_PYTHON=ON",
                 "-DREXNLU_BUILD_TESTS=OFF", "-DREXNLU_BUILD_BENCH=OFF", f"-DPython3_EXECUTABLE={sys.executable}"]
    if shutil.which("ccache"):
        configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    configure += shlex.split(os.environ.get("REXNLU_CMAKE_ARGS", ""))
    subprocess.run(configure, check=True)
    subprocess.run(["cmake", "--build", build, "--target", "_rexnlu", "-j", str(os.cpu_count() or 1)], check=True)
    return os.path.join(build, "python", NAME)


def _files(package_dir):
    """(archive name, file path) of everything the wheel holds besides .dist-info."""
    out = []
    for name in sorted(os.listdir(package_dir)):
        path = os.path.join(package_dir, name)
        if os.path.isfile(path) and not name.endswith(".pyc"):
            out.append((f"{NAME}/{name}", path))
    model_dir = os.path.join(ROOT, "models", MODEL)
    if os.path.isfile(os.path.join(model_dir, "config.json")):
        for name in sorted(os.listdir(model_dir)):
            out.append((f"{NAME}/models/{MODEL}/{name}", os.path.join(model_dir, name)))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    package_dir = _build_package()
    wheel_name = f"{NAME}-{_version()}-{_tag()}.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as whl:
        for name, path in _files(package_dir):
            with open(path, "rb") as f:
                data = f.read()
            whl.writestr(name, data)
            record.append(_record_line(name, data))
        for name, text in _metadata_files().items():
            data = text.encode("utf-8")
            whl.writestr(f"{_dist_info()}/{name}", data)
            record.append(_record_line(f"{_dist_info()}/{name}", data))
        record.append(f"{_dist_info()}/RECORD,,")
        whl.writestr(f"{_dist_info()}/RECORD", "\n".join(record) + "\n")
    return wheel_name
