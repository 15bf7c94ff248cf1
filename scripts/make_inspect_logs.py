"""Write the inspect_ai logs of tests/data/inspect/ with inspect_ai itself, offline (its mockllm model).

Needs inspect_ai (tested with 0.3.285), installed apart from the project, e.g.::

    python3 -m venv /tmp/inspectvenv && /tmp/inspectvenv/bin/pip install inspect-ai==0.3.285
    /tmp/inspectvenv/bin/python scripts/make_inspect_logs.py --out /tmp/inspect-logs

Each case is a folder under ``--out`` (tests/data/inspect/README.md says what each holds and what
inspect itself reports for it).  The outcome of every (sample, epoch) is fixed by the sample's
``metadata.pattern``, one character per epoch, so the logs differ from run to run only in ids,
times and file names:

- ``folder``: two tasks of one model, written by two ``eval()`` calls into one log folder, one as
  ``.json`` and one as ``.eval``, with 5 and 3 epochs (a merge whose logs have different epochs);
- ``eval_set``: ``eval_set()`` of two tasks: ``eval-set.json``, ``logs.json`` and the logs;
- ``retry``: a run stopped by an error (``fail_on_error=True``), then ``eval_retry()`` of it;
- ``dict_scores``: a scorer whose value is a dict ``{"answer": ..., "format": ...}``;
- ``partial``: two scorers on one task: letters with partial credit (``C``/``P``/``I``), and numbers.

No network and no API key: the model is ``mockllm/model``, counting tokens as words (else it counts
them with tiktoken, which downloads its encoding).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import time
from pathlib import Path

from inspect_ai import Epochs, Task, eval, eval_retry, eval_set, task
from inspect_ai.dataset import Sample
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.scorer import (CORRECT, INCORRECT, PARTIAL, Score, Target, accuracy, mean, pass_at, pass_k, scorer,
                               stderr)
from inspect_ai.solver import Generate, TaskState, generate, solver

#: The sample that raises while FAIL_VARIABLE is set, and in which epoch (the ``retry`` case).
FAIL_VARIABLE = "MAKE_INSPECT_LOGS_FAIL"
FAIL_AT = ("r2", 1)


async def count_words(self, text: str) -> int:
    return len(text.split())


# mockllm counts the tokens of its replies with tiktoken, which downloads its encoding: words instead
# (the hook inspect documents for model-specific tokenizers).  A patch of the class, not custom outputs,
# so that eval_retry, which rebuilds the model from its name alone, stays offline too.
MockLLM.count_text_tokens = count_words
MODEL = "mockllm/model"


def dataset(patterns: dict[str, str], **metadata) -> list[Sample]:
    return [Sample(id=sid, input=f"Task {sid}.", target="x", metadata={"pattern": p, **metadata})
            for sid, p in patterns.items()]


@solver
def maybe_fail():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await asyncio.sleep(0.005)  # a non-zero working_time
        if os.environ.get(FAIL_VARIABLE) and (state.sample_id, state.epoch) == FAIL_AT:
            raise RuntimeError(f"deliberate failure for sample {state.sample_id} epoch {state.epoch}")
        return state

    return solve


def outcome(state: TaskState) -> str:
    return state.metadata["pattern"][state.epoch - 1]


@scorer(metrics=[accuracy(), stderr()])
def pattern_scorer():
    """'1' -> C, '0' -> I, 'p' -> P (partial credit)."""
    async def score(state: TaskState, target: Target) -> Score:
        value = {"1": CORRECT, "0": INCORRECT, "p": PARTIAL}[outcome(state)]
        return Score(value=value, answer=state.output.completion)

    return score


@scorer(metrics=[mean(), stderr()])
def numeric_scorer():
    """The pattern as numbers: '1' -> 1.0, 'p' -> 0.75, '0' -> 0.25."""
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value={"1": 1.0, "p": 0.75, "0": 0.25}[outcome(state)])

    return score


@scorer(metrics={"answer": [accuracy(), stderr()], "format": [accuracy(), stderr()]})
def dict_scorer():
    """Two values per epoch: ``answer`` from the pattern, ``format`` correct except in epoch 2."""
    async def score(state: TaskState, target: Target) -> Score:
        answer = CORRECT if outcome(state) == "1" else INCORRECT
        return Score(value={"answer": answer, "format": INCORRECT if state.epoch == 2 else CORRECT})

    return score


REDUCERS_3 = ["mean", pass_at(k=1), pass_at(k=2), pass_at(k=3), pass_k(k=2), pass_k(k=3), "max"]


@task
def five_epochs():
    return Task(dataset=dataset({"a0": "10110", "a1": "00000", "a2": "11111"}, group="a"),
                solver=[maybe_fail(), generate()], scorer=pattern_scorer(),
                epochs=Epochs(5, ["mean", pass_at(k=1), pass_at(k=3), pass_at(k=5), pass_k(k=3), pass_k(k=5)]))


@task
def three_epochs():
    return Task(dataset=dataset({"b0": "100", "b1": "011"}, group="b"),
                solver=[maybe_fail(), generate()], scorer=pattern_scorer(), epochs=Epochs(3, REDUCERS_3))


@task
def retried():
    return Task(dataset=dataset({"r0": "101", "r1": "110", "r2": "011", "r3": "000"}),
                solver=[maybe_fail(), generate()], scorer=pattern_scorer(), epochs=Epochs(3, REDUCERS_3))


@task
def dict_scores():
    return Task(dataset=dataset({"d0": "110", "d1": "010", "d2": "111"}),
                solver=[maybe_fail(), generate()], scorer=dict_scorer(), epochs=Epochs(3, REDUCERS_3))


@task
def partial_scores():
    # 'p' is partial credit for the letter scorer and 0.5 for the numeric one
    return Task(dataset=dataset({"p0": "1p0", "p1": "pp1", "p2": "000", "p3": "1p1"}),
                solver=[maybe_fail(), generate()], scorer=[pattern_scorer(), numeric_scorer()],
                epochs=Epochs(3, ["mean", pass_at(k=1), pass_at(k=3), pass_k(k=3), "max"]))


def run(tasks, log_dir: Path, log_format: str, **kwargs):
    return eval(tasks, model=MODEL, log_dir=str(log_dir), log_format=log_format, display="none",
                max_samples=1, **kwargs)


def make(out: Path) -> None:
    os.environ.pop(FAIL_VARIABLE, None)
    run(five_epochs(), out / "folder", "eval")
    run(three_epochs(), out / "folder", "json")

    eval_set([five_epochs(), three_epochs()], log_dir=str(out / "eval_set"), model=MODEL, log_format="eval",
             display="none", max_samples=1)

    os.environ[FAIL_VARIABLE] = "1"
    stopped = run(retried(), out / "retry", "eval", fail_on_error=True)
    os.environ.pop(FAIL_VARIABLE)
    assert stopped[0].status == "error", stopped[0].status
    time.sleep(1.1)  # eval.created counts seconds: the retry must be visibly newer
    eval_retry(stopped[0].location, log_dir=str(out / "retry"), log_format="eval", display="none", max_samples=1)

    run(dict_scores(), out / "dict_scores", "json")
    run(partial_scores(), out / "partial", "eval")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="folder to write the cases into (emptied first)")
    args = parser.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    make(args.out)
    for path in sorted(args.out.rglob("*")):
        if path.is_file():
            print(f"{path.stat().st_size:>8}  {path.relative_to(args.out)}")


if __name__ == "__main__":
    main()
