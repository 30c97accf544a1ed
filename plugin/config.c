/*
 * One configuration per session. The process's configuration (XLAC_AUTO_JIT,
 * XLAC_FLAGS, read once at load) is configuration 0; a session that hands
 * the pass its own text (xe_session_options.plugin_config, XLAC_FLAGS words
 * such as "--auto_jit=0") gets the process's flags with those words applied
 * (xlac_flags_apply), kept here under a small number for the life of the
 * process. The same text gets the same number, so a thousand sessions with
 * two settings keep two configurations. A launch node records the number it
 * was made with (its @config attribute, absent for 0), so that a launch
 * reads its session's flags without a lock: slots are written once, before
 * any launch can name them, and freed only at shutdown.
 *
 * What stays process-wide, shared by every configuration: the compilation
 * cache (whose key names the target, the device and --fast_math, every
 * option that changes generated code), the compile queue, the trace, the
 * stats and the summary.
 */
#include <stdlib.h>
#include <string.h>

#include "xlac_plugin.h"

struct xlac_config {
    char *text;       /* the session's words, as handed over */
    xlac_flags flags; /* the process's flags with them applied */
};

/* The number of text's configuration, when it has one already (under the lock); else -1. */
static int find(xlac_state *s, const char *text)
{
    for (int k = 1; k <= s->n_configs; k++) {
        xlac_config *c = atomic_load(&s->configs[k - 1]);
        if (c && strcmp(c->text, text) == 0)
            return k;
    }
    return -1;
}

static xe_code add(xlac_state *s, const char *text, int *id, xe_status *st)
{
    if (s->n_configs == XLAC_MAX_CONFIGS)
        return xe_fail(st, XE_ERR_USAGE,
                       "at most %d distinct session configurations in one process",
                       XLAC_MAX_CONFIGS);
    xlac_config *c = calloc(1, sizeof *c);
    if (!c || !(c->text = strdup(text))) {
        free(c);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    if (xlac_flags_apply(&c->flags, &s->flags, text, st) != XE_OK) {
        free(c->text);
        free(c);
        return st->code;
    }
    atomic_store(&s->configs[s->n_configs], c);
    *id = ++s->n_configs;
    return XE_OK;
}

xe_code xlac_config_for(xlac_state *s, const char *text, int *id, xe_status *st)
{
    *id = 0;
    if (!text || !text[strspn(text, " \t\n")])
        return XE_OK;
    pthread_mutex_lock(&s->config_lock);
    int k = find(s, text);
    xe_code code = k > 0 ? XE_OK : add(s, text, &k, st);
    pthread_mutex_unlock(&s->config_lock);
    if (code == XE_OK)
        *id = k;
    return code;
}

const xlac_flags *xlac_config_flags(xlac_state *s, int64_t id)
{
    if (id <= 0 || id > XLAC_MAX_CONFIGS)
        return &s->flags;
    xlac_config *c = atomic_load(&s->configs[id - 1]);
    return c ? &c->flags : &s->flags;
}

void xlac_config_free(xlac_state *s)
{
    pthread_mutex_lock(&s->config_lock);
    for (int k = 0; k < s->n_configs; k++) {
        xlac_config *c = atomic_exchange(&s->configs[k], NULL);
        if (c) {
            xlac_flags_free(&c->flags);
            free(c->text);
            free(c);
        }
    }
    s->n_configs = 0;
    pthread_mutex_unlock(&s->config_lock);
}
