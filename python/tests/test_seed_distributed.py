"""The seed's distributed.py, verbatim (extracted from the seed document at test time), on a real
cluster of three processes on loopback through python -m rill.run: 1 ps + 2 workers,
asynchronous (--issync=0) and synchronous (--issync=1). The workers train the seed's model with
its variables on the ps; the test ends the program's endless loop with RILL_TRAIN_STEPS (an
environment variable rill's Supervisor sessions honour, not an edit of the program); the ps then
exits 0 by itself, as both workers' sv.stop() told it they finished. Then the weights are near (2, 10), the chief wrote ./checkpoint/ with
checkpoints real TensorFlow restores and an event file, and local_reload_test.py, verbatim,
prints the trained values."""
import os
import pathlib
import signal
import socket
import subprocess
import sys

import pytest

from test_seed_programs import ROOT, _block, _seed_text

STEPS = 3000


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("issync", [0, 1])
def test_distributed(tmp_path, issync):
    text = _seed_text()
    src = _block(text, "#distributed", "tf.app.run()")
    assert "tf.train.SyncReplicasOptimizer" in src and "sv.prepare_or_wait_for_session" in src
    (tmp_path / "distributed.py").write_text(src, encoding="utf-8")
    ps_hosts = f"127.0.0.1:{_free_port()}"
    worker_hosts = f"127.0.0.1:{_free_port()},127.0.0.1:{_free_port()}"
    env = {**os.environ, "RILL_TRAIN_STEPS": str(STEPS), "RILL_OPENCL_CPU_AS_GPU": "0"}

    def start(job, task):
        args = [sys.executable, "-m", "rill.run", "distributed.py", f"--ps_hosts={ps_hosts}",
                f"--worker_hosts={worker_hosts}", f"--job_name={job}", f"--task_index={task}",
                f"--issync={issync}", "--learning_rate=0.01", "--steps_to_validate=500"]
        return subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    ps = start("ps", 0)
    workers = [start("worker", i) for i in range(2)]
    outs = []
    try:
        for w in workers:
            out, err = w.communicate(timeout=240)
            outs.append((w.returncode, out, err))
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
        try:  # the ps ends by itself once both workers finished
            ps_out, ps_err = ps.communicate(timeout=30)
            by_itself = True
        except subprocess.TimeoutExpired:
            by_itself = False
            ps.send_signal(signal.SIGTERM)
            ps_out, ps_err = ps.communicate(timeout=60)
    for rc, out, err in outs:
        assert rc == 0, err[-3000:]
    assert by_itself, "the ps still served 30 s after the workers: " + ps_err[-3000:]
    assert ps.returncode == 0, ps_err[-3000:]
    assert "all 2 workers of the cluster finished" in ps_err, ps_err[-3000:]
    # the chief's last printed values
    lines = [l for l in outs[0][1].splitlines() if l.startswith("step: ")]
    assert lines, outs[0][1] + outs[0][2][-2000:]
    last = dict(kv.split(": ") for kv in lines[-1].split(", "))
    w, b = float(last["weight"]), float(last["biase"])
    assert abs(w - 2) < 0.1 and abs(b - 10) < 0.3, lines[-1]
    ck = tmp_path / "checkpoint"
    assert (ck / "checkpoint").exists()
    assert any(p.name.startswith("events.out.tfevents.") for p in ck.iterdir())
    prefix = (ck / "checkpoint").read_text().split('"')[1]
    # real TensorFlow restores the chief's checkpoint (its own process)
    code = ("import sys, tensorflow as tf; r = tf.train.load_checkpoint(sys.argv[1]); "
            "print(r.get_tensor('weight')[0], r.get_tensor('biase')[0])")
    path = prefix if os.path.isabs(prefix) else str(ck / prefix)
    r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if "No module named 'tensorflow'" not in r.stderr:
        assert r.returncode == 0, r.stderr[-2000:]
        tw, tb = (float(v) for v in r.stdout.split())
        assert abs(tw - 2) < 0.1 and abs(tb - 10) < 0.3
    # TensorBoard reads the chief's event file (its own process)
    ev = sorted(p for p in ck.iterdir() if p.name.startswith("events.out.tfevents."))[-1]
    code = ("import sys; from tensorboard.backend.event_processing import event_file_loader as l; "
            "evs = list(l.EventFileLoader(sys.argv[1]).Load()); "
            "print(len(evs), evs[0].file_version)")
    r = subprocess.run([sys.executable, "-c", code, str(ev)], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if "No module named 'tensorboard'" not in r.stderr:
        assert r.returncode == 0, r.stderr[-2000:]
        n, version = r.stdout.split()
        assert int(n) >= 2 and version == "brain.Event:2", r.stdout
        # with the graph, as TensorBoard's graph tab gets it: the variables on the ps
        r = subprocess.run([sys.executable, str(ROOT / "tests/interop/read_rill_events.py"),
                            "--graph", str(ev)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        nodes = {l.split()[0]: l.split()[1:] for l in r.stdout.splitlines()}
        assert nodes["weight"][0] == "VariableV2" and nodes["weight"][2] == "/job:ps/task:0", nodes
    # and the seed's local_reload_test.py prints the trained values
    (tmp_path / "local_reload_test.py").write_text(
        _block(text, "#local_reload_test.py", "tf.app.run()"), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "rill.run", "local_reload_test.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    first, second = r.stdout.strip().splitlines()[:2]
    assert first.startswith("./checkpoint/model.ckpt-") and "global_step = " in first, r.stdout
    assert second.startswith("weight: ") and ", biase: " in second, r.stdout
