/* fashion_mnist_main.h - a real workload on real data: Fashion-MNIST with the 784-512-512-10
 * ReLU MLP (examples/fashion_mnist.c) or TF's classic two-layer CNN (examples/fashion_mnist_cnn.c:
 * 5x5 conv 32, max-pool 2, 5x5 conv 64, max-pool 2, dense 1024, dropout, dense 10). Both programs
 * are this file's fashion_main() with another default --model.
 *
 * Reads the gzipped IDX files that Debian's dataset-fashion-mnist package installs, trains in
 * shuffled mini-batches with softmax cross-entropy, and prints per epoch the mean training loss,
 * the accuracy on the 10,000 test images and the training throughput in examples/s.
 *
 * Given a cluster (the flags of examples/distributed.c: --ps_hosts, --worker_hosts, --job_name,
 * --task_index; or TF_CONFIG, Slurm or mpirun, docs/LAUNCHING.md) it trains data-parallel and
 * asynchronously: a "ps" task starts its server and joins it; worker i of n trains on its shard
 * of the training set (examples i, i+n, ...; shuffled within the shard each epoch) with the
 * model's variables on the ps tasks (replica_device_setter, spread by size), each worker's
 * update applied on the ps as it arrives. The chief (worker 0, or the TF_CONFIG "chief")
 * initializes the variables and evaluates the test set after each of its epochs; the other
 * workers print their training loss and examples/s. Without a cluster it runs in one process. */
#include <rill/rill.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct mlp {
    rill_output x, y, logits, loss;
    rill_output keep; /* the CNN's dropout keep_prob (a placeholder), or {NULL} */
    rill_node *train, *init;
} mlp;

static rill_output dense(rill_graph *g, rill_output in, int64_t fan_in, int64_t fan_out, bool relu,
                         const char *name)
{
    rill_graph_push_variable_scope(g, name, false);
    /* He initialisation for ReLU layers, Glorot-like for the output layer. */
    double stddev = sqrt((relu ? 2.0 : 1.0) / (double)fan_in);
    rill_output w = rill_get_variable(g, "weights", RILL_FLOAT, rill_shape_matrix(fan_in, fan_out),
                                      rill_truncated_normal_initializer(0, stddev, 0), true);
    rill_output b = rill_get_variable(g, "biases", RILL_FLOAT, rill_shape_vector(fan_out),
                                      rill_zeros_initializer(), true);
    rill_output out = rill_bias_add(g, rill_matmul(g, in, w, false, false, NULL), b, NULL);
    if (relu) out = rill_relu(g, out, NULL);
    rill_graph_pop_variable_scope(g);
    return out;
}

/* 5x5 convolution with stride 1, SAME padding, bias and ReLU, then 2x2 max-pooling with stride 2:
 * one stage of TF's classic CNN. Initialised as TF's tutorial does (truncated normal, 0.1). */
static rill_output conv_pool(rill_graph *g, rill_output in, int64_t cin, int64_t cout,
                             const char *name)
{
    rill_graph_push_variable_scope(g, name, false);
    int64_t fdims[4] = {5, 5, cin, cout};
    rill_shape fs = {.rank = 4};
    memcpy(fs.dims, fdims, sizeof fdims);
    rill_output w = rill_get_variable(g, "weights", RILL_FLOAT, fs,
                                      rill_truncated_normal_initializer(0, 0.1, 0), true);
    rill_output b = rill_get_variable(g, "biases", RILL_FLOAT, rill_shape_vector(cout),
                                      rill_constant_initializer(0.1), true);
    const int ones[4] = {1, 1, 1, 1}, two[4] = {1, 2, 2, 1};
    rill_output c = rill_conv2d(g, in, w, ones, "SAME", NULL, NULL);
    rill_output h = rill_relu(g, rill_bias_add(g, c, b, NULL), NULL);
    rill_output p = rill_max_pool(g, h, two, two, "SAME", NULL);
    rill_graph_pop_variable_scope(g);
    return p;
}

/* TF's "Deep MNIST" CNN on 28x28 images: logits [batch, 10]. */
static rill_output cnn(rill_graph *g, rill_output x, rill_output keep)
{
    rill_output img = rill_reshape(g, x, (int64_t[]){-1, 28, 28, 1}, 4, "image");
    rill_output p1 = conv_pool(g, img, 1, 32, "conv1");
    rill_output p2 = conv_pool(g, p1, 32, 64, "conv2");
    rill_output flat = rill_reshape(g, p2, (int64_t[]){-1, 7 * 7 * 64}, 2, "flat");
    rill_output fc = dense(g, flat, 7 * 7 * 64, 1024, true, "fc1");
    rill_output drop = rill_dropout(g, fc, keep, 0, "dropout");
    return dense(g, drop, 1024, 10, false, "softmax_linear");
}

static rill_optimizer *make_optimizer(const char *name, double lr, rill_status *s)
{
    if (strcmp(name, "sgd") == 0) return rill_gradient_descent_optimizer_new(lr);
    if (strcmp(name, "momentum") == 0) return rill_momentum_optimizer_new(lr, 0.9, false);
    if (strcmp(name, "adam") == 0) return rill_adam_optimizer_new(lr, 0.9, 0.999, 1e-8);
    rill_status_set(s, RILL_INVALID_ARGUMENT,
                    "Invalid value '%s' for flag --optimizer: expected sgd, momentum or adam",
                    name);
    return NULL;
}

/* Copies the rows idx[0..n) of src [N, width] into dst [n, width]. */
static void gather(const rill_tensor *src, const int *idx, int n, rill_tensor *dst, size_t width,
                   size_t esize)
{
    const char *s = rill_tensor_data(src);
    char *d = rill_tensor_data(dst);
    for (int i = 0; i < n; i++)
        memcpy(d + (size_t)i * width * esize, s + (size_t)idx[i] * width * esize, width * esize);
}

/* Scales pixels to zero mean and unit variance, with the training set's statistics. */
static void standardize(rill_tensor *train, rill_tensor *test)
{
    float *a = rill_tensor_data(train);
    int64_t n = rill_tensor_num_elements(train);
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) sum += a[i], sq += (double)a[i] * a[i];
    double mean = sum / (double)n, sd = sqrt(sq / (double)n - mean * mean);
    rill_tensor *both[] = {train, test};
    for (int k = 0; k < 2; k++) {
        float *p = rill_tensor_data(both[k]);
        for (int64_t i = 0; i < rill_tensor_num_elements(both[k]); i++)
            p[i] = (float)((p[i] - mean) / sd);
    }
}

/* --- cluster mode: the start-up part of examples/distributed.c --- */

/* The task's name as TF spells it, e.g. "/job:worker/task:1" ("fashion_mnist" without a
 * cluster); the prefix of the cluster mode's log lines. */
static char task_name[RILL_JOB_NAME_MAX + 32] = "fashion_mnist";

static int fail(const char *what, const rill_status *s)
{
    fprintf(stderr, "%s: %s: %s: %s\n", task_name, what, rill_code_name(rill_status_code(s)),
            rill_status_message(s));
    return 1;
}

#define MAX_VARS 64

static int fashion_main(int argc, char **argv, const char *default_model)
{
    int64_t batch_size, epochs, hidden, seed, task_index, max_steps, eval_batch;
    double learning_rate, decay, startup_deadline, keep_prob;
    const char *optimizer_name, *data_dir, *ps_hosts, *worker_hosts, *job_name, *model;
    rill_flags *flags = rill_flags_new(
        argv[0], "Trains a 784-512-512-10 MLP (--model=mlp) or TF's two-layer CNN (--model=cnn) "
                 "on Fashion-MNIST; data-parallel on a cluster of ps and worker tasks when given "
                 "one (--ps_hosts/--worker_hosts, or TF_CONFIG, Slurm or mpirun: "
                 "docs/LAUNCHING.md).");
    rill_flags_define_string(flags, "model", &model, default_model,
                             "mlp (784-512-512-10) or cnn (conv 32, pool, conv 64, pool, dense "
                             "1024, dropout, dense 10).");
    rill_flags_define_float(flags, "keep_prob", &keep_prob, 0.5,
                            "The CNN's dropout keep probability while training (1 when testing).");
    rill_flags_define_int(flags, "eval_batch", &eval_batch, 1000,
                          "Test images per evaluation run.");
    rill_flags_define_int(flags, "batch_size", &batch_size, 100, "Examples per training step.");
    rill_flags_define_int(flags, "epochs", &epochs, 5, "Passes over the training set.");
    rill_flags_define_float(flags, "learning_rate", &learning_rate, 0.001, "Learning rate.");
    rill_flags_define_float(flags, "lr_decay", &decay, 0.7,
                            "The learning rate is multiplied by this after each epoch.");
    rill_flags_define_string(flags, "optimizer", &optimizer_name, "adam",
                             "One of sgd, momentum, adam.");
    rill_flags_define_int(flags, "hidden", &hidden, 512, "Units in each of the two hidden layers.");
    rill_flags_define_string(flags, "data_dir", &data_dir, RILL_FASHION_MNIST_DIR,
                             "Folder with the four *-idx*-ubyte.gz files.");
    rill_flags_define_int(flags, "seed", &seed, 0, "Random seed (0: from the clock).");
    rill_flags_define_int(flags, "max_steps_per_epoch", &max_steps, 0,
                          "At most this many training steps per epoch (0: the whole training "
                          "set, or on a cluster this worker's shard of it).");
    rill_flags_define_string(flags, "ps_hosts", &ps_hosts, "",
                             "Comma-separated list of hostname:port pairs");
    rill_flags_define_string(flags, "worker_hosts", &worker_hosts, "",
                             "Comma-separated list of hostname:port pairs");
    rill_flags_define_string(flags, "job_name", &job_name, "", "One of 'ps', 'worker'");
    /* Used as an int: 4294967296 must be refused, not wrapped to task 0 (the chief). */
    rill_flags_define_int_range(flags, "task_index", &task_index, 0, 0, INT32_MAX,
                                "Index of task within the job");
    rill_flags_define_float(flags, "startup_deadline", &startup_deadline, 60,
                            "Seconds to wait for the other tasks to come up and, on a non-chief "
                            "worker, for the chief to initialize the variables.");
    int rc = rill_flags_parse_or_exit_code(flags, argc, argv);
    if (rc >= 0) {
        rill_flags_free(flags);
        return rc;
    }
    rill_status *s = rill_status_new();
    rill_optimizer *opt = NULL;
    rill_graph *g = NULL;
    rill_session *sess = NULL;
    rill_supervisor *sv = NULL;
    rill_session_options *so = NULL;
    rill_tensor *train_x = NULL, *train_y = NULL, *test_x = NULL, *test_y = NULL;
    rill_tensor *bx = NULL, *by = NULL, *lr_value = NULL;
    rill_task_config cfg = {0};
    rill_server *server = NULL;
    rill_replica_device_setter *setter = NULL;
    int *order = NULL, *eval_idx = NULL;
    rill_tensor *ex = NULL, *keep_train = NULL, *keep_test = NULL;
    rc = 1;
    bool use_cnn = strcmp(model, "cnn") == 0;
    if (!use_cnn && strcmp(model, "mlp") != 0) {
        fprintf(stderr, "%s: Invalid value '%s' for flag --model: expected mlp or cnn\n", argv[0],
                model);
        rc = 2;
        goto out;
    }
    if (batch_size <= 0 || epochs < 0 || hidden <= 0 || max_steps < 0 || eval_batch <= 0 ||
        !(keep_prob > 0 && keep_prob <= 1)) {
        fprintf(stderr,
                "%s: --batch_size, --hidden and --eval_batch must be positive, --epochs and "
                "--max_steps_per_epoch >= 0, --keep_prob in (0, 1]\n",
                argv[0]);
        goto out;
    }
    opt = make_optimizer(optimizer_name, learning_rate, s);
    if (!opt) {
        fprintf(stderr, "%s: %s\n", argv[0], rill_status_message(s));
        goto out;
    }

    /* The cluster, if any: from the flags, else TF_CONFIG, Slurm or mpirun. */
    rill_launch_options lo = RILL_LAUNCH_OPTIONS_INIT;
    lo.ps_hosts = ps_hosts;
    lo.worker_hosts = worker_hosts;
    lo.job_name = job_name;
    lo.task_index = (int)task_index;
    bool clustered = rill_task_config_resolve(&lo, &cfg, s);
    if (!rill_status_ok(s)) {
        fprintf(stderr, "%s: %s\n", rill_code_name(rill_status_code(s)), rill_status_message(s));
        rc = 2;
        goto out;
    }
    bool is_ps = false, is_chief = true;
    int num_workers = 1, worker_index = 0, ps_tasks = 0;
    char worker_device[RILL_JOB_NAME_MAX + 32] = "";
    if (clustered) {
        setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines show at once in a launcher's log */
        snprintf(task_name, sizeof task_name, "/job:%s/task:%d", cfg.job_name, cfg.task_index);
        snprintf(worker_device, sizeof worker_device, "%s", task_name);
        is_ps = strcmp(cfg.job_name, "ps") == 0;
        bool is_chief_job = strcmp(cfg.job_name, "chief") == 0;
        if (!is_ps && !is_chief_job && strcmp(cfg.job_name, "worker") != 0) {
            fprintf(stderr, "%s: this program runs 'ps', 'worker' and 'chief' tasks, not '%s'\n",
                    task_name, cfg.job_name);
            rc = 2;
            goto out;
        }
        bool has_chief = rill_cluster_spec_has_job(cfg.cluster, "chief");
        is_chief = is_chief_job || (!is_ps && cfg.task_index == 0 && !has_chief);
        /* The training set is split among the training tasks: the chief job (when there is
         * one) first, then the workers. */
        int nw = rill_cluster_spec_has_job(cfg.cluster, "worker")
                     ? rill_cluster_spec_num_tasks(cfg.cluster, "worker", NULL)
                     : 0;
        num_workers = nw + (has_chief ? 1 : 0);
        worker_index = is_chief_job ? 0 : cfg.task_index + (has_chief ? 1 : 0);
        ps_tasks = rill_cluster_spec_has_job(cfg.cluster, "ps")
                       ? rill_cluster_spec_num_tasks(cfg.cluster, "ps", NULL)
                       : 0;
        rill_server_options sopt = {0};
        sopt.connect_deadline_s = startup_deadline > 0 ? startup_deadline : 60;
        server = rill_server_new(cfg.cluster, cfg.job_name, cfg.task_index, &sopt, s);
        if (!server) {
            rc = fail("starting the server", s);
            goto out;
        }
        char spec[1024];
        rill_cluster_spec_to_string(cfg.cluster, spec, sizeof spec);
        fprintf(stderr, "%s: cluster from %s: %s\n", task_name, cfg.source, spec);
        if (is_ps) {
            /* server.join(): serve until every worker finished (RILL_PS_JOIN_FOREVER=1: until
             * SIGTERM or SIGINT) */
            /* join handles SIGTERM and SIGINT while it serves and puts back what it found: ignored,
             * so that one coming while the ps exits by itself (a launcher, a script stopping the
             * cluster) does not turn a clean exit into a killed one (143). */
            signal(SIGTERM, SIG_IGN);
            signal(SIGINT, SIG_IGN);
            rc = rill_server_join(server, s) == RILL_OK ? 0 : fail("serving", s);
            int total, done = rill_server_finished_tasks(server, &total);
            const char *forever = getenv("RILL_PS_JOIN_FOREVER");
            if (rc == 0 && total > 0 && done == total && !(forever && strcmp(forever, "1") == 0))
                fprintf(stderr, "%s: exiting: all %d workers finished\n", task_name, total);
            else if (rc == 0)
                fprintf(stderr, "%s: stopped\n", task_name);
            goto out;
        }
    }

    char path[4][1024];
    const char *names[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                            "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (int i = 0; i < 4; i++) snprintf(path[i], sizeof path[i], "%s/%s", data_dir, names[i]);
    if (!(train_x = rill_idx_read_images(path[0], s)) ||
        !(train_y = rill_idx_read_labels(path[1], s)) ||
        !(test_x = rill_idx_read_images(path[2], s)) ||
        !(test_y = rill_idx_read_labels(path[3], s))) {
        fprintf(stderr, "%s: %s\n", argv[0], rill_status_message(s));
        goto out;
    }
    int64_t ntrain = rill_tensor_dim(train_x, 0), ntest = rill_tensor_dim(test_x, 0);
    int64_t width = rill_tensor_dim(train_x, 1);
    printf("Fashion-MNIST: %lld training and %lld test images of %lld pixels; batch %lld, %s "
           "lr %g\n",
           (long long)ntrain, (long long)ntest, (long long)width, (long long)batch_size,
           optimizer_name, learning_rate);
    /* This worker's shard: examples worker_index, worker_index + num_workers, ... (all of them
     * without a cluster). */
    int64_t nshard =
        ntrain > worker_index ? (ntrain - worker_index + num_workers - 1) / num_workers : 0;
    if (clustered)
        printf("%s: %d ps task(s); worker %d of %d trains on %lld examples (%d, %d + %d, ...)%s\n",
               task_name, ps_tasks, worker_index, num_workers, (long long)nshard, worker_index,
               worker_index, num_workers, is_chief ? "; the chief evaluates the test set" : "");

    g = rill_graph_new();
    rill_graph_set_seed(g, seed ? seed : (int64_t)time(NULL));
    if (clustered) {
        /* with tf.device(tf.train.replica_device_setter(..., ps_strategy=greedy by bytes)) */
        setter = rill_replica_device_setter_new(ps_tasks, "/job:ps", worker_device, true,
                                                RILL_PS_GREEDY_BY_BYTES, s);
        if (!rill_status_ok(s)) {
            rc = fail("replica_device_setter", s);
            goto out;
        }
        if (setter)
            rill_graph_push_device_fn(g, rill_replica_device_setter_fn, setter);
        else
            rill_graph_push_device(g, worker_device); /* no ps job: everything on this worker */
    }
    mlp m = {0};
    m.x = rill_placeholder(g, RILL_FLOAT, rill_shape_matrix(-1, width), "images");
    m.y = rill_placeholder(g, RILL_INT32, rill_shape_vector(-1), "labels");
    if (use_cnn) {
        if (width != 28 * 28) {
            fprintf(stderr, "%s: the CNN takes 28x28 images, not %lld pixels\n", argv[0],
                    (long long)width);
            goto out;
        }
        m.keep = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "keep_prob");
        m.logits = cnn(g, m.x, m.keep);
    } else {
        rill_output h1 = dense(g, m.x, width, hidden, true, "hidden1");
        rill_output h2 = dense(g, h1, hidden, hidden, true, "hidden2");
        m.logits = dense(g, h2, hidden, 10, false, "softmax_linear");
    }
    m.loss = rill_mean(g, rill_sparse_softmax_cross_entropy_with_logits(g, m.y, m.logits, "xent"),
                       NULL, -1, false, "loss");
    rill_output lr = rill_placeholder(g, RILL_FLOAT, rill_shape_scalar(), "learning_rate");
    rill_optimizer_set_learning_rate_tensor(opt, lr);
    rill_output gs = rill_train_get_or_create_global_step(g);
    m.train = rill_optimizer_minimize(opt, g, m.loss, gs, "train");
    m.init = rill_global_variables_initializer(g, NULL);
    if (clustered) rill_graph_pop_device(g);
    if (!rill_graph_ok(g)) {
        fprintf(stderr, "%s: building the model: %s\n", argv[0],
                rill_status_message(rill_graph_status(g)));
        goto out;
    }
    if (clustered) {
        so = rill_session_options_new();
        rill_session_options_set_target(so, rill_server_target(server));
        /* Only the ps tasks and this worker (TF's device_filters): a worker that starts late
         * still starts when another has already finished and gone. */
        const char *filters[] = {"/job:ps", worker_device};
        rill_session_options_set_device_filters(so, filters, 2);
        /* tf.train.Supervisor(is_chief, init_op) without a logdir: the chief initializes the
         * variables unless the ps tasks already hold them; the others wait until they do. */
        rill_supervisor_options svo = RILL_SUPERVISOR_OPTIONS_INIT;
        svo.is_chief = is_chief;
        svo.init_op = m.init;
        svo.no_saver = true;
        svo.no_summary_op = true;
        svo.max_wait_secs = startup_deadline;
        sv = rill_supervisor_new(g, &svo, s);
        sess = sv ? rill_supervisor_prepare_or_wait_for_session(sv, so, s) : NULL;
        if (!sess) {
            rc = fail(is_chief ? "preparing the session" : "waiting for the chief", s);
            goto out;
        }
        fprintf(stderr, "%s: training%s\n", task_name, is_chief ? " (chief)" : "");
    } else {
        sess = rill_session_new(g, NULL, s);
        if (!sess || rill_session_run_targets(sess, &m.init, 1, s) != RILL_OK) {
            fprintf(stderr, "%s: %s\n", argv[0], rill_status_message(s));
            goto out;
        }
    }

    order = malloc((size_t)(nshard ? nshard : 1) * sizeof *order);
    for (int64_t i = 0; i < nshard; i++) order[i] = (int)(worker_index + i * num_workers);
    if (clustered)
        srand48(seed ? (long)(seed * 1000003 + worker_index)
                     : (long)time(NULL) ^ ((long)getpid() << 16));
    else
        srand48(seed ? seed : (long)time(NULL));
    standardize(train_x, test_x);
    bx = rill_tensor_new(RILL_FLOAT, (int64_t[]){batch_size, width}, 2);
    lr_value = rill_tensor_scalar_float((float)learning_rate);
    by = rill_tensor_new(RILL_INT32, (int64_t[]){batch_size}, 1);
    keep_train = rill_tensor_scalar_float((float)keep_prob);
    keep_test = rill_tensor_scalar_float(1.0f);
    if (eval_batch > ntest) eval_batch = ntest > 0 ? ntest : 1;
    eval_idx = malloc((size_t)(ntest ? ntest : 1) * sizeof *eval_idx);
    for (int64_t i = 0; i < ntest; i++) eval_idx[i] = (int)i;
    ex = rill_tensor_new(RILL_FLOAT, (int64_t[]){eval_batch, width}, 2);
    double best = 0, acc = 0, total_examples = 0, total_secs = 0;
    for (int64_t epoch = 1; epoch <= epochs; epoch++) {
        for (int64_t i = nshard - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(drand48() * (double)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        struct timespec ts0, ts1;
        clock_gettime(CLOCK_MONOTONIC, &ts0);
        double loss_sum = 0;
        int64_t nbatches = nshard / batch_size;
        if (max_steps > 0 && nbatches > max_steps) nbatches = max_steps;
        for (int64_t bi = 0; bi < nbatches; bi++) {
            gather(train_x, order + bi * batch_size, (int)batch_size, bx, (size_t)width, 4);
            gather(train_y, order + bi * batch_size, (int)batch_size, by, 1, 4);
            rill_output feeds[] = {m.x, m.y, lr, m.keep};
            rill_tensor *fv[] = {bx, by, lr_value, keep_train};
            rill_tensor *lv;
            if (rill_session_run(sess, feeds, fv, use_cnn ? 4 : 3, &m.loss, &lv, 1, &m.train, 1,
                                 s) != RILL_OK) {
                if (clustered)
                    fail("training step", s);
                else
                    fprintf(stderr, "%s: training step: %s\n", argv[0], rill_status_message(s));
                goto out;
            }
            loss_sum += *(float *)rill_tensor_data(lv);
            rill_tensor_free(lv);
        }
        clock_gettime(CLOCK_MONOTONIC, &ts1);
        double secs =
            (double)(ts1.tv_sec - ts0.tv_sec) + (double)(ts1.tv_nsec - ts0.tv_nsec) * 1e-9;
        total_examples += (double)(nbatches * batch_size);
        total_secs += secs;
        *(float *)rill_tensor_data(lr_value) *= (float)decay;
        double mean_loss = loss_sum / (double)(nbatches ? nbatches : 1);
        if (!is_chief) { /* a worker other than the chief: no evaluation */
            printf("epoch %lld: training loss %.4f, %.0f examples/s\n", (long long)epoch, mean_loss,
                   (double)(nbatches * batch_size) / secs);
            continue;
        }

        /* Test accuracy: logits for eval_batch images a run (keep_prob 1), argmax on the host. */
        const int32_t *ty = rill_tensor_data(test_y);
        int64_t correct = 0;
        for (int64_t e0 = 0; e0 + eval_batch <= ntest; e0 += eval_batch) {
            gather(test_x, eval_idx + e0, (int)eval_batch, ex, (size_t)width, 4);
            rill_output feeds[] = {m.x, m.keep};
            rill_tensor *fv[] = {ex, keep_test};
            rill_tensor *logits;
            if (rill_session_run(sess, feeds, fv, use_cnn ? 2 : 1, &m.logits, &logits, 1, NULL, 0,
                                 s) != RILL_OK) {
                if (clustered)
                    fail("evaluation", s);
                else
                    fprintf(stderr, "%s: evaluation: %s\n", argv[0], rill_status_message(s));
                goto out;
            }
            const float *lg = rill_tensor_data(logits);
            for (int64_t i = 0; i < eval_batch; i++) {
                int arg = 0;
                for (int c = 1; c < 10; c++)
                    if (lg[i * 10 + c] > lg[i * 10 + arg]) arg = c;
                correct += arg == ty[e0 + i];
            }
            rill_tensor_free(logits);
        }
        ntest = ntest / eval_batch * eval_batch; /* the images evaluated */
        acc = (double)correct / (double)ntest;
        if (acc > best) best = acc;
        printf("epoch %lld: training loss %.4f, test accuracy %.2f%%, %.0f examples/s\n",
               (long long)epoch, mean_loss, acc * 100, (double)(nbatches * batch_size) / secs);
        fflush(stdout);
    }
    if (!clustered) {
        printf("best test accuracy: %.2f%%\n", best * 100);
    } else {
        /* The global step the ps tasks hold now (every worker's steps together). */
        rill_tensor *gsv = NULL;
        if (rill_session_run(sess, NULL, NULL, 0, &gs, &gsv, 1, NULL, 0, s) != RILL_OK) {
            fail("reading the global step", s);
            goto out;
        }
        long long step = (long long)*(int64_t *)rill_tensor_data(gsv);
        rill_tensor_free(gsv);
        double eps = total_secs > 0 ? total_examples / total_secs : 0;
        if (is_chief)
            printf("final: global_step %lld, test accuracy %.2f%% (best %.2f%%), %.0f "
                   "examples/s\n",
                   step, acc * 100, best * 100, eps);
        else
            printf("final: global_step %lld, %.0f examples/s\n", step, eps);
    }
    rc = 0;
out:
    free(order);
    free(eval_idx);
    rill_tensor_free(ex);
    rill_tensor_free(keep_train);
    rill_tensor_free(keep_test);
    rill_tensor_free(lr_value);
    rill_tensor_free(bx);
    rill_tensor_free(by);
    rill_tensor_free(train_x);
    rill_tensor_free(train_y);
    rill_tensor_free(test_x);
    rill_tensor_free(test_y);
    rill_supervisor_free(sv);
    rill_session_free(sess);
    rill_session_options_free(so);
    rill_graph_free(g);
    rill_replica_device_setter_free(setter);
    rill_optimizer_free(opt);
    /* A worker's sessions are closed (the chief's last checkpoint is written): the ps tasks may
     * go once every worker has said so. */
    if (rc == 0 && server && strcmp(cfg.job_name, "ps") != 0 &&
        rill_server_report_finished(server, s) != RILL_OK)
        fprintf(stderr, "%s: warning: %s\n", task_name, rill_status_message(s));
    rill_server_free(server);
    rill_task_config_clear(&cfg);
    rill_status_free(s);
    rill_flags_free(flags);
    return rc;
}
