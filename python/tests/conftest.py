"""Settings every test of python/tests shares (pytest loads this before the test modules).

TF_ENABLE_ONEDNN_OPTS=1: TensorFlow 2.15 turns its oneDNN CPU kernels on by itself only on CPUs
with AVX-512 VNNI and the like (Intel Cascade Lake on); elsewhere (AMD EPYC, older Xeons) it runs
its Eigen kernels, which refuse inputs that rill and oneDNN take (a depthwise convolution with
unequal row and column strides, NCDHW 3-D pooling) and round differently. Every reference run
(tfref.env(), the programs' tf_reference.py, the tests' own subprocesses) starts from os.environ,
so setting it here makes the reference the same program on every CPU the suite lands on."""
import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
