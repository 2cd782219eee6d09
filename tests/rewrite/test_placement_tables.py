"""The generated table of the CANN EP's kernels (rewrite/placement/cann_ep_kernels.py) is what
scripts/gen_cann_ep_kernels.py writes from the onnxruntime-cann wheel's provider library today.

The library is the running onnxruntime's (in .venv-cann) or, from the main suite, the checkout's
.venv-cann one; without it (or without binutils' ``nm``) the test skips saying which is missing."""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARY = "libonnxruntime_providers_cann.so"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_cann_ep_kernels", os.path.join(REPO, "scripts",
                                                                                      "gen_cann_ep_kernels.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _provider_library() -> str:
    import onnxruntime

    candidates = [os.path.join(os.path.dirname(onnxruntime.__file__), "capi", LIBRARY),
                  *sorted(glob.glob(os.path.join(REPO, ".venv-cann", "lib", "python*", "site-packages",
                                                 "onnxruntime", "capi", LIBRARY)))]
    found = next((c for c in candidates if os.path.isfile(c)), None)
    if found is None:
        pytest.skip(f"no {LIBRARY} (the onnxruntime-cann wheel): looked in {candidates}; scripts/setup.sh "
                    "makes .venv-cann")
    if shutil.which("nm") is None:
        pytest.skip("no nm (binutils) to read the provider library's kernel symbols")
    return found


gen = _generator()


def test_cann_ep_kernel_table_is_current():
    reason = gen.stale_reason(gen.TABLE, _provider_library())
    assert reason is None, f"{reason}: run .venv-cann/bin/python scripts/gen_cann_ep_kernels.py"


@pytest.mark.parametrize("edit", ["drop a dtype", "add an op", "drop the last line"])
def test_a_stale_table_is_reported(tmp_path, edit):
    library = _provider_library()
    with open(gen.TABLE, encoding="utf-8") as f:
        text = f.read()
    if edit == "drop a dtype":
        stale = text.replace("(13, None, ('float16', 'float32', 'int32')),", "(13, None, ('float16', 'float32')),", 1)
    elif edit == "add an op":
        stale = text.replace("KERNELS = {\n", "KERNELS = {\n    'Foo': [\n        (1, None, ('float32',)),\n    ],\n")
    else:
        stale = text[: text.rstrip("\n").rindex("\n") + 1]
    assert stale != text
    copy = tmp_path / "cann_ep_kernels.py"
    copy.write_text(stale, encoding="utf-8")
    reason = gen.stale_reason(str(copy), library)
    assert reason is not None and str(copy) in reason
