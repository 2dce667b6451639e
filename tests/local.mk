# tests/local.mk - the suites that run the whole driver.  Unit tests of
# each phase are listed in that phase's local.mk.
TESTS += tests/golden.test tests/cli.test tests/security.test tests/newcomer.test \
	tests/limits.test tests/files.test
EXTRA_DIST += tests/golden.test tests/cli.test tests/security.test tests/newcomer.test \
	tests/limits.test tests/files.test \
	tests/golden
# the checks every unit test uses (CHECK, CHECK_STR, check_finish)
EXTRA_DIST += tests/check.h
# the include layering of lang/ and derive/, private headers kept private
TESTS += tests/layers.test
EXTRA_DIST += tests/layers.test
# the front end's diagnostics in the program's order, whatever the compiler
TESTS += tests/order.test
EXTRA_DIST += tests/order.test

# The numerical suite (generated C programs against PyTorch) and the
# examples' Makefile; the GPU scripts ship but run only on a GPU machine.
TESTS += tests/num.test tests/num-O0.test tests/num-h200.test tests/num-precision.test \
	tests/examples-make.test
EXTRA_DIST += tests/num.test tests/num-O0.test tests/num-h200.test tests/num-precision.test \
	tests/examples-make.test \
	tests/num tests/models tests/gpu tests/bench tests/shrink examples/Makefile
