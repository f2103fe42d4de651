/* distributed.c - the seed's distributed.py: one model trained by a cluster.
 *
 * Every task of the cluster runs this program. A "ps" task starts its server and joins it: it
 * holds the variables and applies the updates the workers send. A "worker" task builds the
 * seed's model under replica_device_setter (variables on the ps tasks, everything else on the
 * worker), opens a session on its own server and trains:
 *
 *   pred = input * weight + biase,  loss = square(label - pred)
 *   data: y = 2x + 10 + 0.33 * noise, one sample per step, plain gradient descent
 *
 * printing "step: %d, weight: %f, biase: %f, loss: %f" whenever the global step it got back is a
 * multiple of --steps_to_validate, until the global step reaches --train_steps, then
 *
 *   final: global_step %d, weight %f, biase %f, local_steps %d, dropped %d, %.0f steps/s
 *
 * (local_steps: the steps this worker ran; dropped: those whose gradients SyncReplicasOptimizer
 * dropped as stale, always 0 when asynchronous; steps/s counts this worker's own steps).
 *
 * --issync=0 trains asynchronously: each step applies its gradients to the ps at once. --issync=1
 * wraps the optimizer in SyncReplicasOptimizer: the chief's queue runner averages
 * --replicas_to_aggregate gradients (default: the number of workers) per global step; workers
 * beyond that many are backups whose late gradients are dropped, so a worker that stops does not
 * stop training. When done, the chief leaves a token for every worker, so none waits for a step
 * that will not come. A sync step that waits for a worker that stopped (and no backup) is logged
 * by every task waiting on it every --stall_report_secs, naming the workers whose gradients have
 * not come and whether they answer; after --sync_timeout the error names them too.
 *
 * The cluster comes from the seed's flags (--ps_hosts, --worker_hosts, --job_name, --task_index)
 * or, when those are not given, from TF_CONFIG, Slurm or mpirun (docs/LAUNCHING.md), so the same
 * command line runs under each launcher. A TF_CONFIG "chief" job trains too and is the chief.
 *
 * As the seed, workers run under tf.train.Supervisor with --logdir (default ./checkpoint/, relative
 * to the current directory): the chief initializes the variables, or restores them from the
 * latest checkpoint in --logdir when there is one (a restarted cluster goes on from there); a
 * chief restarted while the ps tasks kept a live model at a global step not older than that
 * checkpoint goes on from the live model instead, and says so (--restore_over_live restores the
 * checkpoint over it); the other workers wait until the model is ready. The chief saves
 * model.ckpt-<step> every --save_model_secs and at the end, and records the scalar `cost` in the
 * logdir's event file every --summary_steps of its steps.
 *
 * A ps task serves until every worker (and the chief) has finished training, then exits 0, so
 * that a launcher's job ends when training does: each worker tells every ps when it is done
 * (rill_server_report_finished, after its sessions are closed, the chief's after its last
 * checkpoint). A worker that crashes tells nobody, and the ps serves on. --ps_join_forever keeps
 * TensorFlow's server.join(): serve until SIGTERM or SIGINT.
 *
 * Exit codes: 0 done (a ps task: every worker finished, or SIGTERM or SIGINT), 1 a run-time
 * failure (a task that cannot be reached, a PS lost mid-run), 2 a usage error. */
#include <rill/rill.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Standard normal deviates for the synthetic data (Box-Muller on rand48). */
static double randn(void)
{
    double u1 = drand48(), u2 = drand48();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The task's name as TF spells it, e.g. "/job:worker/task:1"; the prefix of every log line. */
static char task_name[RILL_JOB_NAME_MAX + 32];

static int fail(const char *what, const rill_status *s)
{
    fprintf(stderr, "%s: %s: %s: %s\n", task_name, what, rill_code_name(rill_status_code(s)),
            rill_status_message(s));
    return 1;
}

typedef struct options {
    double learning_rate;
    int64_t steps_to_validate;
    int64_t issync;
    int64_t train_steps;
    double startup_deadline;
    int64_t seed;
    const char *logdir;
    double save_model_secs;
    double sync_timeout;
    double stall_report_secs;
    int64_t summary_steps;
    int64_t replicas_to_aggregate;
    bool restore_over_live;
} options;

static int run_worker(const options *opt, const rill_task_config *cfg, rill_server *server,
                      bool is_chief, rill_status *s)
{
    int rc = 1;
    int ps_tasks = rill_cluster_spec_has_job(cfg->cluster, "ps")
                       ? rill_cluster_spec_num_tasks(cfg->cluster, "ps", NULL)
                       : 0;
    int nworkers = rill_cluster_spec_num_tasks(cfg->cluster, "worker", NULL) +
                   (rill_cluster_spec_has_job(cfg->cluster, "chief") ? 1 : 0);
    char worker_device[RILL_JOB_NAME_MAX + 32];
    snprintf(worker_device, sizeof worker_device, "/job:%s/task:%d", cfg->job_name,
             cfg->task_index);
    rill_graph *g = rill_graph_new();
    if (opt->seed) rill_graph_set_seed(g, opt->seed);
    rill_optimizer *optimizer = rill_gradient_descent_optimizer_new(opt->learning_rate);
    rill_sync_replicas_optimizer *sync = NULL;
    rill_saver *saver = NULL;
    rill_supervisor *sv = NULL;
    rill_session_options *so = rill_session_options_new();
    rill_session *sess = NULL;
    rill_tensor *x = NULL, *y = NULL;
    rill_node *train_op, *init_tokens = NULL, *release_tokens = NULL, *sync_op = NULL;

    /* with tf.device(tf.train.replica_device_setter(worker_device=..., cluster=cluster)) */
    rill_replica_device_setter *setter = rill_replica_device_setter_new(
        ps_tasks, "/job:ps", worker_device, true, RILL_PS_ROUND_ROBIN, s);
    if (!rill_status_ok(s)) {
        rc = fail("replica_device_setter", s);
        goto out;
    }
    if (setter)
        rill_graph_push_device_fn(g, rill_replica_device_setter_fn, setter);
    else
        rill_graph_push_device(g, worker_device); /* no ps job: everything on this worker */
    rill_output global_step = rill_train_get_or_create_global_step(g);
    rill_output input = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    rill_output label = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "label");
    rill_output weight = rill_get_variable(g, "weight", RILL_FLOAT, rill_shape_vector(1),
                                           rill_random_normal_initializer(0, 1, 0), true);
    rill_output biase = rill_get_variable(g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                          rill_random_normal_initializer(0, 1, 0), true);
    rill_output pred = rill_add(g, rill_mul(g, input, weight, NULL), biase, NULL);
    rill_output loss = rill_square(g, rill_sub(g, label, pred, NULL), NULL);
    rill_grad_and_var gv[2];
    int ngv = rill_optimizer_compute_gradients(optimizer, g, loss, NULL, 0, gv, 2);
    if (ngv < 0) ngv = 0;
    if (opt->issync) {
        /* tf.train.SyncReplicasOptimizer(optimizer, replicas_to_aggregate=len(worker_hosts),
         * total_num_replicas=len(worker_hosts)), or fewer to aggregate: backup workers */
        int to_aggregate =
            opt->replicas_to_aggregate > 0 ? (int)opt->replicas_to_aggregate : nworkers;
        sync = rill_sync_replicas_optimizer_new(optimizer, to_aggregate, nworkers);
        rill_sync_replicas_set_timeout(sync, opt->sync_timeout);
        train_op = rill_sync_replicas_apply_gradients(sync, g, gv, ngv, global_step, NULL);
        init_tokens = rill_sync_replicas_get_init_tokens_op(sync, -1, s);
        /* Beyond the seed: the chief leaves tokens for the others when it is done, so that a
         * worker waiting for one sees the final step instead of its token deadline. */
        release_tokens = rill_sync_replicas_get_init_tokens_op(sync, nworkers, s);
        sync_op = rill_sync_replicas_chief_queue_runner_op(sync, s);
    } else {
        train_op = rill_optimizer_apply_gradients(optimizer, g, gv, ngv, global_step, NULL);
    }
    rill_node *init_op = rill_global_variables_initializer(g, NULL);
    saver = rill_saver_new(g, NULL, 0, 5, 10000, s);
    /* tf.summary.scalar('cost', loss_value); summary_op = tf.summary.merge_all() */
    rill_summary_scalar(g, "cost", rill_reshape(g, loss, NULL, 0, NULL));
    rill_output summary_op = rill_summary_merge_all(g, NULL);
    rill_graph_pop_device(g);
    if (!rill_graph_ok(g) || !saver || !rill_status_ok(s)) {
        rc = fail("building the graph", rill_graph_ok(g) ? s : rill_graph_status(g));
        goto out;
    }

    /* tf.train.Supervisor(is_chief, logdir, init_op, summary_op=None, saver, global_step,
     * save_model_secs=60): the chief records `cost` itself (below), as the summary depends on
     * the fed data. */
    rill_supervisor_options svo = RILL_SUPERVISOR_OPTIONS_INIT;
    svo.is_chief = is_chief;
    svo.logdir = opt->logdir;
    svo.init_op = init_op;
    svo.no_summary_op = true;
    svo.saver = saver;
    svo.global_step = global_step;
    svo.save_model_secs = opt->save_model_secs;
    svo.max_wait_secs = opt->startup_deadline;
    svo.restore_over_live = opt->restore_over_live;
    sv = rill_supervisor_new(g, &svo, s);
    if (!sv) {
        rc = fail("creating the supervisor", s);
        goto out;
    }
    rill_session_options_set_target(so, rill_server_target(server));
    /* ConfigProto(device_filters=["/job:ps", worker_device]), as TF's guides advise: this
     * worker talks to the ps tasks and itself only, so a worker that starts late still starts
     * when another one has already finished and gone. */
    const char *filters[] = {"/job:ps", worker_device};
    rill_session_options_set_device_filters(so, filters, 2);
    sess = rill_supervisor_prepare_or_wait_for_session(sv, so, s);
    if (!sess) {
        rc = fail(is_chief ? "preparing the session" : "waiting for the model", s);
        goto out;
    }
    if (sync) {
        /* What SyncReplicasOptimizer's session hook does, and the seed's
         * sv.start_queue_runners(sess, [chief_queue_runner]); sess.run(init_token_op). */
        rill_node *si = is_chief ? rill_sync_replicas_chief_init_op(sync)
                                 : rill_sync_replicas_local_step_init_op(sync);
        if (rill_session_run_targets(sess, &si, 1, s) != RILL_OK ||
            (is_chief && (rill_supervisor_start_queue_runner(sv, sess, sync_op, s) != RILL_OK ||
                          rill_session_run_targets(sess, &init_tokens, 1, s) != RILL_OK))) {
            rc = fail("starting synchronous training", s);
            goto out;
        }
    }
    fprintf(stderr, "%s: training%s%s\n", task_name, sync ? " synchronously" : "",
            is_chief ? " (chief)" : "");

    x = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    y = rill_tensor_new(RILL_FLOAT, (int64_t[]){1}, 1);
    float *xp = rill_tensor_data(x), *yp = rill_tensor_data(y);
    rill_output feeds[] = {input, label};
    rill_tensor *feed_values[] = {x, y};
    /* train_op's value is the global step it produced (global_step += 1 after the updates; in
     * sync mode the token): the seed's [train_op, loss, global_step] without a second, racy
     * read of the step. The chief adds the summary now and then. */
    rill_output fetches[] = {rill_node_output(train_op, 0), loss, summary_op};
    rill_output wb[] = {weight, biase};
    int64_t step = 0, local_steps = 0;
    double start = now_s();
    while (step < opt->train_steps && !rill_supervisor_should_stop(sv)) {
        xp[0] = (float)randn();
        yp[0] = (float)(2 * xp[0] + randn() * 0.33 + 10);
        bool summarize = is_chief && local_steps % opt->summary_steps == 0;
        rill_tensor *out[3] = {NULL, NULL, NULL};
        if (rill_session_run(sess, feeds, feed_values, 2, fetches, out, summarize ? 3 : 2, NULL, 0,
                             s) != RILL_OK) {
            rc = fail("training step", s);
            goto out;
        }
        step = *(int64_t *)rill_tensor_data(out[0]);
        float loss_v = *(float *)rill_tensor_data(out[1]);
        if (summarize && rill_supervisor_summary_computed(sv, out[2], step, s) != RILL_OK) {
            rc = fail("writing the summary", s);
            goto out;
        }
        for (int i = 0; i < 3; i++) rill_tensor_free(out[i]);
        local_steps++;
        if (step % opt->steps_to_validate == 0) {
            rill_tensor *v[2];
            if (rill_session_run(sess, NULL, NULL, 0, wb, v, 2, NULL, 0, s) != RILL_OK) {
                rc = fail("reading the variables", s);
                goto out;
            }
            printf("step: %lld, weight: %f, biase: %f, loss: %f\n", (long long)step,
                   *(float *)rill_tensor_data(v[0]), *(float *)rill_tensor_data(v[1]), loss_v);
            rill_tensor_free(v[0]);
            rill_tensor_free(v[1]);
        }
    }
    double elapsed = now_s() - start;
    if (is_chief && release_tokens &&
        rill_session_run_targets(sess, &release_tokens, 1, s) != RILL_OK) {
        rc = fail("releasing the other workers", s);
        goto out;
    }
    /* sv.stop(): the services end and the chief saves a final checkpoint. */
    if (rill_supervisor_stop(sv, s) != RILL_OK) {
        rc = fail("stopping the supervisor", s);
        goto out;
    }
    /* The trained values and, when synchronous, how many of this worker's steps were dropped. */
    rill_output finals[] = {weight, biase, rill_sync_replicas_dropped(sync)};
    rill_tensor *v[3] = {NULL, NULL, NULL};
    if (rill_session_run(sess, NULL, NULL, 0, finals, v, sync ? 3 : 2, NULL, 0, s) != RILL_OK) {
        rc = fail("reading the variables", s);
        goto out;
    }
    long long dropped = sync ? (long long)*(int64_t *)rill_tensor_data(v[2]) : 0;
    printf("final: global_step %lld, weight %f, biase %f, local_steps %lld, dropped %lld, "
           "%.0f steps/s\n",
           (long long)step, *(float *)rill_tensor_data(v[0]), *(float *)rill_tensor_data(v[1]),
           (long long)local_steps, dropped, elapsed > 0 ? (double)local_steps / elapsed : 0.0);
    for (int i = 0; i < 3; i++) rill_tensor_free(v[i]);
    rc = 0;
out:
    rill_tensor_free(x);
    rill_tensor_free(y);
    rill_supervisor_free(sv); /* stops what still runs */
    rill_session_free(sess);
    rill_sync_replicas_optimizer_free(sync);
    rill_saver_free(saver);
    rill_session_options_free(so);
    rill_optimizer_free(optimizer);
    rill_graph_free(g);
    rill_replica_device_setter_free(setter);
    return rc;
}

int main(int argc, char **argv)
{
    options opt;
    const char *ps_hosts, *worker_hosts, *job_name, *secret_file, *run_id;
    int64_t task_index, max_payload_mb;
    bool join_forever, encrypt;
    rill_flags *flags = rill_flags_new(
        argv[0], "The seed's distributed.py: trains y = 2x + 10 on a cluster of ps and worker "
                 "tasks. Without --ps_hosts/--worker_hosts the cluster comes from TF_CONFIG, "
                 "Slurm or mpirun (docs/LAUNCHING.md).");
    rill_flags_define_float(flags, "learning_rate", &opt.learning_rate, 0.00003,
                            "Initial learning rate.");
    rill_flags_define_int(flags, "steps_to_validate", &opt.steps_to_validate, 1000,
                          "Steps to validate and print loss");
    rill_flags_define_string(flags, "ps_hosts", &ps_hosts, "",
                             "Comma-separated list of hostname:port pairs");
    rill_flags_define_string(flags, "worker_hosts", &worker_hosts, "",
                             "Comma-separated list of hostname:port pairs");
    rill_flags_define_string(flags, "job_name", &job_name, "", "One of 'ps', 'worker'");
    rill_flags_define_int(flags, "task_index", &task_index, 0, "Index of task within the job");
    rill_flags_define_int(flags, "issync", &opt.issync, 0,
                          "1: synchronous mode (SyncReplicasOptimizer), 0: asynchronous mode");
    rill_flags_define_int(flags, "replicas_to_aggregate", &opt.replicas_to_aggregate, 0,
                          "--issync=1: gradients averaged per global step (0: the number of "
                          "workers); workers beyond that many are backups.");
    rill_flags_define_int(flags, "train_steps", &opt.train_steps, 1000000,
                          "Train until the global step reaches this (the seed's loop bound).");
    rill_flags_define_string(flags, "logdir", &opt.logdir, "./checkpoint/",
                             "The Supervisor's logdir: checkpoints (model.ckpt-<step>) and the "
                             "event file with the scalar `cost`; a restarted cluster goes on "
                             "from its latest checkpoint.");
    rill_flags_define_bool(flags, "restore_over_live", &opt.restore_over_live, false,
                           "A restarted chief restores the latest checkpoint even when the ps "
                           "tasks hold a live model at a newer global step (by default it goes "
                           "on from the live model and logs both steps).");
    rill_flags_define_float(flags, "save_model_secs", &opt.save_model_secs, 60,
                            "Seconds between the chief's checkpoints (and one at the end).");
    rill_flags_define_int(flags, "summary_steps", &opt.summary_steps, 100,
                          "The chief records the `cost` summary every this many of its steps.");
    rill_flags_define_float(flags, "sync_timeout", &opt.sync_timeout, 300,
                            "--issync=1: seconds a worker waits for its token, and the chief "
                            "for gradients, before failing.");
    rill_flags_define_float(flags, "stall_report_secs", &opt.stall_report_secs, 5,
                            "A step that has waited this long on another task logs what for, "
                            "and again at this interval (--issync=1: the workers whose "
                            "gradients have not come, and whether they answer); < 0: never.");
    rill_flags_define_float(flags, "startup_deadline", &opt.startup_deadline, 60,
                            "Seconds to wait for the other tasks to come up and, on a non-chief "
                            "worker, for the chief to initialize the variables.");
    rill_flags_define_string(flags, "cluster_secret_file", &secret_file, "",
                             "A file holding the cluster's secret (make one with rill-keygen): "
                             "every connection must prove it knows it. Default: the file "
                             "RILL_CLUSTER_SECRET_FILE names; without either, anyone who can "
                             "reach the ports is trusted (docs/LAUNCHING.md).");
    rill_flags_define_bool(flags, "encrypt", &encrypt, false,
                           "Encrypt every frame between the tasks (needs the secret); without it "
                           "frames are authenticated (with a secret), not encrypted.");
    rill_flags_define_string(flags, "run_id", &run_id, "",
                             "The run this task belongs to, the same for every task of a job "
                             "(default: RILL_JOB_ID, or the launcher's job id; else the chief "
                             "makes one, kept in <logdir>/rill_run_id, and the other tasks "
                             "learn it). A task of another run on the same ports is refused.");
    rill_flags_define_int_range(flags, "max_payload_mb", &max_payload_mb, 1024, 1, INT64_C(1) << 24,
                                "The largest message (MiB) this task accepts: a graph, a step's "
                                "feeds, a tensor of unknown shape.");
    rill_flags_define_bool(flags, "ps_join_forever", &join_forever, false,
                           "A ps task serves until SIGTERM or SIGINT, as TensorFlow's "
                           "server.join() (default: it exits 0 once every worker finished "
                           "training).");
    rill_flags_define_int(flags, "seed", &opt.seed, 0,
                          "Random seed of the data and initial values (0: from the clock).");
    int rc = rill_flags_parse_or_exit_code(flags, argc, argv);
    if (rc >= 0) {
        rill_flags_free(flags);
        return rc;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines show up at once in a launcher's log */
    snprintf(task_name, sizeof task_name, "distributed");
    rc = 2;
    rill_status *s = rill_status_new();
    rill_task_config cfg = {0};
    rill_server *server = NULL;
    if (opt.steps_to_validate <= 0) opt.steps_to_validate = 1;
    if (opt.summary_steps <= 0) opt.summary_steps = 1;
    if (opt.issync != 0 && opt.issync != 1) {
        fprintf(stderr, "--issync must be 0 (asynchronous) or 1 (synchronous), not %lld\n",
                (long long)opt.issync);
        goto out;
    }
    if (opt.replicas_to_aggregate < 0) {
        fprintf(stderr,
                "--replicas_to_aggregate must be positive, or 0 for the number of "
                "workers, not %lld\n",
                (long long)opt.replicas_to_aggregate);
        goto out;
    }

    /* An index past int's range must not wrap to another task (4294967296 ran as the chief). */
    if (task_index < 0 || task_index > INT32_MAX) {
        fprintf(stderr, "--task_index must be between 0 and %d, not %lld\n", INT32_MAX,
                (long long)task_index);
        goto out;
    }
    rill_launch_options lo = RILL_LAUNCH_OPTIONS_INIT;
    lo.ps_hosts = ps_hosts;
    lo.worker_hosts = worker_hosts;
    lo.job_name = job_name;
    lo.task_index = (int)task_index;
    if (!rill_task_config_resolve(&lo, &cfg, s)) {
        if (!rill_status_ok(s)) goto usage_error;
        fprintf(stderr, "No cluster: give --ps_hosts and --worker_hosts with --job_name and "
                        "--task_index, or run under TF_CONFIG, Slurm or mpirun "
                        "(docs/LAUNCHING.md).\n");
        goto out;
    }
    if (!rill_status_ok(s)) goto usage_error;
    snprintf(task_name, sizeof task_name, "/job:%s/task:%d", cfg.job_name, cfg.task_index);
    bool is_ps = strcmp(cfg.job_name, "ps") == 0;
    bool is_chief_job = strcmp(cfg.job_name, "chief") == 0;
    if (!is_ps && !is_chief_job && strcmp(cfg.job_name, "worker") != 0) {
        fprintf(stderr, "%s: this program runs 'ps', 'worker' and 'chief' tasks, not '%s'\n",
                task_name, cfg.job_name);
        goto out;
    }
    /* The chief initializes the variables: the "chief" task when the cluster has one (TF_CONFIG),
     * else worker 0, as the seed's is_chief=(task_index == 0). */
    bool is_chief = is_chief_job || (!is_ps && cfg.task_index == 0 &&
                                     !rill_cluster_spec_has_job(cfg.cluster, "chief"));

    rc = 1;
    rill_server_options so = {0};
    so.run_id = *run_id ? run_id : NULL;
    so.encrypt = encrypt;
    so.max_payload = (uint64_t)max_payload_mb << 20;
    char run_file[4096];
    snprintf(run_file, sizeof run_file, "%s%srill_run_id", opt.logdir,
             *opt.logdir && opt.logdir[strlen(opt.logdir) - 1] == '/' ? "" : "/");
    if (is_chief && *opt.logdir) so.run_id_file = run_file;
    so.connect_deadline_s = opt.startup_deadline > 0 ? opt.startup_deadline : 60;
    so.join_forever = join_forever;
    /* A step may wait up to --sync_timeout for its token: the transport waits a little longer,
     * so that the error that comes back is the token's ("Dequeueing from queue ..."). */
    if (opt.issync && opt.sync_timeout + 30 > 300) so.step_deadline_s = opt.sync_timeout + 30;
    so.stall_report_s = opt.stall_report_secs;
    char *secret = NULL;
    if (*secret_file) {
        secret = rill_cluster_secret_read(secret_file, s);
        if (!secret) {
            fprintf(stderr, "--cluster_secret_file: %s\n", rill_status_message(s));
            rc = 2;
            goto out;
        }
        so.secret = secret;
    }
    server = rill_server_new(cfg.cluster, cfg.job_name, cfg.task_index, &so, s);
    free(secret);
    if (!server) {
        /* Two jobs on one node under a launcher take the same ports: say how to move one. */
        if (strstr(rill_status_message(s), "already in use") &&
            (strcmp(cfg.source, "slurm") == 0 || strcmp(cfg.source, "mpi") == 0)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s (another job on this node? under %s the ports start at "
                     "RILL_BASE_PORT, 2222 by default: give this job another one)",
                     rill_status_message(s), strcmp(cfg.source, "mpi") == 0 ? "mpirun" : "Slurm");
            rill_status_set(s, rill_status_code(s), "%s", msg);
        }
        rc = fail("starting the server", s);
        goto out;
    }
    char spec[1024];
    rill_cluster_spec_to_string(cfg.cluster, spec, sizeof spec);
    fprintf(stderr, "%s: cluster from %s: %s\n", task_name, cfg.source, spec);
    if (is_ps) {
        /* server.join(): serve until every worker finished (or, --ps_join_forever, until
         * SIGTERM or SIGINT) */
        /* join handles SIGTERM and SIGINT while it serves and puts back what it found: ignored,
         * so that one coming while the ps exits by itself (a launcher, a script stopping the
         * cluster) does not turn a clean exit into a killed one (143). */
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        rc = rill_server_join(server, s) == RILL_OK ? 0 : fail("serving", s);
        int total, done = rill_server_finished_tasks(server, &total);
        const char *env_forever = getenv("RILL_PS_JOIN_FOREVER");
        bool forever = join_forever || (env_forever && strcmp(env_forever, "1") == 0);
        if (rc == 0 && total > 0 && done == total && !forever)
            fprintf(stderr, "%s: exiting: all %d workers finished\n", task_name, total);
        else if (rc == 0)
            fprintf(stderr, "%s: stopped\n", task_name);
    } else {
        srand48(opt.seed ? (long)(opt.seed * 1000003 + cfg.task_index)
                         : (long)time(NULL) ^ ((long)getpid() << 16));
        rc = run_worker(&opt, &cfg, server, is_chief, s);
        /* Its sessions are closed and the chief's last checkpoint is written: the ps tasks may
         * go once every worker has said so. Training succeeded either way. */
        if (rc == 0 && rill_server_report_finished(server, s) != RILL_OK)
            fprintf(stderr, "%s: warning: %s\n", task_name, rill_status_message(s));
    }
    goto out;
usage_error:
    fprintf(stderr, "%s: %s\n", rill_code_name(rill_status_code(s)), rill_status_message(s));
    rc = 2;
out:
    rill_server_free(server);
    rill_task_config_clear(&cfg);
    rill_status_free(s);
    rill_flags_free(flags);
    return rc;
}
