"""Reading and writing models without destroying anything, keeping external data working.

- :func:`load`: the model without its external data (any size), after ``onnx.checker``.
- :func:`check_output_paths`: refuses output paths that are the input, a file the input
  references (its external data), another output, or an existing non-regular file.
- :func:`save`: writes through temporary files next to the target, lets a ``verify`` callback
  check the written model (checker, an ORT session, validation) *before* anything replaces the
  target, then renames. External data stays where it is when the output is in the input's folder;
  otherwise it is streamed (1 MiB at a time, never the whole model in memory) into a new
  ``<name>.<id>.data`` beside the output, and data files of the replaced output are removed after
  the new model is in place. On every error all temporary files are removed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator

import onnx
from onnx.external_data_helper import uses_external_data

from ort_ops.files import atomic_write_bytes, check_writable_target, temporary_path

_CHUNK = 1 << 20


class ModelError(Exception):
    """An input model that cannot be read or is not valid ONNX, or an output that must not be
    written (message: one line)."""


def load(path: str) -> onnx.ModelProto:
    """The model at ``path`` (external data not loaded) after ``onnx.checker``; else ModelError."""
    try:
        model = onnx.load(path, load_external_data=False)
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a directory") from None
    except Exception as exc:
        raise ModelError(f"{path}: not a readable ONNX model ({type(exc).__name__})") from None
    if not model.HasField("graph"):
        raise ModelError(f"{path}: not a readable ONNX model (no graph)")
    try:
        onnx.checker.check_model(path)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{path}: invalid ONNX model: {first}") from None
    return model


def _tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for g in attr.graphs:
                yield from _tensors(g)


def external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """Every tensor of the model (initializers, tensor attributes, subgraphs) in external data."""
    return [t for t in _tensors(model.graph) if uses_external_data(t)]


def _location(tensor: onnx.TensorProto) -> str:
    return next((e.value for e in tensor.external_data if e.key == "location"), "")


def referenced_files(model: onnx.ModelProto, base_dir: str) -> set[str]:
    """Absolute real paths of the external data files ``model`` reads."""
    return {os.path.realpath(os.path.join(base_dir, _location(t))) for t in external_tensors(model)}


def _same(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output_paths(input_path: str, model: onnx.ModelProto, outputs: list[tuple[str, str]]) -> None:
    """ModelError when an output path would destroy the input or its data, collides with another
    output, or is an existing file that is not a regular file. ``outputs``: (role, path)."""
    base = os.path.dirname(os.path.abspath(input_path))
    protected = [("the input model", input_path)] + [
        (f"external data of {input_path}", p) for p in sorted(referenced_files(model, base))]
    seen: list[tuple[str, str]] = []
    for role, path in outputs:
        for what, other in protected + seen:
            if os.path.exists(path) and os.path.exists(other) and _same(path, other) or \
                    os.path.realpath(path) == os.path.realpath(other):
                raise ModelError(f"{role} {path} is {what}: refusing to overwrite it")
        try:
            check_writable_target(path)
        except ValueError as exc:
            raise ModelError(f"{role} {exc}") from None
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise ModelError(f"{role} {path}: folder {parent} does not exist")
        seen.append((role, path))


def save(model: onnx.ModelProto, path: str, *, source_dir: str | None = None,
         verify: Callable[[str], None] | None = None) -> None:
    """Write ``model`` (its external data relative to ``source_dir``) to ``path``; see the
    module docstring. ``verify(written_path)`` may raise to stop the write (nothing is left)."""
    path = os.path.abspath(path)
    check_writable_target(path)
    out_dir, name = os.path.split(path)
    source_dir = os.path.abspath(source_dir) if source_dir is not None else out_dir
    external = external_tensors(model)
    copy_data = bool(external) and os.path.realpath(source_dir) != os.path.realpath(out_dir)
    old_data = _our_data_files(path) if copy_data or os.path.exists(path) else set()
    with contextlib.ExitStack() as stack:
        if copy_data:
            model = _copy_proto(model)
            external = external_tensors(model)
            data_name = f"{name}.{secrets.token_hex(4)}.data"
            data_tmp = stack.enter_context(temporary_path(os.path.join(out_dir, name + ".data")))
            _stream_external(external, source_dir, data_tmp)
            _relocate(external, os.path.basename(data_tmp))
        model_tmp = stack.enter_context(temporary_path(path))
        _write(model_tmp, model, path)
        if verify is not None:
            verify(model_tmp)
        if copy_data:
            _relocate(external, data_name)
            _write(model_tmp, model, path)
            os.replace(data_tmp, os.path.join(out_dir, data_name))
        os.replace(model_tmp, path)
    keep = referenced_files(model, out_dir)
    for stale in old_data - keep:
        with contextlib.suppress(OSError):
            os.unlink(stale)


def _write(tmp: str, model: onnx.ModelProto, final: str) -> None:
    """Serialise to ``tmp`` with the mode ``final`` has (or the umask's)."""
    data = model.SerializeToString()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    from ort_ops.files import umask

    try:
        mode = os.stat(final).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~umask()
    os.chmod(tmp, mode)


def _copy_proto(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def _stream_external(tensors: list[onnx.TensorProto], source_dir: str, target: str) -> None:
    """Copy each tensor's bytes from its file into ``target`` (64-byte aligned), chunk by chunk,
    and point the tensor at its new offset (the location is set by the caller)."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        for tensor in tensors:
            info = {e.key: e.value for e in tensor.external_data}
            src = os.path.join(source_dir, info.get("location", ""))
            offset = int(info.get("offset", 0))
            with open(src, "rb") as f:
                length = int(info["length"]) if "length" in info else os.fstat(f.fileno()).st_size - offset
                pad = (-out.tell()) % 64
                out.write(b"\0" * pad)
                start = out.tell()
                f.seek(offset)
                remaining = length
                while remaining:
                    chunk = f.read(min(_CHUNK, remaining))
                    if not chunk:
                        raise ModelError(f"{src}: ends before the {length} bytes of tensor {tensor.name} "
                                         f"at offset {offset}")
                    out.write(chunk)
                    remaining -= len(chunk)
            _set(tensor, offset=str(start), length=str(length))
        out.flush()
        os.fsync(out.fileno())


def _set(tensor: onnx.TensorProto, **values: str) -> None:
    entries = {e.key: e.value for e in tensor.external_data}
    entries.update(values)
    del tensor.external_data[:]
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def _relocate(tensors: list[onnx.TensorProto], location: str) -> None:
    for tensor in tensors:
        _set(tensor, location=location)


def _our_data_files(path: str) -> set[str]:
    """Data files a previous save of ``path`` wrote (``<name>.<id>.data``, referenced by it)."""
    if not os.path.isfile(path):
        return set()
    try:
        previous = onnx.load(path, load_external_data=False)
    except Exception:
        return set()
    out_dir, name = os.path.split(path)
    return {p for p in referenced_files(previous, out_dir)
            if os.path.basename(p).startswith(name + ".") and p.endswith(".data")
            and os.path.dirname(p) == os.path.realpath(out_dir)}


def write_text(path: str, text: str) -> None:
    """A report file, atomically, with the usual permissions."""
    atomic_write_bytes(path, text.encode("utf-8"))


__all__ = ["ModelError", "check_output_paths", "external_tensors", "load", "referenced_files", "save",
           "write_text"]
