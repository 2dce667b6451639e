# lang/local.mk - shared infrastructure: arenas, symbols, sources, diagnostics.
noinst_LIBRARIES += lang/liblang.a
lang_liblang_a_SOURCES = lang/lang.h lang/ast.h lang/arena.c lang/sym.c \
	lang/src.c lang/diag.c lang/names.c
