"""What pyphmm knows about GATK: the shim jar, GKL's library names, the
command line that runs GATK with the shim. The commands ``pyphmm
gatk-jar``, ``pyphmm gatk-libdir DIR`` and ``pyphmm gatk [--gatk-jar JAR] --
ARGS...`` are pyphmm.cli.gatk.

Two ways to make unmodified GATK call pyphmm:
- the shim jar (pyphmm-gatk.jar) placed before GATK on the class path: it
  holds GKL's binding classes, backed by libpyphmm.so;
- a directory of libraries with GKL's file names, for GKL's own classes when
  GATK runs with USE_LIBRARY_PATH=1 and -Djava.library.path=DIR (Debian's
  GKL always loads from there). GKL's loader then takes *every* GKL library
  from that directory, so besides pyphmm under the PairHMM, Smith-Waterman
  and utils names it must hold GKL's own compression (IntelDeflater /
  IntelInflater) and PDHMM libraries, taken from the user's GATK jar or a
  directory of GKL libraries.
"""

from __future__ import annotations

import os
import shutil
import zipfile

JAR_NAME = "pyphmm-gatk.jar"
GKL_LIBRARY_NAMES = ("libgkl_pairhmm.so", "libgkl_pairhmm_omp.so", "libgkl_smithwaterman.so", "libgkl_utils.so")
# GKL's libraries pyphmm does not replace, with what GATK loses without them
# under USE_LIBRARY_PATH=1.
GKL_OWN_LIBRARIES = {
    "libgkl_compression.so": "Intel's deflater and inflater (GATK falls back to the JDK's, "
    "slower BAM/CRAM/VCF.gz compression)",
    "libgkl_pdhmm.so": "PDHMM (HaplotypeCaller --use-pdhmm of GATK 4.6 / GKL 0.9 fails to load it)",
}
GKL_NATIVE_IN_JAR = "com/intel/gkl/native/"  # where GKL's jar (inside GATK's) keeps them
GATK_MAIN = "org.broadinstitute.hellbender.Main"


def jar_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), JAR_NAME)


def existing_jar() -> str:
    path = jar_path()
    if not os.path.exists(path):
        raise OSError(f"{path} is missing: pyphmm was built without a JDK or gatk-native-bindings.jar")
    return path


def gkl_library_bytes(name: str, gatk_jar: str | None, gkl_libs: str | None):
    """GKL's library `name` from the GATK jar, else from gkl_libs; None if neither has it."""
    if gatk_jar:
        try:
            with zipfile.ZipFile(gatk_jar) as z:
                return z.read(GKL_NATIVE_IN_JAR + name)
        except KeyError:
            pass
        except zipfile.BadZipFile as e:
            raise OSError(f"{gatk_jar} is not a jar: {e}") from None
    if gkl_libs:
        path = os.path.join(gkl_libs, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
    return None


def find_gatk_jar(explicit: str | None) -> str:
    path = explicit or os.environ.get("GATK_LOCAL_JAR")
    if not path:
        raise OSError("no GATK jar: pass --gatk-jar PATH or set GATK_LOCAL_JAR")
    if not os.path.isfile(path):
        raise OSError(f"GATK jar not found: {path}")
    return path


def gatk_command(gatk_jar: str, args: list, java: str | None = None) -> list:
    """java [JAVA_OPTS] -cp SHIM:GATK Main ARGS: the shim precedes GATK, so its
    GKL class names win; everything else in GATK (and GKL) is untouched."""
    java = java or os.environ.get("JAVA") or shutil.which("java") or "java"
    opts = os.environ.get("JAVA_OPTS", "").split()
    return [java] + opts + ["-cp", os.pathsep.join([existing_jar(), gatk_jar]), GATK_MAIN] + list(args)
