"""What the Python module's tests share: where the project, its fixtures, the real-world
fixtures beside it and the command-line tool are, and running the tool."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared" / "fixtures"


def cli_path():
    """The command-line tool the module is compared with: $CFGHUB, else the one cargo built."""
    if os.environ.get("CFGHUB"):
        return os.environ["CFGHUB"]
    for profile in ["debug", "release"]:
        path = ROOT / "target" / profile / "cfghub"
        if path.exists():
            return str(path)
    pytest.fail("no cfghub command-line tool: build it (cargo build) or set CFGHUB")


def cli(*args, check=True):
    """Runs the command-line tool quietly; its standard output."""
    done = subprocess.run([cli_path(), "-q", *map(str, args)], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"cfghub {' '.join(map(str, args))}: {done.stderr}")
    return done


def cli_info(path):
    return json.loads(cli("info", path, "--json").stdout)


def shared(path):
    """A real-world fixture beside the project (the tests need it: CI has it)."""
    full = SHARED / path
    if not full.exists():
        pytest.fail(f"{full} is missing: the real-world fixtures must sit beside the project")
    return full
