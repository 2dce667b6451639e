/* order.c - dependence order of a small graph (statements of a scope,
 * defs calling defs) by an iterative depth-first search, so that a long
 * chain cannot exhaust the C stack.  Each cycle met is handed to a
 * callback, once; the nodes of a cycle are still put in the order. */
#include "config.h"
#include "sema_int.h"

typedef struct Frame { int node, next; } Frame;

static void report_cycle(Arena *a, const GEdges *adj, const Frame *stack,
                         int from, int top, bool *in_cycle, CycleFn fn,
                         void *ctx)
{
    for (int k = from; k <= top; k++)
        if (in_cycle[stack[k].node])
            return;                 /* told already, through another cycle */
    int len = top - from + 1;
    int *nodes = arena_alloc(a, (size_t)len * sizeof *nodes);
    GEdge *edges = arena_alloc(a, (size_t)len * sizeof *edges);
    for (int k = from; k <= top; k++) {
        nodes[k - from] = stack[k].node;
        edges[k - from] = adj[stack[k].node].data[stack[k].next - 1];
        in_cycle[stack[k].node] = true;
    }
    fn(ctx, nodes, edges, len);
}

int *graph_order(Arena *a, int n, const GEdges *adj, CycleFn fn, void *ctx)
{
    int *order = arena_alloc(a, ((size_t)n + 1) * sizeof *order);
    char *state = arena_alloc(a, (size_t)n + 1);     /* 0 new, 1 open, 2 done */
    int *at = arena_alloc(a, ((size_t)n + 1) * sizeof *at);
    bool *in_cycle = arena_alloc(a, ((size_t)n + 1) * sizeof *in_cycle);
    Frame *stack = arena_alloc(a, ((size_t)n + 1) * sizeof *stack);
    int norder = 0;
    for (int root = 0; root < n; root++) {
        if (state[root])
            continue;
        int top = 0;
        stack[0] = (Frame){root, 0};
        state[root] = 1;
        at[root] = 0;
        while (top >= 0) {
            Frame *f = &stack[top];
            if (f->next < adj[f->node].len) {
                int to = adj[f->node].data[f->next++].to;
                if (state[to] == 0) {
                    state[to] = 1;
                    at[to] = ++top;
                    stack[top] = (Frame){to, 0};
                } else if (state[to] == 1) {
                    report_cycle(a, adj, stack, at[to], top, in_cycle, fn, ctx);
                }
            } else {
                state[f->node] = 2;
                order[norder++] = f->node;
                top--;
            }
        }
    }
    return order;
}
