"""Connecting to Ray: addresses checked up front, and one line, exit 2, within the timeout."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclab.cli.main import main
from iclab.experiments.executors.ray_connect import (
    DEFAULT_CONNECT_TIMEOUT,
    Address,
    check_connect_timeout,
    connect,
    parse_address,
)
from iclab.experiments.specs.sweep import make_executor
from iclab.utils.errors import ConfigError

pytest.importorskip("ray")

SPEC = """name = "one"
[defaults]
d = 2
steps = 50
batch = 256
eval_prompts = 1000
[[groups]]
name = "g"
n = 4
sigma = 0.5
"""

HOST = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z0-9-]{1,10}){0,3}", fullmatch=True)


@given(HOST, st.integers(1, 65535))
def test_host_and_port_are_read_back(host: str, port: int) -> None:
    address = parse_address(f"{host}:{port}")
    assert (address.host, address.port, address.client) == (host, port, False)


@given(HOST, st.one_of(st.integers(max_value=0), st.integers(min_value=65536)))
def test_a_port_out_of_range_is_refused(host: str, port: int) -> None:
    with pytest.raises(ConfigError, match="with a port from 1 to 65535"):
        parse_address(f"{host}:{port}")


@pytest.mark.parametrize("text", ["", "headnode", "http://head:8265", "head:6379/x", "head:",
                                  ":6379", "head:port"])
def test_other_forms_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=r"--address must be host:port .*, auto, or ray://"):
        parse_address(text)


def test_auto_ipv6_and_ray_client_forms() -> None:
    assert parse_address("auto").host is None
    assert (parse_address("[::1]:6379").host, parse_address("[::1]:6379").port) == ("::1", 6379)
    pytest.importorskip("grpc")
    client = parse_address("ray://head")
    assert (client.host, client.port, client.client) == ("head", 10001, True)


def test_ray_client_without_its_package_says_how_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "grpc", None)  # makes `import grpc` fail
    with pytest.raises(ConfigError, match=r"needs Ray Client.*pip install 'iclab\[ray\]'"):
        parse_address("ray://head:10001")


@pytest.mark.parametrize("seconds", [0.001, 1, 30.5, 3600])
def test_connect_timeout_accepts_seconds_in_range(seconds: float) -> None:
    assert check_connect_timeout(seconds) == seconds
    assert check_connect_timeout(None) == DEFAULT_CONNECT_TIMEOUT


@pytest.mark.parametrize("seconds", [0, -1, 3600.5, math.nan, math.inf, True, "5"])
def test_connect_timeout_refuses_the_rest(seconds: object) -> None:
    with pytest.raises(ConfigError, match=r"--connect-timeout must be a number of seconds"):
        check_connect_timeout(seconds)  # type: ignore[arg-type]


def test_ray_only_options_are_refused_for_the_local_executor() -> None:
    with pytest.raises(ConfigError, match="--storage applies only to --executor ray"):
        make_executor("local", storage="s3://bucket")
    with pytest.raises(ConfigError, match="--connect-timeout applies only to --executor ray"):
        make_executor("local", connect_timeout=5.0)
    with pytest.raises(ConfigError, match="--address must be"):
        make_executor("ray", address="http://head")


def sweep(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "one.toml").write_text(SPEC)
    command = [sys.executable, "-m", "iclab.cli.main", "sweep", "one.toml", "--out", "out",
               "--quiet", "--executor", "ray", *options]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
             *options: str) -> tuple[int, str]:
    """``iclab sweep`` in this process (for failures that happen before Ray is started)."""
    (tmp_path / "one.toml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    code = main(["sweep", "one.toml", "--out", "out", "--quiet", "--executor", "ray", *options])
    return code, capsys.readouterr().err


def test_an_unreachable_address_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()  # closed again: nothing listens there
    code, err = run_main(tmp_path, monkeypatch, capsys,
                         "--address", f"127.0.0.1:{port}", "--connect-timeout", "2")
    assert code == 2
    assert err.startswith(f"iclab: error: cannot reach a Ray cluster at 127.0.0.1:{port} "
                          "within the connect timeout")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield int(server.getsockname()[1])


def test_a_port_that_is_not_ray_is_one_line_and_exit_2(tmp_path: Path, silent_port: int) -> None:
    done = sweep(tmp_path, "--address", f"127.0.0.1:{silent_port}", "--connect-timeout", "2")
    assert done.returncode == 2
    assert done.stderr.startswith(f"iclab: error: no Ray cluster answered at "
                                  f"127.0.0.1:{silent_port} within 2 s")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_ray_client_port_that_is_not_ray_names_the_client_port(
        tmp_path: Path, silent_port: int) -> None:
    pytest.importorskip("grpc")
    done = sweep(tmp_path, "--address", f"ray://127.0.0.1:{silent_port}",
                 "--connect-timeout", "2")
    assert done.returncode == 2
    assert done.stderr.startswith(f"iclab: error: no Ray cluster answered at "
                                  f"ray://127.0.0.1:{silent_port} within 2 s (--connect-timeout); "
                                  "is that the head node's Ray Client port? If it is, the head's "
                                  "Ray log ray_client_server.err says why")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


class SessionRefused:
    """A stand-in for the ray module whose init fails as Ray Client's does when the head's
    client server cannot start this driver's server process."""

    def init(self, **options: object) -> None:
        raise ConnectionAbortedError("Initialization failure from server:\nTraceback (most "
                                     "recent call last):\nRuntimeError: Starting Ray client "
                                     "server failed.")

    def shutdown(self) -> None:
        pass


@pytest.mark.parametrize("client", [True, False])
def test_a_ray_client_session_that_fails_to_start_says_where_to_look(
        silent_port: int, client: bool) -> None:
    text = f"ray://127.0.0.1:{silent_port}" if client else f"127.0.0.1:{silent_port}"
    with pytest.raises(ConfigError) as raised:
        connect(SessionRefused(), Address(text, "127.0.0.1", silent_port, client), timeout=10)
    message = str(raised.value)
    assert len(message.splitlines()) == 1
    if client:
        assert message.startswith(f"the Ray Client server at {text} could not start a session "
                                  "for this driver: the head's Ray log ray_client_server.err")
        assert "GRPC_ENABLE_FORK_SUPPORT=false" in message
        assert "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S" in message
    else:  # the same words from a non-client connection are passed on as they are
        assert message == (f"cannot connect to the Ray cluster at {text}: ConnectionAbortedError: "
                           "Initialization failure from server:")


@pytest.mark.parametrize(("options", "message"), [
    (["--connect-timeout", "0"], "--connect-timeout must be a number of seconds"),
    (["--storage", "nope://x"], "unknown protocol 'nope'"),
    (["--address", "head"], "--address must be host:port"),
])
def test_bad_ray_options_are_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        options: list[str], message: str) -> None:
    code, err = run_main(tmp_path, monkeypatch, capsys, *options)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err
    assert not (tmp_path / "out").exists()


HOST_SCRIPT = """
import sys
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
print(cluster.address, flush=True)
sys.stdin.read()
cluster.shutdown()
"""


@pytest.mark.slow
def test_token_authentication(tmp_path: Path) -> None:
    """A cluster started with RAY_AUTH_MODE=token: without its token, one line naming the
    variables and exit 2; with RAY_AUTH_MODE=token and RAY_AUTH_TOKEN, the sweep runs."""
    token = "0123456789abcdef" * 2
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    host = subprocess.Popen([sys.executable, "-c", HOST_SCRIPT], cwd=tmp_path, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL,
                            env={**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token})
    try:
        assert host.stdout is not None
        address = host.stdout.readline().strip()
        os.environ.pop("RAY_AUTH_MODE", None)
        refused = subprocess.run(
            [sys.executable, "-m", "iclab.cli.main", "sweep", "one.toml", "--out", "out",
             "--quiet", "--executor", "ray", "--address", address, "--connect-timeout", "3"],
            cwd=_spec_folder(tmp_path), capture_output=True, text=True, timeout=300,
            env={**base, "RAY_AUTH_TOKEN_PATH": str(tmp_path / "no-token-here")})
        assert refused.returncode == 2
        assert refused.stderr.startswith(f"iclab: error: the Ray cluster at {address} refused "
                                         "this driver's authentication token")
        assert "RAY_AUTH_MODE=token" in refused.stderr and "RAY_AUTH_TOKEN" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        accepted = subprocess.run(
            [sys.executable, "-m", "iclab.cli.main", "sweep", "one.toml", "--out", "out",
             "--quiet", "--executor", "ray", "--address", address],
            cwd=_spec_folder(tmp_path), capture_output=True, text=True, timeout=300,
            env={**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token})
        assert accepted.returncode == 0, accepted.stderr
        assert len(list((tmp_path / "driver" / "out" / "runs").glob("*/result.json"))) == 1
    finally:
        if host.stdin is not None:
            host.stdin.close()
        host.wait(timeout=120)


def _spec_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "driver"
    folder.mkdir(exist_ok=True)
    (folder / "one.toml").write_text(SPEC)
    return folder
