# sema/local.mk - the checker: names, constants, def inlining, index
# ranges, shapes, single assignment, order, warnings.
noinst_LIBRARIES += sema/libsema.a
sema_libsema_a_SOURCES = sema/sema.h sema/sema_int.h sema/sema.c \
	sema/report.c sema/scope.c sema/const.c sema/block.c sema/order.c \
	sema/inline.c sema/stmt.c sema/expr.c sema/range.c sema/warn.c \
	sema/dump.c sema/shapeops.c

# ---- tests ----
check_PROGRAMS += tests/sema/test_sema
tests_sema_test_sema_SOURCES = tests/sema/test_sema.c
tests_sema_test_sema_LDADD = sema/libsema.a parser/libparser.a \
	lang/liblang.a $(LIBS)
TESTS += tests/sema/test_sema tests/sema/scale.test
EXTRA_DIST += tests/sema/scale.test
