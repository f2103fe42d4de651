/* device_placement.c - the seed's first program: pin a computation to a device.
 *
 *   with tf.device('/cpu:0'): a = [1,2,3]; b = [1,2,3]
 *   with tf.device(FLAGS.device): c = a + b
 *   print(sess.run(c))   ->  [2. 4. 6.]
 *
 * --log_device_placement prints the device mapping and where each node landed; a device that
 * does not exist (/gpu:1 on a one-GPU machine) is TF's "Cannot assign a device" error and exit
 * code 1, unless --allow_soft_placement lets the placer move the op. */
#include <rill/rill.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    const char *device;
    bool soft, log;
    rill_flags *flags = rill_flags_new(argv[0], "Places c = a + b on a device and prints it.");
    rill_flags_define_string(flags, "device", &device, "/gpu:0", "Device for c = a + b.");
    rill_flags_define_bool(flags, "allow_soft_placement", &soft, false,
                           "Move ops that cannot run on the requested device.");
    rill_flags_define_bool(flags, "log_device_placement", &log, false,
                           "Print the device mapping and the device of every node.");
    int rc = rill_flags_parse_or_exit_code(flags, argc, argv);
    if (rc >= 0) {
        rill_flags_free(flags);
        return rc;
    }
    rc = 1;
    rill_graph *g = rill_graph_new();
    const float v[] = {1.0f, 2.0f, 3.0f};
    const int64_t shape[] = {3};
    rill_graph_push_device(g, "/cpu:0");
    rill_output a = rill_const_floats(g, v, shape, 1, "a");
    rill_output b = rill_const_floats(g, v, shape, 1, "b");
    rill_graph_pop_device(g);
    rill_graph_push_device(g, device);
    rill_output c = rill_add(g, a, b, NULL);
    rill_graph_pop_device(g);

    rill_status *s = rill_status_new();
    rill_session_options *o = rill_session_options_new();
    rill_session_options_set_allow_soft_placement(o, soft);
    rill_session_options_set_log_device_placement(o, log);
    rill_session *sess = NULL;
    rill_tensor *out = NULL;
    if (!rill_graph_ok(g)) {
        fprintf(stderr, "%s\n", rill_status_message(rill_graph_status(g)));
        goto done;
    }
    sess = rill_session_new(g, o, s);
    if (!sess || rill_session_run(sess, NULL, NULL, 0, &c, &out, 1, NULL, 0, s) != RILL_OK) {
        fprintf(stderr, "%s\n", rill_status_message(s));
        goto done;
    }
    char buf[256];
    printf("%s\n", rill_tensor_str(out, buf, sizeof buf));
    rc = 0;
done:
    rill_tensor_free(out);
    rill_session_free(sess);
    rill_session_options_free(o);
    rill_status_free(s);
    rill_graph_free(g);
    rill_flags_free(flags);
    return rc;
}
