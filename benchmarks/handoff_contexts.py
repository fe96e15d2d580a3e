"""Whether the GPU's handoff to another process's context belongs to that context.

The judge takes from each gated call the handoff that a trusted null subject's context shows
next to it (``trusted.timing``): that is right only if every context is handed the GPU alike.
On an H200 (2026-11-28, ``notes/trusted-judge-h200.md``) an evaluation's median moved against
its null subject's handoff, within a task: r = -0.76, slope -1.27 over 138 evaluations of the
12 bundled solutions. What the null's handoff read differently from one evaluation to the next,
the candidate's did not.

This measures it with no judge around. A timing process T, a *resident* subject process
that lives through the whole run (as the judge's null subject lives as long as its worker),
and generations of new subject processes, each with a context of its own, made one after
another (``--idle N`` idle contexts made between two: a context's place among the GPU's). In
every round T times each subject in turn, the resident too, in a new order each round: per call
it flushes L2, records *opened*, opens the gate (a word in T's memory that the subject's stream
waits on), waits on the done word the subject's stream writes after one tiny kernel, and
records *ended*: the judge's span with a null call. Each new subject's handoff less the
resident's, round by round, is what the judge's calibration would get wrong for a candidate in
that context. If those offsets differ between contexts by more than the rounds' own noise
allows, a handoff belongs to its context, and a null subject's cannot stand for a candidate's.

On an H200 (2026-11-29): with each subject's words kept for the whole run, new contexts read
from 1.7 µs less to 2.1 µs more than the resident, each by the same amount every round and
every generation (range 3.83 µs, rounds' noise 0.07 µs). With new words every span, as the
judge's (``--new-words``), six new contexts read within 0.43 µs of it (sd 0.16 µs), before and
after three more contexts were made (``--churn 3``): what differed was where the words lay,
not the context. Quiet evaluations' null handoffs still moved by up to 3 µs between them, loaded
ones' by under 1 µs: ``--realloc-mb`` asks whether a handoff moves with what its context maps
(the null subject lends an arena as large as the candidate's every evaluation), ``--gap-s``
whether it moves after the GPU idled.

Neither (H200, 2026-11-29, ``--generations 1 --new-words --per-round``): with 500 MiB
allocated anew before every span, and with the GPU idle 3 s before every round, the resident's
handoff stayed within 0.7 µs round after round (sd 0.27 and 0.18 µs), and the others' mean
offset from it within 0.9 µs. New contexts again read offsets of their own (range 1.82 and 2.02
µs, by the same pattern in both runs: the 3rd near the resident, the 5th and 6th about 2 µs
above). What moved the quiet evaluations' null handoff was which worker timed them: each
worker's null subject has an offset of its own (``trusted.null_panel``).

    python benchmarks/handoff_contexts.py [--subjects 6] [--generations 3] [--rounds 20] [--idle 0]
        [--churn N] [--new-words] [--realloc-mb N] [--gap-s S] [--per-round]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import time
from multiprocessing.connection import Connection

import torch

from adaexplore_mcp.judge.wire import cuda

WORDS_BYTES = 2 << 20  # an allocation of its own for each subject's gate and done words


def _subject(conn: Connection, handle: str) -> None:
    counter = torch.zeros(1, device="cuda")
    counter.add_(1)  # the context made and the kernel loaded before any gate
    torch.cuda.synchronize()
    words = cuda.ipc_open(bytes.fromhex(handle))
    stream = torch.cuda.current_stream().cuda_stream
    conn.send("ready")
    held = None
    while (request := conn.recv()) is not None:
        first, calls, other, realloc_mb = request
        if other is not None:  # words of their own for this span
            cuda.ipc_close(words)
            words = cuda.ipc_open(bytes.fromhex(other))
        if realloc_mb:  # what its context maps changes, as the null subject's lent memory does
            torch.cuda.synchronize()
            if held is not None:
                cuda.mem_free(held)
            held = cuda.mem_alloc(realloc_mb << 20)
        for number in range(first, first + calls):
            cuda.wait_value(stream, words, number)
            counter.add_(1)
            cuda.write_value(stream, words + 4, number)
        conn.send("armed")
    torch.cuda.synchronize()
    cuda.ipc_close(words)


def _idle(conn: Connection) -> None:
    torch.zeros(1, device="cuda").add_(1)
    torch.cuda.synchronize()
    conn.send("ready")
    conn.recv()


class Subject:
    def __init__(self, context: mp.context.SpawnContext) -> None:
        self.words = cuda.mem_alloc(WORDS_BYTES)
        cuda.as_bytes(self.words, 8).zero_()
        torch.cuda.synchronize()
        self.conn, theirs = context.Pipe()
        handle = cuda.ipc_handle(self.words).hex()
        self.process = context.Process(target=_subject, args=(theirs, handle))
        self.process.start()
        if self.conn.recv() != "ready":
            raise RuntimeError("a subject did not start")
        self.value = 0
        self.kept: list[int] = []

    def span(
        self,
        calls: int,
        stream: torch.cuda.Stream,
        flush: torch.Tensor,
        new_words: bool = False,
        realloc_mb: int = 0,
    ) -> float:
        """The median gated time of ``calls`` null calls, in ms; ``new_words``: in words
        allocated for this span, as the judge's are; ``realloc_mb``: the subject frees what it
        allocated for the last span and allocates as much anew first."""
        handle = None
        if new_words:
            stream.synchronize()
            self.kept.append(self.words)  # the subject may map it until it opens the next
            self.words = cuda.mem_alloc(WORDS_BYTES)
            cuda.as_bytes(self.words, 8).zero_()
            torch.cuda.synchronize()
            handle, self.value = cuda.ipc_handle(self.words).hex(), 0
        first = self.value + 1
        self.value += calls
        self.conn.send((first, calls, handle, realloc_mb))
        if self.conn.recv() != "armed":
            raise RuntimeError("a subject did not arm")
        opened = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
        ended = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
        with torch.cuda.stream(stream):
            for index, number in enumerate(range(first, first + calls)):
                flush.zero_()
                opened[index].record()
                cuda.write_value(stream.cuda_stream, self.words, number)
                cuda.wait_value(stream.cuda_stream, self.words + 4, number)
                ended[index].record()
        stream.synchronize()
        return statistics.median(a.elapsed_time(b) for a, b in zip(opened, ended, strict=True))

    def close(self) -> None:
        self.conn.send(None)
        self.process.join()
        for words in [*self.kept, self.words]:
            cuda.mem_free(words)


def _idle_contexts(context: mp.context.SpawnContext, count: int) -> list:
    made = []
    for _ in range(count):
        ours, theirs = context.Pipe()
        process = context.Process(target=_idle, args=(theirs,))
        process.start()
        ours.recv()
        made.append((ours, process))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subjects", type=int, default=6, help="new contexts a generation")
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--idle", type=int, default=0, help="idle contexts between subjects")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--churn",
        type=int,
        default=0,
        help="idle contexts made after a generation's rounds, which are then run again: "
        "whether a context's offset outlives the GPU's other contexts changing",
    )
    parser.add_argument(
        "--new-words", action="store_true", help="new gate words every span, as the judge's"
    )
    parser.add_argument(
        "--gap-s",
        type=float,
        default=0.0,
        help="the GPU left idle this long before every round, as between quiet evaluations "
        "(loaded ones follow each other): whether an idle GPU moves one context's handoff "
        "and not another's",
    )
    parser.add_argument(
        "--realloc-mb",
        type=int,
        default=0,
        help="every subject allocates this much anew before each span (the null subject lends "
        "an arena as large as the candidate's every evaluation): whether a handoff moves with "
        "what its context maps",
    )
    parser.add_argument(
        "--per-round",
        action="store_true",
        help="print every round: the resident's handoff and how far the others' mean is from it "
        "(whether a round moves every context alike or one alone)",
    )
    args = parser.parse_args()
    context = mp.get_context("spawn")
    properties = torch.cuda.get_device_properties(0)
    flush = torch.empty(2 * properties.L2_cache_size, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.Stream()
    shuffle = random.Random(args.seed).shuffle
    # the judge's null subject lives as long as its worker; its candidates' contexts are new
    resident = Subject(context)
    print(
        f"{properties.name}: a resident subject, then {args.generations} generations of "
        f"{args.subjects} new ones, {args.idle} idle contexts between two; "
        f"{args.rounds} rounds of a span of {args.calls} calls each"
    )
    print("gen subject  median µs  sd over rounds µs  minus the resident's, median and sd µs")
    offsets, within = [], []
    for generation in range(args.generations):
        subjects, idle = [], []
        for index in range(args.subjects):
            idle += _idle_contexts(context, args.idle if index else 0)
            subjects.append(Subject(context))
        everyone = [resident, *subjects]
        for subject in everyone:  # one span each, unrecorded: every path warm
            subject.span(args.calls, stream, flush)

        def timed_rounds(everyone: list[Subject] = everyone) -> list[list[float]]:
            rounds: list[list[float]] = [[] for _ in everyone]
            order = list(range(len(everyone)))
            for _ in range(args.rounds):
                time.sleep(args.gap_s)
                shuffle(order)
                for index in order:
                    span = everyone[index].span(
                        args.calls, stream, flush, args.new_words, args.realloc_mb
                    )
                    rounds[index].append(span)
            return rounds

        rounds = timed_rounds()
        if args.per_round:
            print("round  resident µs  others' mean less the resident's µs")
            for number, spans in enumerate(zip(*rounds, strict=True)):
                others = statistics.mean(spans[1:]) - spans[0] if len(spans) > 1 else 0.0
                print(f"{number:5d}  {1000 * spans[0]:11.2f}  {1000 * others:+8.2f}")
        if args.churn:
            idle += _idle_contexts(context, args.churn)
            after = timed_rounds()
            print(f"offsets before and after {args.churn} more contexts were made, µs:")
            for index in range(1, len(everyone)):
                before_offset, after_offset = (
                    statistics.median(a - b for a, b in zip(runs[index], runs[0], strict=True))
                    for runs in (rounds, after)
                )
                print(
                    f"{generation:3d} {index:>7}  {1000 * before_offset:+8.2f} "
                    f"{1000 * after_offset:+8.2f}"
                )
        for subject in subjects:
            subject.close()
        for conn, process in idle:
            conn.send(None)
            process.join()
        for index, spans in enumerate(rounds):
            differences = [a - b for a, b in zip(spans, rounds[0], strict=True)]
            if index:
                offsets.append(statistics.median(differences))
                within.append(statistics.stdev(differences))
            print(
                f"{generation:3d} {index or 'resident':>7}  "
                f"{1000 * statistics.median(spans):9.1f}  "
                f"{1000 * statistics.stdev(spans):17.2f}  "
                + (
                    f"{1000 * statistics.median(differences):+8.2f} "
                    f"{1000 * statistics.stdev(differences):6.2f}"
                    if index
                    else ""
                )
            )
    resident.close()
    if len(offsets) > 1:
        noise = statistics.median(within) / args.rounds**0.5
        print(
            f"{len(offsets)} new contexts against the resident: sd of their median offsets "
            f"{1000 * statistics.stdev(offsets):.2f} µs, range "
            f"{1000 * (max(offsets) - min(offsets)):.2f} µs; the rounds' own noise would give "
            f"about {1000 * noise:.2f} µs. Larger: a handoff belongs to its context."
        )


if __name__ == "__main__":
    main()
