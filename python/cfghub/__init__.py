"""cfghub: the interoperability hub for control-flow profiles, in Python.

Read a profile of any format cfghub reads (pprof, perf.data, Callgrind, DCFG, folded stacks,
speedscope, the Firefox Profiler's, ...) once, then summarise it, take its tables as pyarrow
tables or write it in any format::

    import cfghub
    p = cfghub.read("app.pb.gz")            # a path, or bytes (name= tells the format by suffix)
    p.info()                                # what `cfghub info --json` prints, as a dict
    t = p.tables()                          # dict of pyarrow.Table, the tables format's schema
    t["samples"].to_pandas()
    p.write("app.fxprof.json.gz")
    cfghub.convert("perf.data", "app.folded", symbols="./app")
    cfghub.merge(["a.pb.gz", "b.callgrind"], "ab.pb.gz")

Keyword arguments are the command line's options: ``from_="pprof"`` is ``--from pprof``,
``address_step=4`` is ``--address-step 4``, ``True`` turns a flag on, a list repeats an
option, ``labels={"service": "web"}`` is ``--label service=web``. Errors raise
:class:`cfghub.Error` (``InputError``, ``UsageError``, ``FileError``, ``UnsupportedError``)
with the command line's message and its ``file``, ``line``, ``byte``, ``path`` and ``hint``.
Warnings go to standard error as the command line prints them, unless ``quiet=True``.
"""

from ._cfghub import (
    Error,
    FileError,
    InputError,
    Profile,
    UnsupportedError,
    UsageError,
    __version__,
    convert,
    formats,
    merge,
    read,
    run,
)

__all__ = [
    "Error",
    "FileError",
    "InputError",
    "Profile",
    "UnsupportedError",
    "UsageError",
    "__version__",
    "convert",
    "formats",
    "merge",
    "read",
    "run",
]
