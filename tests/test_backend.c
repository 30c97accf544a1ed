/*
 * The backends (codegen/backend.h): every target's struct has the slots
 * the emitter and the runner call without a check, the optional GPU
 * slots come together (a block-wide combine needs its shared-memory
 * keyword and a barrier), and a target is found again by its name and by
 * its device's kind; targets are counted from the registry. The text the
 * slots print is held by test_emit_golden.
 */
#include <criterion/criterion.h>

#include "backend.h"

/* Every target of the build, counted from the registry. */
#define N_TARGETS ((size_t)xg_target_count())
#define targets(i) ((xg_target)(i))

Test(backend, targets_are_counted_from_the_registry)
{
    cr_assert_eq(xg_target_count(), 2);
    cr_assert_eq(XG_TARGET_C, 0);
    cr_assert_eq(XG_TARGET_CUDA, 1);
    cr_assert_eq(xg_target_named("opencl"), -1);
}

Test(backend, required_slots_are_filled)
{
    for (size_t i = 0; i < N_TARGETS; i++) {
        const xg_backend *b = xg_backend_for(targets(i));
        cr_assert_not_null(b);
        const char *name = b->info.name;
        cr_assert_not_null(name);
        cr_assert(b->render.source_ext && b->render.restrict_kw && b->render.flat_loop && b->render.rows_loop && b->render.pass_loop &&
                      b->render.first_thread,
                  "%s: a dialect string is missing", name);
        cr_assert(b->render.prelude && b->render.kernel_signature && b->render.reduce && b->render.launch_text, "%s: an emitter hook is missing",
                  name);
        cr_assert(b->compiler.arch && b->runner.device_arch && b->compiler.compiler_id && b->compiler.target_text && b->compiler.code_ext && b->compiler.compiler_words &&
                      b->compiler.compile && b->runner.load && b->runner.launch && b->runner.unload,
                  "%s: a compile or run step is missing", name);
    }
}

Test(backend, block_combine_comes_with_its_keyword_and_barrier)
{
    for (size_t i = 0; i < N_TARGETS; i++) {
        const xg_backend *b = xg_backend_for(targets(i));
        bool block = b->render.block_reduce != NULL;
        cr_assert_eq(block, b->render.shared_kw != NULL, "%s", b->info.name);
        cr_assert_eq(block, b->render.barrier != NULL, "%s", b->info.name);
        cr_assert_eq(block, b->render.first_thread[0] != '\0', "%s", b->info.name);
        /* the CPU-only strategies are never asked of a target whose rows are blocks */
        cr_assert(!(block && (b->render.nest_begin || b->render.simd_pragmas || b->render.row_cache)), "%s", b->info.name);
    }
}

Test(backend, targets_are_found_by_name_and_device)
{
    for (size_t i = 0; i < N_TARGETS; i++) {
        const xg_target_info *ti = xg_target_get(targets(i));
        xg_target t = (xg_target)-1;
        cr_assert(xg_target_by_name(ti->name, &t), "%s", ti->name);
        cr_assert_eq(t, targets(i));
        cr_assert_eq(xg_target_for_device(xg_target_device(targets(i))), targets(i), "%s", ti->name);
        cr_assert_str_eq(xe_device_word(xg_target_device(targets(i))), ti->device);
        cr_assert_str_neq(xg_compiler_words(targets(i), false), "");
    }
    xg_target t = XG_TARGET_C;
    cr_assert_not(xg_target_by_name("opencl", &t));
    cr_assert_not(xg_target_by_name("", &t));
}

Test(backend, arch_only_where_the_target_takes_one)
{
    for (size_t i = 0; i < N_TARGETS; i++) {
        const xg_backend *b = xg_backend_for(targets(i));
        cr_assert_eq(b->compiler.arch(90), b->info.uses_arch ? 90 : 0, "%s", b->info.name);
    }
}
