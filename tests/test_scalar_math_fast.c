/*
 * tests/test_scalar_math.c again, compiled with the flags --fast_math adds
 * to generated C (-fassociative-math -fno-signed-zeros -fno-trapping-math,
 * see codegen/targets/c/cc.c; CMakeLists.txt sets them for this file): the same
 * sweeps held to 3.5 ulp (SLEEF's bound for its fast functions), NaN still
 * only from NaN. The exact signs of zeros are not checked (-fno-signed-zeros).
 */
#define MAX_ULP 3.5
#define XE_TEST_FAST_MATH 1
#include "test_scalar_math.c"
