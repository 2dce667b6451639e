# tests/fuzz/tune.mk - fuzzing the tuning database reader (derive/pricing/tunedb.c,
# einc --tune-db).  Included from derive/search/local.mk.  `make check` replays
# the seed corpus through the harness built normally; `make fuzz-tune`
# builds the libFuzzer binary with clang, and
# `make fuzz-tune-run FUZZ_TUNE_TIME=600` runs it from the corpus.
check_PROGRAMS += tests/fuzz/replay_tune
tests_fuzz_replay_tune_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_tune.c
tests_fuzz_replay_tune_LDADD = derive/libderive.a sema/libsema.a \
	lang/liblang.a -lm $(LIBS)
TESTS += tests/fuzz/replay-tune.test
EXTRA_DIST += tests/fuzz/replay-tune.test tests/fuzz/corpus-tune \
	tests/fuzz/tune.dict

FUZZ_TUNE_CC = clang
FUZZ_TUNE_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11
FUZZ_TUNE_TIME = 60
fuzz_tune_sources = tests/fuzz/fuzz_tune.c \
	$(filter %.c,$(lang_liblang_a_SOURCES) $(sema_libsema_a_SOURCES) \
	$(derive_libderive_a_SOURCES))
tests/fuzz/fuzz-tune: $(fuzz_tune_sources)
	@command -v $(FUZZ_TUNE_CC) >/dev/null 2>&1 || { \
	    echo "make fuzz-tune: $(FUZZ_TUNE_CC) with libFuzzer is needed" >&2; exit 1; }
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_TUNE_CC) $(FUZZ_TUNE_CFLAGS) -I$(top_srcdir) -I$(top_builddir) \
	    -o $@ $(filter %.c,$^) -lm
fuzz-tune: tests/fuzz/fuzz-tune
# New inputs go to fuzz-corpus-tune/ in the build folder, a crashing one
# to crash-* beside it.
fuzz-tune-run: tests/fuzz/fuzz-tune
	$(MKDIR_P) fuzz-corpus-tune
	tests/fuzz/fuzz-tune -max_total_time=$(FUZZ_TUNE_TIME) -timeout=5 \
	    -max_len=4096 -dict=$(srcdir)/tests/fuzz/tune.dict \
	    fuzz-corpus-tune $(srcdir)/tests/fuzz/corpus-tune
.PHONY: fuzz-tune fuzz-tune-run
CLEANFILES += tests/fuzz/fuzz-tune
