# emit/local.mk - the C, CUDA and Graphviz writers, and their tests.
noinst_LIBRARIES += emit/libemit.a
emit_libemit_a_SOURCES = emit/emit.h emit/emit_int.h emit/text.c emit/emit.c \
	emit/kernel.c emit/c.c emit/cuda.c emit/band.c emit/api.c emit/main.c \
	emit/dot.c \
	emit/lib.c emit/tuner.c
EXTRA_DIST += emit/README.md

# Hand-built programs written as C and CUDA, built with the command of
# their first line, run and checked (tests/emit/test_emit.c); the test
# writes its inputs with the runtime's safetensors code, compiled in.
check_PROGRAMS += tests/emit/test_emit
TESTS += tests/emit/test_emit
tests_emit_test_emit_SOURCES = tests/emit/test_emit.c runtime/rt.h \
	runtime/st.h runtime/st.c
tests_emit_test_emit_LDADD = emit/libemit.a derive/libderive.a \
	runtime/libruntime_embed.a lang/liblang.a $(LIBS)

# Every example that einc accepts: C builds without a warning, output is
# byte-identical across runs, dot accepts the graph; CUDA builds with nvcc
# (skipped without $NVCC).
TESTS += tests/emit/examples.test tests/emit/nvcc.test tests/emit/vendor.test
EXTRA_DIST += tests/emit/examples.test tests/emit/nvcc.test tests/emit/vendor.test

# The C target's vectorized loops (vector math, clones, reductions,
# selects, per-row values) are there and give PyTorch's values, NaNs and
# empty rows included (skipped without torch).
TESTS += tests/emit/vector.test
EXTRA_DIST += tests/emit/vector.test tests/emit/vector.py

# Each kernel's index type is its own: int64_t only where its indices or
# offsets can pass 2^31.
TESTS += tests/emit/width.test
EXTRA_DIST += tests/emit/width.test
# A C program's results are the same at 1, 2 and 3 threads, and --bench
# says how many runs ran at each count.
TESTS += tests/emit/threads.test
EXTRA_DIST += tests/emit/threads.test

# No function body of more than 20 lines in emit/'s string literals: the
# code every program carries is in runtime/.
TESTS += tests/emit/literals.test
EXTRA_DIST += tests/emit/literals.test tests/emit/literals.py

# Every macro of the headers the output includes, as a tensor name: the
# output still builds (C; CUDA where $NVCC is set).
TESTS += tests/emit/reserved.test
EXTRA_DIST += tests/emit/reserved.test

# The CUDA kernels (band.c's tiled band kernels, cuda.c's thread, warp and
# block layouts) compiled as C++ over an emulation of CUDA's threads,
# barriers and shuffles, run on the CPU against the IR interpreter; and
# built with nvcc where $NVCC is set (tests/emit/test_kern.c).
check_PROGRAMS += tests/emit/test_kern
TESTS += tests/emit/test_kern
tests_emit_test_kern_SOURCES = tests/emit/test_kern.c
tests_emit_test_kern_LDADD = emit/libemit.a derive/libderive.a sema/libsema.a \
	parser/libparser.a runtime/libruntime_embed.a lang/liblang.a $(LIBS)

# The tiled band kernels' inner loops as nvcc compiles them: at least 4
# multiply-adds per shared-memory load, no spills (skipped without $NVCC);
# which maps get a kernel of four elements a thread and its 128-bit loads
# (the PTX only where $NVCC is set).
TESTS += tests/emit/band-ptx.test tests/emit/v4.test
EXTRA_DIST += tests/emit/band-ptx.test tests/emit/v4.test

# Every example and f32 program of tests/num as CUDA, run on the host:
# the .cu built as C++ against NVIDIA's headers and the mocks of
# tests/hostcuda (CUDA runtime, cuBLAS, cuDNN backend API), against the C
# target (tests/hostcuda/README.md; skipped without the headers).
TESTS += tests/emit/hostcuda.test
EXTRA_DIST += tests/emit/hostcuda.test tests/hostcuda
