"""The CUDA backend's host packer (native/common/pack_elems.cc): its AVX2
path equals its scalar loop and the documented element layout. Compiled and
run here, so it is checked on machines without a GPU too."""
import os
import subprocess

import pytest



def test_vector_packer_matches_scalar_and_layout(native_check_exe):
    exe = native_check_exe("pack_check", "common/pack_elems.cc")
    res = subprocess.run([str(exe)], capture_output=True, text=True, env=dict(os.environ, PYPHMM_PACK_SCALAR=""))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    if res.stdout.startswith("no-avx2"):
        pytest.skip("this CPU has no AVX2: only the scalar packer can run here")
    assert " 0 mismatches" in res.stdout, res.stdout
