"""Build-time helpers for pyphmm (not installed with the package).

setup.py names what to build and wires it into setuptools; everything that
knows how to build lives here so that setup.py, scripts/build_dist.sh and the
tests use one recipe:

- native.py       libpyphmm.so: toolchain discovery (C++, nvcc, JNI), the one
                  set of compiler flags, incremental compile and link, and
                  compile_check_program() for tests' small native programs;
- incremental.py  when an output is up to date (inputs, depfiles, commands);
- glibc.py        linking against an older glibc's symbol set (zig's stubs) and
                  the objdump check of the glibc versions a file needs;
- jar.py          the GATK shim jar: classes (javac or prebuilt) + libraries;
- ffi.py          the cffi builder of pyphmm._pyphmm (setup.py's cffi_modules).
"""
