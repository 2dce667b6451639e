# derive/pricing/local.mk - operator matching (the iterator mapping
# table), the cost model, operator keys and the tuning database: what a
# stage runs as and what it costs.
derive_libderive_a_SOURCES += derive/pricing/match.h derive/pricing/match.c \
	derive/pricing/cost.h derive/pricing/cost.c derive/pricing/libs.c \
	derive/pricing/opkey.c derive/pricing/tunedb.c

check_PROGRAMS += tests/derive/test_match
TESTS += tests/derive/test_match
# oneDNN post-ops from random epilogues (libs.c), against the interpreter.
check_PROGRAMS += tests/derive/test_post
TESTS += tests/derive/test_post
tests_derive_test_post_SOURCES = tests/derive/test_post.c tests/check.h
tests_derive_test_post_LDADD = derive/libderive.a sema/libsema.a \
	parser/libparser.a lang/liblang.a -lm
tests_derive_test_match_LDADD = derive/libderive.a sema/libsema.a \
	parser/libparser.a lang/liblang.a -lm

# The tuning database and operator keys (opkey.c, tunedb.c), and the cost
# model on every device and precision.
check_PROGRAMS += tests/derive/test_tune
TESTS += tests/derive/test_tune
tests_derive_test_tune_SOURCES = tests/derive/test_tune.c tests/check.h
tests_derive_test_tune_LDADD = derive/libderive.a sema/libsema.a \
	parser/libparser.a lang/liblang.a -lm
# Measured times (--tune-db) change the chosen plan; the tuner builds.
TESTS += tests/derive/tune.test
EXTRA_DIST += tests/derive/tune.test
include tests/fuzz/tune.mk
# cuBLASLt's epilogue from random epilogues (libs.c), against the
# interpreter.
check_PROGRAMS += tests/derive/test_lt
TESTS += tests/derive/test_lt
tests_derive_test_lt_SOURCES = tests/derive/test_lt.c tests/check.h
tests_derive_test_lt_LDADD = derive/libderive.a sema/libsema.a \
	parser/libparser.a lang/liblang.a -lm
