"""Loading a user's plug-in (a model class, a family's draw function, a covariate law's draw
function) from a reference: the one loader every plug-in goes through.

Two forms, as on the command line: ``MODULE:ATTR`` (an importable module, or a file
MODULE.py in the working directory) and ``path/to/file.py:ATTR`` (any Python file). Loading
imports the user's code, so it happens only when the plug-in is used, never at import time.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any

from iclab.utils.errors import ConfigError

_MODULE_FORM = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_FILE_FORM = re.compile(r"^(?P<path>.+\.py):(?P<attr>[A-Za-z_]\w*)$")


def is_plugin_reference(text: Any) -> bool:
    """Whether ``text`` has the ``MODULE:ATTR`` or ``file.py:ATTR`` form."""
    return isinstance(text, str) and bool(_MODULE_FORM.match(text) or _FILE_FORM.match(text))


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:200]


def is_builtin_code(cls: type) -> bool:
    """Whether ``cls`` is defined in iclab itself rather than in a user's plug-in."""
    return cls.__module__.split(".")[0] == "iclab"


def error_line(error: BaseException) -> str:
    """``Type: message`` of a plug-in's ``error`` on one line, the message cut at 160
    characters (``Type`` alone when it has no message)."""
    text = " ".join(str(error).split())[:160]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _import_file(path_text: str, reference: str, kind: str) -> Any:
    path = Path(path_text)
    if not path.is_file():
        raise ConfigError(f"{kind} {reference!r}: no such file {path_text!r}")
    digest = hashlib.blake2b(str(path.resolve()).encode(), digest_size=6).hexdigest()
    name = f"iclab_plugin_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{kind} {reference!r}: cannot load {path_text!r} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # a plug-in calling sys.exit() is a failure too
        del sys.modules[name]
        raise ConfigError(f"{kind} {reference!r}: importing {path_text} failed "
                          f"({type(error).__name__}: {_one_line(error)})") from None
    return module


def _import_module(module_name: str, reference: str, kind: str) -> Any:
    cwd_missing = os.getcwd() not in sys.path and "" not in sys.path
    if cwd_missing:  # like ``python -m``: the working directory's modules are importable
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"{kind} {reference!r}: cannot import module {module_name!r} "
                          f"({_one_line(error)})") from None
    except (Exception, SystemExit) as error:  # a plug-in calling sys.exit() is a failure too
        raise ConfigError(f"{kind} {reference!r}: importing {module_name} failed "
                          f"({type(error).__name__}: {_one_line(error)})") from None
    finally:
        if cwd_missing:
            sys.path.remove(os.getcwd())


def load_plugin(reference: str, kind: str) -> Any:
    """The attribute named by ``reference``; ConfigError (one line, naming ``kind``) if the
    reference is malformed, the module or file cannot be imported, or lacks the attribute."""
    file_match = _FILE_FORM.match(reference) if isinstance(reference, str) else None
    if file_match:
        module = _import_file(file_match["path"], reference, kind)
        attr = file_match["attr"]
    elif isinstance(reference, str) and _MODULE_FORM.match(reference):
        module_name, attr = reference.split(":")
        module = _import_module(module_name, reference, kind)
    else:
        raise ConfigError(f"{kind} {reference!r} is not MODULE:ATTR or path/to/file.py:ATTR")
    value = getattr(module, attr, None)
    if value is None:
        what = "function" if kind in ("family", "covariate law") else "class"
        raise ConfigError(f"{kind} {reference!r}: {module.__name__} has no {what} {attr!r}")
    return value
