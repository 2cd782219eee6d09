"""Writing files the way every part of the project does: atomically, with the user's permissions.

:func:`atomic_write` writes through a temporary file in the target's directory and renames it over
the target, so a reader (or a crash, a full disk, kill -9) never leaves a half-written file: the
old content or the new one, nothing between. The new file gets the mode of the file it replaces,
or ``0o666`` minus the umask for a new file (what ``open(path, "w")`` would give). Temporary files
are removed on every error; those of a writer that was killed are removed by the next write to the
same path. Targets that exist and are not regular files (symlinks, FIFOs, devices, directories)
are refused: replacing them would silently destroy what they are.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from typing import BinaryIO

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text", "check_writable_target",
           "temporary_path", "umask"]

_TMP = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-[0-9a-f]{8}$")


def umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # not thread-safe, only where /proc is missing
    os.umask(mask)
    return mask


def check_writable_target(path: str | os.PathLike) -> None:
    """``ValueError`` if ``path`` exists and is not a regular file (never followed)."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode)
                else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        raise ValueError(f"{path}: refusing to replace {kind} (write to a regular file path)")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(directory: str, name: str) -> None:
    """Temporary files of ``name`` left by writers that no longer run."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return
    for entry in entries:
        m = _TMP.match(entry)
        if m and m.group("name") == name and not _pid_alive(int(m.group("pid"))):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, entry))


def _new_mode(path: str) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~umask()


@contextlib.contextmanager
def temporary_path(path: str | os.PathLike) -> Iterator[str]:
    """A fresh temporary path next to ``path`` (``.<name>.tmp-<pid>-<hex>``), removed on exit
    unless it was renamed away; stale ones of dead writers are removed first."""
    path = os.path.abspath(os.fspath(path))
    directory, name = os.path.split(path)
    _remove_stale(directory, name)
    tmp = os.path.join(directory, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        yield tmp
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Write ``path`` atomically: ``write(f)`` fills a temporary file that then replaces ``path``."""
    path = os.fspath(path)
    check_writable_target(path)
    mode = _new_mode(path)
    with temporary_path(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    _fsync_directory(os.path.dirname(os.path.abspath(path)))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:  # some file systems cannot fsync a directory
        if e.errno not in (errno.EINVAL, errno.EBADF, errno.EROFS):
            raise
    finally:
        os.close(fd)
