"""The package's readers of a path a user gives (a model file's weights, a compiled folder's files,
an exported workload): what is not a regular file is refused before anything reads it, as C++'s
require_regular_file (include/condbench/input_file.h) refuses it. Opening a FIFO for reading waits
for a writer that may never come; here it is opened without waiting and refused."""
import os
import stat
from typing import IO, Any


class NotRegularFile(OSError):
    """A FIFO, a socket, a device or a folder where a file is read. An OSError: a reader that handles
    an unreadable file handles this one alike."""


def kind(mode: int) -> str:
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "a device")


def open_regular(path: str, mode: str = "rb", **options: Any) -> IO[Any]:
    """open(path, mode) for reading, of a regular file only (a link to one is one): raises
    NotRegularFile for anything else without blocking on it, FileNotFoundError where it is absent."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"{path}: not a regular file ({kind(st.st_mode)}): give a file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode, **options)
    except BaseException:
        os.close(fd)
        raise


def not_replaceable(path: str) -> str | None:
    """What `path` is where a writer must not replace it ("a symbolic link", "a folder", "a FIFO", "a
    socket", "a device"), or None where it is absent or a regular file: condbench's output policy
    (include/condbench/output_file.h)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    return "a symbolic link" if stat.S_ISLNK(mode) else kind(mode)


def require_regular(path: str) -> None:
    """Raises NotRegularFile where `path` exists and is not a regular file (before torch.load, say,
    which opens it itself)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{path}: not a regular file ({kind(mode)}): give a file")


def workload_folders(root: str) -> list[str]:
    """The model folders of an exported workload (condbench --export-workload=ROOT writes one per model,
    each holding a workload.json), or ROOT alone where it is one of them (the folder the export prints)."""
    if os.path.lexists(os.path.join(root, "workload.json")):
        return [root]
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    return [os.path.join(root, name) for name in names if os.path.lexists(os.path.join(root, name, "workload.json"))]
