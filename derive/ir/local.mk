# derive/ir/local.mk - the tensor-expression IR: canonical index expressions,
# expression and stage nodes, fingerprints, the interpreter, lowering from
# sema's checked program, and the text form.
noinst_LIBRARIES += derive/libderive.a
derive_libderive_a_SOURCES = derive/ir/ir.h derive/ir/ir_int.h derive/ir/ix.c \
	derive/ir/func.c derive/ir/expr.c derive/ir/stage.c derive/ir/fingerprint.c \
	derive/ir/interp.c derive/ir/lower.c derive/ir/print.c

# Unit tests: canonical forms, fingerprints, the interpreter, lowering.
derive_test_libs = derive/libderive.a lang/liblang.a $(LIBS)
check_PROGRAMS += tests/derive/test_ix
TESTS += tests/derive/test_ix
tests_derive_test_ix_SOURCES = tests/derive/test_ix.c tests/check.h
tests_derive_test_ix_LDADD = $(derive_test_libs)
check_PROGRAMS += tests/derive/test_fingerprint
TESTS += tests/derive/test_fingerprint
tests_derive_test_fingerprint_SOURCES = tests/derive/test_fingerprint.c tests/check.h
tests_derive_test_fingerprint_LDADD = $(derive_test_libs)
check_PROGRAMS += tests/derive/test_interp
TESTS += tests/derive/test_interp
tests_derive_test_interp_SOURCES = tests/derive/test_interp.c tests/check.h
tests_derive_test_interp_LDADD = $(derive_test_libs)
check_PROGRAMS += tests/derive/test_lower
TESTS += tests/derive/test_lower
tests_derive_test_lower_SOURCES = tests/derive/test_lower.c tests/check.h
tests_derive_test_lower_LDADD = derive/libderive.a sema/libsema.a \
	parser/libparser.a lang/liblang.a $(LIBS)
check_PROGRAMS += tests/derive/test_copy
TESTS += tests/derive/test_copy
tests_derive_test_copy_SOURCES = tests/derive/test_copy.c tests/derive/gen.c \
	tests/derive/gen.h tests/check.h
tests_derive_test_copy_LDADD = $(derive_test_libs)
