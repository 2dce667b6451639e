# tests/fuzz/onnx.mk - fuzzing the ONNX importer (einc --from=onnx:
# protoc-c's reader and onnx/, through fuzz_onnx.c).  Included from
# onnx/local.mk; the harness is built where the importer is.  `make check` replays the
# seed corpus and the crashers found so far through the harness built
# normally (replay-onnx.test); `make fuzz-onnx` builds the libFuzzer
# binary with clang (ASan, UBSan; libprotobuf-c itself is the system's,
# not instrumented), and
#   make fuzz-onnx-run FUZZ_ONNX_TIME=600
# runs it from the corpus: new inputs go to fuzz-corpus-onnx/ in the
# build folder, a crashing one to crash-* beside it.
fuzz_onnx_libs = $(ONNX_LDADD) sema/libsema.a parser/libparser.a lang/liblang.a \
	-lm $(LIBS)
if HAVE_ONNX
check_PROGRAMS += tests/fuzz/replay_onnx
tests_fuzz_replay_onnx_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_onnx.c
tests_fuzz_replay_onnx_LDADD = $(fuzz_onnx_libs)
endif

FUZZ_ONNX_CC = clang
# Values are folded at import time up to 2^16 elements, not 2^24: the
# same code, but an input that makes a large constant stays fast.
FUZZ_ONNX_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -std=gnu11 '-DOX_MAX_FOLD=((int64_t)1 << 16)'
FUZZ_ONNX_TIME = 60
fuzz_onnx_sources = tests/fuzz/fuzz_onnx.c onnx/onnx.pb-c.c \
	$(onnx_libonnx_import_a_SOURCES) $(runtime_libst_a_SOURCES) \
	$(lang_liblang_a_SOURCES) $(parser_libparser_a_SOURCES) $(sema_libsema_a_SOURCES)
tests/fuzz/fuzz-onnx: $(fuzz_onnx_sources) parser/grammar.h onnx/onnx.pb-c.h
	@command -v $(FUZZ_ONNX_CC) >/dev/null 2>&1 || { \
	    echo "make fuzz-onnx: $(FUZZ_ONNX_CC) with libFuzzer is needed" >&2; exit 1; }
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	$(FUZZ_ONNX_CC) $(FUZZ_ONNX_CFLAGS) -I$(top_srcdir) -I$(top_builddir) \
	    -o $@ $(filter %.c,$^) $(PROTOBUF_C_LIBS) -lm
fuzz-onnx: tests/fuzz/fuzz-onnx
fuzz-onnx-run: tests/fuzz/fuzz-onnx
	$(MKDIR_P) fuzz-corpus-onnx
	EINC_STDLIB=$(abs_top_srcdir)/lib tests/fuzz/fuzz-onnx \
	    -max_total_time=$(FUZZ_ONNX_TIME) -timeout=10 -max_len=16384 \
	    -dict=$(srcdir)/tests/fuzz/onnx.dict \
	    fuzz-corpus-onnx $(srcdir)/tests/fuzz/corpus-onnx
.PHONY: fuzz-onnx fuzz-onnx-run
CLEANFILES += tests/fuzz/fuzz-onnx
