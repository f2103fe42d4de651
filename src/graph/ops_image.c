/* ops_image.c - file and image ops: ReadFile and WriteFile (a whole file as a string scalar),
 * ResizeBilinear and ResizeNearestNeighbor with their gradients (ResizeBilinearGrad,
 * ResizeNearestNeighborGrad), the image codecs (DecodeJpeg, EncodeJpeg, DecodePng, EncodePng,
 * DecodeImage: kernels in cpu_image_codec.c), with TF's
 * attrs (align_corners, half_pixel_centers; both false by default as in TF 1.15) and texts.
 *
 * Images are [batch, height, width, channels]; the size input is an int32 [2] (new_height,
 * new_width). A Const size gives a static output shape. ResizeBilinear's output is float
 * whatever the input dtype (TF's), ResizeNearestNeighbor keeps the input's. Kernels:
 * src/kernels/cpu/cpu_image.c. */
#include "graph_internal.h"

#include <string.h>

static bool string_scalar(rill_node *n, int i, rill_status *s)
{
    if (rill__in_dtype(n, i) != RILL_STRING) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input %d of '%s' Op has type %s that does not match expected type of "
                        "string.",
                        i, n->op->name, rill_dtype_name(rill__in_dtype(n, i)));
        return false;
    }
    return rill__check_rank(n, i, 0, false, s);
}

static void read_file_shape(rill_node *n, rill_status *s)
{
    if (!string_scalar(n, 0, s)) return;
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = (rill_shape){.rank = 0};
}

static void write_file_shape(rill_node *n, rill_status *s)
{
    if (!string_scalar(n, 0, s) || !string_scalar(n, 1, s)) return;
}

static bool resize_attrs(rill_node *n, rill_status *s)
{
    if (rill__attr_bool(n, "half_pixel_centers", false) &&
        rill__attr_bool(n, "align_corners", false)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "If half_pixel_centers is True, align_corners must be False.");
        return false;
    }
    return true;
}

static bool resize_numeric(rill_node *n, int i, rill_status *s)
{
    rill_dtype t = rill__in_dtype(n, i);
    if (t == RILL_STRING || t == RILL_BOOL || !rill_dtype_is_valid(t)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of %s is not in the list of allowed values: int8, "
                        "uint8, int16, uint16, int32, int64, bfloat16, half, float, double\n\t; "
                        "NodeDef: {{node %s}}",
                        rill_dtype_name(t), n->name);
        return false;
    }
    return true;
}

/* images [b, h, w, c], size int32 [2] -> [b, size[0], size[1], c] of dtype out. */
static void resize_shape_of(rill_node *n, rill_dtype out, rill_status *s)
{
    if (!resize_numeric(n, 0, s) || !resize_attrs(n, s)) return;
    if (!rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 1, false, s)) return;
    if (rill__in_dtype(n, 1) != RILL_INT32) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'size' of '%s' Op has type %s that does not match expected type "
                        "of int32.",
                        n->op->name, rill_dtype_name(rill__in_dtype(n, 1)));
        return;
    }
    rill_shape ss = rill__in_shape(n, 1);
    if (ss.rank == 1 && ss.dims[0] >= 0 && ss.dims[0] != 2) {
        char b[512];
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Dimension must be 2 but is %lld for '%s' (op: '%s') with input shapes: "
                        "%s.",
                        (long long)ss.dims[0], n->name, n->op->name,
                        rill__input_shapes(n, b, sizeof b));
        return;
    }
    rill_shape in = rill__in_shape(n, 0);
    int64_t h = -1, w = -1;
    rill_output so = n->inputs[1];
    if (strcmp(so.node->op->name, "Const") == 0) {
        const rill_tensor *t = rill__node_attr(so.node, "value")->v.tensor;
        h = rill_tensor_get_int64(t, 0);
        w = rill_tensor_get_int64(t, 1);
        if (h <= 0 || w <= 0) {
            rill_status_set(s, RILL_INVALID_ARGUMENT,
                            "'%s' (op: '%s'): output dimensions must be positive, got [%lld, "
                            "%lld]",
                            n->name, n->op->name, (long long)h, (long long)w);
            return;
        }
    }
    n->out_dtypes[0] = out;
    n->out_shapes[0] = (rill_shape){
        .rank = 4, .dims = {in.rank == 4 ? in.dims[0] : -1, h, w, in.rank == 4 ? in.dims[3] : -1}};
}

static void resize_bilinear_shape(rill_node *n, rill_status *s)
{
    resize_shape_of(n, RILL_FLOAT, s);
}

static void resize_nearest_shape(rill_node *n, rill_status *s)
{
    resize_shape_of(n, rill__in_dtype(n, 0), s);
}

/* ResizeBilinearGrad(grads float [b, oh, ow, c], original_image [b, h, w, c]) -> like the
 * original image (float, double or half). */
static void resize_bilinear_grad_shape(rill_node *n, rill_status *s)
{
    if (!resize_attrs(n, s)) return;
    if (rill__in_dtype(n, 0) != RILL_FLOAT) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Input 'grads' of 'ResizeBilinearGrad' Op has type %s that does not "
                        "match expected type of float.",
                        rill_dtype_name(rill__in_dtype(n, 0)));
        return;
    }
    rill_dtype t = rill__in_dtype(n, 1);
    if (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'T' of %s is not in the list of allowed values: float, "
                        "bfloat16, half, double\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(t), n->name);
        return;
    }
    if (!rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 4, false, s)) return;
    n->out_dtypes[0] = t;
    n->out_shapes[0] = rill__in_shape(n, 1);
}

/* d images = ResizeBilinearGrad(dy, images) with the same attrs; the size gets none. A non-float
 * image gets no gradient (TF's: its grad is only registered for float types). */
static void resize_bilinear_grad(rill_graph *g, rill_node *n, const rill_output *dy,
                                 rill_output *dx)
{
    rill_dtype t = rill__in_dtype(n, 0);
    if (!dy[0].node || (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF)) return;
    rill_op_builder *b = rill_op_builder_new(g, "ResizeBilinearGrad", NULL);
    rill_op_builder_add_input(b, dy[0]);
    rill_op_builder_add_input(b, n->inputs[0]);
    rill_op_builder_set_bool(b, "align_corners", rill__attr_bool(n, "align_corners", false));
    rill_op_builder_set_bool(b, "half_pixel_centers",
                             rill__attr_bool(n, "half_pixel_centers", false));
    rill_op_builder_set_type(b, "T", t);
    dx[0] = rill_node_output(rill_op_builder_finish(b), 0);
}

/* TF's enum values for uint8 and uint16 (rill's RILL_UINT8 / RILL_UINT16 where the element-wise
 * work added them to rill_dtype). */
#define U8  ((rill_dtype)4)
#define U16 ((rill_dtype)17)

static bool contents_scalar(rill_node *n, rill_status *s)
{
    return string_scalar(n, 0, s);
}

/* DecodeJpeg / DecodePng / DecodeImage: string scalar -> [?, ?, channels or ?] of uint8 (PNG and
 * DecodeImage: the "dtype" attr, uint8 or uint16). */
static void decode_shape(rill_node *n, rill_status *s)
{
    if (!contents_scalar(n, s)) return;
    int64_t ch = rill__attr_int(n, "channels", 0);
    bool jpeg = strcmp(n->op->name, "DecodeJpeg") == 0;
    if (ch < 0 || ch > (jpeg ? 3 : 4) || (jpeg && ch == 2)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "'%s' (op: '%s'): channels must be %s, got %lld",
                        n->name, n->op->name, jpeg ? "0, 1, or 3" : "0, 1, 2, 3, or 4",
                        (long long)ch);
        return;
    }
    rill_dtype dt = jpeg ? U8 : rill__attr_type(n, "dtype", U8);
    if (dt != U8 && dt != U16) {
        rill_status_set(s, RILL_INVALID_ARGUMENT,
                        "Value for attr 'dtype' of %s is not in the list of allowed values: "
                        "uint8, uint16\n\t; NodeDef: {{node %s}}",
                        rill_dtype_name(dt), n->name);
        return;
    }
    n->out_dtypes[0] = dt;
    n->out_shapes[0] = (rill_shape){.rank = 3, .dims = {-1, -1, ch ? ch : -1}};
}

/* EncodeJpeg (uint8, 1 or 3 channels) / EncodePng (uint8 or uint16, 1 to 4): a 3-D image ->
 * string scalar. */
static void encode_shape(rill_node *n, rill_status *s)
{
    bool jpeg = strcmp(n->op->name, "EncodeJpeg") == 0;
    rill_dtype t = rill__in_dtype(n, 0);
    if (t != U8 && (jpeg || t != U16)) {
        rill_status_set(s, RILL_INVALID_ARGUMENT, "%s '%s': the image must be %s, got %s",
                        n->op->name, n->name, jpeg ? "uint8" : "uint8 or uint16",
                        rill_dtype_name(t));
        return;
    }
    if (!rill__check_rank(n, 0, 3, false, s)) return;
    n->out_dtypes[0] = RILL_STRING;
    n->out_shapes[0] = (rill_shape){.rank = 0};
}

/* ResizeNearestNeighborGrad(grads [b, oh, ow, c], size int32 [2] = the image's h, w). */
static void resize_nearest_grad_shape(rill_node *n, rill_status *s)
{
    if (!resize_attrs(n, s) || !resize_numeric(n, 0, s)) return;
    if (!rill__check_rank(n, 0, 4, false, s) || !rill__check_rank(n, 1, 1, false, s)) return;
    rill_shape gs = rill__in_shape(n, 0);
    int64_t h = -1, w = -1;
    rill_output so = n->inputs[1];
    if (strcmp(so.node->op->name, "Const") == 0) {
        const rill_tensor *t = rill__node_attr(so.node, "value")->v.tensor;
        h = rill_tensor_get_int64(t, 0);
        w = rill_tensor_get_int64(t, 1);
    }
    n->out_dtypes[0] = rill__in_dtype(n, 0);
    n->out_shapes[0] = (rill_shape){
        .rank = 4, .dims = {gs.rank == 4 ? gs.dims[0] : -1, h, w, gs.rank == 4 ? gs.dims[3] : -1}};
}

/* d images = ResizeNearestNeighborGrad(dy, [h, w]); the image's h and w must be known here. */
static void resize_nearest_grad(rill_graph *g, rill_node *n, const rill_output *dy, rill_output *dx)
{
    rill_shape in = rill__in_shape(n, 0);
    rill_dtype t = rill__in_dtype(n, 0);
    if (!dy[0].node || (t != RILL_FLOAT && t != RILL_DOUBLE && t != RILL_HALF)) return;
    if (in.rank != 4 || in.dims[1] < 0 || in.dims[2] < 0) {
        rill__graph_fail(g, RILL_UNIMPLEMENTED,
                         "The gradient of '%s' (ResizeNearestNeighbor) needs the image's height "
                         "and width known when the graph is built",
                         n->name);
        return;
    }
    int32_t hw[2] = {(int32_t)in.dims[1], (int32_t)in.dims[2]};
    int64_t two = 2;
    rill_tensor *st = rill_tensor_from_data(RILL_INT32, &two, 1, hw);
    rill_output size = rill_const(g, st, "size");
    rill_tensor_free(st);
    rill_op_builder *b = rill_op_builder_new(g, "ResizeNearestNeighborGrad", NULL);
    rill_op_builder_add_input(b, dy[0]);
    rill_op_builder_add_input(b, size);
    rill_op_builder_set_bool(b, "align_corners", rill__attr_bool(n, "align_corners", false));
    rill_op_builder_set_bool(b, "half_pixel_centers",
                             rill__attr_bool(n, "half_pixel_centers", false));
    dx[0] = rill_node_output(rill_op_builder_finish(b), 0);
}

#define CODEC(nm, fn)                                                                              \
    {                                                                                              \
        .name = nm, .default_name = nm, .min_inputs = 1, .max_inputs = 1, .noutputs = 1,           \
        .shape = fn                                                                                \
    }

const rill__op_def rill__ops_image[] = {
    CODEC("DecodeJpeg", decode_shape),
    CODEC("DecodePng", decode_shape),
    CODEC("DecodeImage", decode_shape),
    CODEC("EncodeJpeg", encode_shape),
    CODEC("EncodePng", encode_shape),
    {.name = "ReadFile",
     .default_name = "ReadFile",
     .min_inputs = 1,
     .max_inputs = 1,
     .noutputs = 1,
     .stateful = true, /* the file may change between runs: never folded or merged */
     .shape = read_file_shape},
    {.name = "WriteFile",
     .default_name = "WriteFile",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 0,
     .stateful = true,
     .shape = write_file_shape},
    {.name = "ResizeBilinear",
     .default_name = "ResizeBilinear",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = resize_bilinear_shape,
     .grad = resize_bilinear_grad},
    {.name = "ResizeBilinearGrad",
     .default_name = "ResizeBilinearGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = resize_bilinear_grad_shape,
     .type_attr = "T"},
    {.name = "ResizeNearestNeighbor",
     .default_name = "ResizeNearestNeighbor",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = resize_nearest_shape,
     .grad = resize_nearest_grad},
    {.name = "ResizeNearestNeighborGrad",
     .default_name = "ResizeNearestNeighborGrad",
     .min_inputs = 2,
     .max_inputs = 2,
     .noutputs = 1,
     .shape = resize_nearest_grad_shape},
    {0},
};
