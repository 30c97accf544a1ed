/*
 * A test's private folder and the file and command helpers of the tests
 * that work in one (see tmpdir.h).
 */
#include "tmpdir.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifdef XLAC_SANITIZE
#define ASAN_ENV "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 "
#else
#define ASAN_ENV ""
#endif
/* the inherited variables that would change a child's behaviour */
#define CLEAN_ENV                                                                                  \
    "env -u LD_PRELOAD -u XLAC_AUTO_JIT -u XLAC_FLAGS -u XLAC_DUMP_TO -u "                         \
    "XLAC_DUMP_GRAPH_PREFIX " ASAN_ENV

char xt_tmp[64];

void xt_tmp_make(const char *template)
{
    snprintf(xt_tmp, sizeof xt_tmp, "%s", template);
    cr_assert_not_null(mkdtemp(xt_tmp), "%s", template);
}

bool xt_tmp_remove(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", xt_tmp);
    if (system(cmd) == 0)
        return true;
    fprintf(stderr, "could not remove %s\n", xt_tmp);
    return false;
}

void xt_tmp_fini(void)
{
    xt_tmp_remove();
}

char *xt_path(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", xt_tmp, name);
    return buf[k];
}

void xt_write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
}

char *xt_read_file(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    if (len)
        *len = got;
    return s;
}

void xt_read_head(const char *p, char *buf, size_t cap)
{
    FILE *f = fopen(p, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

const char *xt_last_line(const char *text)
{
    const char *end = text + strlen(text);
    if (end > text && end[-1] == '\n')
        end--;
    while (end > text && end[-1] != '\n')
        end--;
    return end;
}

int xt_sh(const char *env_words, const char *cmd, char **out)
{
    char *line = NULL, log[300];
    snprintf(log, sizeof log, "%s/.log", xt_tmp);
    cr_assert_geq(
        asprintf(&line, "cd '%s' && " CLEAN_ENV "%s %s >'%s' 2>&1", xt_tmp, env_words, cmd, log),
        0);
    int status = system(line);
    free(line);
    *out = xt_read_file(log, NULL);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}
