/* pb2st.c - for the ONNX tests: turn TensorProto files (the backend test
 * cases' input_N.pb, output_N.pb) into one safetensors file, or list the
 * operators of a model.
 *
 *   pb2st OUT.safetensors [NAME=]FILE.pb ...   (NAME: the tensor's name
 *                                               in OUT, else the file's)
 *   pb2st --ops MODEL.onnx                     (one operator a line)
 *   pb2st --inputs MODEL.onnx                  (the graph inputs that are
 *                                               not initializers, in order)
 *   pb2st --types MODEL.onnx                   (those inputs, then the
 *                                               outputs: "input NAME TYPE",
 *                                               "output NAME TYPE", TYPE the
 *                                               TensorProto.DataType number) */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"
#include "onnx/onnx.pb-c.h"

enum { OPS, INPUTS, TYPES };

/* The element type a ValueInfoProto declares (0 where it says none). */
static int elem_type(const Onnx__ValueInfoProto *vi)
{
    return vi->type && vi->type->tensor_type ? vi->type->tensor_type->elem_type : 0;
}

static int list(const char *path, int what)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        perror(path);
        return 1;
    }
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, fp)) > 0;) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(fp);
    Onnx__ModelProto *m = buf ? onnx__model_proto__unpack(NULL, n, buf) : NULL;
    free(buf);
    if (!m || !m->graph) {
        fprintf(stderr, "%s: not an ONNX model\n", path);
        return 1;
    }
    const Onnx__GraphProto *g = m->graph;
    for (size_t i = 0; what == OPS && i < g->n_node; i++)
        printf("%s\n", g->node[i]->op_type);
    for (size_t i = 0; what != OPS && i < g->n_input; i++) {
        bool init = false;
        for (size_t j = 0; j < g->n_initializer; j++)
            init |= strcmp(g->initializer[j]->name, g->input[i]->name) == 0;
        if (init)
            continue;
        if (what == TYPES)
            printf("input %s %d\n", g->input[i]->name, elem_type(g->input[i]));
        else
            printf("%s\n", g->input[i]->name);
    }
    for (size_t i = 0; what == TYPES && i < g->n_output; i++)
        printf("output %s %d\n", g->output[i]->name, elem_type(g->output[i]));
    onnx__model_proto__free_unpacked(m, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--ops") == 0)
        return list(argv[2], OPS);
    if (argc == 3 && strcmp(argv[1], "--inputs") == 0)
        return list(argv[2], INPUTS);
    if (argc == 3 && strcmp(argv[1], "--types") == 0)
        return list(argv[2], TYPES);
    if (argc < 2) {
        fprintf(stderr, "usage: pb2st OUT.safetensors [NAME=]FILE.pb ...\n"
                        "       pb2st --ops|--inputs|--types MODEL.onnx\n");
        return 2;
    }
    int n = argc - 2;
    const char **paths = calloc((size_t)n + 1, sizeof *paths);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    for (int i = 0; i < n; i++) {
        char *a = argv[i + 2], *eq = strchr(a, '=');
        if (eq) {
            *eq = 0;
            names[i] = a;
            paths[i] = eq + 1;
        } else {
            paths[i] = a;
        }
    }
    unsigned char *img;
    size_t len;
    if (!onnx_tensors_to_safetensors(paths, names, n, &img, &len))
        return 1;
    FILE *fp = fopen(argv[1], "wb");
    if (!fp || fwrite(img, 1, len, fp) != len || fclose(fp) != 0) {
        perror(argv[1]);
        return 1;
    }
    free(img);
    free(paths);
    free(names);
    return 0;
}
