"""Writing the user's output files (--out, --plot, --recalibrate): the one home for the rules.

- A target that exists and is not a regular file (a device such as /dev/full, a FIFO, a folder, a socket) is
  refused: replacing it by rename would destroy it (as root, /dev/full would become a regular file).
- A symlink is written through: the file it points to is replaced, the link stays a link.
- A regular file is replaced atomically: written to a temporary name in the same folder, then renamed, so a
  failed or interrupted write never leaves a partial file; the old file's permissions are kept.
- The extension must be one the writer knows (no CSV silently written to `x.xlsx`).
"""
from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Callable, Iterable

from solver.errors import InputError

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def check_extension(path: str | os.PathLike, flag: str, allowed: Iterable[str]) -> str:
    """The lower-case extension of the name given (a link's own name), if allowed; else one clear error."""
    allowed = tuple(allowed)
    suffix = Path(path).suffix.lower()
    if suffix not in allowed:
        shown = f"'{suffix}' is not a format this writes" if suffix else "has no extension to pick the format"
        raise InputError(flag, f"{path}: {shown}; use {', '.join(allowed)}")
    return suffix


def resolve_target(path: str | os.PathLike, flag: str) -> Path:
    """The regular file a write to `path` must replace: a symlink's target (however many links deep), the
    path itself otherwise. Refuses anything that exists and is not a regular file, and a missing folder."""
    p = Path(path).expanduser()
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:  # a symlink loop, a path through a file, a name too long
        raise InputError(flag, f"cannot write {p}: {exc.strerror or exc}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        via = f" (the link {p} points to {target})" if target != p else ""
        raise InputError(flag, f"{target} exists and is {kind}{via}; give a regular file's path")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(flag, f"folder {folder} does not exist")
    if st is not None and not os.access(target, os.W_OK):
        raise InputError(flag, f"{target} exists and is not writable")
    return target


def new_temp(folder: Path, name: str, suffix: str, flag: str) -> str:
    """Create an empty hidden file beside the target; opened like any new file, so the umask sets its mode
    (tempfile.mkstemp would make it 0600)."""
    for _ in range(100):
        tmp = folder / f".{name}.{secrets.token_hex(4)}{suffix}"
        try:
            with open(tmp, "x"):
                return str(tmp)
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(flag, f"cannot write in {folder}: {exc.strerror or exc}") from None
    raise InputError(flag, f"cannot create a temporary file in {folder}")


def check_writable(path: str | os.PathLike, flag: str) -> Path:
    """Fail before a long run, not after it: the target passes resolve_target and its folder takes a new file."""
    target = resolve_target(path, flag)
    folder = target.parent if str(target.parent) else Path(".")
    os.unlink(new_temp(folder, target.name, ".probe", flag))
    return target


def atomic_write(path: str | os.PathLike, writer: Callable[[str], None], flag: str = "--out") -> Path:
    """Write through a temporary file in the target's folder and rename it into place: never a partial file.
    Returns the path given (a symlink stays one; its target is what gets replaced)."""
    p = Path(path).expanduser()
    target = resolve_target(p, flag)
    folder = target.parent if str(target.parent) else Path(".")
    tmp = new_temp(folder, target.name, ".tmp", flag)
    try:
        writer(tmp)
        if target.is_file():
            shutil.copymode(target, tmp)  # replacing a file keeps its permissions
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(flag, f"cannot write {p}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return p


def write_text(path: str | os.PathLike, text: str, flag: str) -> Path:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)

    return atomic_write(path, write, flag)
