"""Ctrl-C during a blocked Session.run (a dequeue from an empty queue, 60 s deadline) cancels
the step and raises KeyboardInterrupt within a second, in a real process given a real SIGINT;
the session goes on working after it."""
import signal
import subprocess
import sys
import time

SCRIPT = r'''
import sys, time
import rill.compat.v1 as tf
g = tf.get_default_graph()
deq = g._make("QueueDequeue", "deq", (), {"shared_name": ("string", "q"), "dtype": ("type", 1),
              "shape": ("shape", []), "timeout_ms": ("int", 60000)}).outputs[0]
c = tf.constant(3.0)
sess = tf.Session()
print("ready", flush=True)
t0 = time.time()
try:
    sess.run(deq)
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted after %.2f s" % (time.time() - t0), flush=True)
print("after:", sess.run(c), flush=True)
'''


def test_ctrl_c_cancels_a_blocked_step():
    p = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)  # the step is blocked in the dequeue by now
    t0 = time.time()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert time.time() - t0 < 1.5, out
    lines = out.strip().splitlines()
    assert lines[0].startswith("interrupted after"), out
    assert lines[1] == "after: 3.0", out
