"""tensorflow.examples.tutorials.mnist.input_data on rill: the four gzipped IDX files of MNIST
(or of any data set in MNIST's layout, such as Fashion-MNIST) as numpy DataSets with TF 1.x's
semantics: images as float32 in [0, 1] (or uint8 0..255), flattened to [N, 784] unless
reshape=False, labels as uint8 class numbers or float64 one-hot rows, a validation split taken
from the front of the training set, and next_batch's per-epoch shuffling through numpy's global
random state, seeded as TF seeds it (so a seed gives the batches TF gives).

rill never downloads: read_data_sets reads the files from train_dir, or, when train_dir lacks
them, from the directory the environment variable RILL_MNIST_DIR names. Debian's
dataset-fashion-mnist package installs Fashion-MNIST's files, under MNIST's names, in
/usr/share/datasets/fashion-mnist."""
import collections
import gzip
import os

import numpy

__all__ = ["DataSet", "Datasets", "read_data_sets", "extract_images", "extract_labels",
           "dense_to_one_hot", "MNISTFilesNotFoundError"]

TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"
_FILES = (TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS)

DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
DEBIAN_FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"

# TF's random_seed.get_seed: the graph seed when only that is set, this default when only the
# op's (here read_data_sets's) seed is, and never the pair (0, 0).
_DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


class MNISTFilesNotFoundError(FileNotFoundError):
    """A file read_data_sets needs is in neither train_dir nor $RILL_MNIST_DIR."""


def _read32(stream):
    return int(numpy.frombuffer(stream.read(4), dtype=numpy.dtype(numpy.uint32).newbyteorder(">"))[0])


def _name(f):
    return getattr(f, "name", None) or getattr(getattr(f, "fileobj", None), "name", "<stream>")


def extract_images(f):
    """The images of an IDX3 stream (gzip-compressed, as the MNIST files are) as a uint8 array
    [index, y, x, depth=1]; ValueError when the magic number is not 2051."""
    print("Extracting", _name(f))
    with gzip.GzipFile(fileobj=f) as stream:
        magic = _read32(stream)
        if magic != 2051:
            raise ValueError("Invalid magic number %d in MNIST image file: %s" % (magic, _name(f)))
        num_images, rows, cols = _read32(stream), _read32(stream), _read32(stream)
        buf = stream.read(rows * cols * num_images)
        data = numpy.frombuffer(buf, dtype=numpy.uint8)
        if data.size != rows * cols * num_images:
            raise ValueError("MNIST image file %s is truncated: %d of %d bytes of pixels"
                             % (_name(f), data.size, rows * cols * num_images))
        return data.reshape(num_images, rows, cols, 1)


def dense_to_one_hot(labels_dense, num_classes):
    """Class numbers [N] -> one-hot rows [N, num_classes] (float64, as TF's)."""
    num_labels = labels_dense.shape[0]
    index_offset = numpy.arange(num_labels) * num_classes
    labels_one_hot = numpy.zeros((num_labels, num_classes))
    labels_one_hot.flat[index_offset + labels_dense.ravel()] = 1
    return labels_one_hot


def extract_labels(f, one_hot=False, num_classes=10):
    """The labels of an IDX1 stream as uint8 [N], or one-hot [N, num_classes]; ValueError when
    the magic number is not 2049."""
    print("Extracting", _name(f))
    with gzip.GzipFile(fileobj=f) as stream:
        magic = _read32(stream)
        if magic != 2049:
            raise ValueError("Invalid magic number %d in MNIST label file: %s" % (magic, _name(f)))
        num_items = _read32(stream)
        labels = numpy.frombuffer(stream.read(num_items), dtype=numpy.uint8)
        if labels.size != num_items:
            raise ValueError("MNIST label file %s is truncated: %d of %d labels"
                             % (_name(f), labels.size, num_items))
        if one_hot:
            return dense_to_one_hot(labels, num_classes)
        return labels


def _dtype_name(dtype):
    """'uint8' or 'float32' from a tf.DType, a numpy dtype or a name; TypeError otherwise."""
    name = getattr(dtype, "name", None)
    if name is None:
        try:
            name = numpy.dtype(dtype).name
        except TypeError:
            name = str(dtype)
    if name.endswith("_ref"):
        name = name[:-4]
    if name not in ("uint8", "float32"):
        raise TypeError("Invalid image dtype %r, expected uint8 or float32" % (dtype,))
    return name


def _numpy_seed(seed):
    """What TF's DataSet passes to numpy.random.seed: get_seed(seed)'s first seed when seed is
    None (the graph's seed, or None: numpy then seeds itself from the OS), else the second."""
    # the framework the program imported as tensorflow (rill under rill.run; TensorFlow itself
    # when python/tests/programs/tf_reference.py loads this module as TF 1.15's), else rill
    import sys
    tf = sys.modules.get("tensorflow")
    if tf is None or not hasattr(tf, "get_default_graph"):
        import rill.compat.v1 as tf
    graph_seed = getattr(tf.get_default_graph(), "seed", None)
    if graph_seed is not None:
        seeds = (graph_seed, seed)  # TF's op seed without one given is the graph's last id: unused
    elif seed is not None:
        seeds = (_DEFAULT_GRAPH_SEED, seed)
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        seeds = (0, _MAXINT32)
    return seeds[0] if seed is None else seeds[1]


class DataSet:
    """Images and labels in memory, served in batches by next_batch."""

    def __init__(self, images, labels, fake_data=False, one_hot=False, dtype=None, reshape=True,
                 seed=None):
        dtype = _dtype_name("float32" if dtype is None else dtype)
        numpy.random.seed(_numpy_seed(seed))
        if fake_data:
            self._num_examples = 10000
            self.one_hot = one_hot
        else:
            images, labels = numpy.asarray(images), numpy.asarray(labels)
            if images.shape[0] != labels.shape[0]:
                raise AssertionError("images.shape: %s labels.shape: %s"
                                     % (images.shape, labels.shape))
            self._num_examples = images.shape[0]
            if reshape:
                if images.ndim != 4 or images.shape[3] != 1:
                    raise AssertionError("images.shape: %s: reshape=True needs [N, rows, cols, 1]"
                                         % (images.shape,))
                images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
            if dtype == "float32":
                images = images.astype(numpy.float32)
                images = numpy.multiply(images, 1.0 / 255.0)
        self._images = images
        self._labels = labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def images(self):
        return self._images

    @property
    def labels(self):
        return self._labels

    @property
    def num_examples(self):
        return self._num_examples

    @property
    def epochs_completed(self):
        return self._epochs_completed

    def _shuffle(self):
        perm = numpy.arange(self._num_examples)
        numpy.random.shuffle(perm)
        self._images = self._images[perm]
        self._labels = self._labels[perm]

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next batch_size examples. The first call shuffles (when shuffle); a batch that
        crosses the end of an epoch is the rest of this epoch followed by the start of the next,
        reshuffled."""
        if fake_data:
            fake_image = [1] * 784
            fake_label = [1] + [0] * 9 if self.one_hot else 0
            return ([fake_image for _ in range(batch_size)],
                    [fake_label for _ in range(batch_size)])
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._shuffle()
        if start + batch_size > self._num_examples:
            self._epochs_completed += 1
            rest = self._num_examples - start
            images_rest = self._images[start:self._num_examples]
            labels_rest = self._labels[start:self._num_examples]
            if shuffle:
                self._shuffle()
            self._index_in_epoch = batch_size - rest
            end = self._index_in_epoch
            return (numpy.concatenate((images_rest, self._images[0:end]), axis=0),
                    numpy.concatenate((labels_rest, self._labels[0:end]), axis=0))
        self._index_in_epoch += batch_size
        end = self._index_in_epoch
        return self._images[start:end], self._labels[start:end]


def _has_all(d):
    return bool(d) and all(os.path.isfile(os.path.join(d, f)) for f in _FILES)


def _data_dir(train_dir):
    """train_dir when it holds the four files, else $RILL_MNIST_DIR when that does; else the
    error that says where to find them (rill never downloads)."""
    if _has_all(train_dir):
        return train_dir
    env = os.environ.get("RILL_MNIST_DIR")
    if env and _has_all(env):
        return env
    missing = next(os.path.join(train_dir, f) for f in _FILES
                   if not os.path.isfile(os.path.join(train_dir, f)))
    where = f"{train_dir!r}"
    if env:
        env_missing = [f for f in _FILES if not os.path.isfile(os.path.join(env, f))]
        where += f" nor in RILL_MNIST_DIR={env!r} (which lacks {', '.join(env_missing)})"
    msg = (f"MNIST file not found: {missing} (needed: {', '.join(_FILES)}, in {where}). "
           "rill never downloads data sets (TensorFlow would fetch them from the Internet): "
           "put the four files into that directory, or set RILL_MNIST_DIR to a directory that "
           "holds them. Debian's dataset-fashion-mnist package (apt-get install "
           f"dataset-fashion-mnist) installs Fashion-MNIST's files under these names in "
           f"{DEBIAN_FASHION_MNIST_DIR}.")
    raise MNISTFilesNotFoundError(2, msg, missing)


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=None, reshape=True,
                   validation_size=5000, seed=None, source_url=DEFAULT_SOURCE_URL):
    """Datasets(train, validation, test) from the four MNIST files in train_dir (or
    $RILL_MNIST_DIR); the first validation_size training examples are the validation set.
    source_url is accepted and never used: rill does not download."""
    _dtype_name("float32" if dtype is None else dtype)  # TypeError before reading
    if fake_data:
        def fake():
            return DataSet([], [], fake_data=True, one_hot=one_hot, dtype=dtype, seed=seed)
        return Datasets(train=fake(), validation=fake(), test=fake())
    d = _data_dir(train_dir)

    def read(name, fn, **kw):
        with open(os.path.join(d, name), "rb") as f:
            return fn(f, **kw)

    train_images = read(TRAIN_IMAGES, extract_images)
    train_labels = read(TRAIN_LABELS, extract_labels, one_hot=one_hot)
    test_images = read(TEST_IMAGES, extract_images)
    test_labels = read(TEST_LABELS, extract_labels, one_hot=one_hot)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError("Validation size should be between 0 and {}. Received: {}."
                         .format(len(train_images), validation_size))
    validation_images = train_images[:validation_size]
    validation_labels = train_labels[:validation_size]
    train_images = train_images[validation_size:]
    train_labels = train_labels[validation_size:]
    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    train = DataSet(train_images, train_labels, **options)
    validation = DataSet(validation_images, validation_labels, **options)
    test = DataSet(test_images, test_labels, **options)
    return Datasets(train=train, validation=validation, test=test)


def load_mnist(train_dir="MNIST-data"):
    """TF's base.load_mnist: read_data_sets(train_dir)."""
    return read_data_sets(train_dir)
