/*
 * The code generator's options as one table: each row names an
 * xg_options field, its kind, its default and whether it changes the
 * generated code. xg_options_default fills a struct from the defaults,
 * the signature key (cache_key.c) takes every row that changes code, and
 * the plugin's --help prints the defaults from a default-filled struct: a
 * default is written here and nowhere else, and a flag that changes code
 * cannot be left out of the key.
 */
#include <stddef.h>
#include <stdio.h>

#include "xg.h"

#define AT(member) offsetof(xg_options, member)

static const xg_option rows[] = {
    {.name = "fast_math", .kind = XG_OPT_BOOL, .field = AT(fast_math), .changes_code = true},
    {.name = "compile_threshold", .kind = XG_OPT_INT, .field = AT(compile_threshold), .dflt = 1},
    {.name = "demote", .kind = XG_OPT_BOOL, .field = AT(demote), .dflt = true},
    {.name = "dynamic_after", .kind = XG_OPT_INT, .field = AT(dynamic_after), .dflt = 2},
    {.name = "max_compiles_per_cluster",
     .kind = XG_OPT_INT,
     .field = AT(max_compiles_per_cluster),
     .dflt = 16},
    {.name = "async_compilation", .kind = XG_OPT_BOOL, .field = AT(async_compilation)},
    {.name = "disk_cache", .kind = XG_OPT_BOOL, .field = AT(disk_cache), .dflt = true},
    {.name = "cache_dir", .kind = XG_OPT_STRING, .field = AT(cache_dir)},
    {.name = "dump_dir", .kind = XG_OPT_STRING, .field = AT(dump_dir)},
    {.name = "level2", .kind = XG_OPT_BOOL, .field = AT(level2)},
    {.name = "library_conv", .kind = XG_OPT_BOOL, .field = AT(library_conv), .dflt = true},
    {.name = "cc", .kind = XG_OPT_STRING, .field = AT(cc), .dflt_text = "cc"},
    {.name = "tmp_dir", .kind = XG_OPT_STRING, .field = AT(tmp_dir), .dflt_text = "/tmp"},
    {.name = "cache_max_mb", .kind = XG_OPT_INT, .field = AT(cache_max_mb), .dflt = 1024},
    {.name = "compile_timeout_s", .kind = XG_OPT_INT, .field = AT(compile_timeout_s), .dflt = 120},
};

const xg_option *xg_options_table(int *n)
{
    *n = (int)(sizeof rows / sizeof rows[0]);
    return rows;
}

void xg_options_default(xg_options *o)
{
    *o = (xg_options){0};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        void *at = (char *)o + rows[i].field;
        switch (rows[i].kind) {
        case XG_OPT_BOOL:
            *(bool *)at = rows[i].dflt != 0;
            break;
        case XG_OPT_INT:
            *(int *)at = (int)rows[i].dflt;
            break;
        case XG_OPT_STRING:
            *(const char **)at = rows[i].dflt_text;
            break;
        }
    }
}

void xg_option_value(const xg_options *o, const xg_option *r, char *buf, size_t len)
{
    const void *at = (const char *)o + r->field;
    switch (r->kind) {
    case XG_OPT_BOOL:
        snprintf(buf, len, "%d", *(const bool *)at);
        return;
    case XG_OPT_INT:
        snprintf(buf, len, "%d", *(const int *)at);
        return;
    case XG_OPT_STRING:
        snprintf(buf, len, "%s", *(const char *const *)at ? *(const char *const *)at : "");
        return;
    }
}
