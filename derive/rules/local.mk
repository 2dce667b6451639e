# derive/rules/local.mk - the derivation rules and their tests (see derive/rules/RULES.md)
derive_libderive_a_SOURCES += derive/rules/rules.h derive/rules/rules_int.h derive/rules/rules.c \
	derive/rules/rule_util.c derive/rules/rule_split.c derive/rules/rule_subst.c \
	derive/rules/rule_merge.c derive/rules/rule_bound.c derive/rules/rule_layout.c derive/rules/rule_tile.c \
	derive/rules/rule_factor.c

# Every rule against the interpreter on random stages, and EinNet's
# showcase derivation steps with their printed results.
check_PROGRAMS += tests/derive/test_rules
TESTS += tests/derive/test_rules
tests_derive_test_rules_SOURCES = tests/derive/test_rules.c tests/derive/gen.c \
	tests/derive/gen.h tests/check.h
tests_derive_test_rules_LDADD = derive/libderive.a sema/libsema.a parser/libparser.a \
	lang/liblang.a $(LIBS)
EXTRA_DIST += derive/rules/RULES.md
