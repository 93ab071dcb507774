"""Build for pyphmm: the native library, the GATK shim jar, then the cffi
extension that links to the library and finds it beside itself at run time.

setup.py only names what to build; buildtools/ (beside it, not installed)
knows how: buildtools/native.py lists the environment knobs (PYPHMM_NO_CUDA,
PYPHMM_CUDA_ARCHS, PYPHMM_GLIBC_TARGET, ...), buildtools/jar.py the jar's
layout, buildtools/ffi.py the cffi module. Every step is incremental: a
rebuild compiles only what changed and relinks only when an object did.
scripts/build_dist.sh makes the release artifacts (manylinux wheel + jar).
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
# PEP 517 frontends do not put the project directory on sys.path.
sys.path.insert(0, ROOT)
from buildtools import jar, native  # noqa: E402

sys.path.pop(0)


class BuildExt(build_ext):
    """Builds libpyphmm.so and the shim jar before the cffi extension."""

    def finalize_options(self):
        super().finalize_options()
        if getattr(self, "editable_mode", False):
            # pip's editable builds get fresh temporary directories each time;
            # keep the extension's where the next build finds them, so an
            # unchanged extension is neither regenerated nor recompiled.
            self.build_temp = os.path.join(ROOT, "build", "editable", "temp")
            self.build_lib = os.path.join(ROOT, "build", "editable", "lib")

    def run(self):
        pkg_dir = os.path.join(ROOT, "pyphmm") if self.inplace else os.path.join(self.build_lib, "pyphmm")
        build = native.NativeBuild()
        lib = build.build(pkg_dir)
        jar.build_gatk_jar(lib, pkg_dir, build.obj_dir, bool(build.jni))
        for ext in self.extensions:
            ext.library_dirs += [os.path.dirname(lib)] + build.glibc_library_dirs()
        super().run()


setup(
    name="pyphmm",
    version=native.version(),
    description="GPU and CPU PairHMM and Smith-Waterman for GATK, with GKL's semantics",
    long_description=open(os.path.join(ROOT, "README.md")).read()
    if os.path.exists(os.path.join(ROOT, "README.md"))
    else "",
    long_description_content_type="text/markdown",
    packages=["pyphmm", "pyphmm.cli"],
    package_data={"pyphmm": ["data/*.in", native.LIBNAME, jar.JAR_NAME]},
    python_requires=">=3.9",
    install_requires=["cffi>=1.15", "numpy>=1.21"],
    cffi_modules=["buildtools/ffi.py:ffibuilder"],
    cmdclass={"build_ext": BuildExt},
    # The extension uses CPython's limited API only: one wheel for 3.9 and later.
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
    entry_points={"console_scripts": ["pyphmm=pyphmm.cli:main"]},
)
