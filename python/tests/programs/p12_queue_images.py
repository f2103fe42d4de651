""" Build an Image Dataset in TensorFlow.

Write a small folder of JPEG images (two classes), then read it back with the
queue-based input pipeline: a list of file names, tf.train.slice_input_producer,
tf.read_file, tf.image.decode_jpeg, resize, tf.train.batch, queue runners.
"""
from __future__ import print_function

import os
import numpy as np
import tensorflow as tf

DATASET_PATH = 'images'
N_CLASSES = 2
IMG_HEIGHT = 32
IMG_WIDTH = 32
CHANNELS = 3
batch_size = 8

# Write the dataset: class 0 dark images, class 1 bright images
rs = np.random.RandomState(0)
with tf.Session() as sess:
    img = tf.placeholder(tf.uint8, [None, None, 3])
    encode = tf.image.encode_jpeg(img, quality=95)
    for c in range(N_CLASSES):
        os.makedirs(os.path.join(DATASET_PATH, 'class%d' % c), exist_ok=True)
        for i in range(12):
            h, w = rs.randint(40, 64), rs.randint(40, 64)
            pixels = rs.randint(0, 100, size=(h, w, 3)) + 120 * c
            data = sess.run(encode, feed_dict={img: pixels.astype(np.uint8)})
            with open(os.path.join(DATASET_PATH, 'class%d' % c, '%02d.jpg' % i), 'wb') as f:
                f.write(data)


# Reading the dataset
def read_images(dataset_path, batch_size):
    imagepaths, labels = list(), list()
    # List the directory
    classes = sorted(os.walk(dataset_path).__next__()[1])
    # List each sub-directory (the classes)
    for label, c in enumerate(classes):
        c_dir = os.path.join(dataset_path, c)
        walk = os.walk(c_dir).__next__()
        # Add each image to the training set
        for sample in sorted(walk[2]):
            # Only keeps jpeg images
            if sample.endswith('.jpg') or sample.endswith('.jpeg'):
                imagepaths.append(os.path.join(c_dir, sample))
                labels.append(label)

    # Convert to Tensor
    imagepaths = tf.convert_to_tensor(imagepaths, dtype=tf.string)
    labels = tf.convert_to_tensor(labels, dtype=tf.int32)
    # Build a TF Queue, shuffle data
    image, label = tf.train.slice_input_producer([imagepaths, labels],
                                                 shuffle=True)

    # Read images from disk
    image = tf.read_file(image)
    image = tf.image.decode_jpeg(image, channels=CHANNELS)

    # Resize images to a common size
    image = tf.image.resize_images(image, [IMG_HEIGHT, IMG_WIDTH])

    # Normalize
    image = image * 1.0/127.5 - 1.0

    # Create batches
    X, Y = tf.train.batch([image, label], batch_size=batch_size,
                          capacity=batch_size * 8,
                          num_threads=2)

    return X, Y


X, Y = read_images(DATASET_PATH, batch_size)
print("batch:", X.shape, Y.shape, X.dtype.name, Y.dtype.name)
mean_brightness = tf.reduce_mean(X, axis=[1, 2, 3])

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(tf.local_variables_initializer())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    correct, seen = 0, 0
    for step in range(6):
        m, y = sess.run([mean_brightness, Y])
        correct += int(np.sum((m > -0.1) == (y == 1)))
        seen += len(y)
    print("Batches read:", 6, "images:", seen)
    print("Brightness tells the class of:", correct, "of", seen)
    coord.request_stop()
    coord.join(threads)
