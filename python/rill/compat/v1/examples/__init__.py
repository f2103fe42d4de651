"""tensorflow.examples (under `python -m rill.run`): the tutorials' helpers TF 1.x shipped."""
