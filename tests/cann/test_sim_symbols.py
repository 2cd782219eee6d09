"""The simulator libraries have the exact file names / SONAMEs the CANN EP needs and export
every ACL and GE symbol its provider library imports."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

LIBS = ("libascendcl.so", "libacl_op_compiler.so", "libfmk_onnx_parser.so")


def tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"binutils '{name}' is not installed")
    return path


def provider_lib() -> Path:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime-cann is not installed in this environment")
    lib = Path(ort.__file__).parent / "capi" / "libonnxruntime_providers_cann.so"
    if not lib.is_file():
        pytest.skip(f"{lib} missing: this onnxruntime is not the onnxruntime-cann wheel")
    return lib


def test_file_names_and_sonames(sim_dir):
    readelf = tool("readelf")
    for name in LIBS:
        out = subprocess.run([readelf, "-d", str(Path(sim_dir) / name)], capture_output=True, text=True,
                             check=True).stdout
        assert re.search(r"\(SONAME\)\s+Library soname: \[" + re.escape(name) + r"\]", out), out


def test_every_symbol_the_provider_imports_is_exported(sim_dir):
    nm = tool("nm")
    needed_libs = subprocess.run([tool("readelf"), "-d", str(provider_lib())], capture_output=True, text=True,
                                 check=True).stdout
    for name in LIBS:
        assert f"[{name}]" in needed_libs
    undefined = subprocess.run([nm, "-D", "--undefined-only", str(provider_lib())], capture_output=True, text=True,
                               check=True).stdout.split()
    wanted = {s for s in undefined if s.startswith(("acl", "_ZN2ge", "_ZNK2ge"))}
    defined = set()
    for name in LIBS:
        out = subprocess.run([nm, "-D", "--defined-only", str(Path(sim_dir) / name)], capture_output=True, text=True,
                             check=True).stdout
        defined |= {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert len(wanted) >= 60  # about 60 acl* functions and 8 ge:: members
    assert sorted(wanted - defined) == []
