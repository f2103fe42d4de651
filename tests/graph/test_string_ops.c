/* test_string_ops.c - the string ops of src/graph/ops_string.c (kernels in
 * src/kernels/cpu/cpu_string.c) on small inputs with the values worked out here: StringJoin
 * (a scalar with a vector), AsString's formats, StringToNumber and its error, Substr (negative
 * pos), StringStrip, RegexReplace (groups, first only, an empty match), web-safe base64 both
 * ways, DecodeRaw in both byte orders, ReduceJoin in TF's axis order, MatchingFiles; build
 * errors. (No gradients: TF's string ops have none.) */
#include "op_check.h"

#include <string.h>
#include <unistd.h>

static rill_output strs(rill_graph *g, const char *const *v, int64_t n)
{
    rill_tensor *t = rill_tensor_new(RILL_STRING, &n, 1);
    for (int64_t i = 0; i < n; i++) rill_tensor_set_string(t, i, v[i], strlen(v[i]));
    rill_output c = rill_const(g, t, NULL);
    rill_tensor_free(t);
    return c;
}

static rill_output str1(rill_graph *g, const char *s)
{
    rill_tensor *t = rill_tensor_scalar_string(s);
    rill_output c = rill_const(g, t, NULL);
    rill_tensor_free(t);
    return c;
}

static rill_op_builder *op(rill_graph *g, const char *type, const rill_output *in, int n)
{
    rill_op_builder *b = rill_op_builder_new(g, type, NULL);
    for (int i = 0; i < n; i++) rill_op_builder_add_input(b, in[i]);
    return b;
}

static rill_output fin(rill_op_builder *b)
{
    return (rill_output){rill_op_builder_finish(b), 0};
}

/* Runs out and checks its strings against want (n of them). */
static void check_strs(const char *label, rill_graph *g, rill_output out, const char *const *want,
                       int64_t n)
{
    rill_tensor *t = oc_eval(g, out);
    if (!CHECK(t != NULL)) {
        fprintf(stderr, "  case %s\n", label);
        return;
    }
    CHECK_EQ_INT(rill_tensor_num_elements(t), n);
    for (int64_t i = 0; i < n && i < rill_tensor_num_elements(t); i++) {
        size_t len;
        const char *s = rill_tensor_get_string(t, i, &len);
        if (!CHECK(len == strlen(want[i]) && memcmp(s, want[i], len) == 0))
            fprintf(stderr, "  case %s [%lld]: got '%.*s' want '%s'\n", label, (long long)i,
                    (int)len, s, want[i]);
    }
    rill_tensor_free(t);
}

static void run_fails(const char *label, rill_graph *g, rill_output out, const char *text)
{
    rill_session *s = oc_session(g);
    rill_status *st = rill_status_new();
    rill_tensor *o = NULL;
    CHECK_EQ_INT(rill_session_run(s, NULL, NULL, 0, &out, &o, 1, NULL, 0, st),
                 RILL_INVALID_ARGUMENT);
    if (!CHECK_STR_CONTAINS(rill_status_message(st), text)) fprintf(stderr, "  case %s\n", label);
    rill_status_free(st);
    rill_session_free(s);
}

int main(void)
{
    rill_graph *g = rill_graph_new();
    static const char *const ab[] = {"a", "b"};
    rill_output in[] = {strs(g, ab, 2), str1(g, "-"), strs(g, ab, 2)};
    rill_op_builder *b = op(g, "StringJoin", in, 3);
    rill_op_builder_set_string(b, "separator", "|");
    check_strs("join", g, fin(b), (const char *const[]){"a|-|a", "b|-|b"}, 2);

    double fv[] = {1.5, -2};
    rill_tensor *ft = oc_tensor(RILL_FLOAT, (int64_t[]){2}, 1, fv);
    rill_output f = rill_const(g, ft, NULL);
    rill_tensor_free(ft);
    check_strs("as_string", g, fin(op(g, "AsString", &f, 1)),
               (const char *const[]){"1.500000", "-2.000000"}, 2);
    b = op(g, "AsString", &f, 1);
    rill_op_builder_set_bool(b, "scientific", true);
    rill_op_builder_set_int(b, "precision", 2);
    check_strs("as_string sci", g, fin(b), (const char *const[]){"1.50e+00", "-2.00e+00"}, 2);
    double iv[] = {3, -42};
    rill_tensor *it = oc_tensor(RILL_INT32, (int64_t[]){2}, 1, iv);
    rill_output ii = rill_const(g, it, NULL);
    rill_tensor_free(it);
    b = op(g, "AsString", &ii, 1);
    rill_op_builder_set_int(b, "width", 4);
    rill_op_builder_set_string(b, "fill", "0");
    check_strs("as_string int", g, fin(b), (const char *const[]){"0003", "-042"}, 2);

    static const char *const nums[] = {" 1.5", "-2e3 "};
    rill_output sn = fin(op(g, "StringToNumber", (rill_output[]){strs(g, nums, 2)}, 1));
    rill_tensor *nt = oc_eval(g, sn);
    oc_check_tensor("to_number", nt, RILL_FLOAT, (int64_t[]){2}, 1, (const double[]){1.5, -2000});
    rill_tensor_free(nt);
    run_fails("to_number bad", g, fin(op(g, "StringToNumber", (rill_output[]){str1(g, "1x")}, 1)),
              "StringToNumberOp could not correctly convert string: 1x");

    static const char *const hw[] = {"hello", "world"};
    double pv = -3, lv = 2;
    rill_tensor *pt = oc_tensor(RILL_INT32, NULL, 0, &pv),
                *lt = oc_tensor(RILL_INT32, NULL, 0, &lv);
    rill_output sin[] = {strs(g, hw, 2), rill_const(g, pt, NULL), rill_const(g, lt, NULL)};
    rill_tensor_free(pt);
    rill_tensor_free(lt);
    check_strs("substr", g, fin(op(g, "Substr", sin, 3)), (const char *const[]){"ll", "rl"}, 2);

    check_strs("strip", g, fin(op(g, "StringStrip", (rill_output[]){str1(g, " \t a b \n")}, 1)),
               (const char *const[]){"a b"}, 1);

    static const char *const names[] = {"john smith", "x"};
    rill_output rin[] = {strs(g, names, 2), str1(g, "([a-z]+) ([a-z]+)"), str1(g, "\\2, \\1")};
    check_strs("regex groups", g, fin(op(g, "RegexReplace", rin, 3)),
               (const char *const[]){"smith, john", "x"}, 2);
    rill_output rin2[] = {str1(g, "aaa"), str1(g, "a"), str1(g, "o")};
    b = op(g, "RegexReplace", rin2, 3);
    rill_op_builder_set_bool(b, "replace_global", false);
    check_strs("regex first", g, fin(b), (const char *const[]){"oaa"}, 1);
    rill_output rin3[] = {str1(g, "ab"), str1(g, "x*"), str1(g, "-")};
    check_strs("regex empty", g, fin(op(g, "RegexReplace", rin3, 3)),
               (const char *const[]){"-a-b-"}, 1);

    static const char *const raw[] = {"hello?>", "ab"};
    rill_output e = fin(op(g, "EncodeBase64", (rill_output[]){strs(g, raw, 2)}, 1));
    check_strs("b64", g, e, (const char *const[]){"aGVsbG8_Pg", "YWI"}, 2);
    check_strs("b64 back", g, fin(op(g, "DecodeBase64", &e, 1)), raw, 2);
    run_fails("b64 bad", g, fin(op(g, "DecodeBase64", (rill_output[]){str1(g, "a+/b")}, 1)),
              "Invalid character found in base64.");

    rill_tensor *bt = rill_tensor_new(RILL_STRING, (int64_t[]){1}, 1);
    rill_tensor_set_string(bt, 0, "\x01\x00\x02\x80", 4);
    rill_output bytes = rill_const(g, bt, NULL);
    rill_tensor_free(bt);
    b = op(g, "DecodeRaw", &bytes, 1);
    rill_op_builder_set_type(b, "out_type", RILL_INT16);
    rill_tensor *dr = oc_eval(g, fin(b));
    oc_check_tensor("decode_raw", dr, RILL_INT16, (int64_t[]){1, 2}, 2,
                    (const double[]){1, -32766});
    rill_tensor_free(dr);
    b = op(g, "DecodeRaw", &bytes, 1);
    rill_op_builder_set_type(b, "out_type", RILL_INT16);
    rill_op_builder_set_bool(b, "little_endian", false);
    dr = oc_eval(g, fin(b));
    oc_check_tensor("decode_raw be", dr, RILL_INT16, (int64_t[]){1, 2}, 2,
                    (const double[]){256, 640});
    rill_tensor_free(dr);

    static const char *const abcd[] = {"a", "b", "c", "d"};
    rill_output m = rill_reshape(g, strs(g, abcd, 4), (const int64_t[]){2, 2}, 2, NULL);
    double ax01[] = {0, 1}, ax10[] = {1, 0};
    rill_tensor *a1 = oc_tensor(RILL_INT32, (int64_t[]){2}, 1, ax01),
                *a2 = oc_tensor(RILL_INT32, (int64_t[]){2}, 1, ax10);
    check_strs("reduce [0,1]", g,
               fin(op(g, "ReduceJoin", (rill_output[]){m, rill_const(g, a1, NULL)}, 2)),
               (const char *const[]){"acbd"}, 1);
    check_strs("reduce [1,0]", g,
               fin(op(g, "ReduceJoin", (rill_output[]){m, rill_const(g, a2, NULL)}, 2)),
               (const char *const[]){"abcd"}, 1);
    rill_tensor_free(a1);
    rill_tensor_free(a2);

    char dir[] = "/tmp/rill_strXXXXXX";
    if (CHECK(mkdtemp(dir) != NULL)) {
        char p1[64], p2[64], pat[64];
        snprintf(p1, sizeof p1, "%s/b.txt", dir);
        snprintf(p2, sizeof p2, "%s/a.txt", dir);
        snprintf(pat, sizeof pat, "%s/*.txt", dir);
        fclose(fopen(p1, "w"));
        fclose(fopen(p2, "w"));
        check_strs("matching_files", g,
                   fin(op(g, "MatchingFiles", (rill_output[]){str1(g, pat)}, 1)),
                   (const char *const[]){p2, p1}, 2);
        unlink(p1);
        unlink(p2);
        rmdir(dir);
    }

    /* DecodeCSV: a quoted field with a doubled quote, an empty field taking its default */
    static const char *const recs[] = {"1,\"a,\"\"b\"", ",x"};
    double d0 = 7;
    rill_tensor *dt = oc_tensor(RILL_INT32, (int64_t[]){1}, 1, &d0);
    rill_tensor *ds = rill_tensor_new(RILL_STRING, (int64_t[]){1}, 1);
    rill_tensor_set_string(ds, 0, "dflt", 4);
    rill_output cin[] = {strs(g, recs, 2), rill_const(g, dt, NULL), rill_const(g, ds, NULL)};
    rill_tensor_free(dt);
    rill_tensor_free(ds);
    b = op(g, "DecodeCSV", cin, 3);
    rill_op_builder_set_int(b, "num_outputs", 2);
    rill_node *csv = rill_op_builder_finish(b);
    if (CHECK(csv != NULL)) {
        rill_tensor *c0 = oc_eval(g, (rill_output){csv, 0});
        oc_check_tensor("csv ints", c0, RILL_INT32, (int64_t[]){2}, 1, (const double[]){1, 7});
        rill_tensor_free(c0);
        check_strs("csv strings", g, (rill_output){csv, 1}, (const char *const[]){"a,\"b", "x"}, 2);
    }
    static const char *const bad3[] = {"1,2,3"};
    rill_output cin2[] = {strs(g, bad3, 1), cin[1], cin[2]};
    b = op(g, "DecodeCSV", cin2, 3);
    rill_op_builder_set_int(b, "num_outputs", 2);
    run_fails("csv count", g, fin(b), "Expect 2 fields but have 3 in record 0");
    static const char *const badq[] = {"1,\"ab"};
    rill_output cin3[] = {strs(g, badq, 1), cin[1], cin[2]};
    b = op(g, "DecodeCSV", cin3, 3);
    rill_op_builder_set_int(b, "num_outputs", 2);
    run_fails("csv quote", g, fin(b), "Quoted field has to end with quote followed by delim");

    /* build errors */
    CHECK(rill_op_builder_finish(op(g, "StringStrip", &f, 1)) == NULL);
    oc_check_build_error("strip float", g, RILL_INVALID_ARGUMENT,
                         "Input 'input' of 'StringStrip' Op has type float that does not match "
                         "expected type of string.");
    rill_graph_clear_status(g);
    rill_output bad[] = {strs(g, ab, 2), strs(g, abcd, 4)};
    CHECK(rill_op_builder_finish(op(g, "StringJoin", bad, 2)) == NULL);
    oc_check_build_error("join shapes", g, RILL_INVALID_ARGUMENT, "must be equal, but are 2 and 4");
    rill_graph_clear_status(g);
    rill_graph_free(g);
    TEST_MAIN_END();
}
