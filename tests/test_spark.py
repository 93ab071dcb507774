"""The shim inside Spark executors, as HaplotypeCallerSpark would use it.

PyPI's pyspark ships Spark's jars and launch scripts. The test starts
`local-cluster[2,2,1024]` (a master and two workers in the driver JVM, two
executor JVMs with two task slots each) through spark-submit and runs
tests/java/SparkPairHmmJob.java: eight partitions of realistic regions, each
task building GATK's engine (IntelPairHmmOMP) and calling computeLikelihoods
per region. The job jar carries GKL's classes, as GATK's jar does, and the
shim comes first through spark.executor.extraClassPath (the README's
recipe). Checked: every value against GKL, the shim's classes answered in
both executors, each executor mapped one libpyphmm.so and logged pyphmm's
line once.

About a minute on the 2-core CI machine (Spark's start-up dominates).
"""

from __future__ import annotations

import glob
import os
import subprocess
import zipfile

import numpy as np
import pytest

from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import java_harness as jh
from devtools.oracle import shim

pytestmark = [pytest.mark.jvm, pytest.mark.slow]

N_REGIONS = 64
PARTITIONS = 8


def _pyspark_home() -> str:
    try:
        import pyspark
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pyspark is not installed (scripts/setup.sh installs it)")
        pytest.skip("pyspark is not installed (pip install pyspark; scripts/setup.sh does)")
    home = os.path.dirname(pyspark.__file__)
    if not os.path.exists(os.path.join(home, "bin", "spark-submit")):
        pytest.fail(f"{home} has no bin/spark-submit")
    return home


def _job_jar(d, spark_home) -> str:
    classes = jh.compile_sources(
        d / "classes",
        ["Records.java", "SparkPairHmmJob.java"],
        [os.path.join(spark_home, "jars", "*")] + jh.shim_classpath(),
        release=17,
    )  # (Spark 4's classes are Java 17's)
    jar = str(d / "job.jar")
    with zipfile.ZipFile(jar, "w") as out:
        for path in glob.glob(os.path.join(classes, "*.class")):
            out.write(path, os.path.basename(path))
        with zipfile.ZipFile(os.path.join(gkl_oracle.jar_dir(), "gkl.jar")) as z:  # as GATK's jar does
            for name in z.namelist():
                if name.endswith(".class"):
                    out.writestr(name, z.read(name))
    return jar


def test_shim_in_spark_executors_matches_gkl(tmp_path, gkl_jvm):
    pyspark_home = _pyspark_home()
    jh.require_javac()
    # A SPARK_HOME of our own (pyspark's bin and jars), so that the workers'
    # directories land here and not inside the installed package.
    home = tmp_path / "spark-home"
    home.mkdir()
    for sub in ("bin", "jars"):
        os.symlink(os.path.join(pyspark_home, sub), home / sub)
    regions = shim.random_regions(N_REGIONS, seed=2424, max_reads=12, max_haps=4)
    rfile = jh.write_regions(regions, tmp_path / "regions.in")
    jar = _job_jar(tmp_path, pyspark_home)
    executor_tmp = tmp_path / "executor-tmp"
    executor_tmp.mkdir()
    cp = os.pathsep.join(jh.shim_classpath())
    out = tmp_path / "out.txt"
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1")
    for k in ("PYPHMM_LOG", "PYPHMM_LIBRARY", "USE_LIBRARY_PATH"):
        env.pop(k, None)
    p = subprocess.run(
        [
            str(home / "bin" / "spark-submit"),
            "--master",
            "local-cluster[2,2,1024]",
            "--class",
            "SparkPairHmmJob",
            "--conf",
            f"spark.executor.extraClassPath={cp}",
            "--conf",
            f"spark.driver.extraClassPath={cp}",
            "--conf",
            f"spark.executor.extraJavaOptions=-Djava.io.tmpdir={executor_tmp}",
            "--conf",
            "spark.ui.enabled=false",
            # both executors take tasks, however slowly a loaded machine starts them
            # (the ratio counts against spark.cores.max)
            "--conf",
            "spark.cores.max=4",
            "--conf",
            "spark.scheduler.minRegisteredResourcesRatio=1.0",
            "--conf",
            "spark.scheduler.maxRegisteredResourcesWaitingTime=600s",
            jar,
            rfile,
            str(out),
            str(PARTITIONS),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr[-5000:]
    values, workers = {}, []
    for line in out.read_text().splitlines():
        f = line.split(" ")
        if f[0] == "P":
            values[int(f[1])] = np.array([float(x) for x in f[2:]])
        elif f[0] == "W":
            workers.append(f[1:])
    # every value is GKL's
    assert sorted(values) == list(range(N_REGIONS)), out.read_text()[-3000:]
    gkl = shim.Binding("gkl")
    for k, region in enumerate(regions):
        assert np.max(np.abs(values[k] - gkl.compute(region))) <= 1e-5, f"region {k}"
    # eight tasks on both executors, each through the shim, one library per executor JVM
    assert len(workers) == PARTITIONS, workers
    executors = {w[0]: w[1] for w in workers}
    assert len(executors) == 2 and len(set(executors.values())) == 2, workers
    assert len({w[2] for w in workers}) == PARTITIONS  # a task thread each
    assert all(w[3].endswith("pyphmm-gatk.jar") for w in workers), workers
    for ex in executors:
        mapped = {w[4] for w in workers if w[0] == ex}
        assert (
            len(mapped) == 1 and "," not in next(iter(mapped)) and next(iter(mapped)).startswith(str(executor_tmp))
        ), mapped
    # GATK's log on each executor: pyphmm's line once, then the running totals
    logs = glob.glob(str(home / "work" / "app-*" / "*" / "stderr"))
    assert len(logs) == 2, logs
    calls = 0
    for log in logs:
        lines = jh.pyphmm_lines(open(log).read())
        assert len([ln for ln in lines if " PairHMM: backend " in ln]) == 1, lines
        summaries = [ln for ln in lines if " PairHMM summary: " in ln]
        assert summaries
        # Each task's done() logs the executor's running totals; two tasks
        # ending together may print theirs out of order, so the largest is
        # the final count, not necessarily the last line.
        calls += max(int(ln.split("summary: ")[1].split(" calls")[0]) for ln in summaries)
    assert calls == N_REGIONS
