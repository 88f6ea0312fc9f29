"""A command stopped with SIGTERM behaves as one stopped with Ctrl-C: its worker processes go
with it and finished work stays saved."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")


def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found |= {int(x) for x in text.split()}
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
def test_sigterm_stops_the_probe_and_its_workers(tiny_model, toy_stream, tmp_path):
    out = tmp_path / "p"
    cmd = [sys.executable, "-m", "tsr", "probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}",
           "train.steps=300", "stream.budget=3", "stream.test_cap=4", "stream.max_length=48",
           "--seeds", "0,1,2", "--workers", "2", "--arms", "target", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.time() + 300  # one arm takes seconds alone, minutes on a machine shared with a grid
    while not list((out / "arms").glob("*.json")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)  # wait until the workers have finished one arm
    assert proc.poll() is None, proc.communicate()
    if not list((out / "arms").glob("*.json")):
        proc.kill()
        proc.communicate()
        pytest.fail("no arm finished in 300 s: the test needs one saved before SIGTERM")
    workers = children(proc.pid)
    assert len(workers) >= 2
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    deadline = time.time() + 20
    while any(alive(w) for w in workers) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(alive(w) for w in workers)
    saved = list((out / "arms").glob("*.json"))
    assert saved and all(json.loads(p.read_text())["arm"] == "target" for p in saved)
