"""The peer's answer budget, as condbench's (bench/answer_budget.cpp): more rounds over the cases whose
comparisons the report's answer still finds undecided, judged by condbench-report --undecided."""
import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from . import results
from .peer_result import Document
from .rounds import Rounds, median
from .variants import Case

# report/analysis.h: the looks an answer budget splits its verdicts over, and the context keys.
LOOKS_CONTEXT, BUDGET_CONTEXT = "condbench_answer_looks", "condbench_answer_budget"


def spend_answer_budget(args: argparse.Namespace, cases: list[Case], rounds: Rounds, document: Document) -> str:
    """condbench's answer budget (bench/answer_budget.cpp), for the peer's cases: at each look,
    condbench-report --undecided names the cases the answer still needs and how many rounds to run
    over them before the next look (their repetitions doubled); stop when none is left or the time is
    spent. Returns what it did, in condbench-report's words, and records it in the document's context:
    the schedule and the words are the report's, as condbench's own budget uses them."""
    start = time.monotonic()
    by_name = {case.name: case for case in cases}
    scratch = f"{args.out}.undecided.{os.getpid()}"

    def look(spent: tuple[object, ...] = ()) -> tuple[dict[str, Any], list[Case]] | None:
        """What condbench-report says is undecided (with `spent`, the tally ROUNDS, CELLS, SECONDS,
        LOOKS, UNDECIDED_AT_START, what the budget did in words); None when it cannot say (the rounds
        so far are kept)."""
        results.write(scratch, document.build())
        told = [f"--repetitions={args.repetitions}"] + ([f"--spent={','.join(map(str, spent))}"] if spent else [])
        try:
            done = subprocess.run([args.report_tool, "--undecided", *told, *([args.against] if args.against else []),
                                   scratch], capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(done.stderr.strip() or f"exit {done.returncode}")
            answer: dict[str, Any] = json.loads(done.stdout)  # condbench-report's --undecided JSON
            return answer, [by_name[n] for n in answer["cells"] if n in by_name]
        except (OSError, ValueError, KeyError, RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"peer: warning: --answer-budget: {args.report_tool} could not judge ({e}); "
                  "no more rounds", file=sys.stderr)
            return None
        finally:
            os.remove(scratch)

    first_look = look()
    if first_look is None:
        document.context[BUDGET_CONTEXT] = "no round: condbench-report could not judge the answer"
        return document.context[BUDGET_CONTEXT]
    plan, chosen = first_look
    planned, undecided_at_start = plan["looks"], plan["undecided"]
    undecided, looks, ran_rounds = undecided_at_start, 1, 0
    again: set[str] = set()
    out_of_time = False
    while chosen and looks < planned and not out_of_time:
        count = plan["rounds_before_next_look"][looks - 1]
        print(f"peer: answer budget, look {looks} of {planned}: {undecided} comparisons undecided, "
              f"up to {count} rounds over {len(chosen)} cases", flush=True)
        done = 0
        for _ in range(count):
            cost = sum(c.iterations * median([s[0] for s in rounds.samples[id(c)]]) * 1e-6 for c in chosen)
            if time.monotonic() - start + cost > args.answer_budget:
                out_of_time = True
                break
            rounds.run(chosen, 1)
            done += 1
        if done == 0:
            break
        ran_rounds += done
        looks += 1
        again.update(c.name for c in chosen)
        judged = look()
        if judged is None:
            break  # looks counts the rounds' look; the last judgement is the report's
        now, chosen = judged
        undecided = now["undecided"]
    if ran_rounds > 0:
        document.context[LOOKS_CONTEXT] = str(planned)
    # the last look again, with the tally: condbench-report says it as condbench does
    said = look((ran_rounds, len(again), round(time.monotonic() - start, 3), looks, undecided_at_start))
    document.context[BUDGET_CONTEXT] = said[0]["spent"] if said else \
        f"{ran_rounds} rounds; condbench-report could not say more ({undecided} comparisons undecided at the end)"
    return document.context[BUDGET_CONTEXT]
