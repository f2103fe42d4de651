"""tf.contrib.rnn: TF 1.x's core recurrent cells and the static unrolls under their contrib
names (rill.compat.v1.rnn_cell)."""
from ..rnn_cell import (BasicLSTMCell, BasicRNNCell, DropoutWrapper, GRUCell,  # noqa: F401
                        LSTMCell, LSTMStateTuple, MultiRNNCell, ResidualWrapper, RNNCell,
                        static_bidirectional_rnn, static_rnn)

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LSTMCell",
           "LSTMStateTuple", "MultiRNNCell", "ResidualWrapper", "RNNCell",
           "static_bidirectional_rnn", "static_rnn"]
