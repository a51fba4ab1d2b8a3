"""The README's Ray cluster recipe, for real: a head and a second node started with `ray start` on the loopback
range, token authentication on (`RAY_AUTH_MODE=token`), two iterations trained through ``train_rllib.py
--address``, an env runner on each node, no illegal action; the test stops the processes it started by their ids.

Every address is a loopback one: Ray turns `127.0.0.1` and `localhost` into the machine's interface address
(`ray._common.network_utils.is_localhost`, so that other machines can reach a head), so the head is held on
127.0.0.2 and the second node on 127.0.0.3, which Linux also routes over `lo`; the ports Ray would take by default
are given free ones (another Ray on this machine keeps its own), usage statistics are off, and `HOME` is a
temporary folder (Ray writes a generated token under `~/.ray`; here the token is made by the test and passed as
`RAY_AUTH_TOKEN`, as the other machines of a real cluster get it). After the run, every TCP connection the
cluster's processes hold is checked to stay within 127.0.0.0/8.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from conftest import REPO

HEAD, NODE = "127.0.0.2", "127.0.0.3"  # loopback addresses Ray keeps as given (not 127.0.0.1: see above)
RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT = 180  # seconds for `ray start` on a busy 2-core machine
ITERATIONS = 2


def is_loopback(address: str) -> bool:
    """A loopback address, IPv4-mapped ones (`::ffff:127.0.0.2`) included."""
    ip = ipaddress.ip_address(address)
    return (ip.ipv4_mapped or ip).is_loopback if isinstance(ip, ipaddress.IPv6Address) else ip.is_loopback


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_started(process: subprocess.Popen, log: Path) -> None:
    """Wait until `ray start --block` says the node runs; fail with its log if it exits or takes too long."""
    deadline = time.monotonic() + START_TIMEOUT
    while "Ray runtime started" not in log.read_text():
        assert process.poll() is None, f"ray start exited {process.returncode}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"ray start took over {START_TIMEOUT} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def stop(process: subprocess.Popen) -> None:
    """Stop `ray start --block` and what it started: its own process group (made for it), SIGTERM first."""
    for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, 30)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def cluster_processes(roots: list[int]) -> list[psutil.Process]:
    found = []
    for pid in roots:
        try:
            root = psutil.Process(pid)
            found += [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    return found


@pytest.fixture(scope="module")
def cluster():
    """(environment for the driver, the head's address, the started processes, the remote addresses they used)."""
    work = Path(tempfile.mkdtemp(prefix="sr-ray-"))  # short: Ray's socket paths have a length limit
    (work / "home").mkdir()
    token = secrets.token_hex(32)
    environment = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "HOME": str(work / "home"),
        "RAY_USAGE_STATS_ENABLED": "0",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    common = ["--block", "--num-cpus=1", "--disable-usage-stats", f"--dashboard-agent-listen-port={free_port()}"]
    address = f"{HEAD}:{free_port()}"
    commands = {
        "head": [
            RAY, "start", "--head", f"--node-ip-address={HEAD}", f"--port={address.rsplit(':', 1)[1]}",
            "--include-dashboard=false", f"--ray-client-server-port={free_port()}", f"--temp-dir={work / 'ray'}",
            *common,
        ],
        "node": [RAY, "start", f"--address={address}", f"--node-ip-address={NODE}", *common],
    }  # fmt: skip
    commands["node"][-1] = f"--dashboard-agent-listen-port={free_port()}"  # a port of its own on this machine
    started: dict[str, subprocess.Popen] = {}
    try:
        for name, command in commands.items():
            log = work / f"{name}.log"
            with open(log, "w") as out:
                started[name] = subprocess.Popen(
                    command, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            wait_started(started[name], log)
        yield environment, address, started, work
    finally:
        for process in reversed(started.values()):
            stop(process)
        shutil.rmtree(work, ignore_errors=True)


def test_two_nodes_train_through_address_with_a_runner_on_each_and_no_illegal_action(cluster, tmp_path):
    environment, address, started, work = cluster
    out = tmp_path / "rllib"
    arguments = ["--iterations", str(ITERATIONS), "--num-env-runners", "2", "--envs-per-runner", "1"]
    arguments += ["--train-batch-size", "200", "--minibatch-size", "100", "--n-epochs", "1"]
    arguments += ["--channels", "4", "--conv-layers", "1", "--hidden", "16", "--address", address, "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "train_rllib.py", *arguments],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    print(done.stdout)  # the lines the run printed (pytest -s shows them)

    assert f"env runners: 1 on {HEAD}, 1 on {NODE}" in done.stdout.splitlines()
    notes = json.loads((out / "model.json").read_text())["notes"]
    assert notes["env_runner_nodes"] == {HEAD: 1, NODE: 1}
    rows = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == list(range(1, ITERATIONS + 1))
    assert all(row["env_runners"] == 2 and row["env_steps"] >= 200 for row in rows)
    assert [row["illegal_actions"] for row in rows] == [0] * ITERATIONS and rows[-1]["illegal_actions_total"] == 0

    # every connection of the cluster's processes stays on the loopback range
    remote = set()
    for process in cluster_processes([p.pid for p in started.values()]):
        try:
            remote |= {c.raddr.ip for c in process.net_connections(kind="inet") if c.raddr}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    assert remote and all(map(is_loopback, remote)), remote


def test_the_started_processes_stop_by_their_ids(cluster):
    _, _, started, _ = cluster
    processes = cluster_processes([p.pid for p in started.values()])
    assert len(processes) > len(started)  # ray start and the daemons it started (gcs_server, raylet, ...)
    for process in reversed(started.values()):
        stop(process)
    gone, alive = psutil.wait_procs(processes, timeout=30)
    assert not alive, [p.info for p in alive]
