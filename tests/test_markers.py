"""The test tiers' markers (pyproject.toml, tests/README.md), checked from
the sources; tests/conftest.py checks them again while the tests run.

- Every marker a test file uses is registered (``--strict-markers`` fails
  the whole collection on a typo; this names the file and the marker).
- A test that starts a JVM carries ``jvm``: through jpype, a devtools helper
  or class that starts one (found by following the calls into devtools/),
  a java, javac, javap, jar or spark-submit command, a child Python whose
  code does so, or a fixture that does any of these.
- A test skipped where no CUDA device is usable (its skipif reads
  ``cuda_usable`` or counts CUDA devices) carries ``gpu``.
"""

from __future__ import annotations

import ast
import os
import re
import textwrap

import pytest

from devtools import ROOT

TESTS = os.path.join(ROOT, "tests")
BUILTIN_MARKS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}
JVM_COMMANDS = {"java", "javac", "javap", "jar", "spark-submit"}
# What a skip condition reads when it asks for a CUDA device.
GPU_CONDITION = re.compile(r"cuda_usable|_cuda_devices|cuDeviceGetCount")
# Packages whose code is followed: the calls into them are the tests' tools.
FOLLOWED = ("devtools", "tests")


def module_path(name: str) -> str | None:
    """The file of a followed module (devtools.x.y or a test module), else None."""
    parts = name.split(".")
    if parts[0] == "devtools":
        base = os.path.join(ROOT, *parts)
    elif len(parts) == 1 and (parts[0].startswith("test_") or parts[0] == "conftest"):
        base = os.path.join(TESTS, parts[0])
    else:
        return None
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.exists(path):
            return path
    return None


def mark_names(node) -> set:
    """X of every pytest.mark.X under node."""
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == "mark":
            if isinstance(n.value.value, ast.Name) and n.value.value.id == "pytest":
                names.add(n.attr)
    return names


def is_fixture(node) -> bool:
    return isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list)


def inert_strings(node) -> set:
    """ids of the string constants under node that start nothing: docstrings,
    names given to shutil.which (a check that Java is there), dict keys,
    subscripts, set members and strings compared with."""
    skip = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Module)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("which"):
            skip.update(id(a) for a in n.args)
        elif isinstance(n, ast.Dict):
            skip.update(id(k) for k in n.keys if k is not None)
        elif isinstance(n, ast.Subscript):
            skip.add(id(n.slice))
        elif isinstance(n, ast.Set):
            skip.update(id(e) for e in n.elts)
        elif isinstance(n, ast.Compare):
            skip.update(id(e) for e in [n.left, *n.comparators])
    return skip


class Module:
    """One source file: its imports, top-level definitions and marks."""

    def __init__(self, name: str, source: str, package: str = ""):
        self.name, self.package = name, package
        self.source = source
        self.tree = ast.parse(source)
        self.defs = {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                self.defs[node.name] = node
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.defs[t.id] = node.value
        self.imports = self.bindings(self.tree.body)
        self.marks = mark_names(self.defs["pytestmark"]) if "pytestmark" in self.defs else set()

    def resolve(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module
        parts = self.package.split(".")[: len(self.package.split(".")) - node.level + 1]
        return ".".join(parts + ([node.module] if node.module else []))

    def bindings(self, body) -> dict:
        """name -> ("module", M) or ("attr", M, A) for the imports directly in body."""
        out = {}
        for node in body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    out[a.asname or a.name.split(".")[0]] = ("module", a.name if a.asname else a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                mod = self.resolve(node)
                for a in node.names:
                    full = f"{mod}.{a.name}"
                    is_module = module_path(full) is not None or full.startswith("jpype")
                    out[a.asname or a.name] = ("module", full) if is_module else ("attr", mod, a.name)
        return out

    def local_bindings(self, node) -> dict:
        inner = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
        return dict(self.imports, **self.bindings(inner))


class JvmFinder:
    """Why a definition starts a JVM (a chain of names), or None."""

    def __init__(self):
        self.modules = {}
        self.memo = {}

    def module(self, name: str) -> Module | None:
        if name not in self.modules:
            path = module_path(name)
            package = name if path and path.endswith("__init__.py") else name.rpartition(".")[0]
            self.modules[name] = Module(name, open(path).read(), package) if path else None
        return self.modules[name]

    def definition(self, mod: Module, name: str) -> str | None:
        key = (mod.name, name)
        if key not in self.memo:
            self.memo[key] = None  # (a cycle starts nothing by itself)
            node = mod.defs.get(name)
            why = self.node(mod, node, fixtures=is_fixture(node)) if node is not None else None
            self.memo[key] = f"{name} -> {why}" if why else None
        return self.memo[key]

    def imported(self, binding) -> str | None:
        if binding[1] == "jpype" or binding[1].startswith("jpype."):
            return "jpype"
        if binding[0] == "attr":
            mod = self.module(binding[1])
            return self.definition(mod, binding[2]) if mod else None
        return None

    def fixture(self, mod: Module, name: str) -> str | None:
        if name in mod.defs:
            return self.definition(mod, name)
        if name in mod.imports:
            return self.imported(mod.imports[name])
        conftest = self.module("conftest")
        return self.definition(conftest, name) if conftest and mod is not conftest else None

    def node(self, mod: Module, node, fixtures: bool = False) -> str | None:
        """The first JVM start found in node (decorators left out: they mark,
        not run); a fixture's or a test's arguments are fixtures."""
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            if fixtures or node.name.startswith("test"):
                for arg in node.args.args if isinstance(node, ast.FunctionDef) else []:
                    why = self.fixture(mod, arg.arg)
                    if why:
                        return f"fixture {why}"
            parts = node.body
        else:
            parts = [node]
        names = mod.local_bindings(node)
        inert = inert_strings(node)
        for part in parts:
            for n in ast.walk(part):
                why = None if id(n) in inert else self.sign(mod, names, n)
                if why:
                    return why
        return None

    def sign(self, mod: Module, names: dict, n) -> str | None:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            if n.id in names and n.id not in mod.defs:
                return self.imported(names[n.id])
            if n.id in mod.defs:
                return self.definition(mod, n.id)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in names:
            binding = names[n.value.id]
            if binding[0] == "module":
                if binding[1] == "jpype" or binding[1].startswith("jpype."):
                    return "jpype"
                target = self.module(binding[1])
                return self.definition(target, n.attr) if target else None
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            return self.string(mod, n.value)
        return None

    def string(self, mod: Module, text: str) -> str | None:
        if text in JVM_COMMANDS:
            return f"the {text} command"
        if "import jpype" in text:
            return "child code that imports jpype"
        if "import" in text and "\n" in text:  # a child Python's code
            try:
                child = Module(f"{mod.name}:child", textwrap.dedent(text), mod.package)
            except SyntaxError:
                return None
            why = self.node(child, child.tree)
            return f"child code: {why}" if why else None
        return None


def defined_tests(mod: Module):
    for node in mod.tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            yield node


def own_marks(mod: Module, fn) -> set:
    """The test's marks: its decorators' (marks held in module-level names
    included) and the module's pytestmark."""
    marks = set(mod.marks)
    for d in fn.decorator_list:
        marks |= mark_names(d)
        for n in ast.walk(d):
            if isinstance(n, ast.Name) and n.id in mod.defs and not isinstance(mod.defs[n.id], ast.FunctionDef):
                marks |= mark_names(mod.defs[n.id])
    return marks


def reads_gpu(mod: Module, node, seen) -> bool:
    """Whether an expression reads a CUDA device's presence, following the
    module-level names it uses."""
    if GPU_CONDITION.search(ast.unparse(node)):
        return True
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in mod.defs and n.id not in seen:
            seen.add(n.id)
            if reads_gpu(mod, mod.defs[n.id], seen):
                return True
    return False


def without_gpu(mod: Module, condition) -> bool:
    """Whether a skip condition holds where no CUDA device is (it reads one
    and negates it or counts too few), not where one is."""
    text = ast.unparse(condition)
    return reads_gpu(mod, condition, set()) and bool(re.search(r"\bnot\b|<", text))


def skip_conditions(mod: Module, node, seen):
    """The conditions of the skipif marks under node (marks held in
    module-level names included)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("mark.skipif") and n.args:
            yield n.args[0]
        elif isinstance(n, ast.Name) and n.id in mod.defs and n.id not in seen:
            seen.add(n.id)
            if not isinstance(mod.defs[n.id], (ast.FunctionDef, ast.ClassDef)):
                yield from skip_conditions(mod, mod.defs[n.id], seen)


def gpu_skip(mod: Module, fn) -> bool:
    """Whether the test skips where no CUDA device is usable: a skipif mark
    (its own or the module's), or pytest.skip under an if that asks."""
    marks = list(fn.decorator_list) + ([mod.defs["pytestmark"]] if "pytestmark" in mod.defs else [])
    if any(without_gpu(mod, c) for m in marks for c in skip_conditions(mod, m, set())):
        return True
    for n in ast.walk(fn):
        if isinstance(n, ast.If) and "pytest.skip" in ast.unparse(n.body) and without_gpu(mod, n.test):
            return True
    return False


def missing_markers(mod: Module, finder: JvmFinder) -> list:
    problems = []
    for fn in defined_tests(mod):
        marks = own_marks(mod, fn)
        why = finder.node(mod, fn)
        if why and "jvm" not in marks:
            problems.append(f"{mod.name}::{fn.name} starts a JVM ({why}) but lacks @pytest.mark.jvm")
        if gpu_skip(mod, fn) and "gpu" not in marks:
            problems.append(f"{mod.name}::{fn.name} skips without a CUDA device but lacks @pytest.mark.gpu")
    return problems


def module_names():
    """The test modules (this one holds unmarked examples as data)."""
    names = (f[:-3] for f in os.listdir(TESTS) if f.startswith("test_") and f.endswith(".py"))
    return sorted(n for n in names if n != "test_markers")


def registered_markers(config) -> set:
    """The markers pyproject.toml registers (a typo elsewhere fails the run)."""
    assert "--strict-markers" in config.getini("addopts")
    return {m.split(":")[0].strip() for m in config.getini("markers")}


def test_every_marker_used_is_registered(pytestconfig):
    known = registered_markers(pytestconfig) | BUILTIN_MARKS
    assert {"gpu", "jvm", "slow", "packaging", "aarch64"} <= known
    finder = JvmFinder()
    unknown = []
    for name in module_names() + ["conftest"]:
        mod = finder.module(name)
        unknown += [f"{name}: pytest.mark.{m}" for m in sorted(mark_names(mod.tree) - known)]
    assert not unknown, unknown


def test_tests_that_start_a_jvm_or_need_a_gpu_carry_the_marker():
    finder = JvmFinder()
    problems = []
    for name in module_names():
        problems += missing_markers(finder.module(name), finder)
    assert not problems, "\n".join(problems)


# ---- the check itself fails where a marker is missing ----------------------------

UNMARKED = '''
import pytest
import pyphmm
from devtools.oracle import gkl as gkl_oracle
from devtools.oracle import java_harness as jh
from devtools.oracle.gkl_sw import GklSmithWaterman, STRATEGIES

HAVE_GPU = pyphmm.info()["cuda_usable"]
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no usable CUDA device")
CHILD = """
import jpype
jpype.startJVM()
"""

@pytest.fixture
def aligner():
    return GklSmithWaterman()

def test_fixture(gkl_jvm): pass
def test_own_fixture(aligner): pass
def test_helper_class(): GklSmithWaterman()
def test_module_function(): gkl_oracle.start_jvm()
def test_harness(tmp_path): jh.compile_sources(tmp_path, [], [])
def test_command(): subprocess.run(["javap", "-version"])
def test_child(): run_python(CHILD)
@needs_gpu
def test_gpu(): pass
def test_gpu_inline():
    if not pyphmm.info()["cuda_usable"]:
        pytest.skip("no GPU")
def test_constants_only(): assert STRATEGIES and gkl_oracle.jar_dir()
@pytest.mark.jvm
def test_marked(gkl_jvm): pass
'''


def test_the_check_finds_every_unmarked_jvm_and_gpu_test():
    finder = JvmFinder()
    mod = Module("test_unmarked", UNMARKED)
    problems = missing_markers(mod, finder)
    lacking = sorted(p.split("::")[1].split()[0] for p in problems)
    assert lacking == sorted(
        [
            "test_fixture",
            "test_own_fixture",
            "test_helper_class",
            "test_module_function",
            "test_harness",
            "test_command",
            "test_child",
            "test_gpu",
            "test_gpu_inline",
        ]
    ), "\n".join(problems)
    # and marking them silences it
    marked = UNMARKED.replace("\ndef test_", "\n@pytest.mark.jvm\n@pytest.mark.gpu\ndef test_")
    assert missing_markers(Module("test_marked", marked), finder) == []


@pytest.mark.parametrize("typo", ["jmv", "GPU", "slow_"])
def test_an_unregistered_marker_is_named(pytestconfig, typo):
    mod = Module("test_typo", f"import pytest\n@pytest.mark.{typo}\ndef test_x(): pass\n")
    assert mark_names(mod.tree) - (registered_markers(pytestconfig) | BUILTIN_MARKS) == {typo}
