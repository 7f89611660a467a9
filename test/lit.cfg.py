# -*- Python -*-
# lit configuration of the gdn test suite. Tests under test/ are hermetic (no
# GPU); GPU tests are marked `REQUIRES: cuda` and run only where a CUDA device
# answers.

import os
import shutil
import subprocess
import sys

import lit
import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GDN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gdn_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.gdn_tools_dir, append_path=True)

config.substitutions.append(("%gdn_src_root", config.gdn_src_root))
config.substitutions.append(("%gdn_obj_root", config.gdn_obj_root))
config.substitutions.append(("%examples", os.path.join(config.gdn_src_root, "examples")))
config.substitutions.append(("%python", sys.executable))
# LLVM's tools and the running lit, for tests that lay out a tree of their
# own (test/Integration/gpu-lit.test).
config.substitutions.append(("%llvm_tools_dir", config.llvm_tools_dir))
config.substitutions.append(("%llvm_lit_package", os.path.dirname(lit.__file__)))
# Writes small .npy inputs for interpreter tests (no NumPy needed).
config.substitutions.append(("%make_npy", "%s %s" % (
    sys.executable,
    os.path.join(config.gdn_src_root, "test", "Interpreter", "Inputs", "make_npy.py"))))

# Projects configured by the tests (test/Install) use this tree's generator,
# compilers and compiler cache; ccache needs its environment to find the cache.
llvm_config.with_system_environment(["HOME", "CCACHE_DIR", "CCACHE_BASEDIR",
                                     "CCACHE_DISABLE"])
config.substitutions.append(("%cmake", config.cmake_command))
_host_cmake_flags = [
    "-G", '"%s"' % config.cmake_generator,
    "-DCMAKE_MAKE_PROGRAM=%s" % config.cmake_make_program,
    "-DCMAKE_BUILD_TYPE=%s" % (config.cmake_build_type or "Release"),
    "-DCMAKE_C_COMPILER=%s" % config.host_c_compiler,
    "-DCMAKE_CXX_COMPILER=%s" % config.host_cxx_compiler,
]
if config.gdn_ccache and not config.gdn_ccache.endswith("-NOTFOUND"):
    _host_cmake_flags += ["-DCMAKE_C_COMPILER_LAUNCHER=%s" % config.gdn_ccache,
                          "-DCMAKE_CXX_COMPILER_LAUNCHER=%s" % config.gdn_ccache]
config.substitutions.append(("%host_cmake_flags", " ".join(_host_cmake_flags)))

llvm_config.add_tool_substitutions([ToolSubst("gdn-opt", unresolved="fatal"),
                                    ToolSubst("gdn-run", unresolved="fatal"),
                                    ToolSubst("gdn-translate", unresolved="fatal")],
                                   [config.gdn_tools_dir])


def _cuda_device_present():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


if _cuda_device_present():
    config.available_features.add("cuda")
    # Tests of P ranks on P GPUs (NCCL refuses two ranks on one GPU).
    try:
        _gpus = subprocess.run([shutil.which("nvidia-smi"), "-L"], capture_output=True,
                               text=True, timeout=20).stdout.count("GPU ")
    except (OSError, subprocess.SubprocessError):
        _gpus = 0
    if _gpus >= 2:
        config.available_features.add("multi-gpu")
    # Tests whose widest job needs four or eight GPUs.
    for _count in (4, 8):
        if _gpus >= _count:
            config.available_features.add(f"gpus-{_count}")


# A tree built with ASan and UBSan (utils/build-sanitized.sh): tests that
# build other programs against it, without the sanitizers' runtime, are
# UNSUPPORTED there.
if "-fsanitize=" in getattr(config, "host_cxx_flags", ""):
    config.available_features.add("sanitized")


# A CMake build tree (build-tree), which test/Install installs and
# configures against; a tree carried to a GPU host without MLIR
# (utils/prepare-gpu-lit.sh) is not one.
if os.path.isfile(os.path.join(config.gdn_obj_root, "CMakeCache.txt")):
    config.available_features.add("build-tree")


# PyTorch (torch), and PyTorch with a GPU (torch-cuda), for the tests of
# python/gdn_torch.
def _torch_features():
    try:
        probe = subprocess.run(
            [sys.executable, "-c",
             "import sys, torch; print('cuda' if torch.cuda.is_available() else 'cpu')\n"
             "try:\n"
             "    import transformers.models.qwen3_next, transformers.models.qwen3_5\n"
             "    print('transformers')\n"
             "except ImportError:\n"
             "    pass\n"
             "try:\n"
             "    from transformers.cache_utils import Cache\n"
             "    sys.path.insert(0, sys.argv[1])\n"
             "    from gdn_torch.hf import CACHE_STATE_METHODS\n"
             "    if all(hasattr(Cache, name) for name in CACHE_STATE_METHODS):\n"
             "        print('transformers-cache-states')\n"
             "except Exception:\n"
             "    pass",
             os.path.join(config.gdn_src_root, "python")],
            capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return []
    if probe.returncode != 0:
        return []
    lines = probe.stdout.split()
    features = ["torch", "torch-cuda"] if lines[:1] == ["cuda"] else ["torch"]
    # transformers with the Qwen3-Next and Qwen3.5 modules (test/Torch/hf-*),
    # and whether its Cache has the linear-attention state methods that
    # gdn_torch.hf's prefill uses (gdn_torch.hf.CACHE_STATE_METHODS).
    return features + [name for name in ("transformers", "transformers-cache-states")
                       if name in lines]


config.available_features.update(_torch_features())


# nvcc without a GPU (CI): generated code is compiled, never run. Tests
# marked `REQUIRES: nvcc` use %nvcc (nvcc with the project's host compiler
# and language level) and %gdn_includes (-I for the kernel headers,
# kernels/include, then gdnrt's, runtime/include; %gdn_kernels_include alone
# names the first).
def _find_nvcc():
    for candidate in (os.environ.get("NVCC"), "/usr/local/cuda/bin/nvcc",
                      shutil.which("nvcc")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


_nvcc = _find_nvcc()
if _nvcc:
    config.available_features.add("nvcc")
    _host = "-ccbin g++-12 " if shutil.which("g++-12") else ""
    config.substitutions.append(("%nvcc", "%s %s-std=c++17" % (_nvcc, _host)))
_kernels_include = os.path.join(config.gdn_src_root, "kernels", "include")
_runtime_include = os.path.join(config.gdn_src_root, "runtime", "include")
config.substitutions.append(("%gdn_includes",
                             "-I %s -I %s" % (_kernels_include, _runtime_include)))
config.substitutions.append(("%gdn_kernels_include", _kernels_include))

# gdnrt and its tools (gdnrt-launch, the host unit tests) exist only when the
# CUDA toolkit with NCCL was found at configure time.
if config.gdn_have_gdnrt.upper() in ("ON", "TRUE", "1"):
    config.available_features.add("gdnrt")
# Generated whole-function entry points call gdnrt: %gdnrt_link links it
# into an nvcc-built program or library, with the shared CUDA runtime gdnrt
# itself uses (one runtime per process) and an rpath to the build tree.
_gdnrt_dir = os.path.join(config.gdn_obj_root, "lib")
# scripts/gdn-compile, with the tools and gdnrt of this build.
config.substitutions.append(("%gdn_compile", "env GDN_BUILD_DIR=%s %s" % (
    config.gdn_obj_root, os.path.join(config.gdn_src_root, "scripts", "gdn-compile"))))
config.substitutions.append(("%gdnrt_link", "-cudart shared -L%s -lgdnrt -Xlinker -rpath=%s"
                             % (_gdnrt_dir, _gdnrt_dir)))
