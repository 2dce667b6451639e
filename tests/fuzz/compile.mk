# tests/fuzz/compile.mk - fuzzing the whole compile (fuzz_compile.c, with
# the program generator gen_ein.c).  Included from Makefile.am after every
# phase's fragment.  `make check` replays the corpus through the harness
# built normally, in both modes (replay-compile.test); `make fuzz-compile`
# and `make fuzz-compile-diff` build the libFuzzer binaries with clang
# (ASan and UBSan; no comparison tracing: the bytes are choices, and the
# tracing took a third of the time), and
#   make fuzz-compile-run FUZZ_COMPILE_TIME=600 [FUZZ_COMPILE_MODE=-diff] \
#       [FUZZ_COMPILE_FORK=16]
# runs one from the corpus (FORK: that many processes, libFuzzer's -fork).
# An input costs about 7 ms of CPU under the sanitizers in the compile
# mode (a compile with a search, and seven writers) and 2 ms in the
# differential mode, in one process (FORK=0, the default: 138 and 509
# inputs a second on one core of a 2-core Xeon, from the 43 seeds);
# -fork=1 ran 20 a second (a new process and the corpus read again for
# every job), so for more than one core run one such process per core,
# pinned (taskset -c N), each from its own copy of the corpus folder: two
# differential ones side by side on that Xeon, from a grown corpus of
# 6,538 inputs, ran 509 inputs a second each (averaged over 2 hours).
fuzz_compile_libs = emit/libemit.a derive/libderive.a sema/libsema.a \
	parser/libparser.a runtime/libruntime_embed.a lang/liblang.a -lm $(LIBS)
check_PROGRAMS += tests/fuzz/replay_compile tests/fuzz/replay_compile_diff
tests_fuzz_replay_compile_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_compile.c \
	tests/fuzz/gen_ein.c tests/fuzz/gen_ein.h
tests_fuzz_replay_compile_LDADD = $(fuzz_compile_libs)
tests_fuzz_replay_compile_diff_SOURCES = $(tests_fuzz_replay_compile_SOURCES)
tests_fuzz_replay_compile_diff_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_COMPILE_DIFF
tests_fuzz_replay_compile_diff_LDADD = $(fuzz_compile_libs)
TESTS += tests/fuzz/replay-compile.test
EXTRA_DIST += tests/fuzz/replay-compile.test tests/fuzz/corpus-compile
# The run mode: generated programs compiled by einc, built (under ASan
# and UBSan) and run, against the interpreter (run-generated.test).
check_PROGRAMS += tests/fuzz/gen_run
tests_fuzz_gen_run_SOURCES = tests/fuzz/gen_run.c tests/fuzz/fuzz_compile.c \
	tests/fuzz/gen_ein.c tests/fuzz/gen_ein.h
tests_fuzz_gen_run_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_COMPILE_RUN
tests_fuzz_gen_run_LDADD = $(fuzz_compile_libs) runtime/libst.a
TESTS += tests/fuzz/run-generated.test
EXTRA_DIST += tests/fuzz/run-generated.test

FUZZ_COMPILE_CC = clang
FUZZ_COMPILE_CFLAGS = -g -O2 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-coverage=trace-cmp \
	-fno-sanitize-recover=undefined -std=gnu11
FUZZ_COMPILE_TIME = 60
FUZZ_COMPILE_MODE =
FUZZ_COMPILE_FORK = 0
fuzz_compile_sources = tests/fuzz/fuzz_compile.c tests/fuzz/gen_ein.c \
	$(filter %.c,$(lang_liblang_a_SOURCES) $(parser_libparser_a_SOURCES) \
	$(sema_libsema_a_SOURCES) $(derive_libderive_a_SOURCES) \
	$(emit_libemit_a_SOURCES)) runtime/runtime_embed.c
tests/fuzz/fuzz-compile tests/fuzz/fuzz-compile-diff: $(fuzz_compile_sources) \
		parser/grammar.h tests/fuzz/gen_ein.h
	@command -v $(FUZZ_COMPILE_CC) >/dev/null 2>&1 || { \
	    echo "make fuzz-compile: $(FUZZ_COMPILE_CC) with libFuzzer is needed" >&2; exit 1; }
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_COMPILE_CC) $(FUZZ_COMPILE_CFLAGS) \
	    $(if $(findstring diff,$@),-DFUZZ_COMPILE_DIFF) -I$(top_srcdir) \
	    -I$(top_builddir) -o $@ $(filter %.c,$^) -lm
fuzz-compile: tests/fuzz/fuzz-compile
fuzz-compile-diff: tests/fuzz/fuzz-compile-diff
# New inputs go to fuzz-corpus-compile/ in the build folder, a crashing
# one to crash-* beside it.
# Allocation stacks of 5 frames (ASan's default is 30): every arena node
# is a malloc under ASan, and unwinding them all costs a tenth of the time.
fuzz-compile-run: tests/fuzz/fuzz-compile$(FUZZ_COMPILE_MODE)
	$(MKDIR_P) fuzz-corpus-compile$(FUZZ_COMPILE_MODE)
	ASAN_OPTIONS=malloc_context_size=5 \
	tests/fuzz/fuzz-compile$(FUZZ_COMPILE_MODE) -max_total_time=$(FUZZ_COMPILE_TIME) \
	    -timeout=60 -max_len=512 -rss_limit_mb=4096 -fork=$(FUZZ_COMPILE_FORK) \
	    fuzz-corpus-compile$(FUZZ_COMPILE_MODE) $(srcdir)/tests/fuzz/corpus-compile
.PHONY: fuzz-compile fuzz-compile-diff fuzz-compile-run
CLEANFILES += tests/fuzz/fuzz-compile tests/fuzz/fuzz-compile-diff
