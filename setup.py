#===- setup.py - build gdn_torch's native half against the installed torch -===#
#
# pyproject.toml holds the metadata; this adds the two native pieces a wheel
# carries, both built here against the CUDA toolkit (CUDA_HOME, default
# /usr/local/cuda, with NCCL and cuBLASLt) and the installed torch:
#
#   gdn_torch/lib/libgdnrt.so   the runtime generated libraries link
#                               (runtime/build.sh);
#   gdn_torch/_ops*.so          the operator library (csrc/gdn_torch.cpp:
#                               torch.ops.gdn_torch), linked against it;
#
# and the kernel and runtime headers (gdn_torch/include), which nvcc needs
# when a spec is compiled on the machine gdn_torch runs on.
#
#===------------------------------------------------------------------------===#

import os
import shutil
import subprocess

from setuptools import setup

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(ROOT, "python", "gdn_torch")


def native_build():
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    class Build(BuildExtension):
        def run(self):
            out = os.path.join(self.build_lib, "gdn_torch")
            lib = os.path.join(out, "lib")
            os.makedirs(lib, exist_ok=True)
            subprocess.run(["bash", os.path.join(ROOT, "runtime", "build.sh"), lib], check=True)
            include = os.path.join(out, "include")
            shutil.rmtree(include, ignore_errors=True)
            for folder in ("kernels", "runtime"):
                shutil.copytree(os.path.join(ROOT, folder, "include"), include, dirs_exist_ok=True)
            for ext in self.extensions:
                ext.library_dirs.append(lib)
            super().run()

    # The operator library holds no device code, but CUDAExtension wants an
    # architecture list even so (and finds none on a build machine without
    # a GPU).
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    ops = CUDAExtension(
        name="gdn_torch._ops",
        sources=[os.path.relpath(os.path.join(PACKAGE, "csrc", "gdn_torch.cpp"), ROOT)],
        include_dirs=[os.path.join(ROOT, "runtime", "include")],
        libraries=["gdnrt"],
        extra_compile_args={"cxx": ["-O2"]},
        # Exports nothing (csrc/exports.map says why).
        extra_link_args=["-Wl,-rpath,$ORIGIN/lib",
                         "-Wl,--version-script=" + os.path.join(PACKAGE, "csrc", "exports.map"),
                         "-Wl,--exclude-libs,ALL"])
    return {"ext_modules": [ops], "cmdclass": {"build_ext": Build}}


# Out of build/, which is CMake's.
os.makedirs(os.path.join(ROOT, "build-python"), exist_ok=True)
setup(options={"build": {"build_base": os.path.join(ROOT, "build-python")},
               "egg_info": {"egg_base": os.path.join(ROOT, "build-python")}},
      **native_build())
