# derive/rules.mk - the derivation rules and their tests (see derive/RULES.md)
derive_libderive_a_SOURCES += derive/rules.h derive/rule_impl.h derive/rules.c \
	derive/rule_util.c derive/rule_split.c derive/rule_subst.c \
	derive/rule_merge.c derive/rule_bound.c derive/rule_layout.c derive/rule_tile.c

# Every rule against the interpreter on random stages, and EinNet's
# showcase derivation steps with their printed results.
check_PROGRAMS += tests/derive/test_rules
TESTS += tests/derive/test_rules
tests_derive_test_rules_SOURCES = tests/derive/test_rules.c tests/derive/gen.c \
	tests/derive/gen.h tests/derive/check.h
tests_derive_test_rules_LDADD = derive/libderive.a sema/libsema.a parser/libparser.a \
	lang/liblang.a $(LIBS)
EXTRA_DIST += derive/RULES.md
