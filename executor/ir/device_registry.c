/*
 * The registry's instances. A device is an instance, as a ggml backend
 * is: a line of the registry (a kind: its table, or the module that
 * brings it), an ordinal among the instances of that kind, and the
 * context the table's init made for it. The registry makes one instance
 * of each line at the start, in the registry's order (the host CPU first:
 * XE_DEV_CPU), so a device's index is the same in every process of a
 * build; more are made when asked for (GPU:1, xe_device_get("gpu", 1)),
 * up to XE_DEV_MAX. An instance's name ("GPU:1") comes from its kind's
 * facts and its ordinal, so naming one loads nothing; its table (a
 * module's is loaded then, device_load.c) and its context are made the
 * first time the instance itself is needed. Instances live as long as the
 * process; an instance of a kind whose library could not be loaded is
 * answered by the kind's facts, a table that is never available.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "device_impl.h"

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    atomic_int count; /* instances [0, count) are named and their lines set (release) */
    xe_device_instance inst[XE_DEV_MAX];
} reg = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static bool is_end(const xe_device_entry *e)
{
    return !e->ops && !e->module;
}

/* Sets instance k to the ordinal-th of line e; the caller publishes it (reg.count). */
static void name_instance(int k, const xe_device_entry *e, int ordinal)
{
    xe_device_instance *in = &reg.inst[k];
    const xe_device_ops *f = xe_device_entry_facts(e);
    in->entry = e;
    in->ordinal = ordinal;
    in->host = k == 0;
    snprintf(in->name, sizeof in->name, "%s:%d", f->name, ordinal);
    snprintf(in->xla_name, sizeof in->xla_name, "%s:%d", f->xla_name, ordinal);
}

/* One instance of each line of the registry, in its order. */
static void add_defaults(void)
{
    int n = 0;
    for (; n < XE_DEV_MAX && !is_end(&xe_device_registry[n]); n++)
        name_instance(n, &xe_device_registry[n], 0);
    atomic_store_explicit(&reg.count, n, memory_order_release);
}

int xe_device_count(void)
{
    pthread_once(&reg.once, add_defaults);
    return atomic_load_explicit(&reg.count, memory_order_acquire);
}

const xe_device_instance *xe_device_instance_peek(xe_device dev)
{
    return dev >= 0 && dev < xe_device_count() ? &reg.inst[dev] : NULL;
}

/* The table of in's line (a module's is loaded now) and the instance's context. */
static void make(xe_device_instance *in)
{
    const xe_device_entry *e = in->entry;
    const xe_device_ops *o = e->ops ? e->ops : xe_device_module_ops(e);
    in->ops = o ? o : xe_device_entry_facts(e); /* no device there: the kind's own facts */
    if (o && o->init && !(in->ctx = o->init(in->ordinal)))
        in->failed = true;
}

const xe_device_instance *xe_device_instance_of(xe_device dev)
{
    xe_device_instance *in = (xe_device_instance *)xe_device_instance_peek(dev);
    if (!in || atomic_load_explicit(&in->made, memory_order_acquire))
        return in;
    pthread_mutex_lock(&reg.lock);
    if (!atomic_load_explicit(&in->made, memory_order_relaxed)) {
        make(in);
        atomic_store_explicit(&in->made, true, memory_order_release);
    }
    pthread_mutex_unlock(&reg.lock);
    return in;
}

/* The instance of the kind with word `word` (len bytes) and this ordinal, made when `add`; -1:
 * none. */
static xe_device find(const char *word, size_t len, int ordinal, bool add)
{
    int n = xe_device_count();
    const xe_device_entry *kind = NULL;
    for (int k = 0; k < n; k++) {
        const char *w = xe_device_entry_facts(reg.inst[k].entry)->word;
        if (strlen(w) != len || memcmp(w, word, len) != 0)
            continue;
        if (reg.inst[k].ordinal == ordinal)
            return k;
        kind = reg.inst[k].entry;
    }
    if (!kind || !add || ordinal < 0)
        return -1;
    pthread_mutex_lock(&reg.lock);
    xe_device got = -1;
    n = atomic_load_explicit(&reg.count, memory_order_relaxed);
    for (int k = 0; k < n && got < 0; k++) /* made by another thread meanwhile */
        if (reg.inst[k].entry == kind && reg.inst[k].ordinal == ordinal)
            got = k;
    if (got < 0 && n < XE_DEV_MAX) {
        name_instance(n, kind, ordinal);
        atomic_store_explicit(&reg.count, n + 1, memory_order_release);
        got = n;
    }
    pthread_mutex_unlock(&reg.lock);
    return got;
}

xe_device xe_device_get(const char *word, int ordinal)
{
    return word ? find(word, strlen(word), ordinal, true) : -1;
}

/* word = kind [":" ordinal] */
bool xe_device_by_word(const char *word, size_t len, xe_device *dev)
{
    const char *colon = memchr(word, ':', len);
    int ordinal = 0;
    if (colon) {
        size_t digits = len - (size_t)(colon - word) - 1;
        if (digits == 0 || digits > 4)
            return false;
        for (size_t i = 1; i <= digits; i++) {
            if (colon[i] < '0' || colon[i] > '9')
                return false;
            ordinal = ordinal * 10 + (colon[i] - '0');
        }
        len = (size_t)(colon - word);
    }
    xe_device d = find(word, len, ordinal, true);
    if (d < 0)
        return false;
    *dev = d;
    return true;
}

/* The value under key in instance `in`, NULL when it has none yet. */
static void *state_of(const xe_device_instance *in, const void *key)
{
    int n = atomic_load_explicit(&in->n_states, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (in->states[i].key == key)
            return in->states[i].value;
    return NULL;
}

void *xe_device_state(xe_device dev, const void *key, void *(*make)(xe_device dev))
{
    xe_device_instance *in =
        (xe_device_instance *)xe_device_instance_of(dev); /* made before the lock */
    if (!in)
        return NULL;
    void *v = state_of(in, key);
    if (v)
        return v;
    static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&state_lock);
    int n = atomic_load_explicit(&in->n_states, memory_order_relaxed);
    if (!(v = state_of(in, key)) && n < XE_DEVICE_STATES && (v = make(dev))) {
        in->states[n].key = key;
        in->states[n].value = v;
        atomic_store_explicit(&in->n_states, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&state_lock);
    return v;
}
