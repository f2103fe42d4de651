/* cpu_random.c - CPU kernels for the random ops, producing TensorFlow's streams.
 *
 * TF's stateful random kernels draw from Philox4x32-10 (Salmon et al., SC'11): a 128-bit counter
 * encrypted under a 64-bit key. A node seeded (seed, seed2) starts with key = seed (low word
 * first) and counter = {0, 0, seed2 low, seed2 high}; (0, 0) means "seed from the OS". Each run
 * of the node takes the generator as it is and then moves it on by a fixed reservation (TF's
 * ReserveRandomOutputs: 256 counter values per output element, ReserveSamples32 for a shuffle),
 * so the second run of a node continues where TF's does.
 *
 * How outputs map onto the stream, as TF's FillPhiloxRandom lays them out:
 *  - fixed-cost distributions: output group g (4 floats or 2 doubles, or 4 int32s / 2 int64s)
 *    comes from the g-th 128-bit block;
 *  - truncated normal: group g reads uint32s one by one from block 256 g (float) / 128 g
 *    (double) on, drawing normals until it has 4 (2) inside (-2, 2).
 * Uniform floats take 23 random mantissa bits under exponent 0 (an [1, 2) float minus 1),
 * doubles 52 bits from two words; normals are Box-Muller on pairs, u1 clamped to 1e-7 from
 * below, (r sin t, r cos t). The mean/stddev or range attrs (a, b), when present, are applied in
 * the output dtype as TF's Python applies them (x * b + a; x * (b - a) + a).
 * Multinomial draws one double per sample by inverse CDF over exp(logits - max) and RandomShuffle
 * is a Fisher-Yates walk with (uint32 % n), both as TF's CPU kernels do with one shard (TF splits
 * a large Multinomial batch over threads, each shard skipping ahead: rill never does, so only
 * batches TF keeps on one shard, < 10000 cost units, match it). */
#include "cpu_kernels.h"
#include "philox.h"

#include <float.h>
#include <math.h>
#include <string.h>

static float u32_to_float(uint32_t x)
{
    uint32_t v = (x & 0x7fffffu) | 0x3f800000u;
    float f;
    memcpy(&f, &v, sizeof f);
    return f - 1.0f;
}

static double u64_to_double(uint32_t x0, uint32_t x1)
{
    uint64_t v = ((uint64_t)(x0 & 0xfffffu) << 32 | x1) | ((uint64_t)1023 << 52);
    double d;
    memcpy(&d, &v, sizeof d);
    return d - 1.0;
}

static float u16_to_half_float(uint32_t x)
{
    return (float)(x & 0x3ffu) / 1024.0f; /* exact in half: [1, 2) - 1 */
}

static void box_muller_float(uint32_t x0, uint32_t x1, float *f0, float *f1)
{
    float u1 = u32_to_float(x0);
    if (u1 < 1e-7f) u1 = 1e-7f;
    float v1 = (float)(2.0 * M_PI * u32_to_float(x1)); /* in double, as TF (M_PI is a double) */
    float u2 = sqrtf(-2.0f * logf(u1));
    *f0 = sinf(v1) * u2;
    *f1 = cosf(v1) * u2;
}

static void box_muller_double(const uint32_t x[4], double *d0, double *d1)
{
    double u1 = u64_to_double(x[0], x[1]);
    if (u1 < 1e-7) u1 = 1e-7;
    double v1 = 2 * M_PI * u64_to_double(x[2], x[3]);
    double u2 = sqrt(-2.0 * log(u1));
    *d0 = sin(v1) * u2;
    *d1 = cos(v1) * u2;
}

/* --- the node's generator --- */

static void gen_free(void *p)
{
    rill__free(p);
}

/* A copy of the node's generator for this run; the node's moves on by reserve blocks. */
static philox gen_take(rill__kctx *ctx, uint64_t reserve)
{
    if (!*ctx->state) {
        philox *p = rill__malloc(sizeof *p);
        RILL_CHECK_ALLOC(p);
        const rill_node *n = ctx->node;
        uint64_t s1 = (uint64_t)n->seed, s2 = (uint64_t)n->seed2;
        if (!s1 && !s2) {
            s1 = rill__random_seed();
            s2 = rill__random_seed();
        }
        philox_init(p, s1, s2);
        *ctx->state = p;
    }
    philox *p = *ctx->state;
    philox g = *p;
    philox_skip(p, reserve);
    return g;
}

/* The output shape: the node's static one, or read from input 0. */
static bool out_shape(rill__kctx *ctx, int shape_input, rill_shape *sh)
{
    const rill_node *n = ctx->node;
    if (n->ninputs <= shape_input) {
        *sh = n->out_shapes[0];
        return true;
    }
    const rill_tensor *t = ctx->inputs[shape_input];
    if (t->shape.rank != 1 || t->numel > RILL_MAX_DIMS) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "shape must be a vector of at most %d dims",
                        RILL_MAX_DIMS);
        return false;
    }
    *sh = (rill_shape){.rank = (int)t->numel};
    for (int i = 0; i < sh->rank; i++) {
        sh->dims[i] = rill_tensor_get_int64(t, i);
        if (sh->dims[i] < 0) {
            rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Dimension %d must be >= 0, got %lld", i,
                            (long long)sh->dims[i]);
            return false;
        }
    }
    return true;
}

enum { K_NORMAL, K_TRUNCATED, K_UNIFORM };

/* Group g of a truncated normal: k values (4 float, 2 double) from block base + g * skip on. */
static void truncated_group(philox base, int64_t g, bool dbl, double out[4])
{
    philox p = base;
    philox_skip(&p, (uint64_t)g * (dbl ? 128 : 256));
    single s = {.p = &p, .used = 4};
    int k = dbl ? 2 : 4, have = 0;
    while (have < k) {
        double v[2];
        if (dbl) {
            uint32_t x[4];
            for (int i = 0; i < 4; i++) x[i] = single_next(&s);
            box_muller_double(x, &v[0], &v[1]);
        } else {
            uint32_t x0 = single_next(&s), x1 = single_next(&s);
            float f0, f1;
            box_muller_float(x0, x1, &f0, &f1);
            v[0] = f0;
            v[1] = f1;
        }
        for (int i = 0; i < 2 && have < k; i++)
            if (fabs(v[i]) < 2.0) out[have++] = v[i];
    }
}

static void random_float_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const char *op = n->op->name;
    int kind = strcmp(op, "TruncatedNormal") == 0 ? K_TRUNCATED
               : strcmp(op, "RandomUniform") == 0 ? K_UNIFORM
                                                  : K_NORMAL;
    rill_shape sh;
    if (!out_shape(ctx, 0, &sh)) return;
    rill_dtype t = n->out_dtypes[0];
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, t, &sh);
    if (!out) return;
    bool dbl = t == RILL_DOUBLE;
    int64_t numel = out->numel;
    philox base = gen_take(ctx, (uint64_t)numel * 256);
    /* a: mean or minval, b: stddev or maxval; absent attrs leave the standard draw alone */
    bool has_a = rill__node_attr(n, "a") != NULL, has_b = rill__node_attr(n, "b") != NULL;
    double a = rill__attr_float(n, "a", 0), b = rill__attr_float(n, "b", 1);
    int k = dbl ? 2 : 4;
    for (int64_t g = 0; g * k < numel; g++) {
        double v[4];
        if (kind == K_TRUNCATED) {
            truncated_group(base, g, dbl, v);
        } else {
            uint32_t x[4];
            philox_next(&base, x);
            if (dbl && kind == K_UNIFORM) {
                v[0] = u64_to_double(x[0], x[1]);
                v[1] = u64_to_double(x[2], x[3]);
            } else if (dbl) {
                box_muller_double(x, &v[0], &v[1]);
            } else if (kind == K_UNIFORM) {
                for (int i = 0; i < 4; i++)
                    v[i] = t == RILL_HALF ? u16_to_half_float(x[i]) : u32_to_float(x[i]);
            } else {
                float f[4];
                box_muller_float(x[0], x[1], &f[0], &f[1]);
                box_muller_float(x[2], x[3], &f[2], &f[3]);
                for (int i = 0; i < 4; i++) v[i] = f[i];
            }
        }
        for (int i = 0; i < k && g * k + i < numel; i++) {
            int64_t j = g * k + i;
            if (dbl) {
                double d = v[i];
                if (kind == K_UNIFORM) {
                    if (has_a || has_b) d = d * (b - a) + a;
                } else {
                    if (has_b) d = d * b;
                    if (has_a) d = d + a;
                }
                ((double *)out->buf->data)[j] = d;
                continue;
            }
            /* float (and half, rounded to half after each step as TF's half ops are) */
            float f = (float)v[i];
            bool half = t == RILL_HALF;
#define RND(x) (half ? rill_half_to_float(rill_half_from_float(x)) : (x))
            f = RND(f);
            if (kind == K_UNIFORM) {
                if (has_a || has_b) {
                    float fa = RND((float)a), fb = RND((float)b);
                    f = RND(RND(f * RND(fb - fa)) + fa);
                }
            } else {
                if (has_b) f = RND(f * RND((float)b));
                if (has_a) f = RND(f + RND((float)a));
            }
#undef RND
            if (half)
                ((rill_half *)out->buf->data)[j] = rill_half_from_float(f);
            else
                ((float *)out->buf->data)[j] = f;
        }
    }
}

static void random_int_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    rill_shape sh;
    if (!out_shape(ctx, 0, &sh)) return;
    const rill_tensor *lo_t = ctx->inputs[1], *hi_t = ctx->inputs[2];
    if (lo_t->shape.rank != 0 || hi_t->shape.rank != 0) {
        char b[96];
        rill__kctx_fail(
            ctx, RILL_INVALID_ARGUMENT, "%s must be 0-D, got shape %s",
            lo_t->shape.rank != 0 ? "minval" : "maxval",
            rill_shape_str(lo_t->shape.rank != 0 ? &lo_t->shape : &hi_t->shape, b, sizeof b));
        return;
    }
    rill_dtype t = n->out_dtypes[0];
    int64_t lo = rill_tensor_get_int64(lo_t, 0), hi = rill_tensor_get_int64(hi_t, 0);
    int64_t numel = 1;
    for (int i = 0; i < sh.rank; i++) numel *= sh.dims[i];
    if (numel > 0 && lo >= hi) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "Need minval < maxval, got %lld >= %lld",
                        (long long)lo, (long long)hi);
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, t, &sh);
    if (!out) return;
    philox base = gen_take(ctx, (uint64_t)numel * 256);
    if (t == RILL_INT32) {
        uint32_t range = (uint32_t)hi - (uint32_t)lo;
        int32_t *y = out->buf->data;
        for (int64_t j = 0; j < numel; j += 4) {
            uint32_t x[4];
            philox_next(&base, x);
            for (int i = 0; i < 4 && j + i < numel; i++)
                y[j + i] = (int32_t)((uint32_t)lo + x[i] % range);
        }
    } else {
        uint64_t range = (uint64_t)hi - (uint64_t)lo;
        int64_t *y = out->buf->data;
        for (int64_t j = 0; j < numel; j += 2) {
            uint32_t x[4];
            philox_next(&base, x);
            for (int i = 0; i < 2 && j + i < numel; i++) {
                uint64_t bits = (uint64_t)x[2 * i] | (uint64_t)x[2 * i + 1] << 32;
                y[j + i] = (int64_t)((uint64_t)lo + bits % range);
            }
        }
    }
}

static double elem_double(const rill_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case RILL_FLOAT:
        return ((const float *)t->buf->data)[i];
    case RILL_DOUBLE:
        return ((const double *)t->buf->data)[i];
    default:
        return rill_half_to_float(((const rill_half *)t->buf->data)[i]);
    }
}

static void multinomial_kernel(rill__kctx *ctx)
{
    const rill_node *n = ctx->node;
    const rill_tensor *logits = ctx->inputs[0], *ns_t = ctx->inputs[1];
    char b[96];
    if (logits->shape.rank != 2) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "logits should be a matrix, got shape %s",
                        rill_shape_str(&logits->shape, b, sizeof b));
        return;
    }
    if (ns_t->shape.rank != 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "num_samples should be a scalar, got shape %s",
                        rill_shape_str(&ns_t->shape, b, sizeof b));
        return;
    }
    int64_t num_samples = rill_tensor_get_int64(ns_t, 0);
    if (num_samples < 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "num_samples should be nonnegative, got %lld",
                        (long long)num_samples);
        return;
    }
    int64_t batch = logits->shape.dims[0], classes = logits->shape.dims[1];
    if (classes <= 0) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "num_classes should be positive, got %lld",
                        (long long)classes);
        return;
    }
    rill_shape os = {.rank = 2, .dims = {batch, num_samples}};
    rill_dtype ot = n->out_dtypes[0];
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, ot, &os);
    if (!out || batch * num_samples == 0) return;
    /* doubles take two words: TF reserves 2 * ceil4(num_samples) outputs per row */
    philox p = gen_take(ctx, (uint64_t)(batch * ((num_samples + 3) / 4 * 4) * 2) * 256);
    single s = {.p = &p, .used = 4};
    double *cdf = rill__malloc((size_t)classes * sizeof *cdf);
    RILL_CHECK_ALLOC(cdf);
    for (int64_t r = 0; r < batch; r++) {
        double mx = -INFINITY;
        bool any = false;
        for (int64_t j = 0; j < classes; j++) {
            double v = elem_double(logits, r * classes + j);
            if (isfinite(v) && (!any || v > mx)) {
                mx = v;
                any = true;
            }
        }
        if (!any) mx = logits->dtype == RILL_DOUBLE ? -DBL_MAX : -FLT_MAX;
        double total = 0;
        for (int64_t j = 0; j < classes; j++) {
            double v = elem_double(logits, r * classes + j);
            if (isfinite(v)) total += exp(v - mx);
            cdf[j] = total;
        }
        for (int64_t k = 0; k < num_samples; k++) {
            uint32_t x0 = single_next(&s), x1 = single_next(&s);
            double want = u64_to_double(x0, x1) * total;
            /* upper_bound: the first class whose cdf exceeds want */
            int64_t lo = 0, hi = classes;
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] > want)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            int64_t at = r * num_samples + k;
            if (ot == RILL_INT32)
                ((int32_t *)out->buf->data)[at] = (int32_t)lo;
            else
                ((int64_t *)out->buf->data)[at] = lo;
        }
    }
    rill__free(cdf);
}

static void shuffle_kernel(rill__kctx *ctx)
{
    const rill_tensor *x = ctx->inputs[0];
    if (x->numel <= 1 || x->shape.rank == 0 || x->shape.dims[0] <= 1) {
        rill__kctx_set_output(ctx, 0, rill_tensor_ref((rill_tensor *)x));
        return;
    }
    int64_t size = x->shape.dims[0];
    if (size >= ((int64_t)1 << 32)) {
        rill__kctx_fail(ctx, RILL_INVALID_ARGUMENT, "RandomShuffle: dim 0 of size %lld is too big",
                        (long long)size);
        return;
    }
    rill_tensor *out = rill__kctx_alloc_output(ctx, 0, x->dtype, &x->shape);
    if (!out) return;
    philox p = gen_take(ctx, (uint64_t)(size - 1 + 3) / 4);
    single s = {.p = &p, .used = 4};
    int64_t *perm = rill__malloc((size_t)size * sizeof *perm);
    RILL_CHECK_ALLOC(perm);
    for (int64_t i = 0; i < size; i++) perm[i] = i;
    for (int64_t i = 0; i < size - 1; i++) {
        int64_t j = i + (int64_t)(single_next(&s) % (uint32_t)(size - i));
        int64_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    int64_t row = x->numel / size;
    if (x->dtype == RILL_STRING) {
        for (int64_t i = 0; i < size; i++)
            for (int64_t e = 0; e < row; e++) {
                size_t len;
                const char *str = rill_tensor_get_string(x, perm[i] * row + e, &len);
                rill_tensor_set_string(out, i * row + e, str, len);
            }
    } else {
        size_t rb = (size_t)row * rill_dtype_size(x->dtype);
        for (int64_t i = 0; i < size; i++)
            memcpy((char *)out->buf->data + (size_t)i * rb,
                   (const char *)x->buf->data + (size_t)perm[i] * rb, rb);
    }
    rill__free(perm);
}

#define RK(op_, fn_)                                                                               \
    {                                                                                              \
        .op = op_, .device_type = "CPU", .fn = fn_, .state_free = gen_free,                        \
        .host_memory_inputs = 1                                                                    \
    }

const rill__kernel_def rill__cpu_kernels_random[] = {
    RK("RandomNormal", random_float_kernel),
    RK("RandomStandardNormal", random_float_kernel),
    RK("TruncatedNormal", random_float_kernel),
    RK("RandomUniform", random_float_kernel),
    {.op = "RandomUniformInt",
     .device_type = "CPU",
     .fn = random_int_kernel,
     .state_free = gen_free,
     .host_memory_inputs = 7},
    {.op = "Multinomial",
     .device_type = "CPU",
     .fn = multinomial_kernel,
     .state_free = gen_free,
     .host_memory_inputs = 2},
    {.op = "RandomShuffle", .device_type = "CPU", .fn = shuffle_kernel, .state_free = gen_free},
    {0},
};
