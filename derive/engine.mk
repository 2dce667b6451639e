# derive/engine.mk - instantiation (operator matching), the cost model and
# the search, on top of the IR (derive/local.mk) and the rules (rules.mk).
derive_libderive_a_SOURCES += derive/match.h derive/match.c derive/cost.h derive/cost.c derive/tune.h derive/tune.c derive/plan.h derive/plan.c derive/search.h derive/search.c derive/derive.h derive/derive.c derive/fuse.c derive/siblings.c

check_PROGRAMS += tests/derive/test_match
TESTS += tests/derive/test_match
tests_derive_test_match_LDADD = derive/libderive.a sema/libsema.a \
	parser/libparser.a lang/liblang.a -lm

# The search showcases (EinNet's four derivations) and --verify on every
# example; tests/bench/ holds benchmarks that do not run in make check.
TESTS += tests/derive/showcase.test tests/derive/verify.test
EXTRA_DIST += tests/derive/showcase.test tests/derive/verify.test \
	tests/derive/showcase tests/bench/search.sh tests/bench/README.md

# The tuning database and operator keys (derive/tune.c), and the cost
# model on every device and precision.
check_PROGRAMS += tests/derive/test_tune
TESTS += tests/derive/test_tune
tests_derive_test_tune_SOURCES = tests/derive/test_tune.c tests/derive/check.h
tests_derive_test_tune_LDADD = derive/libderive.a sema/libsema.a \
	parser/libparser.a lang/liblang.a -lm
# Measured times (--tune-db) change the chosen plan; the tuner builds.
TESTS += tests/derive/tune.test
EXTRA_DIST += tests/derive/tune.test
include tests/fuzz/tune.mk
