"""CUDA-graph timing shared by the GPU scripts of bench/gpu/ (PyTorch's CUDA graphs and events).

``time_graph(fn, reps, iters)``: warm ``fn`` up on a side stream (graph capture needs it),
capture ``iters`` calls of it in one CUDA graph, replay the graph ``reps`` times and return the
median milliseconds of one call.
"""

from __future__ import annotations


def warm_up(fn, calls: int = 3) -> None:
    """``fn()`` a few times on a side stream (what graph capture needs first), then wait."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(calls):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()


def time_graph(fn, reps: int = 20, iters: int = 10, warm: int = 3) -> float:
    """Median ms of one ``fn()`` call, from CUDA-graph replays of ``iters`` calls."""
    import torch

    warm_up(fn, warm)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(iters):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / iters)
    times.sort()
    return times[len(times) // 2]
