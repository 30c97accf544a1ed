/*
 * Replay folders (--dump_inputs with XLAC_DUMP_TO=DIR): the first launch of
 * each cluster (by fingerprint: a body the process has dumped once is not
 * dumped again) writes DIR/replay_NNNN.CLUSTER/ holding
 *
 *   cluster.xg    the cluster's body as a graph of its own: the values
 *                 entering the cluster are its inputs, those leaving it
 *                 its outputs (the executor's .xg writer); constants of
 *                 16 elements or more (weights) as NAME.npy beside it,
 *                 binary, not decimal text
 *   inputs/       NAME.npy per input, the values of that first launch
 *   command.txt   the command that replays it, with the absolute path of
 *                 the xlac-run that made the dump (runner_path)
 *
 * so that one folder reproduces a miscompile: `xlac-run cluster.xg --feed
 * inputs` runs it op by op, the same with the plugin preloaded runs it
 * clustered, and `--compare` runs both in one process. NNNN is the first
 * free number, claimed by mkdir (atomic), so several processes can dump
 * into one folder. A folder that cannot be written is one warning; the run
 * goes on.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xlac/escape.h"
#include "xlac/io.h"
#include "xlac_plugin.h"
#include "xlac/vec.h"

#define MAX_REPLAY_DIRS 100000

/* One dumped cluster. */
struct xlac_replay {
    char fp[40];   /* the body's fingerprint */
    char *command; /* the replay command */
    bool noted;    /* its fallback note was printed */
};

/* The folder of this library (for LD_PRELOAD in the command), or "" when unknown. */
static void plugin_path(char *buf, size_t len)
{
    Dl_info info;
    buf[0] = '\0';
    if (dladdr((void *)plugin_path, &info) && info.dli_fname && strstr(info.dli_fname, ".so"))
        snprintf(buf, len, "%s", info.dli_fname);
}

/* mkdir DIR/replay_NNNN.NAME for the first free NNNN (NAME: the cluster's name made a file name).
 */
static xe_code claim_dir(const char *dir, const char *name, char *out, size_t len, xe_status *st)
{
    char file[XE_ESC_MAX + 1];
    xe_esc_file_name(file, sizeof file, name);
    if (xe_mkdirs(dir, 0777, st) != XE_OK)
        return st->code;
    for (long k = 0; k < MAX_REPLAY_DIRS; k++) {
        snprintf(out, len, "%s/replay_%04ld.%s", dir, k, file);
        if (mkdir(out, 0777) == 0)
            return XE_OK;
        if (errno != EEXIST)
            return xe_fail(st, XE_ERR_IO, "cannot create %s: %s", out, strerror(errno));
    }
    return xe_fail(st, XE_ERR_IO, "%s: no free replay folder number", dir);
}

/* inputs/NAME.npy for every body input, from the launch's tensors (copied to the host when on a
 * GPU). */
static xe_code write_inputs(const xe_graph *body, xe_tensor *const *in, const char *dir,
                            xe_status *st)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/inputs", dir);
    if (xe_mkdirs(path, 0777, st) != XE_OK)
        return st->code;
    for (int k = 0; k < body->n_inputs; k++) {
        const char *name = body->nodes[body->inputs[k]]->name;
        char file[XE_ESC_MAX + 1];
        if (!xe_esc_file_name(file, sizeof file,
                              name)) /* --feed reads inputs/NAME.npy back by name */
            return xe_fail(st, XE_ERR_IO, "input %s: its name is not a file name", name);
        xe_tensor *t = xe_device_is_host(in[k]->device)
                           ? xe_tensor_retain(in[k])
                           : xe_tensor_to_device(in[k], XE_DEV_CPU, st);
        if (!t)
            return st->code;
        snprintf(path, sizeof path, "%s/inputs/%s.npy", dir, name);
        xe_code c = xe_npy_write(path, t, st);
        xe_tensor_release(t);
        if (c != XE_OK)
            return c;
    }
    return XE_OK;
}

/*
 * The absolute path of the xlac-run that replays (buf[len]): the binary
 * that made the dump when it is xlac-run, else the one beside this
 * library (LIB/../bin/xlac-run, the build tree's layout) when it exists,
 * else the bare name (found on PATH).
 */
static void runner_path(const char *lib, char *buf, size_t len)
{
    char self[4096], beside[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        const char *base = strrchr(self, '/');
        if (base && !strcmp(base + 1, "xlac-run")) {
            snprintf(buf, len, "%s", self);
            return;
        }
    }
    const char *slash = strrchr(lib, '/');
    if (slash &&
        snprintf(beside, sizeof beside, "%.*s/../bin/xlac-run", (int)(slash - lib), lib) <
            (int)sizeof beside &&
        realpath(beside, self)) {
        snprintf(buf, len, "%s", self);
        return;
    }
    snprintf(buf, len, "xlac-run");
}

/* The command line that replays folder dir, each path one shell word (xe_esc_shell_word); malloc'd.
 */
static char *replay_command(const xlac_flags *f, const char *dir)
{
    char lib[2048], run[4096], graph[4200], feed[4200];
    plugin_path(lib, sizeof lib);
    runner_path(lib, run, sizeof run);
    snprintf(graph, sizeof graph, "%s/cluster.xg", dir);
    snprintf(feed, sizeof feed, "%s/inputs", dir);
    xe_text t = {0};
    xe_text_printf(&t, "LD_PRELOAD=");
    xe_esc_shell_word(&t, *lib ? lib : "libxlac.so");
    xe_text_printf(&t, " XLAC_AUTO_JIT=2%s ", f->xg.fast_math ? " XLAC_FLAGS=--fast_math" : "");
    xe_esc_shell_word(&t, run);
    xe_text_printf(&t, " ");
    xe_esc_shell_word(&t, graph);
    xe_text_printf(&t, " --feed ");
    xe_esc_shell_word(&t, feed);
    xe_text_printf(&t, " --compare");
    return xe_text_take(&t);
}

/* Writes the folder of one cluster; *command gets its replay command. */
static xe_code write_folder(const xlac_flags *f, const xe_graph *body, const char *name,
                            xe_tensor *const *in, char **command, xe_status *st)
{
    char dir[4096], path[4200];
    if (claim_dir(f->dump_to, name, dir, sizeof dir, st) != XE_OK)
        return st->code;
    snprintf(path, sizeof path, "%s/cluster.xg", dir);
    /* constants of 16 elements and more (weights) as binary .npy beside it, exact and compact */
    if (xe_write_file_consts(body, path, 16, st) != XE_OK ||
        write_inputs(body, in, dir, st) != XE_OK)
        return st->code;
    if (!(*command = replay_command(f, dir)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    size_t n = strlen(*command);
    (*command)[n] = '\n'; /* the file gets a line; the string is restored below */
    snprintf(path, sizeof path, "%s/command.txt", dir);
    FILE *fp = xe_fcreate(path, st);
    bool ok = fp && fwrite(*command, 1, n + 1, fp) == n + 1;
    ok = (fp && fclose(fp) == 0) && ok;
    (*command)[n] = '\0';
    return ok ? XE_OK : fp ? xe_fail(st, XE_ERR_IO, "cannot write %s", path) : st->code;
}

/* The entry of fingerprint fp, NULL if none (lock held). */
static xlac_replay *find(xlac_state *s, const char *fp)
{
    for (int i = 0; i < s->n_replays; i++)
        if (strcmp(s->replays[i].fp, fp) == 0)
            return &s->replays[i];
    return NULL;
}

/* A new entry (lock held); NULL when out of memory. */
static xlac_replay *add(xlac_state *s, const char *fp)
{
    xlac_replay *grown = XE_VEC_GROW(s->replays, s->cap_replays, s->n_replays + 1, 8);
    if (!grown)
        return NULL;
    s->replays = grown;
    xlac_replay *r = &s->replays[s->n_replays++];
    *r = (xlac_replay){.command = NULL};
    snprintf(r->fp, sizeof r->fp, "%s", fp);
    return r;
}

static void fingerprint_of(const xe_node *n, char fp[40])
{
    const char *have = xe_node_attr_string(n, "@fingerprint", NULL);
    if (have)
        snprintf(fp, 40, "%s", have);
    else
        xg_fingerprint(n->body, fp);
}

void xlac_replay_dump(xlac_state *s, const xe_node *n, const char *name, xe_tensor *const *in)
{
    if (!s->flags.dump_inputs || !s->flags.dump_to)
        return;
    char fp[40];
    fingerprint_of(n, fp);
    pthread_mutex_lock(&s->replay_lock);
    xlac_replay *r = find(s, fp) ? NULL : add(s, fp);
    if (r) {
        xe_status st;
        xe_status_clear(&st);
        if (write_folder(&s->flags, n->body, name, in, &r->command, &st) != XE_OK)
            xlac_log(XG_LOG_WARNING, "%s: replay folder not written: %s", name, st.msg);
        else
            fprintf(stderr, "xlac: note: %s dumped for replay: %s\n", name, r->command);
    }
    pthread_mutex_unlock(&s->replay_lock);
}

void xlac_replay_note_fallback(xlac_state *s, const xe_node *n, const char *name)
{
    if (!s->flags.dump_inputs)
        return;
    char fp[40];
    fingerprint_of(n, fp);
    pthread_mutex_lock(&s->replay_lock);
    xlac_replay *r = find(s, fp);
    if (r && r->command && !r->noted) {
        r->noted = true;
        fprintf(stderr, "xlac: note: %s ran op by op (fallback); replay it with: %s\n", name,
                r->command);
    }
    pthread_mutex_unlock(&s->replay_lock);
}

void xlac_replay_free(xlac_state *s)
{
    for (int i = 0; i < s->n_replays; i++)
        free(s->replays[i].command);
    free(s->replays);
    s->replays = NULL;
    s->n_replays = s->cap_replays = 0;
}
