"""A sweep's output directory: checked before any work, one live sweep at a time (a lock that
dies with its process), every file written under a unique temporary name and renamed into
place, and one record per finished point (what a rerun resumes from)."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import socket
import time
import uuid
from typing import Any, Callable, Optional

from svtjax.sweep.config import SweepConfig, SweepLockedError, _fail
from svtjax.sweep.grid import Point

LOCK_FILE = ".svtjax-sweep.lock"
"""The lock file of a sweep's output directory (holds the pid and host of the live sweep)."""


def _prepare_out(out: Any) -> pathlib.Path:
    """The output directory ``out``, created if missing and checked to be writable.

    Raises:
      SweepConfigError: ``out`` is a file, or the directory cannot be created or written.
    """
    if isinstance(out, bool) or not isinstance(out, (str, os.PathLike)) or not str(out):
        raise _fail(f"out must be a directory path; got {out!r}")
    path = pathlib.Path(out)
    if path.exists() and not path.is_dir():
        raise _fail(f"out {str(path)!r} is an existing file, not a directory; give a directory "
                    "(it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _fail(f"cannot create the output directory {str(path)!r}: "
                    f"{err.strerror or err}") from err
    if not os.access(path, os.W_OK | os.X_OK):
        raise _fail(f"cannot write in the output directory {str(path)!r} (permission denied); "
                    "give another out")
    points = path / "points"
    if points.exists() and not points.is_dir():
        raise _fail(f"{str(points)!r} is a file; a sweep keeps its finished points in a directory "
                    "of that name: move the file or give another out")
    if points.is_dir() and not os.access(points, os.W_OK | os.X_OK):
        raise _fail(f"cannot write in {str(points)!r} (permission denied); give another out")
    for name in OUTPUT_FILES:
        target = path / name
        if target.is_dir():
            raise _fail(f"{str(target)!r} is a directory; the sweep writes a file of that name: "
                        "move it or give another out")
    return path


OUTPUT_FILES = ("results.csv", "results.parquet", "results.json")
"""The files a sweep writes in its output directory (besides ``points/`` and the plot)."""


class _OutputLock:
    """One live sweep per output directory.

    The lock is ``fcntl.flock`` on :data:`LOCK_FILE`, which the kernel releases when its
    process ends however it ends (SIGKILL included), so a killed sweep never leaves a lock
    behind; the file records the holder's pid, host and start time for the message a second
    sweep gets. Where ``flock`` is not available (no ``fcntl``; a filesystem without locks),
    the lock is the file itself, created exclusively: a lock whose holder is on this host and
    no longer running is stale and taken over; one held from another host is reported with
    its pid and host (delete the file once that process is gone).
    """

    def __init__(self, outdir: pathlib.Path):
        self.path = pathlib.Path(outdir) / LOCK_FILE
        self.fd: Optional[int] = None
        self.owned_file = False

    @staticmethod
    def _me() -> bytes:
        return json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                           "started": time.strftime("%Y-%m-%d %H:%M:%S")}).encode()

    @staticmethod
    def _holder(path: pathlib.Path) -> dict:
        try:
            with open(path, encoding="utf-8") as f:
                rec = json.load(f)
            return rec if isinstance(rec, dict) else {}
        except (OSError, ValueError):
            return {}

    def _refuse(self, holder: dict) -> SweepLockedError:
        who = (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, started "
               f"{holder.get('started', '?')}") if holder else "a process"
        return SweepLockedError(
            f"another sweep ({who}) is writing to {str(self.path.parent)!r}; wait for it to "
            "finish or give another out (two sweeps on one directory would compute every point "
            "twice)")

    def acquire(self) -> None:
        """Takes the lock, or raises :class:`SweepLockedError` naming the live holder."""
        try:
            import fcntl
        except ImportError:  # not POSIX
            fcntl = None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise _fail(f"cannot write the lock file {str(self.path)!r}: "
                        f"{err.strerror or err}") from err
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refuse(self._holder(self.path)) from None
            except OSError:  # no locks on this filesystem
                os.close(fd)
            else:
                os.ftruncate(fd, 0)
                os.write(fd, self._me())
                self.fd = fd
                return
        else:
            os.close(fd)
        self._acquire_file()

    def _acquire_file(self) -> None:
        path = self.path.with_name(LOCK_FILE + ".pid")
        for _ in range(3):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._holder(path)
                if not _stale(holder, path):
                    raise self._refuse(holder) from None
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                continue
            except OSError as err:
                raise _fail(f"cannot write the lock file {str(path)!r}: "
                            f"{err.strerror or err}") from err
            os.write(fd, self._me())
            os.close(fd)
            self.owned_file = True
            return
        raise self._refuse({})

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the flock
            self.fd = None
        if self.owned_file:
            with contextlib.suppress(OSError):
                os.unlink(self.path.with_name(LOCK_FILE + ".pid"))
            self.owned_file = False


def _stale(holder: dict, path: pathlib.Path) -> bool:
    """Whether a lock file's holder is a process of this host that is no longer running (an
    unreadable lock file older than a few seconds is stale too: a holder writes its record as
    it creates the file)."""
    if not holder:
        try:
            return time.time() - path.stat().st_mtime > 5.0
        except OSError:
            return True
    if holder.get("host") != socket.gethostname():
        return False
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _point_record_path(out: pathlib.Path, pid: str) -> pathlib.Path:
    return out / "points" / f"{pid}.json"


def _atomic_write(path: pathlib.Path, write: Callable[[Any], None], *,
                  to_path: bool = False) -> None:
    """Writes ``path`` through a temporary file of a unique name in the same directory (host,
    pid and a random token: unique across the threads, processes and hosts that share the
    directory), then renames it into place (``os.replace``, atomic on POSIX): a reader sees the
    old file or the new one, never a mix, and two writers never share a temporary file.
    ``write`` gets the open text file, or with ``to_path`` the temporary path to create."""
    path.parent.mkdir(parents=True, exist_ok=True)
    token = f"{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:12]}"
    tmp = path.with_name(f".{path.name}.{token}.tmp")
    try:
        if to_path:
            write(str(tmp))
        else:
            with open(tmp, "x", encoding="utf-8", newline="") as f:
                write(f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_json(path: pathlib.Path, obj: Any) -> None:
    # repr: e.g. Noise objects
    _atomic_write(path, lambda f: json.dump(obj, f, indent=1, sort_keys=True, default=repr))


def _read_record(path: pathlib.Path, pid: str, point: "Point", config: SweepConfig,
                 log: Optional[Callable[[str], None]] = None) -> Optional[dict]:
    """The stored record of ``point`` when it can be reused (``svtjax._records``); an unusable
    one is reported through ``log`` and None is returned, so the point is recomputed."""
    from svtjax import _records

    rec, why = _records.read(path, pid, seed=point.seed(config), metrics=config.metrics,
                             trials=config.trials, quantiles=config.quantiles)
    if why is not None and log is not None:
        log(f"[sweep] {path} {why}; recomputing the point")
    return rec


def _wait_for(config, outdir, points, ids, records, timeout, log) -> None:
    """Process 0 collects the other processes' finished points from ``outdir/points``."""
    deadline = time.monotonic() + timeout
    announced = False
    while True:
        for pid, point in zip(ids, points):
            if pid not in records:
                rec = _read_record(_point_record_path(outdir, pid), pid, point, config)
                if rec is not None:
                    records[pid] = rec
        missing = [p for p in ids if p not in records]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(missing)} point(s) computed by other processes did not "
                               f"appear in {outdir / 'points'} within {timeout:.0f}s")
        if not announced:
            log(f"[sweep] process 0: waiting for {len(missing)} point(s) from other processes")
            announced = True
        time.sleep(0.2)
