"""Which execution provider ran each node: read from ONNX Runtime's profile, not assumed."""

from __future__ import annotations

import json
import os
from typing import NamedTuple

import onnxruntime as ort


class NodeRun(NamedTuple):
    node: str
    op_type: str
    provider: str


def enable(session_options: ort.SessionOptions, prefix: str) -> ort.SessionOptions:
    """Turn on profiling with the profile file written under ``prefix`` (a path prefix)."""
    session_options.enable_profiling = True
    session_options.profile_file_prefix = prefix
    return session_options


def node_runs(session: ort.InferenceSession, keep_file: bool = False) -> list[NodeRun]:
    """End profiling of a session that has run; one entry per node (Memcpy nodes included)
    with the provider that ran it. Ending profiling can happen once per session."""
    path = session.end_profiling()
    if not path:
        raise RuntimeError("profiling was not enabled on this session (see profiling.enable)")
    try:
        with open(path, encoding="utf-8") as f:
            events = json.load(f)
    finally:
        if not keep_file:
            os.remove(path)
    runs: dict[str, NodeRun] = {}
    for event in events:
        args = event.get("args", {})
        if event.get("cat") != "Node" or "provider" not in args or "op_name" not in args:
            continue
        name = event["name"]
        for suffix in ("_kernel_time", "_fence_before", "_fence_after"):
            name = name.removesuffix(suffix)
        runs[name] = NodeRun(name, args["op_name"], args["provider"])
    return list(runs.values())

