"""A minimal stand-in for networkx, for the FX bridge tests only (suites/fx).

functorch's min_cut_rematerialization_partition (PyTorch 1.13) needs networkx for one
call, nx.minimum_cut on a DiGraph, and networkx is not a dependency of this project.
This module provides exactly what that partitioner uses: DiGraph.add_edge with a
capacity, adjacency by node (g[n]) and minimum_cut (Edmonds-Karp max flow; the source
side of the cut is what the residual graph still reaches). fx_suite.py puts it on the
path only when the real networkx cannot be imported.
"""
import collections
import math

__version__ = "passcheck-shim"


class DiGraph:
    def __init__(self):
        self._succ = collections.defaultdict(dict)

    def add_node(self, n, **attrs):
        self._succ[n]

    def add_edge(self, u, v, capacity=math.inf, **attrs):
        self._succ[u][v] = {"capacity": capacity}
        self._succ[v]

    def __getitem__(self, n):
        return self._succ[n]

    def __contains__(self, n):
        return n in self._succ

    def nodes(self):
        return list(self._succ)


def minimum_cut(graph, source, sink, capacity="capacity"):
    residual = collections.defaultdict(lambda: collections.defaultdict(float))
    for u, edges in graph._succ.items():
        for v, attrs in edges.items():
            residual[u][v] += attrs.get(capacity, math.inf)
            residual[v][u] += 0.0
    flow = 0.0
    while True:
        parent = {source: None}
        queue = collections.deque([source])
        while queue and sink not in parent:
            u = queue.popleft()
            for v, cap in residual[u].items():
                if cap > 0 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if sink not in parent:
            break
        path, v = [], sink
        while parent[v] is not None:
            path.append((parent[v], v))
            v = parent[v]
        push = min(residual[u][v] for u, v in path)
        if push == math.inf:
            raise ValueError("infinite capacity path between source and sink")
        for u, v in path:
            residual[u][v] -= push
            residual[v][u] += push
        flow += push
    reachable = set(parent)
    return flow, (reachable, set(graph._succ) - reachable)
