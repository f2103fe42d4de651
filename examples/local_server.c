/* local_server.c - the seed's one-task cluster.
 *
 *   c = tf.constant("Hello, distributed TensorFlow!")
 *   server = tf.train.Server.create_local_server()
 *   sess = tf.Session(server.target)
 *   print(sess.run(c))
 *
 * The server listens on a free loopback port; the session reaches the constant through it, as a
 * session of any cluster would, and the fetched string is printed as it is, on one line. */
#include <rill/rill.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    rill_flags *flags =
        rill_flags_new(argv[0], "Runs a string constant on a one-task local cluster.");
    int rc = rill_flags_parse_or_exit_code(flags, argc, argv);
    rill_flags_free(flags);
    if (rc >= 0) return rc;
    rc = 1;

    rill_status *s = rill_status_new();
    rill_graph *g = rill_graph_new();
    rill_tensor *hello = rill_tensor_scalar_string("Hello, distributed rill!");
    rill_output c = rill_const(g, hello, "c");
    rill_tensor_free(hello);
    rill_server *server = NULL;
    rill_session_options *o = rill_session_options_new();
    rill_session *sess = NULL;
    rill_tensor *out = NULL;
    if (!rill_graph_ok(g)) {
        fprintf(stderr, "building the graph: %s\n", rill_status_message(rill_graph_status(g)));
        goto done;
    }
    server = rill_server_create_local(s);
    if (!server) {
        fprintf(stderr, "starting the local server: %s: %s\n", rill_code_name(rill_status_code(s)),
                rill_status_message(s));
        goto done;
    }
    rill_session_options_set_target(o, rill_server_target(server));
    sess = rill_session_new(g, o, s);
    if (!sess || rill_session_run(sess, NULL, NULL, 0, &c, &out, 1, NULL, 0, s) != RILL_OK) {
        fprintf(stderr, "%s: %s: %s\n", rill_server_target(server),
                rill_code_name(rill_status_code(s)), rill_status_message(s));
        goto done;
    }
    size_t len = 0;
    const char *str = rill_tensor_get_string(out, 0, &len);
    printf("%.*s\n", (int)len, str);
    rc = 0;
done:
    rill_tensor_free(out);
    rill_session_free(sess); /* sessions go before their server */
    rill_server_free(server);
    rill_session_options_free(o);
    rill_graph_free(g);
    rill_status_free(s);
    return rc;
}
