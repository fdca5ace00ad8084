"""Tuning from Python: which problems (specs, a shipped model, a Hugging Face config), progress, results."""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

from . import _cli
from . import _gemmforge as _C

DEFAULT_TOKENS = (16, 128, 4096)


def _config_json(hf_config: Any) -> tuple[str, str]:
    """(JSON text, name) of a config.json path, a model folder holding one, a dict, or a
    transformers PretrainedConfig."""
    if isinstance(hf_config, (str, os.PathLike)):
        p = os.fspath(hf_config)
        if os.path.isdir(p):
            p = os.path.join(p, "config.json")
        with open(p) as f:
            return f.read(), os.path.basename(os.path.dirname(os.path.abspath(p))) or p
    if hasattr(hf_config, "to_dict"):
        d = hf_config.to_dict()
        return json.dumps(d), str(d.get("_name_or_path") or d.get("model_type") or "hf-config")
    if isinstance(hf_config, dict):
        return json.dumps(hf_config), str(hf_config.get("_name_or_path") or hf_config.get("model_type") or "hf-config")
    raise _C.Error(f"hf_config must be a path, a dict or a PretrainedConfig, not {type(hf_config).__name__}")


def model_problems(model: str | None = None, *, hf_config: Any = None, tokens: Sequence[int] = DEFAULT_TOKENS,
                   dtype: str = "bf16", fuse: str = "none") -> list[_C.ModelGemm]:
    """The GEMMs one decoder layer and the output head run at these token counts. fuse='natural'
    gives them the epilogues a layer fuses (qkv+bias, o/down+residual, gate_up+swiglu)."""
    if model and hf_config is not None:
        raise _C.Error("give either model or hf_config, not both")
    tokens = [int(t) for t in tokens]
    if hf_config is not None:
        text, name = _config_json(hf_config)
        return _C.config_gemms(text, name, tokens, dtype, fuse)
    return _C.model_gemms(model or "llama3-8b", tokens, dtype, fuse)


def parse_spec(text: str):
    """A GEMM or row-op spec: a row op's starts with its name, a GEMM's with its sizes."""
    return _C.RowOpSpec.parse(text) if text[:1].isalpha() else _C.GemmProblem.parse(text)


def _as_problems(problems) -> list:
    if problems is None:
        return []
    if isinstance(problems, (str, _C.GemmProblem, _C.RowOpSpec, _C.ModelGemm)):
        problems = [problems]
    out = []
    for p in problems:
        if isinstance(p, _C.ModelGemm):
            p = p.problem
        elif isinstance(p, str):
            p = parse_spec(p)
        elif not isinstance(p, (_C.GemmProblem, _C.RowOpSpec)):
            raise _C.Error(f"not a problem: {p!r} (a spec string, GemmProblem, RowOpSpec or ModelGemm)")
        out.append(p)
    return out


def _tuner(backends: Iterable[str], search: str, force: bool, use_cache: bool, db, timeout_s: float, bar):
    def progress(what: str, done: int, total: int) -> None:
        if bar is not None:
            bar.set_postfix_str(f"{what} {done}/{total}", refresh=True)

    return _C.Tuner(backends=list(backends), search=search, force=force, use_cache=use_cache,
                    db=os.fspath(db) if db else "", worker_exe=_cli.executable(), candidate_timeout_s=timeout_s,
                    progress=progress)


def _run(method: str, problems, model, hf_config, tokens, fuse, backends, search, force, use_cache, db, timeout_s,
         progress) -> list[dict]:
    todo = _as_problems(problems)
    if model or hf_config is not None or not todo:
        todo = [g.problem for g in model_problems(model, hf_config=hf_config, tokens=tokens, fuse=fuse)] + todo
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc=method, unit="problem")
    try:
        tuner = _tuner(backends, search, force, use_cache, db, timeout_s, bar)
        results = []
        for p in todo:  # all queued for compiling, in order, before the first is measured
            tuner.prefetch(p)
        for p in todo:
            if bar is not None:
                bar.set_description(f"{method} {p.key()}")
            results.append(json.loads(getattr(tuner, method)(p)))
            if bar is not None:
                bar.update(1)
        return results
    finally:
        if bar is not None:
            bar.close()


def tune(problems=None, *, model: str | None = None, hf_config: Any = None, tokens: Sequence[int] = DEFAULT_TOKENS,
         fuse: str = "none", backends: Iterable[str] = (), search: str = "fast", force: bool = False,
         use_cache: bool = True, db=None, timeout_s: float = 60.0, progress: bool = True) -> list[dict]:
    """Tunes each problem (spec strings, GemmProblem/RowOpSpec objects, or a model's GEMMs; by
    default llama3-8b's) into the DB, or finds its decision there. Returns one dict per problem:
    the decision (backend, candidate, us, rate, search, from_db) and every candidate measured."""
    return _run("tune", problems, model, hf_config, tokens, fuse, backends, search, force, use_cache, db, timeout_s,
                progress)


def bench(problems=None, *, model: str | None = None, hf_config: Any = None, tokens: Sequence[int] = DEFAULT_TOKENS,
          fuse: str = "none", backends: Iterable[str] = (), search: str = "fast", force: bool = False,
          use_cache: bool = True, db=None, timeout_s: float = 60.0, progress: bool = True) -> list[dict]:
    """Tunes where needed, then times each backend's best kernel and the baselines side by side
    (as `gemmforge bench`). Returns one dict per problem: the decision and the rows."""
    return _run("bench", problems, model, hf_config, tokens, fuse, backends, search, force, use_cache, db, timeout_s,
                progress)
