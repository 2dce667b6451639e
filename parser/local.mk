# parser/local.mk - the lexer (re2c), the grammar (Bison) and the parse
# driver.  The generated lexer.c, grammar.c and grammar.h are not in git
# (parser/.gitignore) but ship in the release tarball, so building a
# release needs neither re2c nor Bison.

noinst_LIBRARIES += parser/libparser.a
parser_libparser_a_SOURCES = parser/parser.h parser/parser_int.h \
	parser/parse.c parser/ast_dump.c \
	parser/lexer.c parser/grammar.c parser/grammar.h
BUILT_SOURCES += parser/grammar.h parser/grammar.c parser/lexer.c
EXTRA_DIST += parser/lexer.re parser/grammar.y
# Generated, distributed: only `make maintainer-clean` removes them.
MAINTAINERCLEANFILES += parser/lexer.c parser/grammar.c parser/grammar.h

# Without the tools the distributed files are used as they are.
if HAVE_RE2C
parser/lexer.c: parser/lexer.re
	$(AM_V_GEN)$(MKDIR_P) parser && \
	$(RE2C) -W -Werror --no-generation-date --no-debug-info \
	    -o $@ $(srcdir)/parser/lexer.re
endif
if HAVE_BISON
parser/grammar.c: parser/grammar.y
	$(AM_V_GEN)$(MKDIR_P) parser && \
	$(BISON) -Wall -Werror --no-lines --header=parser/grammar.h \
	    -o $@ $(srcdir)/parser/grammar.y
endif
parser/grammar.h: parser/grammar.c
	@:
# BUILT_SOURCES covers `make all`; this covers `make parser/libparser.a`.
parser/parse.$(OBJEXT) parser/lexer.$(OBJEXT): parser/grammar.h

# ---- tests ----
check_PROGRAMS += tests/parser/test_parser
tests_parser_test_parser_SOURCES = tests/parser/test_parser.c
tests_parser_test_parser_LDADD = parser/libparser.a lang/liblang.a $(LIBS)
TESTS += tests/parser/test_parser tests/parser/stress.test
EXTRA_DIST += tests/parser/stress.test

# Fuzzing.  `make check` replays the seed corpus through the harness
# built normally; `make fuzz` builds the libFuzzer binary with clang, and
# `make fuzz-ein-run FUZZ_EIN_TIME=600` runs it from the corpus.
check_PROGRAMS += tests/fuzz/replay_ein
tests_fuzz_replay_ein_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_ein.c
tests_fuzz_replay_ein_LDADD = $(fuzz_ein_extra_libs) parser/libparser.a \
	lang/liblang.a $(LIBS)
TESTS += tests/fuzz/replay-ein.test
EXTRA_DIST += tests/fuzz/replay-ein.test tests/fuzz/corpus-ein \
	tests/fuzz/ein.dict

# fuzz_ein.c runs sema_check on what parses (FUZZ_EIN_WITH_SEMA).
fuzz_ein_extra_libs = sema/libsema.a
fuzz_ein_extra_srcs = $(sema_libsema_a_SOURCES)
fuzz_ein_extra_cppflags = -DFUZZ_EIN_WITH_SEMA
tests_fuzz_replay_ein_CPPFLAGS = $(AM_CPPFLAGS) $(fuzz_ein_extra_cppflags)
FUZZ_EIN_CC = clang
FUZZ_EIN_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11
FUZZ_EIN_TIME = 60
fuzz_ein_sources = tests/fuzz/fuzz_ein.c \
	$(filter %.c,$(lang_liblang_a_SOURCES) $(parser_libparser_a_SOURCES) \
	$(fuzz_ein_extra_srcs))
tests/fuzz/fuzz-ein: $(fuzz_ein_sources) parser/grammar.h
	@command -v $(FUZZ_EIN_CC) >/dev/null 2>&1 || { \
	    echo "make fuzz: $(FUZZ_EIN_CC) with libFuzzer is needed" >&2; exit 1; }
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_EIN_CC) $(FUZZ_EIN_CFLAGS) $(fuzz_ein_extra_cppflags) -I$(top_srcdir) \
	    -I$(top_builddir) -o $@ $(filter %.c,$^) -lm
fuzz: tests/fuzz/fuzz-ein
fuzz-ein-run: tests/fuzz/fuzz-ein
	$(MKDIR_P) fuzz-corpus-ein
	tests/fuzz/fuzz-ein -max_total_time=$(FUZZ_EIN_TIME) -timeout=5 \
	    -max_len=4096 -dict=$(srcdir)/tests/fuzz/ein.dict \
	    fuzz-corpus-ein $(srcdir)/tests/fuzz/corpus-ein
.PHONY: fuzz fuzz-ein-run
CLEANFILES += tests/fuzz/fuzz-ein
