"""tf.image (and tf.read_file / tf.write_file, tf.io.read_file / write_file) over rill's C ops
ReadFile, WriteFile, ResizeBilinear and ResizeNearestNeighbor (src/graph/ops_image.c), and the
TF 1.x functions TF composes from simpler ops: flips (StridedSlice with stride -1),
random_flip_left_right / up_down, convert_image_dtype, per_image_standardization,
rgb_to_grayscale, central_crop.

Resizing follows TF 1.15: align_corners and half_pixel_centers false by default,
resize_images returns float32 for bilinear and the input dtype for nearest neighbour, a 3-D
image is resized as a batch of one, and a size equal to the image's returns it as it is.
The JPEG and PNG codecs (DecodeJpeg, EncodeJpeg, DecodePng, EncodePng, DecodeImage through
libjpeg-turbo and libpng) produce and take uint8 (PNG: uint16 too) images: they need rill's
uint8 dtype (tf.uint8), and say so when this build lacks it."""
import sys as _sys

import numpy as _np

__all__ = ["read_file", "write_file"]


def _tf():
    return _sys.modules[__package__]


def _g():
    return _tf().get_default_graph()


def read_file(filename, name=None):
    """tf.read_file: the whole file as a string scalar (NotFoundError naming a missing path)."""
    tf = _tf()
    filename = tf.convert_to_tensor(filename, dtype=tf.string)
    return _g()._make("ReadFile", name or "ReadFile", (filename,)).outputs[0]


def write_file(filename, contents, name=None):
    """tf.write_file: writes contents to filename (its directory made first); an Operation."""
    tf = _tf()
    filename = tf.convert_to_tensor(filename, dtype=tf.string)
    contents = tf.convert_to_tensor(contents, dtype=tf.string)
    return _g()._make("WriteFile", name or "WriteFile", (filename, contents))


def _small_dtype(name):
    tf = _tf()
    dt = getattr(tf, name, None)
    if dt is None:
        raise TypeError(f"rill has no {name} dtype in this build: the image codecs need it")
    return dt


def _contents(contents):
    tf = _tf()
    return tf.convert_to_tensor(contents, dtype=tf.string, name="contents")


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    _small_dtype("uint8")
    attrs = {"channels": ("int", int(channels)), "ratio": ("int", int(ratio)),
             "fancy_upscaling": ("bool", bool(fancy_upscaling)),
             "try_recover_truncated": ("bool", bool(try_recover_truncated)),
             "acceptable_fraction": ("float", float(acceptable_fraction)),
             "dct_method": ("string", str(dct_method))}
    return _g()._make("DecodeJpeg", name or "DecodeJpeg", (_contents(contents),),
                      attrs).outputs[0]


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    tf = _tf()
    image = tf.convert_to_tensor(image, name="image")
    attrs = {"format": ("string", str(format)), "quality": ("int", int(quality)),
             "progressive": ("bool", bool(progressive)),
             "optimize_size": ("bool", bool(optimize_size)),
             "chroma_downsampling": ("bool", bool(chroma_downsampling)),
             "density_unit": ("string", str(density_unit)),
             "x_density": ("int", int(x_density)), "y_density": ("int", int(y_density)),
             "xmp_metadata": ("string", str(xmp_metadata))}
    if xmp_metadata:
        raise ValueError("encode_jpeg: rill does not write XMP metadata")
    return _g()._make("EncodeJpeg", name or "EncodeJpeg", (image,), attrs).outputs[0]


def decode_png(contents, channels=0, dtype=None, name=None):
    dtype = _tf().as_dtype(dtype) if dtype is not None else _small_dtype("uint8")
    attrs = {"channels": ("int", int(channels)), "dtype": ("type", dtype.enum)}
    return _g()._make("DecodePng", name or "DecodePng", (_contents(contents),), attrs).outputs[0]


def encode_png(image, compression=-1, name=None):
    tf = _tf()
    image = tf.convert_to_tensor(image, name="image")
    return _g()._make("EncodePng", name or "EncodePng", (image,),
                      {"compression": ("int", int(compression)),
                       "T": ("type", image.dtype.enum)}).outputs[0]


def decode_image(contents, channels=None, dtype=None, name=None, expand_animations=True):
    """tf.image.decode_image: JPEG or PNG by the first bytes, uint8 (or uint16 for PNG), or a
    float dtype through convert_image_dtype (GIF and BMP: UnimplementedError)."""
    tf = _tf()
    u8 = _small_dtype("uint8")
    dtype = tf.as_dtype(dtype) if dtype is not None else u8
    raw = dtype if dtype in (u8, getattr(tf, "uint16", u8)) else u8
    with _g().name_scope(name or "decode_image"):
        attrs = {"channels": ("int", int(channels or 0)), "dtype": ("type", raw.enum),
                 "expand_animations": ("bool", bool(expand_animations))}
        img = _g()._make("DecodeImage", "DecodeImage", (_contents(contents),), attrs).outputs[0]
        return img if raw == dtype else convert_image_dtype(img, dtype)


class ResizeMethod:
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1


def _size_tensor(size):
    tf = _tf()
    if isinstance(size, (tf.Tensor, tf.Variable)):
        size = tf.convert_to_tensor(size)
        if size.dtype != tf.int32:
            raise ValueError("'size' must be a 1-D int32 Tensor")
        return size
    vals = list(size.as_list() if isinstance(size, tf.TensorShape) else size)
    if len(vals) != 2:
        raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
    return tf.constant(_np.asarray(vals, _np.int32), name="size")


def _resize(op, images, size, align_corners, half_pixel_centers, name):
    tf = _tf()
    images = tf.convert_to_tensor(images, name="images")
    attrs = {"T": ("type", images.dtype.enum), "align_corners": ("bool", bool(align_corners)),
             "half_pixel_centers": ("bool", bool(half_pixel_centers))}
    return _g()._make(op, name or op, (images, _size_tensor(size)), attrs).outputs[0]


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


def _static_shape(image, what):
    shape = image.shape.as_list() if image.shape.ndims is not None else None
    if shape is None:
        raise ValueError(f"'{what}' must have either 3 or 4 dimensions.")
    return shape


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False):
    """tf.image.resize_images (TF 1.x): bilinear gives float32, nearest the input's dtype."""
    tf = _tf()
    with _g().name_scope("resize"):
        images = tf.convert_to_tensor(images, name="images")
        shape = _static_shape(images, "images")
        if len(shape) not in (3, 4):
            raise ValueError("'images' must have either 3 or 4 dimensions.")
        batched = len(shape) == 4
        if not batched:
            images = tf.expand_dims(images, 0)
            shape = [1] + shape
        if preserve_aspect_ratio:
            if isinstance(size, (tf.Tensor, tf.Variable)):
                raise ValueError("preserve_aspect_ratio needs a static size in rill")
            h, w = shape[1], shape[2]
            scale = min(size[0] / h, size[1] / w)
            size = [int(round(h * scale)), int(round(w * scale))]
        static = None if isinstance(size, (tf.Tensor, tf.Variable)) else [int(s) for s in size]
        if static is not None and static == [shape[1], shape[2]]:
            out = images  # TF returns the image itself when the size is its own
        elif method == ResizeMethod.BILINEAR:
            out = resize_bilinear(images, size, align_corners=align_corners)
        elif method == ResizeMethod.NEAREST_NEIGHBOR:
            out = resize_nearest_neighbor(images, size, align_corners=align_corners)
        else:
            raise ValueError("Resize method is not implemented.")
        if not batched:
            out_shape = out.shape.as_list()
            out = tf.reshape(out, [-1 if d is None else d for d in out_shape[1:]])
        return out


def flip_left_right(image):
    tf = _tf()
    image = tf.convert_to_tensor(image, name="image")
    rank = len(_static_shape(image, "image"))
    if rank not in (3, 4):
        raise ValueError("'image' must have either 3 or 4 dimensions.")
    return image[:, ::-1] if rank == 3 else image[:, :, ::-1]


def flip_up_down(image):
    tf = _tf()
    image = tf.convert_to_tensor(image, name="image")
    rank = len(_static_shape(image, "image"))
    if rank not in (3, 4):
        raise ValueError("'image' must have either 3 or 4 dimensions.")
    return image[::-1] if rank == 3 else image[:, ::-1]


def _random_flip(image, flip, seed, name):
    # TF: cond(uniform < 0.5, flip, identity); here the 0/1 draw blends the two exactly
    # (one of the weights is 0), which is the same for finite values
    tf = _tf()
    with _g().name_scope(name):
        image = tf.convert_to_tensor(image, name="image")
        u = tf.random_uniform([], 0, 1.0, seed=seed)
        take = tf.cast(tf.cast(tf.multiply(u, 2.0), tf.int32), tf.float32)  # 1 when u >= .5
        keep = tf.cast(take, image.dtype)
        flipped = flip(image)
        return tf.add(tf.multiply(image, keep), tf.multiply(flipped, 1 - keep))


def random_flip_left_right(image, seed=None):
    return _random_flip(image, flip_left_right, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    return _random_flip(image, flip_up_down, seed, "random_flip_up_down")


def _dtype_max(dt):
    return _np.iinfo(dt.as_numpy_dtype).max


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """tf.image.convert_image_dtype: integers scale to [0, MAX] and floats to [0, 1]."""
    tf = _tf()
    image = tf.convert_to_tensor(image, name="image")
    dtype = tf.as_dtype(dtype)
    src = image.dtype
    src_int = _np.issubdtype(src.as_numpy_dtype, _np.integer)
    dst_int = _np.issubdtype(dtype.as_numpy_dtype, _np.integer)
    with _g().name_scope(name or "convert_image"):
        if src == dtype:
            return tf.identity(image)
        if src_int and dst_int:
            smax, dmax = _dtype_max(src), _dtype_max(dtype)
            if smax > dmax:
                scale = (smax + 1) // (dmax + 1)
                return tf.cast(tf.div(image, tf.constant(scale, dtype=src)), dtype)
            scale = (dmax + 1) // (smax + 1)
            return tf.multiply(tf.cast(image, dtype), tf.constant(scale, dtype=dtype))
        if not src_int and not dst_int:
            return tf.cast(image, dtype)
        if src_int:
            cast = tf.cast(image, dtype)
            return tf.multiply(cast, tf.constant(1.0 / _dtype_max(src), dtype=dtype))
        scale = _dtype_max(dtype) + 0.5
        scaled = tf.multiply(image, tf.constant(scale, dtype=src))
        if saturate:
            scaled = tf.minimum(tf.maximum(scaled, 0.0), float(_dtype_max(dtype)))
        return tf.cast(scaled, dtype)


def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(pixels)) over each image's last three dims, in float32."""
    tf = _tf()
    with _g().name_scope("per_image_standardization"):
        image = tf.convert_to_tensor(image, name="image")
        shape = _static_shape(image, "image")
        if len(shape) < 3 or any(d is None for d in shape[-3:]):
            raise ValueError("'image' must be at least three-dimensional with known image dims")
        image = tf.cast(image, tf.float32)
        num_pixels = int(_np.prod(shape[-3:]))
        axes = [-1, -2, -3]
        mean = tf.reduce_mean(image, axis=axes, keepdims=True)
        centered = tf.subtract(image, mean)
        stddev = tf.sqrt(tf.reduce_mean(tf.square(centered), axis=axes, keepdims=True))
        adjusted = tf.maximum(stddev, float(1.0 / _np.sqrt(num_pixels)))
        return tf.div(centered, adjusted)


def rgb_to_grayscale(images, name=None):
    """0.2989 R + 0.5870 G + 0.1140 B (TF's weights), in the images' dtype, last dim 1."""
    tf = _tf()
    with _g().name_scope(name or "rgb_to_grayscale"):
        images = tf.convert_to_tensor(images, name="images")
        orig = images.dtype
        flt = convert_image_dtype(images, tf.float32)
        w = tf.constant(_np.asarray([0.2989, 0.5870, 0.1140], _np.float32))
        gray = tf.reduce_sum(tf.multiply(flt, w), axis=[-1], keepdims=True)
        return convert_image_dtype(gray, orig)


def central_crop(image, central_fraction):
    tf = _tf()
    with _g().name_scope("central_crop"):
        image = tf.convert_to_tensor(image, name="image")
        if central_fraction <= 0.0 or central_fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if central_fraction == 1.0:
            return image
        shape = _static_shape(image, "image")
        if len(shape) not in (3, 4):
            raise ValueError("'image' must have either 3 or 4 dimensions.")
        h, w = (shape[0], shape[1]) if len(shape) == 3 else (shape[1], shape[2])
        if h is None or w is None:
            raise ValueError("central_crop: rill needs the image's height and width known")
        hs = int((h - h * central_fraction) / 2)
        ws = int((w - w * central_fraction) / 2)
        if len(shape) == 3:
            return image[hs:h - hs, ws:w - ws]
        return image[:, hs:h - hs, ws:w - ws]
