# derive/search/local.mk - the search, instantiation into plans, sibling
# merging and fusion, the derive phase and the tuner's program, on top of
# the IR (derive/ir), the rules (derive/rules) and pricing (derive/pricing).
derive_libderive_a_SOURCES += derive/search/plan.h derive/search/plan.c \
	derive/search/search.h derive/search/search.c derive/search/derive.h \
	derive/search/derive.c derive/search/unmask.c derive/search/epilogue.c derive/search/fuse.c derive/search/outview.c \
	derive/search/handoff.c derive/search/storage.c \
	derive/search/rows.c derive/search/siblings.c derive/search/scalefold.c \
	derive/search/tune.h derive/search/tune.c

# The search showcases (EinNet's four derivations) and --verify on every
# example; tests/bench/ holds benchmarks that do not run in make check.
TESTS += tests/derive/showcase.test tests/derive/verify.test tests/derive/scale.test \
	tests/derive/limits.test tests/derive/factor.test tests/derive/views.test \
	tests/derive/epilogue.test tests/derive/rows.test tests/derive/reuse.test \
	tests/derive/rerank.test tests/derive/handoff.test tests/derive/unmask.test \
	tests/derive/jobs.test tests/derive/scalefold.test tests/derive/operands.test \
	tests/derive/storage.test
EXTRA_DIST += tests/derive/showcase.test tests/derive/verify.test tests/derive/scale.test \
	tests/derive/limits.test tests/derive/factor.test tests/derive/views.test \
	tests/derive/rows.test tests/derive/showcase tests/derive/factor tests/derive/views tests/derive/epilogue.test \
	tests/derive/epilogue tests/derive/reuse.test tests/derive/reuse tests/derive/rerank.test \
	tests/derive/handoff.test tests/derive/handoff tests/derive/seeds.py \
	tests/derive/unmask.test tests/derive/unmask tests/derive/jobs.test \
	tests/derive/scalefold.test tests/derive/scalefold tests/derive/operands.test \
	tests/derive/storage.test tests/derive/storage \
	tests/bench/search.sh tests/bench/README.md
