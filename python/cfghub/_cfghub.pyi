"""Type stubs of cfghub's native module (re-exported by the package ``cfghub``)."""

import os
from typing import Any, Dict, Iterable, List, Optional, Union

import pyarrow

_Path = Union[str, "os.PathLike[str]"]
_Option = Union[None, bool, int, str, "os.PathLike[str]", List[Any], Dict[str, Any]]

__version__: str

class Error(Exception):
    """Any error of cfghub; ``str()`` is the command line's message."""

    message: str
    """What was wrong or expected, without the file and place."""
    file: Optional[str]
    """The input or output the error concerns."""
    line: Optional[int]
    """1-based line of a text format where the error was found."""
    byte: Optional[int]
    """Byte offset (in the decompressed content) of a binary format where it was found."""
    path: Optional[str]
    """Path into a JSON document, or a table and row, where it was found."""
    hint: Optional[str]
    """What can be done about it."""

class InputError(Error):
    """The input is not valid in its format."""

class UsageError(Error):
    """What was asked is impossible: an unknown format or option, an output that is an input."""

class FileError(Error):
    """The operating system refused a read or a write."""

class UnsupportedError(Error):
    """A format cannot express what was asked of it."""

class Profile:
    """A profile read into cfghub's model: summarise it, take its tables or write it, as often
    as needed without reading it again."""

    @property
    def name(self) -> str:
        """The input's name: its path, or the name the bytes were given."""
    @property
    def format(self) -> str:
        """The format it was read as (``pprof``, ``callgrind``, ...)."""
    @property
    def events(self) -> List[str]:
        """The names of its events (what its values count: ``samples``, ``cpu``, ``Ir``, ...)."""
    def info(self, top: int = 10) -> Dict[str, Any]:
        """What ``cfghub info --json`` prints of it: processes, threads, images, edges, the
        ``top`` hottest routines and loops, samples, memory."""
    def tables(
        self, profile_id: Optional[str] = None, only: Optional[List[str]] = None
    ) -> Dict[str, pyarrow.Table]:
        """Its tables as the ``tables`` format writes them (docs/formats/tables.md): table name
        to ``pyarrow.Table``, through the Arrow C data interface, no files; those ``only``
        names, or all. Every row's ``profile_id`` is ``profile_id`` (default: the input's name
        up to its first dot)."""
    def write(self, output: _Path, *, quiet: bool = False, **options: _Option) -> None:
        """Writes it to ``output`` in the format ``to=`` or the one the name asks for, with the
        options of ``cfghub convert`` as keywords (``compression="zstd"``, ``pretty=True``)."""

def read(
    source: Union[_Path, bytes, bytearray, memoryview],
    *,
    name: Optional[str] = None,
    quiet: bool = False,
    from_: Optional[str] = None,
    symbols: Union[None, bool, _Path, List[_Path]] = None,
    labels: Optional[Dict[str, str]] = None,
    label_from_path: Optional[str] = None,
    **options: _Option,
) -> Profile:
    """Reads a profile of any format cfghub reads, from a path or from bytes (``name`` names
    them in messages and its suffix may tell the format). Keywords are the options of ``cfghub
    convert``'s reading: ``from_`` (the format), ``symbols`` (binaries that name addresses),
    ``labels``, ``label_from_path``, ``address_step``, ..."""

def convert(
    input: _Path,
    output: _Path,
    *,
    quiet: bool = False,
    from_: Optional[str] = None,
    to: Optional[str] = None,
    symbols: Union[None, bool, _Path, List[_Path]] = None,
    **options: _Option,
) -> None:
    """Converts ``input`` to ``output`` as ``cfghub convert`` does; keywords are its options."""

def merge(
    inputs: Iterable[_Path],
    output: _Path,
    *,
    quiet: bool = False,
    **options: _Option,
) -> None:
    """Sums ``inputs`` into ``output`` exactly, as ``cfghub merge`` does; keywords are its
    options (``label_from_path``, ``split_by``, ``symbols``, ...)."""

def run(args: List[str]) -> int:
    """Runs a cfghub command line (without ``cfghub``) as the command runs it; its exit status."""

def formats() -> List[Dict[str, Any]]:
    """The formats cfghub knows: ``name``, ``description``, and whether it can be ``read`` and
    ``written``."""
