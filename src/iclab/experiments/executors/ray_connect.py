"""Connecting a sweep's driver to Ray: a private local instance, or a cluster within a timeout.

Address forms (``--address``):

- ``host:port``: the head node's GCS port (``ray start --head`` prints it; 6379 by default).
  The driver joins the cluster, so every node must be able to reach this machine.
- ``auto``: the cluster this machine is a node of (or ``RAY_ADDRESS``).
- ``ray://host:port``: Ray Client (the head's client server, 10001 by default), for a driver
  outside the cluster's network; needs ``ray[client]``, which ``iclab[ray]`` installs.

Token authentication (Ray 2.52 and later): a cluster started with ``RAY_AUTH_MODE=token``
accepts a driver only if it runs with ``RAY_AUTH_MODE=token`` and the cluster's token, in
``RAY_AUTH_TOKEN``, in the file named by ``RAY_AUTH_TOKEN_PATH``, or in ``~/.ray/auth_token``.
A refused token, an address that does not answer, or a port that is not Ray's ends the sweep
within ``--connect-timeout`` seconds with one line (a ConfigError: exit code 2); so does a Ray
Client server that cannot start this driver's session, with where to look and the two known
causes (a Ray bug in forking that process, a slow start) and how the head avoids them.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from iclab.utils.errors import ConfigError

DEFAULT_CONNECT_TIMEOUT = 30.0
LOCAL_OBJECT_STORE_BYTES = 128 * 1024**2
ADDRESS_FORMS = "host:port (e.g. 10.0.0.5:6379), auto, or ray://host:port"
_CLIENT_PREFIX = "ray://"
_CLIENT_DEFAULT_PORT = 10001
_GCS_WAIT_ENV = "RAY_gcs_server_port_wait_time_s"  # bounds Ray's own retries (about 1 s each)
_AUTH_MARKERS = ("Unauthenticated", "InvalidAuthToken", "AuthenticationError")
_TOKEN_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"
_COMMON: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
# Ray Client: the head's client server starts one server process per driver (a session)
_CLIENT_SESSION_FAILED = "Initialization failure from server"
_CLIENT_SESSION_HINT = (
    "the head's Ray log ray_client_server.err says why (a session's server that dies as it "
    "starts is a Ray bug that GRPC_ENABLE_FORK_SUPPORT=false in the environment of "
    "ray start --head avoids; one that starts slowly needs "
    "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S above its default of 30 s there)")


@dataclass(frozen=True)
class Address:
    """A parsed ``--address``: host and port (None for ``auto``), and whether Ray Client."""

    text: str
    host: str | None
    port: int | None
    client: bool


def import_ray() -> Any:
    """The ray module, or a one-line ConfigError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray, which is not installed; run: pip install 'iclab[ray]'"
        ) from None
    return ray


def parse_address(address: str) -> Address:
    """``address`` checked: ``auto``, ``host:port`` or ``ray://host[:port]``."""
    if not isinstance(address, str) or not address.strip():
        raise ConfigError(f"--address must be {ADDRESS_FORMS}; got {address!r}")
    text = address.strip()
    if text == "auto":
        return Address(text, None, None, False)
    client = text.startswith(_CLIENT_PREFIX)
    rest = text[len(_CLIENT_PREFIX):] if client else text
    if "://" in rest or "/" in rest:
        raise ConfigError(f"--address must be {ADDRESS_FORMS}; got {address!r}")
    host, colon, port_text = rest.rpartition(":")
    if not colon:
        host, port_text = rest, str(_CLIENT_DEFAULT_PORT) if client else ""
    host = host.strip("[]")
    if not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ConfigError(f"--address must be {ADDRESS_FORMS} with a port from 1 to 65535; "
                          f"got {address!r}")
    if client and not _has_ray_client():
        raise ConfigError(f"--address {text} needs Ray Client, which is not installed; "
                          "run: pip install 'iclab[ray]' (it installs ray[client])")
    return Address(text, host, int(port_text), client)


def _has_ray_client() -> bool:
    try:
        importlib.import_module("grpc")
    except ImportError:
        return False
    return True


def check_connect_timeout(seconds: float | None) -> float:
    """``seconds`` validated (None: the default, 30 s)."""
    if seconds is None:
        return DEFAULT_CONNECT_TIMEOUT
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or \
            not math.isfinite(seconds) or not 0 < seconds <= 3600:
        raise ConfigError(f"--connect-timeout must be a number of seconds in (0, 3600], "
                          f"got {seconds!r}")
    return float(seconds)


def start_local(ray: Any, cpus: int) -> None:
    """Start a private local Ray instance with ``cpus`` CPUs (stopped by ``ray.shutdown``).

    Ray (2.59 and later) protects it with a token, generated in ~/.ray/auth_token if missing,
    unless RAY_AUTH_MODE says otherwise; its notice saying so is not shown.
    """
    logging.getLogger(_TOKEN_NOTICE_LOGGER).setLevel(logging.ERROR)
    ray.init(address="local", num_cpus=cpus, include_dashboard=False,
             object_store_memory=LOCAL_OBJECT_STORE_BYTES, configure_logging=True, **_COMMON)


def _wait_for_port(address: Address, deadline: float) -> None:
    """Return once ``address``'s port accepts a TCP connection; ConfigError at ``deadline``."""
    assert address.host is not None and address.port is not None
    last: OSError | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ConfigError(
                f"cannot reach a Ray cluster at {address.text} within the connect timeout "
                f"({last}); check the address, that the head node is running "
                f"(ray start --head) and that this machine can reach its port")
        try:
            with socket.create_connection((address.host, address.port),
                                          timeout=min(remaining, 2.0)):
                return
        except OSError as error:
            last = error
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


@contextmanager
def _captured_stderr() -> Iterator[Callable[[], str]]:
    """Send file descriptor 2 (Ray's C++ log lines) to a temporary file while open; yields a
    function returning what was written."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)

        def read() -> str:
            capture.seek(0)
            return capture.read().decode(errors="replace")

        try:
            yield read
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


def _where(address: Address) -> str:
    return "found by --address auto" if address.host is None else f"at {address.text}"


def _auth_error(address: Address) -> ConfigError:
    mode = os.environ.get("RAY_AUTH_MODE", "unset")
    return ConfigError(
        f"the Ray cluster {_where(address)} refused this driver's authentication token "
        f"(RAY_AUTH_MODE is {mode}): run with RAY_AUTH_MODE=token and the cluster's token in "
        "RAY_AUTH_TOKEN (or in the file RAY_AUTH_TOKEN_PATH names, default ~/.ray/auth_token)")


def connect(ray: Any, address: Address, timeout: float) -> None:
    """Join the cluster at ``address`` (ray.init), or raise a one-line ConfigError once
    ``timeout`` seconds have passed without a connection.

    ray.init runs in a daemon thread, its C++ log lines captured, so that a cluster that
    never answers cannot hold the driver: after a timeout that thread is abandoned (the
    command exits; a Python caller should not use Ray in this process afterwards).
    """
    deadline = time.monotonic() + timeout
    if address.host is not None:
        _wait_for_port(address, deadline)
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            options = _COMMON if address.client else {**_COMMON, "configure_logging": True}
            ray.init(address=address.text, **options)
            outcome.append(None)
        except BaseException as error:  # handed to the calling thread
            outcome.append(error)

    remaining = max(0.1, deadline - time.monotonic())
    previous = os.environ.get(_GCS_WAIT_ENV)
    if previous is None:
        os.environ[_GCS_WAIT_ENV] = str(max(1, int(remaining)))
    try:
        with _captured_stderr() as captured:
            thread = threading.Thread(target=attempt, name="ray-connect", daemon=True)
            thread.start()
            thread.join(remaining)
            log = captured()
    finally:
        if previous is None:
            os.environ.pop(_GCS_WAIT_ENV, None)
    if not outcome:
        if any(marker in log for marker in _AUTH_MARKERS):
            raise _auth_error(address)
        raise ConfigError(f"no Ray cluster answered {_where(address)} within {timeout:g} s "
                          f"(--connect-timeout); {_which_port(address)}")
    error = outcome[0]
    if error is None:
        return
    with suppress(Exception):  # whatever ray.init left half-started
        ray.shutdown()
    if any(marker in log + repr(error) for marker in _AUTH_MARKERS):
        raise _auth_error(address)
    if isinstance(error, KeyboardInterrupt):
        raise error
    if address.client and _CLIENT_SESSION_FAILED in str(error):
        raise ConfigError(f"the Ray Client server {_where(address)} could not start a session "
                          f"for this driver: {_CLIENT_SESSION_HINT}")
    raise ConfigError(f"cannot connect to the Ray cluster {_where(address)}: "
                      f"{_one_line(error)}")


def _which_port(address: Address) -> str:
    """The question a connection that timed out ends with."""
    if not address.client:
        return "is that the head node's Ray port?"
    return f"is that the head node's Ray Client port? If it is, {_CLIENT_SESSION_HINT}"
