"""The exporter's own process metrics: prometheus_client's `ProcessCollector`, its six
`process_*` families with its names, help, types and order, but with the open file
descriptors counted without listing /proc/self/fd.

Why not the library's collector: it counts `process_open_fds` as the entries of
/proc/self/fd, and the sampler keeps every cgroup's files open, so at 1,000 slices every
scrape lists tens of thousands of entries, each formatted by the kernel and made a string by
Python: a large share of a scrape of idle slices, enough to put it over the budget of
`exporter.1000` (the figures with and without, and the command: BENCHMARKS.md,
"exporter.1000: the library's writer"). `FdCounter` reads the same number more cheaply:

- Linux 6.2 and later report it as the size of /proc/self/fd (proc.rst, "/proc/<pid>/fd"):
  one stat().
- Older kernels (Debian 12's 6.1): one poll() over every descriptor number the process' fd
  table holds (FDSize in /proc/self/status, above every open descriptor). With no events asked
  for and no timeout it waits for nothing and reports POLLNVAL exactly for the numbers that are
  not open (poll(2)). Where ctypes cannot load, the listing after all.

Neither opens a descriptor to count, so the value is one less than the library's, whose count
includes the descriptor it lists /proc/self/fd with. The other families are read as the
library reads them (/proc/self/stat, /proc/self/limits); a test compares them with the
library's collector.
"""

from __future__ import annotations

import os
import resource
import select
from array import array
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

_PROC = "/proc/self"
# struct pollfd { int fd; short events; short revents; }: two ints per descriptor, the second
# (events and revents) zero until poll() writes revents.
_INTS_PER_POLLFD = 2
_POLLFD_BYTES = 8


class FdCounter:
    """Counts the process' open file descriptors (see the module's docstring)."""

    def __init__(self) -> None:
        self._table = array("i")
        self._poll: Callable[[int, int, int], int] | None = None

    def count(self) -> int:
        """The number of open descriptors now; raises OSError when /proc cannot say."""
        size = os.stat(f"{_PROC}/fd").st_size  # 0 before Linux 6.2
        return size if size > 0 else self.polled()

    def polled(self) -> int:
        """The count by poll() over the fd table (any kernel)."""
        size = _fd_table_size()
        if len(self._table) != size * _INTS_PER_POLLFD:
            self._table = array("i", [0]) * (size * _INTS_PER_POLLFD)
            self._table[::_INTS_PER_POLLFD] = array("i", range(size))
        try:
            poll = self._poll or self._libc_poll()
        except (ImportError, OSError, MemoryError):  # no ctypes here: count as the library does
            return len(os.listdir(f"{_PROC}/fd")) - 1
        address = self._table.buffer_info()[0]
        # poll(2) refuses more entries than the soft RLIMIT_NOFILE (EINVAL), and a descriptor
        # opened before a lower limit was set may lie above it: poll the table in steps.
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        step = size if soft == resource.RLIM_INFINITY or not 0 < soft < size else soft
        for start in range(0, size, step):
            if poll(address + start * _POLLFD_BYTES, min(step, size - start), 0) < 0:
                import ctypes

                errno = ctypes.get_errno()
                raise OSError(errno, os.strerror(errno))
        revents = array("h", self._table.tobytes())[3::4]  # the fourth short of each entry
        return size - revents.count(select.POLLNVAL)

    def _libc_poll(self) -> Callable[[int, int, int], int]:
        import ctypes

        poll = ctypes.CDLL(None, use_errno=True).poll
        poll.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int]
        poll.restype = ctypes.c_int
        self._poll = poll
        return poll


def _fd_table_size() -> int:
    """How many descriptor numbers the fd table holds (FDSize in /proc/self/status)."""
    with open(f"{_PROC}/status", "rb") as f:
        status = f.read()
    start = status.index(b"\nFDSize:") + len(b"\nFDSize:")
    return int(status[start:status.index(b"\n", start)])


class ProcessMetrics(Collector):
    """`process_*` as prometheus_client's ProcessCollector writes them, its families in its
    order; `process_open_fds` from `FdCounter`. Nothing when /proc cannot be read."""

    def __init__(self) -> None:
        self.fds = FdCounter()
        self._ticks = float(os.sysconf("SC_CLK_TCK"))
        self._pagesize = resource.getpagesize()
        try:
            with open("/proc/stat", "rb") as f:
                self._btime = next(float(line.split()[1]) for line in f
                                   if line.startswith(b"btime "))
        except (OSError, StopIteration, ValueError):
            self._btime = 0.0

    def collect(self) -> Iterator[Metric]:
        """The six families, or the ones that could be read."""
        if not self._btime:
            return
        try:
            with open(f"{_PROC}/stat", "rb") as f:
                parts = f.read().rpartition(b")")[2].split()
        except OSError:
            pass
        else:
            yield GaugeMetricFamily("process_virtual_memory_bytes",
                                    "Virtual memory size in bytes.", value=float(parts[20]))
            yield GaugeMetricFamily("process_resident_memory_bytes",
                                    "Resident memory size in bytes.",
                                    value=float(parts[21]) * self._pagesize)
            yield GaugeMetricFamily("process_start_time_seconds",
                                    "Start time of the process since unix epoch in seconds.",
                                    value=float(parts[19]) / self._ticks + self._btime)
            yield CounterMetricFamily("process_cpu_seconds_total",
                                      "Total user and system CPU time spent in seconds.",
                                      value=(float(parts[11]) + float(parts[12])) / self._ticks)
        try:
            with open(f"{_PROC}/limits", "rb") as f:
                max_fds = next(float(line.split()[3]) for line in f
                               if line.startswith(b"Max open file"))
            open_fds = self.fds.count()
        except (OSError, StopIteration, ValueError):
            return
        yield GaugeMetricFamily("process_open_fds", "Number of open file descriptors.",
                                value=float(open_fds))
        yield GaugeMetricFamily("process_max_fds", "Maximum number of open file descriptors.",
                                value=max_fds)
