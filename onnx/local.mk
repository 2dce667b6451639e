# onnx/local.mk - the ONNX importer (einc --from=onnx), built where
# configure found protoc-c, onnx.proto and libprotobuf-c.  The reader is
# generated at build time: protoc-c turns onnx.proto into onnx.pb-c.[ch].

if HAVE_ONNX
noinst_LIBRARIES += onnx/libonnx_import.a onnx/libonnx_pb.a
onnx_libonnx_import_a_SOURCES = onnx/onnx.h onnx/onnx_int.h onnx/model.c \
	onnx/graph.c onnx/write.c onnx/ops_elem.c onnx/ops_nn.c onnx/ops_shape.c
nodist_onnx_libonnx_pb_a_SOURCES = onnx/onnx.pb-c.c onnx/onnx.pb-c.h
# Generated code: not held to the project's warnings.
onnx_libonnx_pb_a_CFLAGS = -std=gnu11 -w
BUILT_SOURCES += onnx/onnx.pb-c.c onnx/onnx.pb-c.h
CLEANFILES += onnx/onnx.pb-c.c onnx/onnx.pb-c.h onnx/onnx.proto
onnx/onnx.pb-c.h: onnx/onnx.pb-c.c
onnx/onnx.pb-c.c: $(ONNX_PROTO)
	$(AM_V_GEN)$(MKDIR_P) onnx && cp $(ONNX_PROTO) onnx/onnx.proto && \
	cd onnx && $(PROTOC_C) --c_out=. onnx.proto
ONNX_LDADD = onnx/libonnx_import.a onnx/libonnx_pb.a runtime/libst.a \
	$(PROTOBUF_C_LIBS)
endif

# The tests' helper: TensorProto files to safetensors, a model's operators.
if HAVE_ONNX
check_PROGRAMS += tests/onnx/pb2st
tests_onnx_pb2st_SOURCES = tests/onnx/pb2st.c
tests_onnx_pb2st_LDADD = $(ONNX_LDADD) lang/liblang.a
endif

# The fuzz harness and its corpus (tests/fuzz/onnx.mk).
include tests/fuzz/onnx.mk
EXTRA_DIST += tests/fuzz/onnx.mk tests/fuzz/replay-onnx.test tests/fuzz/corpus-onnx \
	tests/fuzz/onnx.dict
TESTS += tests/fuzz/replay-onnx.test

# The tests skip (77) where the importer was not built.
TESTS += tests/onnx/errors.test tests/onnx/backend.test tests/onnx/models.test \
	tests/onnx/embed.test tests/onnx/order.test tests/onnx/nodes.test
EXTRA_DIST += tests/onnx/errors.test tests/onnx/backend.test tests/onnx/models.test \
	tests/onnx/embed.test tests/onnx/embed.py tests/onnx/order.test tests/onnx/order.py \
	tests/onnx/nodes.test tests/onnx/nodes.py tests/onnx/onnxw.py \
	tests/onnx/backend.py tests/onnx/backend.sh tests/onnx/backend-subset.txt \
	tests/onnx/models.py tests/onnx/sweep.py tests/onnx/pb2st.c
