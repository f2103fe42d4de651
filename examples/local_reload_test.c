/* local_reload_test.c - the seed's local_reload_test.py: rebuilds the seed's model in a local
 * session, restores the latest checkpoint that distributed (or TensorFlow) wrote into --logdir,
 * and prints
 *
 *   <checkpoint path>, global_step = <n>
 *   weight: %f, biase: %f
 *
 * The step comes from the checkpoint's name, as the seed takes it. Exit codes: 0 restored,
 * 1 no checkpoint in --logdir or it cannot be read (the seed returns silently; this says why),
 * 2 a usage error. */
#include <rill/rill.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *logdir;
    rill_flags *flags = rill_flags_new(
        argv[0], "The seed's local_reload_test.py: restores the latest checkpoint of --logdir "
                 "and prints the trained weight and bias.");
    rill_flags_define_string(flags, "logdir", &logdir, "./checkpoint/",
                             "Directory holding the `checkpoint` state file and model.ckpt-*");
    int rc = rill_flags_parse_or_exit_code(flags, argc, argv);
    if (rc >= 0) {
        rill_flags_free(flags);
        return rc;
    }
    rc = 1;
    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_session *sess = NULL;
    rill_saver *saver = NULL;
    rill_checkpoint_state *ckpt = NULL;

    /* The seed's graph: the variables are what the checkpoint restores. */
    rill_train_get_or_create_global_step(g);
    rill_output input = rill_placeholder(g, RILL_FLOAT, rill_shape_unknown(), "input");
    rill_output weight = rill_get_variable(g, "weight", RILL_FLOAT, rill_shape_vector(1),
                                           rill_random_normal_initializer(0, 1, 0), true);
    rill_output biase = rill_get_variable(g, "biase", RILL_FLOAT, rill_shape_vector(1),
                                          rill_random_normal_initializer(0, 1, 0), true);
    rill_add(g, rill_mul(g, input, weight, NULL), biase, NULL);
    saver = rill_saver_new(g, NULL, 0, 5, 10000, s);
    if (!saver) goto fail;
    sess = rill_session_new(g, NULL, s);
    if (!sess) goto fail;

    ckpt = rill_get_checkpoint_state(logdir, s);
    if (!rill_status_ok(s)) goto fail;
    char latest[4096];
    if (!ckpt || !rill_latest_checkpoint(logdir, latest, sizeof latest)) {
        fprintf(stderr, "no checkpoint in %s%s\n", logdir,
                ckpt ? " (the state file names one whose files are missing)" : "");
        goto out;
    }
    if (rill_saver_restore(saver, sess, ckpt->model_checkpoint_path, s) != RILL_OK) goto fail;
    /* global_step = int(path.split('/')[-1].split('-')[-1]) */
    const char *base = strrchr(ckpt->model_checkpoint_path, '/');
    base = base ? base + 1 : ckpt->model_checkpoint_path;
    const char *dash = strrchr(base, '-');
    long long step = dash ? strtoll(dash + 1, NULL, 10) : 0;
    printf("%s, global_step = %lld\n", ckpt->model_checkpoint_path, step);

    rill_output wb[] = {weight, biase};
    rill_tensor *v[2];
    if (rill_session_run(sess, NULL, NULL, 0, wb, v, 2, NULL, 0, s) != RILL_OK) goto fail;
    printf("weight: %f, biase: %f\n", *(float *)rill_tensor_data(v[0]),
           *(float *)rill_tensor_data(v[1]));
    rill_tensor_free(v[0]);
    rill_tensor_free(v[1]);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "%s: %s\n", rill_code_name(rill_status_code(s)), rill_status_message(s));
out:
    rill_checkpoint_state_free(ckpt);
    rill_saver_free(saver);
    rill_session_free(sess);
    rill_graph_free(g);
    rill_status_free(s);
    rill_flags_free(flags);
    return rc;
}
