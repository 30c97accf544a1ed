/*
 * The backends (codegen/backend.h): every target's struct has the slots
 * the emitter and the runner call without a check, the optional GPU
 * slots come together (a block-wide combine needs its shared-memory
 * keyword and a barrier), and a target is found again by its name and by
 * its device. The text the slots print is held by test_emit_golden.
 */
#include <criterion/criterion.h>

#include "backend.h"

static const xg_target targets[] = {XG_TARGET_C, XG_TARGET_CUDA};
#define N_TARGETS (sizeof targets / sizeof targets[0])

Test(backend, required_slots_are_filled)
{
    for (size_t i = 0; i < N_TARGETS; i++) {
        const xg_backend *b = xg_backend_for(targets[i]);
        cr_assert_not_null(b);
        cr_assert_eq(b->target, targets[i]);
        const char *name = b->info.name;
        cr_assert_not_null(name);
        cr_assert(b->source_ext && b->restrict_kw && b->flat_loop && b->rows_loop && b->pass_loop &&
                      b->first_thread,
                  "%s: a dialect string is missing", name);
        cr_assert(b->prelude && b->kernel_signature && b->reduce && b->launch_text, "%s: an emitter hook is missing",
                  name);
        cr_assert(b->arch && b->device_arch && b->compiler_id && b->target_text && b->code_ext && b->compiler_words &&
                      b->compile && b->load && b->launch && b->unload,
                  "%s: a compile or run step is missing", name);
    }
}

Test(backend, block_combine_comes_with_its_keyword_and_barrier)
{
    for (size_t i = 0; i < N_TARGETS; i++) {
        const xg_backend *b = xg_backend_for(targets[i]);
        bool block = b->block_reduce != NULL;
        cr_assert_eq(block, b->shared_kw != NULL, "%s", b->info.name);
        cr_assert_eq(block, b->barrier != NULL, "%s", b->info.name);
        cr_assert_eq(block, b->first_thread[0] != '\0', "%s", b->info.name);
        /* the CPU-only strategies are never asked of a target whose rows are blocks */
        cr_assert(!(block && (b->nest_begin || b->simd_pragmas || b->row_cache)), "%s", b->info.name);
    }
}

Test(backend, targets_are_found_by_name_and_device)
{
    for (size_t i = 0; i < N_TARGETS; i++) {
        const xg_target_info *ti = xg_target_get(targets[i]);
        xg_target t = (xg_target)-1;
        cr_assert(xg_target_by_name(ti->name, &t), "%s", ti->name);
        cr_assert_eq(t, targets[i]);
        cr_assert_eq(xg_target_for_device(ti->device), targets[i], "%s", ti->name);
        cr_assert_str_neq(xg_compiler_words(targets[i], false), "");
    }
    xg_target t = XG_TARGET_C;
    cr_assert_not(xg_target_by_name("opencl", &t));
    cr_assert_not(xg_target_by_name("", &t));
}

Test(backend, arch_only_where_the_target_takes_one)
{
    for (size_t i = 0; i < N_TARGETS; i++) {
        const xg_backend *b = xg_backend_for(targets[i]);
        cr_assert_eq(b->arch(90), b->info.uses_arch ? 90 : 0, "%s", b->info.name);
    }
}
