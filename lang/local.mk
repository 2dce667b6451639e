# lang/local.mk - shared infrastructure: arenas, symbols, sources, diagnostics.
noinst_LIBRARIES += lang/liblang.a
lang_liblang_a_SOURCES = lang/lang.h lang/ast.h lang/arena.c lang/sym.c \
	lang/src.c lang/diag.c lang/i64.c lang/sb.h lang/sb.c lang/names.c

check_PROGRAMS += tests/lang/test_lang
TESTS += tests/lang/test_lang
tests_lang_test_lang_LDADD = lang/liblang.a
