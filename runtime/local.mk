# runtime/local.mk - the runtime every generated program carries, and its
# tests.  einc does not link the runtime: it embeds its text, generated at
# build time into runtime/runtime_embed.c by runtime/embed (see README.md).

# The pieces in the order they are pasted into an output.
RUNTIME_PIECES = runtime/rt.h runtime/st.h runtime/harness.h \
	runtime/st.c runtime/harness.c
# The support pieces: the API, library calls, --main and the tuner, pasted
# by emit/ where a program needs them (README.md, "Support pieces"); C
# ones, CUDA ones, and ones for both targets.  model.h is the stand-in
# for what a generated file defines before them, for compiling each on
# its own (tests/runtime/support.test); it is not embedded.
RUNTIME_SUPPORT_C = runtime/pace.c runtime/api_host.c runtime/cblas.c runtime/main_host.c
RUNTIME_SUPPORT_CUDA = runtime/cudnn_types.h runtime/cublaslt_types.h \
	runtime/api_cuda.cu runtime/cublas.cu runtime/cublaslt.cu runtime/cudnn.cu \
	runtime/band.cu runtime/graph.cu \
	runtime/main_cuda.cu runtime/tuner.cu
RUNTIME_SUPPORT_BOTH = runtime/api_base.c runtime/api.c runtime/main.c
RUNTIME_SUPPORT = $(RUNTIME_SUPPORT_C) $(RUNTIME_SUPPORT_CUDA) \
	$(RUNTIME_SUPPORT_BOTH)
# The oneDNN operators (C, pasted where a C file calls oneDNN: einc
# --dnnl); embedded, but compiled on their own only by test_dnnl (below),
# where configure found oneDNN, not by support.test.
DNNL_PIECES = runtime/dnnl_types.h runtime/dnnl.c
AM_TESTS_ENVIRONMENT += RUNTIME_SUPPORT_C='$(RUNTIME_SUPPORT_C)'; \
	RUNTIME_SUPPORT_CUDA='$(RUNTIME_SUPPORT_CUDA)'; \
	RUNTIME_SUPPORT_BOTH='$(RUNTIME_SUPPORT_BOTH)'; \
	export RUNTIME_SUPPORT_C RUNTIME_SUPPORT_CUDA RUNTIME_SUPPORT_BOTH;

noinst_PROGRAMS += runtime/embed
runtime_embed_SOURCES = runtime/embed.c

noinst_LIBRARIES += runtime/libruntime_embed.a
runtime_libruntime_embed_a_SOURCES = runtime/embed.h
nodist_runtime_libruntime_embed_a_SOURCES = runtime/runtime_embed.c
BUILT_SOURCES += runtime/runtime_embed.c
CLEANFILES += runtime/runtime_embed.c runtime/runtime_embed.c-t
EXTRA_DIST += $(RUNTIME_PIECES) $(RUNTIME_SUPPORT) $(DNNL_PIECES) runtime/model.h

runtime/runtime_embed.c: runtime/embed$(EXEEXT) $(RUNTIME_PIECES) $(RUNTIME_SUPPORT) \
	$(DNNL_PIECES) $(srcdir)/runtime/local.mk
	$(AM_V_GEN)$(MKDIR_P) runtime && \
	runtime/embed$(EXEEXT) $@-t \
	  `for f in $(RUNTIME_PIECES) $(RUNTIME_SUPPORT) $(DNNL_PIECES); do echo $(srcdir)/$$f; done` && \
	mv -f $@-t $@

# The safetensors code as an ordinary library, for einc's own use (the
# ONNX importer writes the weights file with it).
noinst_LIBRARIES += runtime/libst.a
runtime_libst_a_SOURCES = runtime/rt.h runtime/st.h runtime/st.c

# Unit tests compile the pieces as ordinary files.
check_PROGRAMS += tests/runtime/test_st tests/runtime/test_harness \
	tests/runtime/st_tool tests/runtime/paste tests/runtime/st_replay \
	tests/runtime/st_file_replay tests/runtime/test_pace
tests_runtime_test_st_SOURCES = tests/runtime/test_st.c $(RUNTIME_PIECES)
tests_runtime_test_harness_SOURCES = tests/runtime/test_harness.c \
	$(RUNTIME_PIECES)
tests_runtime_st_tool_SOURCES = tests/runtime/st_tool.c $(RUNTIME_PIECES)
tests_runtime_test_pace_SOURCES = tests/runtime/test_pace.c
tests_runtime_paste_SOURCES = tests/runtime/paste.c
tests_runtime_paste_LDADD = runtime/libruntime_embed.a
# The fuzz harness with a main() that replays the seed corpus.
tests_runtime_st_replay_SOURCES = tests/fuzz/fuzz_safetensors.c \
	runtime/rt.h runtime/st.h runtime/st.c
tests_runtime_st_replay_CPPFLAGS = $(AM_CPPFLAGS) -DST_FUZZ_REPLAY
# The harness of the reader on the file system (regular files, truncated
# copies, pipes, /dev/zero, folders), replaying the same corpus.
tests_runtime_st_file_replay_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_st_file.c \
	runtime/rt.h runtime/st.h runtime/st.c

TESTS += tests/runtime/test_st tests/runtime/test_harness tests/runtime/test_pace \
	tests/runtime/python.test tests/runtime/args.test \
	tests/runtime/paste.test tests/runtime/corpus.test \
	tests/runtime/support.test tests/runtime/corpus-file.test
EXTRA_DIST += tests/runtime/python.test tests/runtime/args.test \
	tests/runtime/paste.test tests/runtime/corpus.test \
	tests/runtime/support.test \
	tests/runtime/corpus-file.test tests/fuzz/fuzz_st_file.c \
	tests/runtime/st.py tests/runtime/paste_main.c \
	tests/runtime/fuzz-st.sh tests/fuzz/corpus-st
CLEANFILES += tests/runtime/test_st.tmp tests/runtime/test_st.fifo tests/runtime/test_harness.tmp \
	tests/runtime/fuzz_st tests/runtime/fuzz_st_file
clean-local: clean-local-runtime
clean-local-runtime:
	-rm -rf tests/runtime/python.dir tests/runtime/args.dir \
	  tests/runtime/paste.dir tests/runtime/fuzz-st.dir

# libFuzzer build of the reader (not part of `make all` or `make check`):
#   make fuzz-st && $(srcdir)/tests/runtime/fuzz-st.sh 600
FUZZ_CC = clang
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all
fuzz-st: $(srcdir)/tests/fuzz/fuzz_safetensors.c $(srcdir)/runtime/st.c
	$(MKDIR_P) tests/runtime
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(top_srcdir) -o tests/runtime/fuzz_st \
	  $(srcdir)/tests/fuzz/fuzz_safetensors.c $(srcdir)/runtime/st.c
fuzz-st-file: $(srcdir)/tests/fuzz/fuzz_st_file.c $(srcdir)/runtime/st.c
	$(MKDIR_P) tests/runtime
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(top_srcdir) -o tests/runtime/fuzz_st_file \
	  $(srcdir)/tests/fuzz/fuzz_st_file.c $(srcdir)/runtime/st.c
.PHONY: fuzz-st fuzz-st-file clean-local-runtime

# The CBLAS products (cblas.c: sgemm, sgemv, sdot) against plain loops.
check_PROGRAMS += tests/runtime/test_cblas
tests_runtime_test_cblas_SOURCES = tests/runtime/test_cblas.c tests/runtime/rnd.h \
	runtime/cblas.c
tests_runtime_test_cblas_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/runtime
tests_runtime_test_cblas_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
tests_runtime_test_cblas_LDADD = -lopenblas -lm
TESTS += tests/runtime/test_cblas

# The oneDNN operators (dnnl_types.h, dnnl.c) against plain loops, where
# configure found oneDNN.
if HAVE_DNNL
check_PROGRAMS += tests/runtime/test_dnnl
tests_runtime_test_dnnl_SOURCES = tests/runtime/test_dnnl.c tests/runtime/rnd.h runtime/dnnl.c \
	runtime/dnnl_types.h runtime/rt.h
tests_runtime_test_dnnl_CFLAGS = $(AM_CFLAGS) $(DNNL_CFLAGS) $(OPENMP_CFLAGS)
tests_runtime_test_dnnl_LDADD = $(DNNL_LIBS) -lm
TESTS += tests/runtime/test_dnnl
endif
