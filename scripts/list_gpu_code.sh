#!/usr/bin/env bash
# Prints the GPU code a built libpyphmm.so carries (machine code per sm_XX,
# PTX for JIT on newer GPUs), with cuobjdump from the CUDA toolkit.
#   scripts/list_gpu_code.sh LIBRARY
set -euo pipefail
lib="${1:?usage: list_gpu_code.sh LIBRARY}"
tool="$(command -v cuobjdump || true)"
if [ -z "$tool" ]; then
    for d in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-*; do
        if [ -n "$d" ] && [ -x "$d/bin/cuobjdump" ]; then tool="$d/bin/cuobjdump"; break; fi
    done
fi
if [ -z "$tool" ]; then echo "GPU code in $(basename "$lib"): not listed (no cuobjdump here)"; exit 0; fi
sass="$("$tool" --list-elf "$lib" | grep -o 'sm_[0-9]*[a-z]*' | sort -u | tr '\n' ' ')"
ptx="$("$tool" --list-ptx "$lib" | grep -o 'sm_[0-9]*[a-z]*' | sort -u | tr '\n' ' ')"
echo "GPU code in $(basename "$lib"): machine code ${sass:-none}; PTX ${ptx:-none}"
