"""cffi builder (API mode) for pyphmm._pyphmm (setup.py's cffi_modules).

The cdef is the block between the CDEF markers of native/include/pyphmm.h,
so the C header stays the single source of truth for the ABI. The extension
links against libpyphmm.so, which setup.py builds first and places beside it.
It uses only CPython's limited API (cffi's default), so one wheel serves
every Python 3 from 3.9 on (abi3).
"""

import os
import re

from cffi import FFI

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = os.path.join(ROOT, "native", "include")
HEADER = os.path.join(INCLUDE, "pyphmm.h")


def abi_declarations(header=HEADER):
    """Returns the cdef text: the header's CDEF block, comments removed."""
    with open(header) as f:
        text = f.read()
    block = re.search(r"/\* CDEF-BEGIN \*/(.*)/\* CDEF-END \*/", text, re.S)
    if block is None:
        raise RuntimeError(f"{header}: CDEF markers not found")
    return re.sub(r"/\*.*?\*/", "", block.group(1), flags=re.S)


ffibuilder = FFI()
ffibuilder.cdef(abi_declarations())
ffibuilder.set_source(
    "pyphmm._pyphmm",
    '#include "pyphmm.h"',
    include_dirs=[INCLUDE],
    libraries=["pyphmm"],
    depends=[HEADER],
    # setup.py adds the directory of the freshly built libpyphmm.so; at run
    # time the library is found beside the extension module.
    extra_link_args=["-Wl,-rpath,$ORIGIN"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
