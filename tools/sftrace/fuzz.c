/*
 * fuzz.c - a libFuzzer target for sftrace's two readers: each input is read
 * as a text trace and as a Chrome JSON trace, and whatever reads without an
 * error is taken through every output that does not spawn (the summaries,
 * the profile, the schedule model and --json). Built and run by fuzz-run
 * with clang -fsanitize=fuzzer,address,undefined; a crash, a sanitizer
 * report, a leak or an abort() below is a finding.
 *
 * It includes sftrace.c itself, with its main left out: the text reader's
 * state is file-static there, and this is a second main for it. The readers
 * return on bad input (read_text, sched_read_json); only running out of
 * memory exits.
 */
#define SFTRACE_NO_MAIN
#include "sftrace.c"

#include <math.h>

#include <json-c/json.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink; /* the outputs' text: read by nobody */

/* Every line of --json is strict JSON with no NaN or Infinity in it: json-c
 * reads those (and writes them for a non-finite double), so each number
 * parsed back is checked. Aborts otherwise: that is a finding. */
static void check_json_lines(char *buf, size_t len)
{
    json_tokener *tok = json_tokener_new();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    for (char *p = buf, *end = buf + len; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            abort(); /* every line ends */
        json_tokener_reset(tok);
        json_object *o = json_tokener_parse_ex(tok, p, (int)(nl - p));
        if (o == NULL || !json_object_is_type(o, json_type_object))
            abort();
        json_object_object_foreach(o, key, v)
        {
            (void)key;
            if (json_object_is_type(v, json_type_double) && !isfinite(json_object_get_double(v)))
                abort();
        }
        json_object_put(o);
        p = nl + 1;
    }
    json_tokener_free(tok);
}

/* What main does with a model once read: every output but the pictures. */
static void model_outputs(struct sched *sc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        abort();
    if (sched_write_json(sc, f) != 0)
        abort();
    fclose(f);
    check_json_lines(buf, len);
    free(buf);
    sched_summary(sc, sink);
    sched_profile(sc, sink);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (sink == NULL) { /* the first input: what main does first */
        parse_specs();
        sink = fopen("/dev/null", "w");
        if (sink == NULL)
            abort();
    }
    in_name = "<fuzz>";

    /* As a text trace: its reader wants the buffer NUL-terminated. */
    in_buf = xrealloc(NULL, size + 1);
    memcpy(in_buf, data, size);
    in_buf[size] = '\0';
    if (read_text(size) == 0) {
        struct sched sc;
        memset(&sc, 0, sizeof sc);
        sc.name = in_name;
        build_schedule(&sc);
        model_outputs(&sc);
        sched_free(&sc);
        /* the text-only outputs write to stdout: fuzz-run closes it */
        print_summary();
        print_counts();
        print_sorted();
        print_untimed();
    }
    text_free();

    /* As a Chrome JSON trace, from the same bytes. */
    char *buf = xrealloc(NULL, size + 1);
    memcpy(buf, data, size);
    buf[size] = '\0';
    struct sched sc;
    memset(&sc, 0, sizeof sc);
    sc.name = in_name;
    if (sched_read_json(&sc, buf, size) == 0)
        model_outputs(&sc);
    sched_free(&sc);
    free(buf);
    return 0;
}
