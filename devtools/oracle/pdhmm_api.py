"""GKL 0.9's PDHMM Java API, the peer of the shim's IntelPDHMM.

CI has no GKL 0.9 jar, so its API (what ``javap`` prints) is stored in
tests/data/gkl09-pdhmm-api.txt, written from real GKL 0.9 and
gatk-native-bindings 1.1.0 jars by

    python3 -m devtools.oracle.pdhmm_api GKL09_CLASSPATH > tests/data/gkl09-pdhmm-api.txt

Sections: IntelPDHMM's public API, its native declarations with their JNI
descriptors, and each pdhmm type of gatk-native-bindings 1.1.0.

Also here: the compile-time declarations of those types (java_shim/api/),
compiled for the tests' class paths, and GKL 0.9's class path when a local
oracle exists ($GKL09_CLASSPATH: GKL 0.9's jar and gatk-native-bindings
1.1.0's; commons-logging and commons-io are taken from GKL_JARS).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile

from .. import ROOT
from . import gkl as gkl_oracle

API_SOURCES = os.path.join(ROOT, "java_shim", "api")
DATA = os.path.join(ROOT, "tests", "data", "gkl09-pdhmm-api.txt")
GKL_CLASS = "com.intel.gkl.pdhmm.IntelPDHMM"
BINDING_TYPES = tuple(
    "org.broadinstitute.gatk.nativebindings.pdhmm." + n
    for n in (
        "HaplotypeDataHolder",
        "PDHMMNativeArguments",
        "PDHMMNativeArguments$AVXLevel",
        "PDHMMNativeArguments$OpenMPSetting",
        "PDHMMNativeBinding",
        "ReadDataHolder",
    )
)

_api_classes = None


def api_classes() -> str:
    """A directory of the compiled java_shim/api declarations (compiled once
    per process with javac; without one, .carry/pdhmm_api_classes)."""
    global _api_classes
    if _api_classes is None:
        if shutil.which("javac"):
            out = tempfile.mkdtemp(prefix="pyphmm-pdhmm-api-")
            sources = sorted(glob.glob(os.path.join(API_SOURCES, "**", "*.java"), recursive=True))
            bindings = os.path.join(gkl_oracle.jar_dir(), "gatk-native-bindings.jar")
            subprocess.run(
                ["javac", "-nowarn", "--release", "8", "-cp", bindings, "-d", out, *sources],
                check=True,
                capture_output=True,
            )
            _api_classes = out
        else:
            _api_classes = os.path.join(ROOT, ".carry", "pdhmm_api_classes")
    return _api_classes


def gkl09_classpath() -> list | None:
    """GKL 0.9's class path, or None: $GKL09_CLASSPATH, then from GKL_JARS
    the commons jars GKL needs and GKL's jar (its PairHMM and
    Smith-Waterman classes, which GatkHeadCaller names, for a GKL 0.9 build
    that holds PDHMM only; a full GKL 0.9 jar's own come first)."""
    cp = os.environ.get("GKL09_CLASSPATH")
    if not cp:
        return None
    d = gkl_oracle.jar_dir()
    extra = [os.path.join(d, n) for n in ("commons-logging.jar", "commons-io.jar", "gkl.jar")]
    return cp.split(os.pathsep) + [p for p in extra if os.path.exists(p)]


def javap(classpath, cls, *options) -> list:
    p = subprocess.run(
        ["javap", *options, "-cp", os.pathsep.join(classpath), cls], capture_output=True, text=True, check=False
    )
    if p.returncode != 0:
        raise RuntimeError(f"javap {cls}: {p.stderr.strip()}")
    return [ln.rstrip() for ln in p.stdout.splitlines() if ln.strip() and not ln.startswith("Compiled from")]


def natives(classpath, cls) -> list:
    """The native methods of cls, each with its JNI descriptor line."""
    lines = javap(classpath, cls, "-p", "-s")
    out = []
    for k, ln in enumerate(lines):
        if " native " in ln:
            out += [ln.strip(), lines[k + 1].strip()]
    return out


def api_sections(classpath) -> dict:
    """{section title: lines} of the classes on classpath."""
    sections = {
        f"javap -public {GKL_CLASS}": [ln.strip() for ln in javap(classpath, GKL_CLASS, "-public")],
        f"natives of {GKL_CLASS}": natives(classpath, GKL_CLASS),
    }
    for t in BINDING_TYPES:
        sections[f"javap -protected {t}"] = [ln.strip() for ln in javap(classpath, t, "-protected")]
    return sections


def stored_sections(path: str = DATA) -> dict:
    sections, title = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("## "):
                title = line[3:]
                sections[title] = []
            elif title is not None and line:
                sections[title].append(line)
    return sections


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m devtools.oracle.pdhmm_api GKL09_CLASSPATH", file=sys.stderr)
        return 2
    print("# GKL 0.9.0's IntelPDHMM and gatk-native-bindings 1.1.0's pdhmm types as javap prints them")
    print("# (written by devtools/oracle/pdhmm_api.py from the real jars; tests/test_pdhmm_jni.py reads it)")
    for title, lines in api_sections(args[0].split(os.pathsep)).items():
        print(f"## {title}")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
