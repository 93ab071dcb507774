"""Where a benchmark's Java harness comes from: the classes named by
--classes, else compiled now with javac (never stale), else the prebuilt
ones under .carry/ (scripts/prepare_gpu_carry.sh writes them on a machine
with a JDK for hosts with only a JRE)."""

from __future__ import annotations

import os
import shutil
import subprocess

from devtools import ROOT, jvm_guard


class HarnessError(RuntimeError):
    """No usable harness classes; the message says what to do."""


def harness_classes(explicit, work, *, sources, main_class, carried, classpath=()) -> str:
    """Directory holding main_class's .class file. sources: the .java files
    (absolute paths); carried: the subdirectory of .carry/ with prebuilt
    classes; classpath: what javac needs beside the sources."""
    name = main_class + ".class"
    if explicit:
        if not os.path.exists(os.path.join(explicit, name)):
            raise HarnessError(f"--classes {explicit} holds no {name}")
        return explicit
    if shutil.which("javac"):
        jvm_guard.check("javac")
        classes = os.path.join(work, "classes")
        cp = ["-cp", os.pathsep.join(classpath)] if classpath else []
        subprocess.run(["javac", "-nowarn", "--release", "11", *cp, "-d", classes, *sources], check=True)
        return classes
    prebuilt = os.path.join(ROOT, ".carry", carried)
    if os.path.exists(os.path.join(prebuilt, name)):
        return prebuilt
    raise HarnessError(
        "no javac here and no prebuilt harness: pass --classes DIR, or run "
        "scripts/prepare_gpu_carry.sh on a machine with a JDK and carry .carry/ to this one"
    )
